"""``python -m sim collective`` (contract): the nccl-tests table, --json, --seeds, size syntax, progress on stderr
and one-line errors with exit status 2 for everything it refuses."""
import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

import sim.core.units
from sim.cli import main
from sim.core.errors import UsageError
from sim.core.units import parse_size, parse_sizes
from sim.fabric.achievable import framing
from sim.fabric.paths import NoPathError

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_doctests():
    assert doctest.testmod(sim.core.units).failed == 0


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
                       "--links", "--flows", "--routing", "pinned", "--qps", "1")
    doc = json.loads(out)
    assert code == 0 and doc["cluster"] == "tiny" and len(doc["link_utilization"]) == 1152
    network = [f for f in doc["flows"] if f["src_gpu"] // 8 != f["dst_gpu"] // 8]
    # 16 channels: two per 400G NIC, each half its payload rate (RoCEv2 framing at a 4 KiB MTU)
    assert len(network) == 32 and all(f["rate_GBps"] == pytest.approx(25.0 * framing("roce")) for f in network)
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


def _jobs(tmp, name, jobs):
    path = tmp / name
    path.write_text(json.dumps(jobs))
    return str(path)


def _bad_jobs(tmp):
    return _jobs(tmp, "bad.json", [{"model": "llama3-8b", "gpus": 8, "steps": 10},
                                   {"model": "llama3-8b", "gpus": 24, "tp": 3, "steps": 10}])


def _no_steps(tmp):
    return _jobs(tmp, "nosteps.json", [{"model": "llama3-8b", "gpus": 8}])


def _big_job(tmp):
    return _jobs(tmp, "big.json", [{"model": "llama3-8b", "gpus": 512, "steps": 1}])


def _two_halves(tmp):
    return _jobs(tmp, "halves.json", [{"model": "llama3-8b", "gpus": 192, "batch_tokens": "384K"}, {"model": "llama3-8b", "gpus": 128}])


def _too_many(tmp):
    return _jobs(tmp, "many.json", [{"model": "llama3-8b", "gpus": 1, "tp": 1}] * 65)


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


def _file(name: str, text: str):
    """A helper that writes ``text`` to ``name`` in the test's folder and gives its path (named for the test id)."""
    def make(tmp):
        path = tmp / name
        path.write_text(text)
        return str(path)
    make.__name__ = name
    return make


def _big_file(tmp):
    from sim.fabric.hostlist import MAX_LIST_BYTES
    path = tmp / "big.txt"
    path.write_text("#" * (MAX_LIST_BYTES + 1))
    return str(path)


DEMO = ["collective", "--preset", "demo-256"]
# What the command line refuses: (arguments, with {tmp} files made by the helper, what the one line says).
REFUSED = [
    (DEMO + ["--hostfile", _file("unknown.txt", "z00.r000.h0\n\nnohost\n")],
     "unknown.txt, line 3: unknown host 'nohost': demo-256 has no such host (names look like "
     "'demo-256.z00.r000.h0')"),
    (DEMO + ["--hostfile", _file("twice.txt", "z00.r000.h0\ndemo-256.z00.r000.h0\n")],
     "twice.txt, line 2: host 'demo-256.z00.r000.h0' is listed twice (first on line 1)"),
    (DEMO + ["--hostfile", _file("slots.txt", "z00.r000.h0 slots=9\n")],
     "slots.txt, line 1: asks for 9 slots but host 'z00.r000.h0' has 8 GPUs"),
    (DEMO + ["--hostfile", _file("colon.txt", "z00.r000.h0:x\n")],
     "colon.txt, line 1: slots must be a whole number of at least 1, got 'x'"),
    (DEMO + ["--hostfile", _file("word.txt", "z00.r000.h0 cpus=4\n")], "word.txt, line 1: 'cpus=4' is not understood"),
    (DEMO + ["--hostfile", _file("empty.txt", "# nothing\n\n")], "empty.txt: holds no entry"),
    (DEMO + ["--hostfile", _file("few.txt", "z00.r000.h0\n"), "--gpus", "9"],
     "few.txt: gives 8 ranks, fewer than the 9 GPUs asked"),
    (DEMO + ["--hostfile", _big_file], "big.txt: must be at most 4,194,304 characters, the file has 4,194,305 bytes"),
    (DEMO + ["--hostfile", "{tmp}/missing.txt"], "missing.txt: is not a file"),
    (DEMO + ["--hostfile", _file("h.txt", "z00.r000.h0\n"), "--placement", "random"],
     "placement: a host or GPU list (hosts) places the job"),
    (DEMO + ["--placement", "given"], "placement: given needs a host list (hosts) or a GPU list (gpu_list)"),
    (DEMO + ["--gpus-file", _file("dup.txt", "3\nz00.r000.h0:3\n")],
     "dup.txt, line 2: 'z00.r000.h0:3' is GPU 3, already given on line 1"),
    (DEMO + ["--gpus-file", _file("range.txt", "0\n256\n")],
     "range.txt, line 2: GPU 256 is not one of the cluster's GPUs 0..255"),
    (DEMO + ["--gpus-file", _file("slot.txt", "0\nz00.r000.h1:8\n")],
     "slot.txt, line 2: host 'z00.r000.h1' has GPU slots 0..7, not '8'"),
    (DEMO + ["--gpus-file", _file("name.txt", "0\nz00.r000.h1.gpu9\n")],
     "name.txt, line 2: host 'z00.r000.h1' has GPU slots 0..7, not '9'"),
    (DEMO + ["--gpus-file", _file("what.txt", "0\nh1\n")], "what.txt, line 2: 'h1' is not a GPU"),
    (DEMO + ["--gpus-file", _file("one.txt", "0\n")], "one.txt: gives 1 rank: a collective needs at least 2"),
    (DEMO + ["--gpus-file", _file("root.txt", "0\n1\n"), "-c", "broadcast", "--root", "2"],
     "root: must be a rank of the job (below gpus, 2)"),
    (DEMO + ["--catalog", "{tmp}/none.toml"], "catalog: '{tmp}/none.toml' is not a file"),
    (DEMO + ["--catalog", _file("bad.toml", "[switch.x\n")], "bad.toml' cannot be parsed"),
    (DEMO + ["--catalog", _file("kind.toml", "[robot.x]\nvendor = 'a'\nname = 'b'\n")],
     "catalog: 'robot' is not a hardware kind"),
    (DEMO + ["--catalog", _file("ports.toml", "[switch.x]\nvendor = 'a'\nname = 'b'\nspeed_gbps = 400\n")],
     "catalog.switch.x.ports: None is required: a whole number of at least 1"),
    (DEMO + ["--catalog", _file("vendor.toml", "[cable.x]\nname = 'b'\nspeed_gbps = 400\n")],
     "catalog.cable.x.vendor: None is required: a non-empty string"),
    (DEMO + ["--catalog", _file("table.toml", "switch = 3\n")], "catalog.switch: 3 must be a table of models"),
    (DEMO + ["--catalog", _file("short.toml", "[gpu.h100-sxm-80gb]\nvendor = 'a'\nname = 'b'\nnvlink_gbps = 1\n")],
     "layout.host_platform: 'grand-teton' is not a platform model in the catalog"),
    (["collective", "--qps", "1000000000"], "qps: must be at most 128"),
    (["collective", "--seed", "-1"], "seed: must be at least 0"),
    (["collective", "--seed", "1180591620717411303424"], "seed: must be at most 4,294,967,295"),
    (["collective", "--sizes", "0"], "sizes: bad size '0': must be from 1 byte to 1T"),
    (["collective", "--channels", "0"], "channels: must be at least 1"),
    (["collective", "--min-channels", "65"], "min_channels: must be at most 64"),
    (["collective", "--max-channels", "0"], "max_channels: must be at least 1"),
    (["collective", "--channels", "8", "--max-channels", "4"], "channels: give channels, or min_channels"),
    (["collective", "--hash", "md5"], "hash: unknown value 'md5': choose one of uniform, crc32, crc16"),
    (["collective", "--udp-sport", "random"], "udp_sport: unknown value 'random': choose one of per_qp"),
    (["collective", "--base-rtt-us", "-5"], "base_rtt_us: must be at least 0"),
    (["collective", "--base-rtt-us", "nan"], "base_rtt_us: must be a finite number, got 'nan'"),
    (["collective", "--base-rtt-us", "inf"], "base_rtt_us: must be a finite number, got 'inf'"),
    (["collective", "--protocol", "LL64"], "protocol: unknown value 'LL64': choose one of auto, LL, LL128, Simple"),
    (["collective", "-c", "alltoall", "--protocol", "ll128"], "protocol: alltoall runs on NCCL's point-to-point"),
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
    (["figure", "allgather-scale", "--out", "{tmp}", "--hash", "xor"], "hash: unknown value 'xor'"),
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
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "2", "--dp", "2"],
     "gpus: tp x cp x pp x dp = 8 x 1 x 2 x 2 = 32, not gpus (64)"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "60", "--tp", "8"],
     "gpus: 60 GPUs are not divisible by tp x cp x pp = 8"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "48", "--tp", "3", "--dp", "16"],
     "tp: the model's 32 heads are not divisible by tp (3)"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--pp", "8", "--tp", "1",
      "--schedule", "interleaved", "--virtual-stages", "5", "--dp", "8", "--batch-tokens", "512K"],
     "pp: pp x virtual_stages = 40 chunks but the model has only 32 layers"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--batch-tokens", "100000"],
     "batch_tokens: 100,000 tokens do not split into micro-batches"),
    (["job", "--preset", "demo-256", "--model", "llama3-70b", "--gpus", "8", "--recompute", "none"],
     "pp: the job needs "),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "16", "--order", "tp,pp,dp"],
     "order: must name each of tp, cp, pp, dp once"),
    (["job", "--preset", "demo-256", "--model", "gpt5"], "model: unknown value 'gpt5'"),
    (["job", "--preset", "demo-256", "--model", "custom", "--gpus", "8", "--layers", "2", "--dim", "64",
      "--ffn-dim", "128", "--heads", "8"], "kv_heads: required for a custom model"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "16", "--cp", "2", "--seq", "8191",
      "--dp", "1"], "cp: seq (8,191) must be divisible by 2 x cp (4)"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "512"], "asked for 512 GPUs but only 256"),
    (["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "8", "--schedule", "1f1b",
      "--virtual-stages", "2"], "virtual_stages: 1f1b has one model chunk per stage"),
    (["schedule", "--preset", "demo-256", "--policy", "best"], "policy: unknown value 'best'"),
    (["schedule", "--preset", "demo-256", "--jobs", "{tmp}/missing.json"], "is not a file"),
    (["schedule", "--preset", "demo-256", "--jobs", _bad_jobs], "jobs[1].tp: the model's 32 heads"),
    (["schedule", "--preset", "demo-256", "--jobs", _no_steps], "jobs[0].steps: give steps or hours"),
    (["schedule", "--preset", "demo-256", "--jobs", _big_job], "asks for 512 GPUs but the cluster has 256"),
    (["jobs", "--preset", "demo-256", "--jobs", "{tmp}/missing.json"], "is not a file"),
    (["jobs", "--preset", "demo-256", "--jobs", _bad_jobs], "jobs[1].tp: the model's 32 heads"),
    (["jobs", "--preset", "demo-256", "--jobs", _too_many], "jobs: 65 jobs, at most 64"),
    (["jobs", "--preset", "demo-256", "--jobs", _two_halves], "job of 128 GPUs does not fit beside the others"),
    (["jobs", "--preset", "demo-256", "--jobs", _big_job], "asked for 512 GPUs but only 256"),
    (["jobs", "--preset", "demo-256", "--jobs", _no_steps, "--qps", "0"], "qps: must be at least 1"),
]


@pytest.mark.parametrize("argv, message", REFUSED,
                         ids=[" ".join(getattr(a, "__name__", a) for a in argv[:4]) for argv, _ in REFUSED])
def test_refused_input_ends_with_exit_2_and_one_line(capsys, tmp_path, argv, message):
    argv = [a(tmp_path) if callable(a) else a.format(tmp=tmp_path) for a in argv]
    message = message.format(tmp=tmp_path)
    code, out, err = run(capsys, *argv, "--quiet")
    assert code == 2 and out == ""
    assert err.startswith(f"python -m sim {argv[0]}: error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not list(tmp_path.glob("*.png"))                          # nothing simulated, nothing written


def test_no_path_is_a_one_line_error(capsys, monkeypatch):
    def no_path(*args, **kwargs):
        raise NoPathError("3 of 8 flows (1 GPU pairs) have no active path; first: GPU 0 -> GPU 8")
    monkeypatch.setattr("sim.fabric.flows.route", no_path)
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
    assert "figures" not in importers.get("sim.core.params", set())   # params imports figures, never the reverse


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
    # Published beside simulated (sim/storage/published.py): Tectonic's peak and sustained rates [S1, S3].
    assert {p["key"] for p in doc["published"]} == {"tectonic-peak", "tectonic-sustained"}
    assert all(p["source"] and p["why"] and p["simulated"] is not None for p in doc["published"])


def test_storage_fanout_table(capsys):
    code, out, _ = run(capsys, "storage-fanout", "--preset", "demo-256", "--store", "hammerspace", "--clients",
                       "256", "--quiet")
    assert code == 0 and "metadata" in out and "256" in out
    code, out, _ = run(capsys, "storage-fanout", "--preset", "demo-256", "--clients", "64", "--json", "--quiet")
    assert json.loads(out)["clients"] == 64


def test_job_table_and_json(capsys):
    argv = ["job", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--tp", "8", "--pp", "2",
            "--dp", "4", "--seq", "4096", "--batch-tokens", "256K", "--routing", "eecmp", "--qps", "4", "--quiet"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    assert "TP 8 x CP 1 x PP 2 x DP 4" in out and "bubble" in out and "MFU" in out
    code, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    b = d["breakdown"]
    assert code == 0 and d["layout"]["micro_batches"] == 16 and d["routing"] == "eecmp"
    assert b["step"] == pytest.approx(sum(b[k] for k in ("compute", "tp", "cp", "pp", "dp", "bubble", "optimizer")))
    assert b["compute"] == pytest.approx(sum(d["compute_parts"].values())) and d["gpu"]["slug"] == "h100-sxm-80gb"
    assert d["gpu"]["peak_tflops"] == 989 and d["gpu"]["clock_share"] == 1.0
    assert d["tokens_per_s"] == pytest.approx(256 * 1024 / b["step"])
    # the schedule as simulated, and the nearest published run (Llama 3 405B, Table 4 [S3]) beside the job's figures
    assert d["schedule"]["name"] == "1f1b" and len(d["schedule"]["stages"]) == 2
    pub = {x["unit"]: x for x in d["published"]}
    assert pub["TFLOP/s"]["simulated"] == pytest.approx(d["tflops_per_gpu"]) and pub["fraction"]["simulated"] == \
        pytest.approx(d["mfu"])
    assert all(x["source"] == "S3" and not x["same_case"] and "model llama3-8b" in x["differs"] and x["why"]
               for x in d["published"])


def test_schedule_table_and_json(capsys, tmp_path):
    jobs = tmp_path / "jobs.toml"
    jobs.write_text('[[job]]\nname = "a"\nmodel = "llama3-8b"\ngpus = 16\nsteps = 3\n'
                    '[[job]]\nname = "b"\nmodel = "llama3-8b"\ngpus = 256\nhours = 1\n')
    code, out, err = run(capsys, "schedule", "--preset", "demo-256", "--jobs", str(jobs), "--policy", "first-fit",
                         "--quiet")
    assert code == 0 and "policy first-fit" in out and "\n   a " in out
    code, out, _ = run(capsys, "schedule", "--preset", "demo-256", "--jobs", str(jobs), "--json", "--gpu-ids",
                       "--quiet")
    d = json.loads(out)
    a, b = d["jobs"]
    assert d["jobs_run"] == 2 and len(a["gpu_ids"]) == 16 and b["start"] == pytest.approx(a["end"])


def test_jobs_table_and_json(capsys, tmp_path):
    # demo-256 is 1:4 oversubscribed at the zone layer: two fragmented DDP jobs cross it together.
    job = {"model": "llama3-8b", "gpus": 64, "tp": 8, "batch_tokens": "512K", "placement": "fragmented",
           "fsdp": False, "overlap": False}
    path = _jobs(tmp_path, "two.json", [{**job, "name": "first"}, {**job, "name": "second", "seed": 1}])
    argv = ["jobs", "--preset", "demo-256", "--jobs", path, "--routing", "ecmp", "--qps", "2", "--quiet"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and err == ""
    assert "2 jobs sharing demo-256's fabric: 128 GPUs, routing ecmp, 2 QPs" in out
    assert "\n   first " in out and "\n   second " in out and "8 x 1 x 1 x 8" in out
    code, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert code == 0 and [j["name"] for j in d["jobs"]] == ["first", "second"] and d["gpus"] == 128
    for j in d["jobs"]:
        assert j["qps"] == 2 and j["routing"] == "ecmp"                       # the one fabric's options
        assert j["slowdown"] == pytest.approx(j["step_time"] / j["alone_step_time"])
    assert d["worst_slowdown"] == pytest.approx(max(j["slowdown"] for j in d["jobs"]) - 1) and d["worst_slowdown"] > 0


@pytest.mark.parametrize("argv, named", [
    (["collective", "--preset", ""], "--preset"),
    (["collective", "--routing", " "], "--routing"),
    (["collective", "--hostfile", ""], "--hostfile"),
    (["collective", "--gpus-file", ""], "--gpus-file"),
    (["failures", "--spec", ""], "--spec"),
    (["schedule", "--jobs", ""], "--jobs"),
    (["debug", "--dump", "", "--inject", "hang:rank=1"], "--dump"),
    (["debug", "--dump", "/tmp/x", "--inject", ""], "--inject"),
    (["debug", "analyze", ""], "DIR"),
])
def test_a_blank_option_is_refused_naming_it_not_read_as_the_default(capsys, argv, named):
    # a blank --preset used to run meta-roce-24k, a blank --routing the default routing, a blank --hostfile none
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"argument {named}: must not be blank" in err, err


def test_a_name_the_system_refuses_is_one_line_naming_it(capsys):
    code, out, err = run(capsys, "collective", "--preset", "a" * 5000, "-q")
    assert code == 2 and "File name too long" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300


@pytest.mark.parametrize("option", ["--hostfile", "--gpus-file"])
def test_a_list_file_that_lists_nothing_is_refused_not_read_as_no_list(capsys, tmp_path, option):
    empty = tmp_path / "hosts.txt"
    empty.write_text("")
    code, out, err = run(capsys, "collective", "--preset", "demo-256", "-q", option, str(empty))
    assert code == 2 and f"{empty}: holds no entry" in err
