"""A folder of dumps as one small archive, packed fast, and back (docs/debugging.md, "The dumps' archive").

Why a module: a rehearsal's dumps are mostly one 145-byte record repeated (:func:`sim.debug.dumpformat.record_dtype`)
with a few numbers changing, and gzip's 32 kB window over the records as they lie compresses them about 6 times at
30 MB/s (level 6: 4.79 GB of 16,384 dumps took minutes for 801 MB). Stored as delta-coded byte columns (a file's
first ``n x ROW`` bytes as an (n, ROW) array, transposed, each column's bytes minus the one before; the rest as is),
the constant bytes of every record become runs of zeros and gzip's fastest level compresses them about 40 times
(demo-256) at over 300 MB/s. So the archive is a standard tar.gz (``tar tzf`` lists it) whose member
``<file>.cols145`` is ``<file>`` so coded; :func:`unpack`
(``python -m sim debug unpack ARCHIVE DIR``) gives the folder back byte for byte, which ``python -m sim debug
analyze`` and PyTorch's fr_trace read.

An archive is a user's file: :func:`unpack` writes only regular members named as dumps or the placement file, each
within MAX_DUMP_BYTES, never a path, a link or a device; anything else stops it with a DumpError naming the member.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
from pathlib import Path

import numpy as np

from sim.debug.dumpformat import DUMP_PREFIX, ENTRY_KEYS, MAX_DUMP_BYTES, MAX_RANK, PLACEMENT_FILE, DumpError, \
    record_dtype

ROW = record_dtype({k: i for i, k in enumerate(ENTRY_KEYS)})[0].itemsize     # the writer's record: 145 bytes
SUFFIX = f".cols{ROW}"               # a member stored in delta-coded byte columns of ROW-byte rows
LEVEL = 1                            # gzip's fastest level: the columns compress as well at 1 as at 6
COPY_BYTES = 4 << 20                 # bytes handed to gzip at a time
MEMBER = re.compile(rf"({re.escape(DUMP_PREFIX)}\d{{1,7}}){re.escape(SUFFIX)}|{re.escape(PLACEMENT_FILE)}")


def to_columns(data: bytes) -> bytes:
    """``data``'s first n x ROW bytes as byte columns (the (n, ROW) array transposed), each column delta-coded (a
    byte minus the one before it in the column, mod 256: a constant column becomes zeros, a growing timestamp small
    numbers), the rest unchanged."""
    n = len(data) // ROW
    cols = np.ascontiguousarray(np.frombuffer(data, np.uint8, n * ROW).reshape(n, ROW).T)
    out = np.empty_like(cols)
    out[:, :1] = cols[:, :1]
    np.subtract(cols[:, 1:], cols[:, :-1], out=out[:, 1:])
    return out.tobytes() + data[n * ROW:]


def from_columns(data: bytes) -> bytes:
    """The inverse of :func:`to_columns` (the same length in, the same length out)."""
    n = len(data) // ROW
    cols = np.cumsum(np.frombuffer(data, np.uint8, n * ROW).reshape(ROW, n), axis=1, dtype=np.uint8)
    return np.ascontiguousarray(cols.T).tobytes() + data[n * ROW:]


def pack(folder, out, progress=None) -> int:
    """Write every regular file of ``folder`` (sorted by name) into ``out`` (a binary file object) as a tar.gz,
    the dumps in byte columns (``<name>.cols145``), other files as they are; ``progress(fraction)`` every 64 files.
    Returns the bytes read."""
    folder = Path(folder)
    paths = sorted(p for p in folder.iterdir() if p.is_file())
    total = 0
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=LEVEL, format=tarfile.PAX_FORMAT) as tar:
        tar.copybufsize = COPY_BYTES                  # a dump in a few calls of gzip, not 16 kB at a time
        for i, p in enumerate(paths):
            data = p.read_bytes()
            total += len(data)
            dump = p.name.startswith(DUMP_PREFIX)
            body = to_columns(data) if dump else data
            info = tarfile.TarInfo(p.name + SUFFIX if dump else p.name)
            info.size, info.mode, info.mtime = len(body), 0o600, int(p.stat().st_mtime)
            tar.addfile(info, io.BytesIO(body))
            if progress is not None and (i % 64 == 63 or i + 1 == len(paths)):
                progress((i + 1) / len(paths))
    return total


def unpack(archive, folder) -> list[str]:
    """Unpack an archive :func:`pack` wrote into ``folder`` (created if missing): the dumps back in rows, the
    placement file as it is. Refuses (DumpError naming the member) any member that is not a regular file named
    ``nccl_trace_rank_<rank>.cols145`` (rank below MAX_RANK) or ``twin_placement.json``, or larger than
    MAX_DUMP_BYTES. Returns the paths written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for m in tar:
                where = f"{archive}: member {m.name!r}"
                match = MEMBER.fullmatch(m.name)
                if not m.isfile() or match is None:
                    raise DumpError(f"{where}: not a dump of this format (nccl_trace_rank_<rank>{SUFFIX} or "
                                    f"{PLACEMENT_FILE}, regular files)")
                if m.size > MAX_DUMP_BYTES:
                    raise DumpError(f"{where}: {m.size:,} bytes, over MAX_DUMP_BYTES ({MAX_DUMP_BYTES:,})")
                name = match.group(1) or PLACEMENT_FILE
                if name != PLACEMENT_FILE and int(name[len(DUMP_PREFIX):]) >= MAX_RANK:
                    raise DumpError(f"{where}: rank at or above MAX_RANK ({MAX_RANK:,})")
                data = tar.extractfile(m).read(m.size)
                path = folder / name
                fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(from_columns(data) if match.group(1) else data)
                written.append(str(path))
    except (tarfile.TarError, EOFError, OSError) as e:
        if isinstance(e, FileNotFoundError) and not Path(archive).exists():
            raise DumpError(f"{archive}: no such file") from None
        raise DumpError(f"{archive}: cannot be unpacked ({e})") from None
    return written
