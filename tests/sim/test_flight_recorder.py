"""The flight recorder rehearsal (sim/debug/recorder.py; the fault syntax: sim/debug/faults.py): each injected fault
is named by the analyzer on a small cluster (right rank, right collective); a clean job has no culprit; bad faults
are refused naming ``inject``."""
import pickle

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.debug.dumpformat import DUMP_PREFIX
from sim.debug.faults import parse_fault
from sim.debug.recorder import rehearse
from sim.debug.analyze import analyze
from sim.debug.params import DEBUG

JOB = dict(gpus=64, tp=8, pp=2, dp=4, model="llama3-8b", batch_tokens=8192 * 4 * 8, entries=300)


def run(tmp_path, inject):
    r = rehearse("demo-256", DEBUG.validate({**JOB, "inject": inject}))
    r.write_dumps(tmp_path)
    return r, analyze(tmp_path, "demo-256")


def test_clean_job_has_no_culprit_and_dumps_pytorch_keys(tmp_path):
    r, a = run(tmp_path, None)
    assert a["culprit"] is None and a["verdict"] == "clean" and a["mismatches"] == []
    d = pickle.load(open(tmp_path / f"{DUMP_PREFIX}0", "rb"))
    assert d["version"] == "2.10" and len(d["entries"]) == 300
    e = d["entries"][-1]
    for k in ("record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
              "time_created_ns", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
              "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p"):
        assert k in e
    assert e["state"] == "completed" and e["profiling_name"].startswith("nccl:")


@pytest.mark.parametrize("inject,kind", [("hang:rank=13,op=1", "hang"), ("desync:rank=21", "desync"),
                                         ("desync:rank=42,what=op", "desync")])
def test_hang_and_desync_are_found_at_the_injected_collective(tmp_path, inject, kind):
    r, a = run(tmp_path, inject)
    c = a["culprit"]
    f = r.to_dict()["fault"]
    assert a["verdict"] == kind and c["ranks"] == [f["rank"]]
    assert c["process_group"]["name"] == f["process_group"] and c["collective_seq_id"] == f["collective_seq_id"]
    assert c["hosts"] and c["links"]


def test_dead_host_leaves_no_dumps_and_is_named(tmp_path):
    r, a = run(tmp_path, "host:rank=40")
    assert a["verdict"] == "missing" and a["culprit"]["ranks"] == list(range(40, 48))
    assert a["missing_dumps"] == list(range(40, 48))
    assert a["culprit"]["hosts"] == ["demo-256.z00.r002.h1"]


def test_slow_gpu_tops_the_straggler_ranking(tmp_path):
    r, a = run(tmp_path, "slow:rank=5,factor=3")
    assert a["culprit"] is None and a["verdict"] == "slow"
    assert a["stragglers"]["ranks"][0]["rank"] == 5
    assert a["stragglers"]["process_groups"][0]["slowest_rank"] == 5


def test_degraded_link_slows_the_groups_crossing_it(tmp_path):
    r, a = run(tmp_path, "link:id=3,factor=8")
    clean = rehearse("demo-256", DEBUG.validate({**JOB, "inject": None}))
    assert r.step_time > clean.step_time
    top = a["stragglers"]["process_groups"][0]
    assert top["desc"] == "dp" and top["excess_s"] > 0


def test_bad_faults_name_the_field():
    for text in ("boom:rank=1", "hang:rank=x", "slow:rank=1,factor=0.5", "hang:rank=1,foo=2"):
        with pytest.raises(ParamError) as e:
            parse_fault(text)
        assert "inject" in e.value.errors
    with pytest.raises(ParamError) as e:
        DEBUG.validate({**JOB, "inject": "hang:rank=64"})
    assert "inject" in e.value.errors


# The hang at the scale (16,384 ranks); the desync, whose finding does not depend on the scale, on a quarter.
@pytest.mark.parametrize("gpus,inject,kind", [(16384, "hang:rank=12345,op=1", "hang"),
                                              (4096, "desync:rank=3000", "desync")])
def test_at_scale_the_injected_rank_and_collective_are_found(tmp_path, gpus, inject, kind):
    # given Llama 3 405B's layout on thousands of GPUs of meta-roce-24k, each rank's ring cut to its last 20 entries
    # (the full 2,000 entries at 16,384 ranks, 4.8 GB of dumps, are bench/bench_debug.py's)
    r = rehearse("meta-roce-24k", DEBUG.validate(dict(gpus=gpus, tp=8, pp=16, dp=gpus // 128, model="llama3-405b",
                                                      entries=20, inject=inject)))
    r.write_dumps(tmp_path)
    # when the 16,384 dumps are analyzed
    a = analyze(tmp_path, "meta-roce-24k")
    # then the culprit is the injected rank, at the injected collective of its process group
    c, f = a["culprit"], r.to_dict()["fault"]
    assert a["verdict"] == kind and c["ranks"] == [f["rank"]]
    assert c["process_group"]["name"] == f["process_group"] and c["collective_seq_id"] == f["collective_seq_id"]
    assert a["heatmap"]["level"] == "host"


# ------------------------------------------------------------------------------------- the fault syntax, parsed once
def test_a_repeated_key_is_refused_naming_inject():
    for text in ("hang:rank=1,rank=2", "slow:rank=1,factor=2,factor=3", "desync:rank=1,WHAT=op,what=size",
                 "hang:rank=1,gpu=demo-256.z00.r000.h0.gpu0"):
        with pytest.raises(ParamError) as e:
            parse_fault(text)
        assert "inject" in e.value.errors
    with pytest.raises(ParamError, match="rank is given twice"):
        DEBUG.validate({**JOB, "inject": "hang:rank=1,rank=2"})


def test_an_op_out_of_range_is_refused_naming_inject():
    # past any step (the parser alone), and past the last collective of a step on the rank's stage (the job's check)
    for text in ("hang:rank=1,op=99999999999", "host:rank=1,op=99999999999999999999999"):
        with pytest.raises(ParamError, match="op .* is out of range") as e:
            parse_fault(text)
        assert "inject" in e.value.errors
    with pytest.raises(ParamError, match="op 100000 is past the last collective") as e:
        DEBUG.validate({**JOB, "inject": "hang:rank=13,op=100000"})
    assert "inject" in e.value.errors


@pytest.mark.parametrize("inject, says", [("hang:rank=1,rank=2", "rank is given twice"),
                                          ("hang:rank=1,op=99999999999", "out of range"),
                                          ("desync:rank=13,op=100000", "is past the last collective")])
def test_the_cli_refuses_a_bad_fault_with_exit_2_naming_inject(capsys, tmp_path, inject, says):
    from sim.cli import main
    argv = ["debug", "--preset", "demo-256", "--gpus", "64", "--tp", "8", "--pp", "2", "--model", "llama3-8b",
            "--batch-tokens", str(JOB["batch_tokens"]), "--dump", str(tmp_path / "dumps"), "--inject", inject, "-q"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("python -m sim debug: error: inject: ") and says in err
    assert not (tmp_path / "dumps").exists()


def test_a_fault_may_name_the_clusters_items_and_reads_back_as_its_text():
    from sim.debug.cluster import load_cluster
    from sim.debug.faults import resolve_fault
    topo, _ = load_cluster("demo-256")
    gpus = np.arange(64) + 8                                 # ranks on GPUs 8.. (host 1 holds ranks 0..7)
    f = parse_fault("hang:host=demo-256.z00.r000.h1,op=3")
    assert f.names() == {"host": "demo-256.z00.r000.h1"} and f.rank == -1
    assert resolve_fault(f, topo, gpus).text() == "hang:rank=0,op=3"
    f = resolve_fault(parse_fault("desync:gpu=demo-256.z00.r001.h0.gpu5,what=op"), topo, gpus)
    assert (f.rank, f.what, f.text()) == (13, "op", "desync:rank=13,what=op")
    for text in ("slow:rank=5,factor=3", "link:id=3,factor=inf", "link:id=12,factor=2.5", "slow:rank=1,factor=1e+300",
                 "hang:rank=7", "none"):
        assert parse_fault(text).text() == text and parse_fault(parse_fault(text).text()) == parse_fault(text)
    for text, says in (("hang:gpu=demo-256.z09.r000.h0.gpu0", "has no gpu named"), ("slow:host=nowhere", "has no "
                       "host named"), ("link:id=not-a-link", "has no link named"),
                       ("hang:host=demo-256.z00.r000.h0", "holds no rank of the job")):
        with pytest.raises(ParamError, match=says):
            resolve_fault(parse_fault(text), topo, gpus)


def test_a_named_host_is_rehearsed_as_its_first_rank(tmp_path):
    r, a = run(tmp_path, "host:host=demo-256.z00.r002.h1")
    assert r.fault.rank == 40 and a["verdict"] == "missing" and a["culprit"]["ranks"] == list(range(40, 48))
