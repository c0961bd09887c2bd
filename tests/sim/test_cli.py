"""``python -m sim collective`` (contract): the nccl-tests table, --json, --seeds, size syntax, progress on stderr
and one-line errors with exit status 2 for everything it refuses."""
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
    assert "cluster demo-256" in err and "100.0 %" in err          # progress on stderr, ending at 100 %


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
    (["-c", "allscatter"], "collective: unknown value 'allscatter'"),
    (["--sizes", "12Q"], "sizes: bad size '12Q'"),
    (["--routing", "ospf"], "routing: unknown value 'ospf'"),
    (["--placement", "best"], "placement: unknown value 'best'"),
    (["--algorithm", "tree"], "algorithm: tree is for allreduce only"),
    (["--qps", "0"], "qps: must be at least 1"),
    (["--gpus", "1"], "gpus: must be at least 2"),
    (["-c", "alltoall", "--gpus", "2048", "--preset", "meta-roce-24k"], "more than the budget of 1,000,000"),
    (["--gpus", "notanumber"], "gpus: must be a whole number, got 'notanumber'"),
])
def test_impossible_requests_give_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, "collective", "--preset", "demo-256", "--sizes", "1M", "-q", *argv)
    assert code == 2 and out == ""
    assert err.startswith("python -m sim collective: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _deep_json(tmp):
    path = tmp / "deep.json"
    path.write_text('{"name": "deep", "layout": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return str(path)


def _deep_toml(tmp):
    path = tmp / "deep.toml"
    path.write_text("name = 'deep'\nlayout = " + "[" * 100_000 + "]" * 100_000 + "\n")
    return str(path)


def _nested_json(tmp):
    path = tmp / "nested.json"
    path.write_text('{"name": "deep", "layout": ' + "[" * 50 + "]" * 50 + "}")
    return str(path)


def _not_a_folder(tmp):
    path = tmp / "a-file"
    path.write_text("a file, not a folder")
    return str(path / "figures")


# What the command line refuses: (arguments, with {tmp} files made by the helper, what the one line says).
REFUSED = [
    (["collective", "--qps", "1000000000"], "qps: must be at most 128"),
    (["collective", "--seed", "-1"], "seed: must be at least 0"),
    (["collective", "--seed", "1180591620717411303424"], "seed: must be at most 4,294,967,295"),
    (["collective", "--sizes", "0"], "sizes: bad size '0': must be from 1 byte to 1T"),
    (["collective", "--channels", "0"], "channels: must be at least 1"),
    (["collective", "--base-rtt-us", "-5"], "base_rtt_us: must be at least 0"),
    (["collective", "--base-rtt-us", "nan"], "base_rtt_us: must be a finite number, got 'nan'"),
    (["collective", "--base-rtt-us", "inf"], "base_rtt_us: must be a finite number, got 'inf'"),
    (["collective", "--hottest", "-1"], "hottest: must be at least 0"),
    (["collective", "--seeds", "0"], "seeds: must be at least 1"),
    (["collective", "--preset", "nope"], "spec: 'nope' is neither a preset"),
    (["collective", "--spec", _deep_json], "cannot be parsed: nested too deeply"),
    (["collective", "--spec", _deep_toml], "cannot be parsed: nested too deeply"),
    (["collective", "--spec", _nested_json], "is nested more than 16 tables or lists deep (field layout)"),
    (["figure", "allgather-scale", "--out", _not_a_folder], "cannot write to"),
    (["figure", "allgather-scale", "--out", "{tmp}", "--seeds", "17"], "seeds: must be at most 16"),
    (["figure", "allgather-scale", "--out", "{tmp}", "--jobs", "1,64"], "jobs: must be at least 2"),
    (["figure", "allgather-scale", "--out", "{tmp}", "--size", "0"], "size: bad size '0'"),
    (["figure", "nope", "--out", "{tmp}"], "unknown figure 'nope'"),
    (["checkpoint", "--preset", "demo-256", "--bytes-per-gpu=-4G"], "bytes_per_gpu: bad size '-4G'"),
    (["checkpoint", "--preset", "demo-256", "--bytes-per-gpu", "2T"], "bytes_per_gpu: bad size '2T'"),
    (["checkpoint", "--preset", "demo-256", "--servers", "0"], "servers: must be at least 1"),
    (["checkpoint", "--preset", "demo-256", "--gpus", "8", "--servers", "9"],
     "servers: asked for 9 servers but tectonic has only 8 usable"),
    (["checkpoint", "--preset", "demo-256", "--store", "lustre"], "store: unknown value 'lustre'"),
    (["checkpoint", "--preset", "demo-256", "--gpus", "257"], "gpus: asked for 257 GPUs but the cluster has only 256"),
    (["checkpoint", "--preset", "demo-256", "--gpus", "8", "--writers", "9"], "writers: must be at most gpus (8)"),
    (["checkpoint", "--preset", "demo-256", "--data-loading-gbps", "-1"], "data_loading_gbps: must be at least 0"),
    (["checkpoint", "--preset", "demo-256", "--mode", "lazy"], "mode: unknown value 'lazy'"),
    (["storage-fanout", "--preset", "demo-256", "--clients", "0"], "clients: must be at least 1"),
    (["storage-fanout", "--preset", "demo-256", "--clients", "100000"], "clients: 100,000 clients at 8 per host"),
    (["storage-fanout", "--preset", "demo-256", "--store", "nfs"], "store: unknown value 'nfs'"),
    (["storage-fanout", "--preset", "demo-256", "--file-size", "0"], "file_size: bad size '0'"),
]


@pytest.mark.parametrize("argv, message", REFUSED,
                         ids=[" ".join(getattr(a, "__name__", a) for a in argv[:4]) for argv, _ in REFUSED])
def test_refused_input_ends_with_exit_2_and_one_line(capsys, tmp_path, argv, message):
    argv = [a(tmp_path) if callable(a) else a.format(tmp=tmp_path) for a in argv]
    code, out, err = run(capsys, *argv, "--quiet")
    assert code == 2 and out == ""
    assert err.startswith(f"python -m sim {argv[0]}: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("*.png"))                          # nothing simulated, nothing written


def test_no_path_is_a_one_line_error(capsys, monkeypatch):
    def no_path(*args, **kwargs):
        raise NoPathError("3 of 8 flows (1 GPU pairs) have no active path; first: GPU 0 -> GPU 8")
    monkeypatch.setattr("sim.routing.route", no_path)
    code, out, err = run(capsys, "collective", "--preset", "demo-256", "--gpus", "16", "-q")
    assert code == 2 and err.strip().endswith("have no active path; first: GPU 0 -> GPU 8")


def test_python_dash_m_sim_entry_point():
    proc = subprocess.run([sys.executable, "-m", "sim", "collective", "--preset", "demo-256", "--gpus", "16",
                           "--sizes", "1G", "--json", "-q"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ranks"] == 16
    proc = subprocess.run([sys.executable, "-m", "sim", "collective", "--preset", "demo-256", "--sizes", "x"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].startswith("python -m sim collective: error")



def test_seeds_give_the_median_run_and_the_spread(capsys):
    argv = ["collective", "--preset", "demo-256", "--gpus", "64", "--sizes", "1G", "--placement", "random",
            "--seed", "3", "--seeds", "4", "-q"]
    code, out, _ = run(capsys, *argv, "--json")
    doc = json.loads(out)
    per_seed = doc["seeds"]["per_seed"]
    norms = [s["norm_busbw"] for s in per_seed]
    assert code == 0 and [s["seed"] for s in per_seed] == [3, 4, 5, 6]
    stats = doc["seeds"]["stats"]["norm_busbw"]
    assert stats["min"] == min(norms) and stats["max"] == max(norms)
    assert sorted(norms)[1] == stats["median"] == doc["rows"][-1]["norm_busbw"]     # the table is the median run's
    assert doc["seed"] == doc["seeds"]["median_seed"]
    code, out, _ = run(capsys, *argv)
    spread = next(line for line in out.splitlines() if line.startswith("# Seeds 3..6 (4 runs)"))
    assert f"median {100 * stats['median']:.1f} %" in spread and f"max {100 * stats['max']:.1f} %" in spread
    row = [line.split() for line in out.splitlines() if not line.startswith("#")][-1]
    assert float(row[-1]) == pytest.approx(100 * stats["median"], abs=0.05)


def test_the_bar_shows_the_engine_fractions_and_quiet_silences_it(capsys):
    code, _, err = run(capsys, "collective", "--preset", "demo-256", "--gpus", "32", "--sizes", "1G")
    shown = [float(line.split("]")[1].split("%")[0]) for line in err.splitlines()]
    assert code == 0 and shown == sorted(shown) and shown[0] == 0.0 and shown[-1] == 100.0
    assert len(set(shown)) > 2
    code, _, err = run(capsys, "collective", "--preset", "demo-256", "--gpus", "32", "--sizes", "1G", "-q")
    assert code == 0 and err == ""


def test_the_cli_is_a_leaf_nothing_in_the_engine_imports():
    import ast
    importers = {}
    for path in sorted((ROOT / "sim").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                importers.setdefault(name, set()).add(path.stem)
    assert importers.get("sim.cli", set()) <= {"__main__"}
    assert "figures" not in importers.get("sim.params", set())   # params imports figures, never the reverse


def test_checkpoint_summary_and_json(capsys):
    code, out, err = run(capsys, "checkpoint", "--preset", "demo-256", "--gpus", "64", "--bytes-per-gpu", "256M",
                         "--store", "tectonic", "--mode", "sync")
    assert code == 0
    for word in ("blocked", "durable", "peak rate", "mean rate", "bottleneck", "TB/s"):
        assert word in out
    assert "100.0 %" in err
    code, out, _ = run(capsys, "checkpoint", "--preset", "demo-256", "--gpus", "64", "--bytes-per-gpu", "256M",
                       "--mode", "async", "--restore", "--json", "--series", "--quiet")
    doc = json.loads(out)
    assert code == 0 and doc["restore"] and doc["blocked_seconds"] == doc["durable_seconds"] > 0
    assert doc["bytes"] == 64 * (256 << 20) and "series" in doc and "link_utilization" in doc


def test_storage_fanout_table(capsys):
    code, out, _ = run(capsys, "storage-fanout", "--preset", "demo-256", "--store", "hammerspace", "--clients",
                       "256", "--quiet")
    assert code == 0 and "metadata" in out and "256" in out
    code, out, _ = run(capsys, "storage-fanout", "--preset", "demo-256", "--clients", "64", "--json", "--quiet")
    assert json.loads(out)["clients"] == 64
