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
import zlib
from pathlib import Path

import numpy as np

from sim.debug.dumpformat import DUMP_PREFIX, ENTRY_KEYS, MAX_DUMP_BYTES, MAX_RANK, PLACEMENT_FILE, DumpError, \
    record_dtype
from sim.debug.writer import rank_dumps

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


class _Sink:
    """What tarfile writes, gathered until it is taken (:meth:`take`): the tar stream of :func:`tar_gz`."""

    def __init__(self):
        self.parts, self.at = [], 0

    def write(self, b):
        self.parts.append(bytes(b))
        self.at += len(b)
        return len(b)

    def tell(self):
        return self.at

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts = []
        return out


def tar_gz(members, chunk_bytes: int = COPY_BYTES):
    """The tar.gz of ``members`` ((name, bytes, mtime), each a regular file, 0600; dumps, named ``nccl_trace_rank_
    <rank>``, stored in byte columns as ``<name>.cols145``), yielded a piece of at least ``chunk_bytes`` at a time
    (the last one smaller): written to a file by :func:`pack`, streamed to a download by :func:`stream`."""
    sink = _Sink()
    z = zlib.compressobj(LEVEL, zlib.DEFLATED, 31)           # wbits 31: a gzip stream
    pending, size = [], 0
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.copybufsize = COPY_BYTES                  # a dump in a few calls, not 16 kB at a time
        for name, data, mtime in members:
            dump = name.startswith(DUMP_PREFIX)
            body = to_columns(data) if dump else data
            info = tarfile.TarInfo(name + SUFFIX if dump else name)
            info.size, info.mode, info.mtime = len(body), 0o600, int(mtime)
            tar.addfile(info, io.BytesIO(body))
            got = z.compress(sink.take())
            if got:
                pending.append(got)
                size += len(got)
            if size >= chunk_bytes:
                yield b"".join(pending)
                pending, size = [], 0
    pending += [z.compress(sink.take()), z.flush()]
    yield b"".join(pending)


def pack(folder, out, progress=None) -> int:
    """Write every regular file of ``folder`` (sorted by name) into ``out`` (a binary file object) as a tar.gz
    (:func:`tar_gz`); ``progress(fraction)`` every 64 files. Returns the bytes read."""
    folder = Path(folder)
    paths = sorted(p for p in folder.iterdir() if p.is_file())
    total = 0

    def members():
        nonlocal total
        for i, p in enumerate(paths):
            data = p.read_bytes()
            total += len(data)
            yield p.name, data, p.stat().st_mtime
            if progress is not None and (i % 64 == 63 or i + 1 == len(paths)):
                progress((i + 1) / len(paths))
    for piece in tar_gz(members()):
        out.write(piece)
    return total


def stream(ds, mtime: float, chunk_bytes: int = COPY_BYTES):
    """The tar.gz of the dumps of the :class:`sim.debug.writer.DumpSet` ``ds`` and its placement file, as
    :func:`pack` would write it of the folder :func:`sim.debug.writer.write_dumps` writes (the same members, stage
    after stage: one stage's times in memory at a time when ``ds`` loads them so, :func:`sim.debug.dumpstate.load`),
    in pieces, without a file: what the twin sends when a run's dumps are downloaded."""
    def members():
        for rank, parts in rank_dumps(ds, by_stage=True):
            yield f"{DUMP_PREFIX}{rank}", b"".join(p if isinstance(p, bytes) else p.tobytes() for p in parts), mtime
        yield PLACEMENT_FILE, ds.placement().encode(), mtime
    yield from tar_gz(members(), chunk_bytes)


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
