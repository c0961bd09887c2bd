"""A run kind is one registered object: a kind registered by a test runs through REST and a real worker with no
other change; arrays keep the dtype their kind declares; progress is the engine's own share of the work; writes go
through actions; actions send tasks by name. Given / when / then."""
import asyncio
import json
import subprocess
import sys

import numpy as np
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from sim.fabric.params import COLLECTIVE, QPS
from sim.fabric.seeds import run_collective_seeds
from sim.fabric.topology import topology_from_layout
from tests.runs import echo_kind
from tests.runs.test_runs import finished
from twin.live import store
from twin.capabilities.collectives import kinds
from twin.runs import sweep
from twin.runs.actions import create_run
from twin.runs.models import RunArray, Scenario, SimulationRun


@pytest.mark.django_db(transaction=True)
def test_a_kind_registered_in_a_test_is_started_over_rest_and_run_by_a_worker(workers, runner, demo):
    # given the echo kind, registered by tests/runs/echo_kind.py only (no choices, no migration, no view code)
    assert echo_kind.KIND.name == "echo"
    # when a run of it is started over REST
    r = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": {"n": 5}}, format="json")
    assert r.status_code == 201, r.json()
    # then a worker runs it, and the API shows what the kind says of it
    run = finished(runner, r.json()["id"])
    assert run["status"] == "succeeded", run["error"]
    assert run["worker"] in workers.hostnames and run["progress"] == 100.0
    assert run["summary"] == {"steps": 5, "gpus": 256}
    assert run["params_text"] == "n 5" and run["view"] == "summary"
    assert run["headline"] == [{"key": "steps", "label": "steps", "format": "int", "value": 5}]
    # and its declared float64 array comes back exactly; an undeclared float array is float32, never float16
    arrays = runner.get(f"/api/runs/{run['id']}/results/").json()["arrays"]
    assert arrays["big"]["dtype"] == "<f8" and arrays["big"]["data"] == echo_kind.BIG.tolist()
    assert arrays["counts"]["dtype"] == "<f4" and arrays["counts"]["data"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    # and its parameters are refused as its declaration says, naming the field
    r = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": {"n": 51}}, format="json")
    assert r.status_code == 400 and r.json()["params"] == {"n": ["must be at most 50"]}
    # and a sweep of it merges by its headline figure
    r = runner.post("/api/runs/", {"kind": "sweep", "cluster": "demo-256",
                                   "params": {"kind": "echo", "params": {}, "sweep": {"n": [2, 4]}}}, format="json")
    sweep = finished(runner, r.json()["id"])
    assert sweep["status"] == "succeeded", sweep
    assert sweep["summary"]["succeeded"] == 2 and sweep["summary"]["best"]["steps"] == 4
    assert [x["value"] for x in sweep["headline"]] == [4]
    # and the list filters by it
    ids = {x["id"] for x in runner.get("/api/runs/?kind=echo").json()["results"]}
    assert run["id"] in ids and sweep["id"] not in ids


def test_an_unknown_kind_is_refused_naming_the_field(runner, demo):
    r = runner.post("/api/runs/", {"kind": "teleport", "cluster": "demo-256"}, format="json")
    assert r.status_code == 400 and "kind" in r.json()
    assert not SimulationRun.objects.exists()


def test_run_arrays_keep_the_dtype_their_kind_declares(demo):
    run = SimulationRun.objects.create(kind="collective", cluster=demo, params={})
    # a declared float64 array round-trips bit for bit, values past float32 and float16 included
    back = RunArray.pack(run, "big", echo_kind.BIG, "float64").unpack()
    assert back.dtype == np.float64 and np.array_equal(back, echo_kind.BIG)
    # undeclared floats: float32 when it holds them (70,000 is past float16's 65,504), float64 when it cannot
    assert np.array_equal(RunArray.pack(run, "a", np.array([70000.5, 1e-3])).unpack(),
                          np.array([70000.5, 1e-3], dtype=np.float32))
    for v in (1e300, 2.5e-310):
        assert RunArray.pack(run, "b", np.array([v])).unpack()[0] == v
    # float16 only where a kind asks for it (a utilization for a heatmap)
    assert kinds.LINK_ARRAYS["link_utilization"] == "float16"
    assert RunArray.pack(run, "u", np.array([0.25]), "float16").dtype == "<f2"


# ------------------------------------------------------------------------------------------ progress
def _record():
    seen = []

    def progress(fraction=None, message="", **arrays):
        if fraction is not None:
            seen.append(round(float(fraction), 9))
    return seen, progress


def test_a_single_seed_collective_reports_the_engines_progress_as_the_cli_does(demo):
    from twin.inventory.adapter import layout_from_db
    layout = layout_from_db(demo)
    params = COLLECTIVE.validate({"collective": "alltoall", "gpus": 128, "sizes": "1M:16M", "seeds": 1})
    # when the collective kind runs, and when the engine runs the same work as the CLI calls it
    seen, progress = _record()
    kinds.collective(layout, params, progress)
    engine, cli_bar = _record()
    run_collective_seeds(topology_from_layout(layout), params, cli_bar)
    # then the run reports the same fractions, including steps between 0 and 1 (not 0 % until done)
    assert [f for f in seen if f > 0] == [f for f in engine if f > 0]
    assert any(0 < f < 1 for f in seen), seen
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_fabric_health_reports_its_allgather_s_progress(demo):
    from twin.inventory.adapter import layout_from_db
    seen, progress = _record()
    from sim.fabric.params import FABRIC_HEALTH
    params = FABRIC_HEALTH.validate({"gpus": 64, "sizes": "1M:16M", "routing": None, "qps": 1, "seed": 0,
                                     "hottest": 3, "threshold": 0.5})
    summary, _ = kinds.fabric_health(layout_from_db(demo), params, progress)
    assert any(0 < f < 1 for f in seen), seen
    assert seen == sorted(seen) and seen[-1] == 1.0
    # and its figures have the collective's shape (one seed: median = min = max)
    n = summary["norm_busbw"]
    assert n["median"] == n["min"] == n["max"] == summary["rows"][-1]["norm_busbw"]


# --------------------------------------------------------------------------------------------- actions
def test_actions_send_tasks_by_name_without_importing_the_tasks_module():
    code = ("import django, sys; django.setup(); import twin.runs.actions; "
            "print('twin.runs.tasks' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "twin.settings"})
    assert out.stdout.strip() == "False", out.stderr


def test_deleting_a_run_cancels_deletes_and_tells_the_browsers(runner, demo, django_capture_on_commit_callbacks):
    # given a run and a listener on the run's and the cluster's stream groups of the real channel layer
    run = create_run("collective", {}, demo, enqueue=False)
    layer = get_channel_layer()
    streams = (store.run_stream(run.pk), store.cluster_stream(demo.pk))
    channel = async_to_sync(layer.new_channel)()
    for stream in streams:
        async_to_sync(layer.group_add)(store.group_name(stream), channel)
    # when it is deleted through the API
    with django_capture_on_commit_callbacks(execute=True):
        assert runner.delete(f"/api/runs/{run.pk}/").status_code == 204
    # then it is gone and each stream said so once
    assert not SimulationRun.objects.filter(pk=run.pk).exists()
    got = [json.loads(async_to_sync(asyncio.wait_for)(layer.receive(channel), 5)["text"]) for _ in streams]
    assert got == [{"type": "run_deleted", "run": run.pk}] * 2
    for stream in streams:
        async_to_sync(layer.group_discard)(store.group_name(stream), channel)


def test_scenarios_are_written_through_actions_that_validate(runner, demo):
    # a scenario is created, its parameters completed with the defaults
    r = runner.post("/api/runs/scenarios/", {"name": "ag", "cluster": demo.pk, "kind": "collective",
                                             "params": {"gpus": 32}}, format="json")
    assert r.status_code == 201, r.json()
    sid = r.json()["id"]
    assert r.json()["params"] == COLLECTIVE.validate({"gpus": 32})
    # an update with a bad parameter is refused naming it, and changes nothing
    r = runner.patch(f"/api/runs/scenarios/{sid}/", {"params": {"gpus": 32, "qps": 999}}, format="json")
    assert r.status_code == 400 and r.json()["params"] == {"qps": ["must be at most 128"]}
    assert Scenario.objects.get(pk=sid).params["qps"] == QPS.default
    # a good one is saved
    r = runner.patch(f"/api/runs/scenarios/{sid}/", {"params": {"gpus": 32, "qps": 4}}, format="json")
    assert r.status_code == 200 and Scenario.objects.get(pk=sid).params["qps"] == 4
    # deleting it deletes the schedules that start it
    assert runner.post("/api/runs/schedules/", {"name": "hourly", "scenario": sid,
                                                "interval": {"every": 1, "period": "hours"}},
                       format="json").status_code == 201
    assert runner.delete(f"/api/runs/scenarios/{sid}/").status_code == 204
    assert not Scenario.objects.filter(pk=sid).exists()
    assert runner.get("/api/runs/schedules/").json()["results"] == []


def test_a_sweep_counts_its_children_by_status_and_ranks_by_the_kind_s_best_figure():
    # figure summaries have no norm_busbw: they are counted by status and ranked by their own headline
    children = [{"id": i, "params": {"seeds": s}, "status": st, "worker": "w", "error": "",
                 "summary": None if st != "succeeded" else {"optimized_norm_busbw": {"median": m, "min": m,
                                                                                     "max": m}}}
                for i, (s, st, m) in enumerate([(1, "succeeded", 0.7), (2, "succeeded", 0.9), (3, "failed", 0)])]
    merged = sweep.merge_sweep({"kind": "figure", "sweep": {"seeds": [1, 2, 3]}}, children)
    assert (merged["succeeded"], merged["failed"], merged["cancelled"]) == (2, 1, 0)
    assert merged["best_by"] == "optimized_norm_busbw" and merged["best"]["run"] == 1
