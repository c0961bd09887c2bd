"""The ``calibrate`` run kind end to end: REST -> Redis -> a real Celery worker -> database -> REST, on demo-256 as
the inventory holds it; and its refusals at submit. Given / when / then."""
import json

import pytest

from sim.calibrate.entry import run_calibrate
from sim.fabric.topology import topology_from_layout
from sim.jobs.entry import run_job
from sim.jobs.params import JOB
from sim.jobs.step import GEMM_EFFICIENCY
from tests.runs.test_runs import finished
from tests.sim.nccl_logs import log as raw_log
from tests.sim.test_calibrate import JOBS, TRUE_GEMM
from twin.inventory.adapter import layout_from_db
from twin.runs.models import SimulationRun


def job_file(cluster) -> str:
    """Three job step times the twin computes on ``cluster`` (as the database holds it) with gemm_efficiency 0.6."""
    topo = topology_from_layout(layout_from_db(cluster))
    entries = [{"kind": "job", "name": f"j{i}", "params": p,
                "step_time_s": run_job(topo, JOB.validate({**p, "gemm_efficiency": TRUE_GEMM})).result.step_time}
               for i, p in enumerate(JOBS)]
    return json.dumps({"entry": entries})


def start(client, params):
    return client.post("/api/runs/", {"kind": "calibrate", "cluster": "demo-256", "params": params}, format="json")


@pytest.mark.django_db(transaction=True)
def test_a_calibrate_run_recovers_gemm_efficiency_with_the_command_line_s_summary(workers, runner, demo):
    # given three job step times the twin gives on demo-256 with gemm_efficiency 0.6 (not the default)
    assert GEMM_EFFICIENCY != TRUE_GEMM
    text = job_file(demo)
    # when a calibrate run fitting gemm_efficiency is started over REST
    r = start(runner, {"measurements": text, "fit": "gemm_efficiency"})
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    # then a worker fits it back to within 1 %, with its 95 % interval around it
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    p = s["parameters"]["gemm_efficiency"]
    assert p["value"] == pytest.approx(TRUE_GEMM, rel=0.01) and p["identifiable"]
    assert p["low"] <= p["value"] <= p["high"]
    assert s["after"]["job"]["worst_abs_error"] < 0.01 < s["before"]["job"]["median_abs_error"]
    # and its summary has the shape `python -m sim calibrate --json` prints (the engine's own document)
    cli = run_calibrate(topology_from_layout(layout_from_db(demo)),
                        {"measurements": text, "fit": "gemm_efficiency"}).to_dict()
    assert set(s) == set(cli) and s["fit"] == cli["fit"] == ["gemm_efficiency"]
    assert [set(e) for e in s["entries"]] == [set(e) for e in cli["entries"]] and len(s["entries"]) == len(JOBS)
    assert set(p) == set(cli["parameters"]["gemm_efficiency"]) and set(s["before"]) == set(cli["before"])
    assert p["value"] == pytest.approx(cli["parameters"]["gemm_efficiency"]["value"], rel=1e-9)
    # and its headline is the median |error| before and after
    figures = {h["key"]: h["value"] for h in run["headline"]}
    assert figures == {"error_before": s["before"]["all"]["median_abs_error"],
                       "error_after": s["after"]["all"]["median_abs_error"],
                       "error_held_out": s["holdout"]["median_abs_error"]}
    # and the live progress reached the end
    assert SimulationRun.objects.get(pk=run["id"]).progress == pytest.approx(100.0)


BAD = [
    ('[[entry]]\nkind = "job"\nstep_time_s = -1\n[entry.params]\nmodel = "llama3-8b"\ngpus = 16\n',
     "measurements", "entry[0].step_time_s"),
    ('[[entry]]\nkind = "nope"\n', "measurements", "entry[0].kind"),
    ("not toml = ", "measurements", "neither JSON"),
    ('[[entry]]\nkind = "job"\nstep_time_s = 1\n[entry.params]\nmodel = "llama3-8b"\ngpus = 4096\n',
     "measurements", "entry[0].gpus"),          # more GPUs than demo-256 has: the job kind's check on the cluster
]


@pytest.mark.django_db
@pytest.mark.parametrize("text,field,names", BAD)
def test_bad_measurements_are_a_400_naming_the_field_and_the_entry(runner, demo, text, field, names):
    r = start(runner, {"measurements": text})
    assert r.status_code == 400, r.json()
    assert field in r.json()["params"] and names in str(r.json()["params"][field]), r.json()
    assert not SimulationRun.objects.exists()                       # nothing queued


@pytest.mark.django_db
def test_a_name_that_is_not_fittable_is_a_400_naming_fit(runner, demo):
    r = start(runner, {"measurements": job_file(demo), "fit": "gemm_efficiency,model"})
    assert r.status_code == 400 and "fit" in r.json()["params"], r.json()
    assert not SimulationRun.objects.exists()


COLLECTIVE_ENTRY = ('[[entry]]\nkind = "collective"\nname = "{name}"\nbusbw_gbps = 100.0\n{cluster}'
                    '[entry.params]\ncollective = "allreduce"\ngpus = {gpus}\nsizes = "1G"\n')


@pytest.mark.django_db
def test_a_collective_entry_is_checked_on_the_run_s_cluster_unless_it_names_its_own_preset(runner, demo):
    # an entry on its own preset (4,096 GPUs, more than demo-256 has) is not checked against the run's cluster
    own = COLLECTIVE_ENTRY.format(name="there", cluster='cluster = "dgx-h100-superpod"\n', gpus=2048)
    here = COLLECTIVE_ENTRY.format(name="here", cluster="", gpus=16)
    power = ('[[entry]]\nkind = "power"\ngpu_mean_w = 600.0\n[entry.params]\nmodel = "llama3-8b"\ngpus = 64\n'
             'pp = 1\n')
    r = start(runner, {"measurements": here + own + power, "folds": 2})
    assert r.status_code == 201, r.json()
    # the same entry on the run's cluster is: a 400 naming it, nothing more queued
    r = start(runner, {"measurements": COLLECTIVE_ENTRY.format(name="big", cluster="", gpus=2048)})
    assert r.status_code == 400 and "entry[0].gpus" in str(r.json()["params"]["measurements"]), r.json()
    # holdout and folds together are refused naming folds
    r = start(runner, {"measurements": here, "holdout": 0.3, "folds": 3})
    assert r.status_code == 400 and "folds" in r.json()["params"], r.json()
    assert SimulationRun.objects.count() == 1


# ------------------------------------------------------------------------------------ raw nccl-tests output
HOSTS = "demo-256.z00.r000.h0 slots=8\ndemo-256.z00.r001.h0 slots=8\n"
SIZES = (1 << 20, 8 << 20, 64 << 20)


@pytest.mark.django_db(transaction=True)
def test_a_calibrate_run_from_raw_nccl_tests_logs_pasted_whole(workers, runner, demo):
    # given two logs pasted one after the other as nccl-tests printed them (the second an older layout)
    text = raw_log("all_reduce_perf", SIZES) + raw_log("all_gather_perf", SIZES[:2], layout="noroot")
    # when a calibrate run is started over REST with the measurements as given, on the hosts they ran on
    r = start(runner, {"measurements": text, "hosts": HOSTS, "fit": "base_rtt_us", "folds": 2})
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    # then each log is an entry of its own collective, one observation per row, predicted on the given hosts
    assert run["status"] == "succeeded", run["error"]
    entries = run["summary"]["entries"]
    second = len(raw_log("all_reduce_perf", SIZES).splitlines()) + 1
    assert [e["name"] for e in entries] == ["all_reduce_perf line 1"] * 3 + [f"all_gather_perf line {second}"] * 2
    assert all(e["before"]["predicted"] > 0 for e in entries)


@pytest.mark.django_db
@pytest.mark.parametrize("text, hosts, field, words", [
    ("\n".join(raw_log().splitlines()[:-4]) + "\n", None, "measurements", "line 28: truncated after line 28"),
    (raw_log() + raw_log("sendrecv_perf"), None, "measurements", "line 34: sendrecv_perf"),
    (raw_log(gpu="NVIDIA A100-SXM4-80GB"), None, "measurements",
     "line 6: the log ran on 'NVIDIA A100-SXM4-80GB' (a100-sxm-80gb in the catalog) but demo-256's GPUs are "
     "h100-sxm-80gb"),
    (raw_log(layout="bare", rank_section=False).replace("mpirun -np 16 ", ""), None, "hosts",
     "does not say how many ranks ran"),
    ('[[entry]]\nkind = "job"\nstep_time_s = 1\n[entry.params]\nmodel = "llama3-8b"\ngpus = 16\n',
     HOSTS, "hosts", "is for raw nccl-tests output"),
])
def test_bad_raw_logs_are_a_400_naming_the_field_and_the_line(runner, demo, text, hosts, field, words):
    r = start(runner, {"measurements": text, **({"hosts": hosts} if hosts else {})})
    assert r.status_code == 400, r.json()
    assert field in r.json()["params"] and words in str(r.json()["params"][field]), r.json()
    assert not SimulationRun.objects.exists()


@pytest.mark.django_db
def test_raw_logs_on_hosts_of_another_count_or_unknown_hosts_are_a_400_naming_hosts(runner, demo):
    r = start(runner, {"measurements": raw_log(), "hosts": HOSTS.splitlines()[0]})
    assert r.status_code == 400, r.json()
    assert "the log from line 1: lists 8 ranks but the log's Rank lines 16" in str(r.json()["params"]["hosts"])
    r = start(runner, {"measurements": raw_log(), "hosts": "node0001 slots=8\nnode0002 slots=8\n"})
    assert r.status_code == 400 and "line 1" in str(r.json()["params"]["hosts"]), r.json()
    assert not SimulationRun.objects.exists()
