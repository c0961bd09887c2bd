"""``python -m sim collective`` (contract): the nccl-tests table, --json, size syntax and one-line errors."""
import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

import sim.units
from sim.cli import main
from sim.errors import UsageError
from sim.units import parse_size, parse_sizes
from sim.routing import NoPathError

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_doctests():
    assert doctest.testmod(sim.units).failed == 0


@pytest.mark.parametrize("text, expected", [
    ("1M:1G", [1 << k for k in range(20, 31)]), ("8M,64M,1G", [8 << 20, 64 << 20, 1 << 30]),
    ("1K:1M:4", [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20]), ("512", [512]), ("2GiB", [2 << 30]),
    (" 3 kb ", [3072]),
])
def test_size_syntax(text, expected):
    assert parse_sizes(text) == expected


@pytest.mark.parametrize("text, message", [
    ("12Q", "bad size '12Q'"), ("1G:1M", "need MIN <= MAX"), ("1M:1G:1", "factor must be a whole number"),
    ("1:2:3:4", "use MIN:MAX or MIN:MAX:FACTOR"), ("", "give a list"), ("0.3", "not a whole number of bytes"),
    (",".join(["1M"] * 65), "at most 64"),
])
def test_bad_size_syntax_is_refused(text, message):
    with pytest.raises(UsageError, match=message):
        parse_sizes(text)
    assert parse_size("1.5K") == 1536


def test_table_has_the_nccl_tests_columns_one_row_per_size_and_the_hottest_links(capsys):
    code, out, err = run(capsys, "collective", "--preset", "demo-256", "--gpus", "64", "--sizes", "1M,64M,1G",
                         "--placement", "random", "--seed", "2")
    assert code == 0
    lines = out.splitlines()
    header = next(line for line in lines if "algbw" in line)
    for col in ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "norm"):
        assert col in header
    rows = [line.split() for line in lines if not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [1 << 20, 64 << 20, 1 << 30]
    assert all(r[2] == "float" and r[3] == "none" and r[4] == "-1" for r in rows)
    assert int(rows[0][1]) == (1 << 20) // (4 * 64)                 # allgather count: elements per rank
    busbw = [float(r[7]) for r in rows]
    assert busbw == sorted(busbw)                                   # latency matters less as size grows
    assert any("Hottest links" in line for line in lines) and any("rtsw" in line for line in lines)
    assert "[sim] cluster demo-256" in err                          # progress on stderr


def test_json_holds_the_same_rows_for_machines(capsys):
    code, out, _ = run(capsys, "collective", "--preset", "demo-256", "-c", "all_reduce", "--algorithm", "tree",
                       "--gpus", "32", "--sizes", "8M,64M", "--json", "--quiet", "--routing", "pinned", "--qps", "4")
    assert code == 0
    doc = json.loads(out)
    assert doc["collective"] == "allreduce" and doc["algorithm"] == "tree" and doc["qps"] == 4
    assert [r["size"] for r in doc["rows"]] == [8 << 20, 64 << 20]
    row = doc["rows"][1]
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * 31 / 32)
    assert row["norm_busbw"] == pytest.approx(row["busbw_GBps"] / doc["roofline_GBps"])
    assert doc["hottest_links"] and "sample_flows" in doc["hottest_links"][0]
    assert doc["flow_rates_GBps"]["n"] > 0


def test_spec_file_and_links_array(capsys, tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text((ROOT / "sim/presets/demo-256.toml").read_text().replace('name = "demo-256"', 'name = "tiny"'))
    code, out, _ = run(capsys, "collective", "--spec", str(spec), "--gpus", "16", "--sizes", "1G", "--json", "-q",
                       "--links", "--flows", "--routing", "pinned")
    doc = json.loads(out)
    assert code == 0 and doc["cluster"] == "tiny" and len(doc["link_utilization"]) == 1152
    network = [f for f in doc["flows"] if f["src_gpu"] // 8 != f["dst_gpu"] // 8]
    assert len(network) == 16 and all(f["rate_GBps"] == pytest.approx(50.0) for f in network)
    assert all(len(f["links"]) == 2 for f in network)      # both hosts in one rack: NIC -> rtsw -> NIC


@pytest.mark.parametrize("argv, message", [
    (["--gpus", "999"], "asked for 999 GPUs but demo-256 has only 256 usable"),
    (["-c", "allscatter"], "unknown collective 'allscatter'"),
    (["--sizes", "12Q"], "bad size '12Q'"),
    (["--routing", "ospf"], "unknown routing 'ospf'"),
    (["--placement", "best"], "unknown placement 'best'"),
    (["--algorithm", "tree"], "tree algorithm is modelled for allreduce only"),
    (["--qps", "0"], "--qps must be at least 1"),
    (["--gpus", "1"], "--gpus must be at least 2"),
    (["-c", "alltoall", "--gpus", "2048", "--preset", "meta-roce-24k"], "more than the budget of 1,000,000"),
    (["--gpus", "notanumber"], "invalid int value"),
])
def test_impossible_requests_give_one_line_and_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) if argv[-1] == "notanumber" else _nothing():
        code, out, err = run(capsys, "collective", "--preset", "demo-256", "--sizes", "1M", *argv)
    if argv[-1] == "notanumber":
        err = capsys.readouterr().err
    else:
        assert code == 2 and out == ""
    assert message in err
    assert len(err.strip().splitlines()) == 1 or "[sim]" in err.splitlines()[0]
    assert "Traceback" not in err


def test_no_path_is_a_one_line_error(capsys, monkeypatch):
    def no_path(*args, **kwargs):
        raise NoPathError("3 of 8 flows (1 GPU pairs) have no active path; first: GPU 0 -> GPU 8")
    monkeypatch.setattr("sim.routing.route", no_path)
    code, out, err = run(capsys, "collective", "--preset", "demo-256", "--gpus", "16", "-q")
    assert code == 2 and err.strip().endswith("have no active path; first: GPU 0 -> GPU 8")


def test_unknown_preset_and_figure_are_refused(capsys):
    code, _, err = run(capsys, "collective", "--preset", "nope", "-q")
    assert code == 2 and "neither a preset" in err
    code, _, err = run(capsys, "figure", "nope", "--out", "/tmp/x", "-q")
    assert code == 2 and "unknown figure 'nope'" in err


def test_python_dash_m_sim_entry_point():
    proc = subprocess.run([sys.executable, "-m", "sim", "collective", "--preset", "demo-256", "--gpus", "16",
                           "--sizes", "1G", "--json", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ranks"] == 16
    proc = subprocess.run([sys.executable, "-m", "sim", "collective", "--preset", "demo-256", "--sizes", "x"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("python -m sim collective: error")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
