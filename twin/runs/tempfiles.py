"""A run's temporary files (a debug rehearsal's dumps before they are packed: hundreds of MB) and the sweeper that
removes those of runs no longer running.

Why a module: a worker killed while it writes leaves its temporary folder behind, and nothing else knows whose it
is. Each folder is named after its run and attempt (``twin-debug-<run id>-a<attempt>-<random>``) in the twin's own
temporary folder (:func:`temp_root`: ``tmp`` under TWIN_RUN_FILES_DIR, never the system's /tmp, where another twin's
folders, of another database, would look dead to this one), so :func:`sweep_temp_dirs` can tell a live one from a dead one: it keeps the folders of runs
running their current attempt and removes the others (run finished or deleted, or requeued after its worker was
lost). Beat's sweeper runs it every TWIN_RUNS_SWEEP_SECONDS (:mod:`twin.runs.beat`, ``manage.py sweep_runs``), and a
debug run runs it on its worker's machine before it writes (a worker on another machine has its own /tmp);
docs/debugging.md, docs/operations.md.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from twin.runs import files
from twin.runs.choices import RunStatus

log = logging.getLogger("twin.runs")
TEMP_PREFIX = "twin-"
_TEMP_NAME = re.compile(r"^twin-[a-z]+-(\d{1,18})-a(\d{1,6})-")


def temp_root() -> Path:
    """This twin's temporary folder (made when missing): the runs' temporary folders go there."""
    root = files.root() / "tmp"
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def run_temp_dir(run, what: str):
    """A temporary folder for ``run`` (``twin-<what>-<run id>-a<attempt>-...``), removed on the way out."""
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{what}-{int(run.pk)}-a{int(run.attempts)}-",
                                     dir=temp_root()) as folder:
        yield folder


def sweep_temp_dirs(root=None) -> list[dict]:
    """Remove the temporary folders (:func:`run_temp_dir`) in ``root`` (:func:`temp_root`) whose run is not running
    its attempt any more (finished, deleted, requeued); returns what it removed."""
    from twin.runs.models import SimulationRun
    root = Path(root or temp_root())
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for e in entries:
        m = _TEMP_NAME.match(e.name)
        if m and e.is_dir(follow_symlinks=False):
            found.append((e.path, int(m.group(1)), int(m.group(2))))
    if not found:
        return []
    live = set(SimulationRun.objects.filter(pk__in={r for _, r, _ in found}, status=RunStatus.RUNNING)
               .values_list("id", "attempts"))
    done = []
    for path, run_id, attempt in found:
        if (run_id, attempt) in live:
            continue
        size = sum(f.lstat().st_size for f in Path(path).rglob("*") if not f.is_symlink() and f.is_file())
        shutil.rmtree(path, ignore_errors=True)
        log.warning("removed %s (%s bytes): run %s attempt %s is not running", path, size, run_id, attempt)
        done.append({"run": run_id, "outcome": "temporary files removed", "reason": f"{path} ({size:,} bytes)"})
    return done
