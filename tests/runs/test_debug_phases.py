"""Issue 25, item 3: a debug rehearsal as a run goes through every phase (simulating, dumping, analyzing, packing:
the live progress moves in each, none frozen at 100 % of the one before), keeps its dumps in a file much smaller
than they are, from which the archive a download streams is built, which ``tar xzf`` turns back into them, and its
heatmap's rows say where each rank stopped
(no "absent" cells for ranks that left a dump, the culprit's row marked and standing out). The kind runs in this
process on demo-256 (a real database, the real engine, real files) with a progress callback that records what the
worker would publish. Given / when / then."""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from sim.debug import archive
from sim.debug.dumpformat import DUMP_PREFIX
from twin.capabilities.debug.kinds import STAGE_SPAN, debug
from twin.inventory.adapter import layout_from_db
from twin.runs import files
from twin.runs.models import SimulationRun

# 64 ranks in 2 pipeline stages: the stages' record ids differ, as at 16,384 ranks in 16 stages
JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M", "inject": "hang:rank=37"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rehearsed(demo, tmp_path, monkeypatch):
    """The debug kind run once on demo-256 (hang of rank 37), with every progress report it made."""
    from twin.runs.params import validate_params
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))    # its dumps folder out of other twins' sweepers' way
    params = validate_params("debug", JOB, demo)
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="running", params=params, attempts=1)
    reports = []

    def progress(fraction=None, message="", *, force=False, **sections):
        reports.append((fraction, sections.get("debug_progress")))
    summary, arrays = debug(layout_from_db(demo), params, progress, run=run)
    return run, summary, arrays, reports


def test_a_rehearsal_reports_every_phase_packs_small_and_marks_the_culprit(rehearsed, tmp_path):
    run, summary, arrays, reports = rehearsed
    progress_moves_through_every_phase(reports)
    the_archive_is_small_and_unpacks_to_the_dumps(run, summary, tmp_path)
    the_heatmap_rows_say_where_each_rank_stopped_and_mark_the_culprit(summary, arrays)


def progress_moves_through_every_phase(reports):
    rows = [row for _, row in reports if row is not None]
    stages = [row["stage"] for row in rows]
    # then every phase reports, in order, and the run ends "done"
    assert list(dict.fromkeys(stages)) == ["simulating", "dumping", "analyzing", "packing", "done"]
    assert set(STAGE_SPAN) <= {k for k in rows[-1] if rows[-1][k] == 1}
    # and each phase's share moved inside it: not frozen at the one before's 100 %
    for stage in STAGE_SPAN:
        assert any(row["stage"] == stage and row[stage] > 0 for row in rows), stage
    assert any(row["stage"] == "analyzing" and row["dumping"] == 1 and 0 < row["analyzing"] < 1 for row in rows)
    # and the run's share only grows, from 0 to 1
    fractions = [f for f, _ in reports if f is not None]
    assert fractions[-1] == 1.0 and all(a <= b + 1e-9 for a, b in zip(fractions, fractions[1:]))


def the_archive_is_small_and_unpacks_to_the_dumps(run, summary, tmp_path):
    from sim.debug import dumpstate
    path = files.stored_dumps(run.pk)
    # then what the run keeps of its dumps is many times smaller than they are
    assert path.name == files.DUMPS_STATE and summary["dumps_bytes"] == path.stat().st_size
    assert summary["dumps_written_bytes"] > 10 * summary["dumps_bytes"], summary
    # and the archive built from it (as a download streams it) is a tar.gz that ``tar xzf`` turns into the folder
    # of every rank's dump (as the summary says to read it), which the analyzer reads to the same culprit
    top = files.dumps_folder(run.pk)
    tar_gz = tmp_path / f"{top}.tar.gz"
    tar_gz.write_bytes(b"".join(archive.stream(dumpstate.load(path, keep=1), top, path.stat().st_mtime)))
    assert summary["dumps_read"].startswith(f"tar xzf {tar_gz.name} && ")
    done = subprocess.run(["tar", "xzf", str(tar_gz)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / top
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{DUMP_PREFIX}{r}" for r in range(64))
    assert sum(p.stat().st_size for p in out.iterdir()) == summary["dumps_written_bytes"]
    from sim.debug.analyze import analyze
    assert analyze(out)["culprit"]["ranks"] == [37]


def test_an_archive_that_is_not_ours_is_refused_naming_the_member(tmp_path):
    import io
    import tarfile
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        info = tarfile.TarInfo("../etc/evil")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"abc"))
    done = subprocess.run([sys.executable, "-m", "sim", "debug", "unpack", str(bad), str(tmp_path / "x")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "member '../etc/evil'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "etc").exists()
    data = bytes(range(256)) * 7
    assert archive.from_columns(archive.to_columns(data)) == data


def the_heatmap_rows_say_where_each_rank_stopped_and_mark_the_culprit(summary, arrays):
    h, state = summary["heatmap"], arrays["heatmap_state"]
    # then the columns are instants and no rank with a dump is "absent" in them (the stages' record ids differ)
    assert h["axis"] == "time" and state.shape == (64, len(h["times_s"]))
    assert (state == 0).mean() < 0.05, (state == 0).mean()
    # and the culprit's row is marked, and it alone is idle (completed) at the last instant: its peers wait
    assert h["culprit_rows"] == [37]
    assert np.flatnonzero(state[:, -1] == 3).tolist() == [37]
    # and it stopped first
    assert h["stopped_s"][37] == min(x for x in h["stopped_s"] if x is not None) == 0


def test_injects_help_gives_its_syntax_and_an_example_the_default_job_takes():
    """The help text is the one place the syntax is said (CLI --help, API schema, the form's tooltip)."""
    import re
    from sim.debug.params import DEBUG
    help_text = DEBUG.by_name["inject"].help
    assert "KIND:KEY=VALUE" in help_text and "from 0 to the job's ranks - 1" in help_text
    example, gpus = re.search(r"e\.g\. (\S+) on (\d+) GPUs", help_text).groups()
    values = DEBUG.validate({"inject": example})
    assert values["inject"] == example and int(gpus) == values["tp"] * values["pp"] * values["cp"]
