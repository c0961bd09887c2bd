"""Files a run keeps beside its database rows: a ``debug`` rehearsal's flight-recorder dumps (one pickle per rank):
what they are made of in one compressed ``.npz`` (DUMPS_STATE, :mod:`sim.debug.dumpstate`), from which the web
process streams their tar.gz when they are downloaded (:func:`sim.debug.archive.stream`); runs made before it keep
the tar.gz itself (DUMPS_ARCHIVE, :func:`sim.debug.archive.pack`), served as stored. They live under TWIN_RUN_FILES_DIR (default ``var/run-files``; a documented setting:
docs/runs.md, docs/operations.md), one directory per run (``<dir>/<run id>/``), private like the rest of var/
(directories 0700, files 0600), and go with their run: :func:`twin.runs.actions.delete_run` and the cascades that
delete runs (a cluster, a sweep) remove them once the deletion commits (the ``post_delete`` receiver in
:mod:`twin.runs.apps`).

A worker writes them and the web process streams them back, so both must see the same directory (the compose
set-up mounts one volume on both: docker-compose.yml ``runfiles``)."""
from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

from twin.env import private_dir
from twin.runs.constants import setting

DUMPS_ARCHIVE = "dumps.tar.gz"      # a legacy run's per-rank dumps (sim.debug.archive.unpack: byte columns, tar.gz)
DUMPS_STATE = "dumps-state.npz"     # what they are made of (sim.debug.dumpstate), the archive built when downloaded


def dumps_folder(run_id: int, rank: int | None = None) -> str:
    """The folder a run's dumps download unpacks to (and the download's name, with the format's extension):
    ``run-<id>-dumps``, or ``run-<id>-rank-<rank>`` for one rank's (sim.debug.archive.stream)."""
    return f"run-{int(run_id)}-dumps" if rank is None else f"run-{int(run_id)}-rank-{int(rank)}"


def root() -> Path:
    return Path(setting("TWIN_RUN_FILES_DIR"))


def run_dir(run_id: int) -> Path:
    return root() / str(int(run_id))


def archive_path(run_id: int, name: str = DUMPS_ARCHIVE) -> Path:
    return run_dir(run_id) / name


def write_archive(run_id: int, write, name: str = DUMPS_ARCHIVE) -> Path:
    """Store ``<run dir>/<name>`` (0600) as ``write(binary file)`` writes it, under a temporary name first so a
    reader never sees half an archive. Returns its path."""
    d = private_dir(run_dir(run_id))
    final, tmp = d / name, d / f".{name}.partial"
    fd = os.open(tmp, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw:
            write(raw)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, final)
    return final


def pack_folder(run_id: int, folder, name: str = DUMPS_ARCHIVE, progress=None) -> Path:
    """Pack every regular file of ``folder`` (sorted by name, no subfolders) into ``<run dir>/<name>`` as a plain
    tar.gz (:func:`write_archive`); ``progress(fraction)`` after each file. Returns the archive's path."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file())

    def write(raw):
        with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
            for i, p in enumerate(files):
                info = tar.gettarinfo(str(p), arcname=p.name)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o600
                with p.open("rb") as f:
                    tar.addfile(info, f)
                if progress is not None:
                    progress((i + 1) / len(files))
    return write_archive(run_id, write, name)


def stored(run_id: int, name: str = DUMPS_ARCHIVE) -> Path | None:
    """The run's archive ``name`` if it exists."""
    p = archive_path(run_id, name)
    return p if p.is_file() else None


def stored_dumps(run_id: int) -> Path | None:
    """The file the run keeps its dumps in: the tar.gz of a run made before DUMPS_STATE, else its DUMPS_STATE;
    None when it has neither."""
    return stored(run_id) or stored(run_id, DUMPS_STATE)


def delete(run_id: int) -> None:
    """Remove the run's files (nothing when it has none)."""
    shutil.rmtree(run_dir(run_id), ignore_errors=True)
