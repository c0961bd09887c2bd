"""A rehearsal's dumps as one archive a person unpacks with standard tools into the folder PyTorch's fr_trace reads
(docs/debugging.md, "The dumps' archive").

Why a module: the twin's download (``GET /api/runs/<id>/dumps/``, one rank's ``.../dumps/<rank>/``) and the
benchmark pack the same archive, built here once: a ``.tar.gz`` or a ``.zip`` (:data:`FORMATS`) holding one folder,
``<top>/``, with every rank's dump as the writer writes it, ``nccl_trace_rank_<rank>`` (:mod:`sim.debug.writer`: the
same bytes as ``python -m sim debug --dump DIR``), and nothing else, so ``tar xzf`` / ``unzip`` then
``python -m torch.distributed.flight_recorder.fr_trace <top>`` reads it as it is. The rank -> GPU placement file,
which PyTorch does not write, lies beside that folder, ``<top>.placement.json`` (:data:`PLACEMENT_SIDECAR`), where
``python -m sim debug analyze <top>`` finds it (:func:`sim.debug.cluster.rank_placement`). Both formats stream:
written piece by piece, stage after stage, never whole in memory or on disk (a zip with data descriptors).

Archives the twin made before this (its runs' stored ``dumps.tar.gz``, with every dump as ``<file>.cols145``, its
bytes in delta-coded byte columns, :func:`from_columns`) are still unpacked by :func:`unpack` (``python -m sim debug
unpack ARCHIVE DIR``). An archive is a user's file: :func:`unpack` writes only regular members named as dumps or the
placement file, each within MAX_DUMP_BYTES, never a path, a link or a device; anything else stops it with a
DumpError naming the member.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from sim.debug.dumpformat import DUMP_PREFIX, ENTRY_KEYS, MAX_DUMP_BYTES, MAX_RANK, PLACEMENT_FILE, \
    PLACEMENT_SIDECAR, DumpError, record_dtype
from sim.debug.writer import rank_dump, rank_dumps

# A download's formats: name (the ``format`` query parameter, the file's extension) -> content type.
FORMATS = {"tar.gz": "application/gzip", "zip": "application/zip"}
DEFAULT_FORMAT = "tar.gz"
LEVEL = 1                            # deflate's fastest level: the archive is built while it is sent
COPY_BYTES = 4 << 20                 # bytes handed to the compressor at a time
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)    # the earliest time a zip member can carry
ROW = record_dtype({k: i for i, k in enumerate(ENTRY_KEYS)})[0].itemsize     # the writer's record: 145 bytes
SUFFIX = f".cols{ROW}"               # a legacy archive's member: a dump in delta-coded byte columns of ROW-byte rows
MEMBER = re.compile(rf"({re.escape(DUMP_PREFIX)}\d{{1,7}}){re.escape(SUFFIX)}|{re.escape(PLACEMENT_FILE)}")


class _Sink:
    """What tarfile / zipfile write, gathered until it is taken (:meth:`take`)."""

    def __init__(self):
        self.parts, self.at = [], 0

    def write(self, b):
        self.parts.append(bytes(b))
        self.at += len(b)
        return len(b)

    def tell(self):
        return self.at

    def flush(self):
        pass

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts = []
        return out


def _tar_gz(members, chunk_bytes: int):
    """The tar.gz of ``members`` ((name, bytes, mtime): regular files, 0600, folders 0700), in pieces of at least
    ``chunk_bytes`` (the last one smaller)."""
    sink = _Sink()
    z = zlib.compressobj(LEVEL, zlib.DEFLATED, 31)           # wbits 31: a gzip stream
    pending, size, folders = [], 0, set()
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.copybufsize = COPY_BYTES                  # a dump in a few calls, not 16 kB at a time
        for name, data, mtime in members:
            top = name.rpartition("/")[0]
            if top and top not in folders:            # the folder first: tar creates it 0700 (user's only)
                folders.add(top)
                d = tarfile.TarInfo(top)
                d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o700, int(mtime)
                tar.addfile(d)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o600, int(mtime)
            tar.addfile(info, io.BytesIO(data))
            got = z.compress(sink.take())
            if got:
                pending.append(got)
                size += len(got)
            if size >= chunk_bytes:
                yield b"".join(pending)
                pending, size = [], 0
    pending += [z.compress(sink.take()), z.flush()]
    yield b"".join(pending)


def _zip(members, chunk_bytes: int):
    """The zip of ``members`` (as :func:`_tar_gz`), deflated, streamed: each member with a data descriptor."""
    sink = _Sink()
    pending, size, folders = [], 0, set()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=LEVEL) as zf:
        for name, data, mtime in members:
            when = max(ZIP_EPOCH, time.localtime(mtime)[:6])
            top = name.rpartition("/")[0]
            if top and top not in folders:
                folders.add(top)
                d = zipfile.ZipInfo(top + "/", when)
                d.external_attr = (0o40700 << 16) | 0x10    # a folder, the user's only (MS-DOS directory bit)
                zf.writestr(d, b"")
            info = zipfile.ZipInfo(name, when)
            info.external_attr = 0o100600 << 16              # a regular file, 0600
            info.file_size = len(data)
            zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=LEVEL)
            got = sink.take()
            pending.append(got)
            size += len(got)
            if size >= chunk_bytes:
                yield b"".join(pending)
                pending, size = [], 0
    pending.append(sink.take())
    yield b"".join(pending)


def _archive(members, fmt: str, chunk_bytes: int):
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    return (_tar_gz if fmt == "tar.gz" else _zip)(members, chunk_bytes)


def _joined(parts) -> bytes:
    return b"".join(p if isinstance(p, bytes) else p.tobytes() for p in parts)


def stream(ds, top: str, mtime: float, fmt: str = DEFAULT_FORMAT, rank: int | None = None,
           chunk_bytes: int = COPY_BYTES):
    """The archive (``fmt``, :data:`FORMATS`) of the dumps of the :class:`sim.debug.writer.DumpSet` ``ds``, in
    pieces, without a file: ``<top>/nccl_trace_rank_<rank>`` for every rank with a dump (stage after stage: one
    stage's times in memory at a time when ``ds`` loads them so, :func:`sim.debug.dumpstate.load`) and the
    placement beside the folder, ``<top>.placement.json``; or, for ``rank``, that rank's dump alone (DumpError when
    it has none: :func:`sim.debug.writer.rank_dump`). What the twin sends when a run's dumps are downloaded."""
    if rank is not None:
        parts = rank_dump(ds, rank)                  # before the first byte: a rank without a dump is refused

        def members():
            yield f"{top}/{DUMP_PREFIX}{rank}", _joined(parts), mtime
    else:
        def members():
            for r, parts in rank_dumps(ds, by_stage=True):
                yield f"{top}/{DUMP_PREFIX}{r}", _joined(parts), mtime
            yield top + PLACEMENT_SIDECAR, ds.placement().encode(), mtime
    return _archive(members(), fmt, chunk_bytes)


def pack(folder, out, top: str, fmt: str = DEFAULT_FORMAT, progress=None) -> int:
    """Write the archive (``fmt``) of a folder of dumps (what :func:`sim.debug.writer.write_dumps` writes: its
    dumps by name, into ``<top>/``, its placement file beside as ``<top>.placement.json``) into ``out`` (a binary
    file object); ``progress(fraction)`` every 64 files. Returns the bytes read."""
    folder = Path(folder)
    paths = sorted(p for p in folder.iterdir() if p.is_file() and p.name.startswith(DUMP_PREFIX))
    placement = folder / PLACEMENT_FILE
    total = 0

    def members():
        nonlocal total
        for i, p in enumerate(paths):
            data = p.read_bytes()
            total += len(data)
            yield f"{top}/{p.name}", data, p.stat().st_mtime
            if progress is not None and (i % 64 == 63 or i + 1 == len(paths)):
                progress((i + 1) / len(paths))
        if placement.is_file():
            yield top + PLACEMENT_SIDECAR, placement.read_bytes(), placement.stat().st_mtime
    for piece in _archive(members(), fmt, COPY_BYTES):
        out.write(piece)
    return total


def to_columns(data: bytes) -> bytes:
    """``data``'s first n x ROW bytes as byte columns (the (n, ROW) array transposed), each column delta-coded (a
    byte minus the one before it in the column, mod 256), the rest unchanged: how a legacy archive stored a dump
    (the inverse of :func:`from_columns`)."""
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


def unpack(archive, folder) -> list[str]:
    """Unpack a legacy archive (the twin's before it sent the dumps as they are: the module docstring) into
    ``folder`` (created if missing): the dumps back in rows, the placement file as it is. Refuses (DumpError
    naming the member) any member that is not a regular file named ``nccl_trace_rank_<rank>.cols145`` (rank below
    MAX_RANK) or ``twin_placement.json``, or larger than MAX_DUMP_BYTES. Returns the paths written."""
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
                                    f"{PLACEMENT_FILE}, regular files); a download holding the dumps as they are "
                                    f"(<folder>/nccl_trace_rank_<rank>) unpacks with tar xzf or unzip")
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
