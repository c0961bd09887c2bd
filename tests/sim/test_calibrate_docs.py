"""docs/calibration.md's example measurements file, read from the Markdown as written (the one ```toml block of the
file): it parses, and the documented command runs on it, so the page and the code cannot drift apart."""
import json

import pytest

from sim.calibrate.measurements import parse_measurements
from sim.cli import main
from tests.doc_examples import of


def example() -> str:
    """The example measurements file: the one ``toml calibration`` block of docs/calibration.md."""
    blocks = [e.text for e in of("toml", "calibration") if e.path == "docs/calibration.md"]
    assert len(blocks) == 1, "docs/calibration.md should hold exactly one ```toml calibration block: its example"
    return blocks[0]


def test_the_example_parses_with_its_log_whole():
    entries = parse_measurements(example()).entries
    assert [e.kind for e in entries] == ["job", "checkpoint", "failures", "nccl-tests"]
    nccl = entries[3]
    # the log's Rank lines are as many as the host list's ranks (2 hosts x 8 slots), so the entry runs as given
    assert len(nccl.log.ranks) == 16 and nccl.values["hosts"].count("slots=8") == 2
    assert nccl.log.gpu == "NVIDIA H100 80GB HBM3" and "h100-sxm-80gb" in nccl.log.gpu_slugs
    assert len(nccl.observations) == 11


@pytest.mark.slow
def test_the_example_runs_with_the_fit_of_the_round_trip(tmp_path, capsys):
    """README's command with ``--fit base_rtt_us`` (seconds): every entry predicted on meta-roce-24k. Run with the
    documented examples (-m slow, a step of CI), which run the same command as README writes it."""
    f = tmp_path / "example.toml"
    f.write_text(example())
    assert main(["calibrate", "--preset", "meta-roce-24k", "--measurements", str(f), "--fit", "base_rtt_us",
                 "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {r["kind"] for r in d["entries"]} == {"job", "checkpoint", "failures", "nccl-tests"}
    assert len(d["entries"]) == 1 + 2 + 2 + 11
    assert all(r["before"]["predicted"] > 0 for r in d["entries"])


@pytest.mark.long
def test_the_example_runs_as_written(tmp_path, capsys):
    """The documented command exactly (the default fit: every parameter the entries inform; minutes)."""
    f = tmp_path / "example.toml"
    f.write_text(example())
    assert main(["calibrate", "--preset", "meta-roce-24k", "--measurements", str(f), "-q"]) == 0
    assert "# held-out error" in capsys.readouterr().out
