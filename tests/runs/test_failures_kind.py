"""The `failures` run kind on real workers: a Monte Carlo over seeds fans out over the workers as child runs whose
merge is what the engine computes in one process (sim.failures.timeline.simulate on one preparation, summarize, sweep);
the children's live frames carry the timeline's state and failures; an injected failure names a real inventory
item and leaves the inventory as it was; bad input is a 400 naming the field. Given / when / then."""
import base64

import numpy as np
import pytest

from sim.failures.prepare import prepare
from sim.failures.published import published
from sim.failures.summary import summarize
from sim.failures.sweep import sweep
from sim.failures.timeline import simulate
from tests.runs.test_runs import finished
from twin.inventory.adapter import layout_from_db
from twin.inventory.choices import FabricRole
from twin.inventory.models import GPU, Link
from twin.live import frames
from twin.runs import actions
from twin.capabilities.failures.kinds import fan_out, first_seed
from twin.runs.models import SimulationRun
from twin.runs.params import validate_params

# A small job that fails often: Llama 3 8B on 64 GPUs of demo-256 for 3 days, every rate x 40.
JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M", "days": 3, "rate_scale": 40,
       "checkpoint_interval": "1h"}


def same(a, b, rel=1e-9) -> bool:
    """``a`` and ``b`` (JSON-like) equal, numbers to ``rel``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=rel)
    return a == b


def post(runner, params, kind="failures"):
    return runner.post("/api/runs/", {"kind": kind, "cluster": "demo-256", "params": params}, format="json")


def snapshot(runner, run_id):
    return frames.decode(base64.b64decode(runner.get(f"/api/live/runs/{run_id}/snapshot/").json()["frame_b64"]))


@pytest.mark.django_db(transaction=True)
def test_a_monte_carlo_fans_out_over_the_workers_and_merges_to_the_engine_s_result(workers, runner, demo):
    # given two workers and a 12-seed Monte Carlo (TWIN_FAILURES_SEEDS_PER_CHILD is 10: two children)
    r = post(runner, {**JOB, "seeds": 12})
    assert r.status_code == 201, r.json()
    # when the workers run it
    run = finished(runner, r.json()["id"], timeout=120)
    # then the parent succeeded by the merge of its two children, each a chunk of the seeds
    assert run["status"] == "succeeded", run["error"]
    children = runner.get("/api/runs/", {"parent": run["id"], "ordering": "id"}).json()["results"]
    assert [c["status"] for c in children] == ["succeeded", "succeeded"]
    assert [c["params"]["seeds"] for c in children] == [10, 2] and all(c["progress"] == 100 for c in children)
    s = run["summary"]
    assert s["children"] == 2 and set(s["workers"]) <= workers.hostnames and run["progress"] == 100
    # and its seeds 0..11 are those the engine simulates in one process on one preparation, figure for figure
    params = validate_params("failures", {**JOB, "seeds": 12}, demo)
    ctx = prepare(layout_from_db(demo), params)
    alone = [simulate(ctx, params, seed) for seed in range(12)]
    assert [x["seed"] for x in s["per_seed"]] == list(range(12))
    assert [x["effective_ratio"] for x in s["per_seed"]] == pytest.approx([a["effective_ratio"] for a in alone])
    assert same(s["distribution"], summarize(alone))
    assert s["effective_ratio"] == pytest.approx(s["distribution"]["effective_ratio"]["mean"])
    # and the summary carries Meta's 54-day record beside the merged figures (sim/failures/published.py)
    assert [p["key"] for p in s["published"]] == [p["key"] for p in published(params, alone[0], summarize(alone))]
    assert {p["key"]: p["simulated"] for p in s["published"]}["llama3-effective-time"] == pytest.approx(
        s["effective_ratio"])
    # and the replayed timeline is seed 0's, whole: segments covering the wall clock, its events
    assert s["replay"]["seed"] == 0 and same(s["replay"]["events"], alone[0]["events"])
    assert s["replay"]["timeline"]["end"][-1] == pytest.approx(JOB["days"] * 86400)
    # and a child's last frame is its last seed's state and failures, as the engine counted them
    f = snapshot(runner, children[1]["id"])
    last = alone[11]
    state = f.value("failure_state")[0]
    assert f.final and state["seed"] == 11 and state["seeds_done"] == 2
    assert state["effective_ratio"] == pytest.approx(last["effective_ratio"], rel=1e-6)
    assert state["interruptions"] == last["interruptions"]
    rows = f.value("failure_events")
    assert [e["category"] for e in rows] == [e["category"] for e in last["events"]]
    assert [e["t_hours"] for e in rows] == pytest.approx([e["time"] / 3600 for e in last["events"]], rel=1e-6)


@pytest.mark.django_db(transaction=True)
def test_an_interval_sweep_fans_out_per_interval_and_finds_the_engine_s_optimum(workers, runner, demo):
    # given a sweep of 3 checkpoint intervals over 2 seeds
    params = {**JOB, "seeds": 2, "sweep_interval": "10m:4h:3"}
    r = post(runner, params)
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    assert run["status"] == "succeeded", run["error"]
    # then one child per interval ran, and the merged sweep is the engine's sweep of the same seeds
    assert runner.get("/api/runs/", {"parent": run["id"]}).json()["count"] == 3
    sw = run["summary"]["sweep"]
    want = sweep(layout_from_db(demo), validate_params("failures", params, demo), "10m:4h:3", 2)
    assert sw["intervals_s"] == pytest.approx(want["intervals_s"])
    assert same([x["effective_ratio"] for x in sw["rows"]], [x["effective_ratio"] for x in want["rows"]])
    assert sw["best_interval_s"] == pytest.approx(want["best_interval_s"])
    assert sw["young_daly_s"] == pytest.approx(want["young_daly_s"])
    assert run["summary"]["optimal_interval_s"] == sw["best_interval_s"]


@pytest.mark.django_db(transaction=True)
def test_an_injected_failure_hits_the_inventory_item_and_changes_nothing_in_it(workers, runner, demo):
    # given a failed backend cable in the inventory, and a GPU of the job named as the inventory names it
    params = {**JOB, "rate_scale": 0, "rates": "planned=0", "seeds": 1}      # no failure but the injected one
    link = (Link.objects.filter(cluster=demo, fabric__role=FabricRole.BACKEND, a_port__nic__isnull=True)
            .order_by("id").first())
    Link.objects.filter(pk=link.pk).update(status="failed")
    ctx = prepare(layout_from_db(demo), validate_params("failures", params, demo))
    gpu = GPU.objects.get(cluster=demo, index=int(ctx.gpus[5]))
    before = actions.inventory_state(demo, layout_from_db(demo))
    # when a run injects that GPU's failure at hour 10 (no other failure)
    r = post(runner, {**params, "inject": f"gpu:{gpu.name}@10h"})
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=60)
    assert run["status"] == "succeeded", run["error"]
    # then the timeline has that one crash, on that GPU, at hour 10
    events = run["summary"]["replay"]["events"]
    assert [(e["category"], e["item"], e["injected"], e["consequence"]) for e in events] == \
        [("gpu", gpu.name, True, "crash")]
    assert events[0]["time"] == pytest.approx(36000)
    # and the inventory is as it was: the GPU active, the cable still failed, every status the same
    gpu.refresh_from_db()
    assert gpu.status == "active"
    assert actions.inventory_state(demo, layout_from_db(demo)) == before
    assert run["inventory_state"]["counts"]["links"]["non_active"] == 1
    # and the GPU page's replay data marks that GPU, at that time
    doc = runner.get("/clusters/demo-256/reliability/failed.json", {"run": run["id"]}).json()
    assert [(e["t_hours"], e["gpus"]) for e in doc["events"]] == [(pytest.approx(10), [gpu.index])]
    # and the run's frame names it by its index
    rows = snapshot(runner, run["id"]).value("failure_events")
    assert [(e["item_kind"], e["item"]) for e in rows] == [("gpu", gpu.index)]


@pytest.mark.django_db
def test_fan_out_chunks_the_seeds_and_the_intervals_and_keeps_the_job_s_placement(demo):
    params = validate_params("failures", {**JOB, "seeds": 25, "seed": 7}, demo)
    children = fan_out(params)
    assert [(first_seed(c), c["seeds"]) for c in children] == [(7, 10), (17, 10), (27, 5)]
    assert {c["seed"] for c in children} == {7}                  # the placement's seed, the parent's
    assert fan_out(validate_params("failures", {**JOB, "seeds": 10}, demo)) == []      # one chunk: no fan-out
    swept = fan_out(validate_params("failures", {**JOB, "seeds": 3, "sweep_interval": "10m,1h"}, demo))
    assert [(float(c["checkpoint_interval"]), c["seeds"], c["sweep_interval"]) for c in swept] == \
        [(600.0, 3, None), (3600.0, 3, None)]


@pytest.mark.django_db
@pytest.mark.parametrize("params, field, says", [
    ({"days": -1}, "days", "at least"),
    ({"days": 1, "checkpoint_interval": "2d"}, "checkpoint_interval", "not shorter than the run"),
    ({"rates": "cosmic_rays=1e-6"}, "rates", "unknown category"),
    ({"inject": "gpu:demo-256.z99.r000.h0.gpu0@1h"}, "inject", "demo-256 has no gpu named"),
    ({"inject": "switch:no-such-switch@1h"}, "inject", "demo-256 has no switch named"),
    ({"inject": "meteor:x@1h"}, "inject", "unknown kind"),
    ({"gpus": 512, "pp": 4}, "gpus", "512 GPUs asked, demo-256 has 256 usable"),
    ({"seeds": 1001}, "seeds", "at most 1,000"),                  # the engine's bound, MAX_FAILURE_SEEDS
    ({"days": 400}, "days", "TWIN_FAILURES_MAX_DAYS"),
    ({"seeds": 100, "sweep_interval": "10m:4h:13"}, "seeds", "TWIN_FAILURES_MAX_TIMELINES"),
    ({"sweep_interval": "4h:10m"}, "sweep_interval", "MIN < MAX"),
])
def test_bad_failures_input_is_a_400_naming_the_field(runner, demo, params, field, says):
    r = post(runner, {**JOB, **params})
    assert r.status_code == 400, r.json()
    assert says in str(r.json()["params"][field]), r.json()
    assert not SimulationRun.objects.exists()


@pytest.mark.django_db
def test_a_fanned_out_parent_is_not_stalled_nor_requeued_while_its_children_work(demo):
    # given a running failures parent with a stale heartbeat and a running child
    from datetime import timedelta

    from django.utils import timezone
    params = validate_params("failures", {**JOB, "seeds": 20}, demo)
    old = timezone.now() - timedelta(hours=1)
    parent = SimulationRun.objects.create(kind="failures", cluster=demo, params=params, status="running",
                                          heartbeat_at=old, started_at=old)
    SimulationRun.objects.create(kind="failures", cluster=demo, params=fan_out(params)[0], parent=parent,
                                 status="running", heartbeat_at=timezone.now(), progress=40.0)
    # then it does not look stalled, the sweeper leaves it running, and its progress is its children's
    assert parent.stalled() == ""
    assert actions.sweep_stuck_runs() == []
    assert actions.sweep_progress(parent.pk) == pytest.approx(40.0)
    assert np.isclose(SimulationRun.objects.get(pk=parent.pk).progress, 40.0)


def test_the_live_view_is_handed_to_the_publisher_as_the_engine_simulates_at_most_at_the_tick(settings):
    # given a live view of one seed, and a publisher that records what it is handed
    from twin.capabilities.failures.kinds import LiveTimeline
    settings.TWIN_LIVE_TICK_HZ = 4.0
    handed = []

    class Items:
        def event_row(self, e):
            return {"t_hours": e["time"] / 3600.0}

    live = LiveTimeline(lambda fraction, **arrays: handed.append(arrays), Items(), seed=7, k=0, seeds=2, hours=72.0)
    # when the engine reports 500 failures in a burst
    for i in range(500):
        live.failure({"state": "down", "time": 3600.0 * i / 10, "productive_s": 1800.0 * i / 10,
                      "effective_ratio": 0.5, "interruptions": i}, {"time": 3600.0 * i / 10})
    # then the first goes out at once and the rest wait for the tick; every failure's row is kept
    assert 1 <= len(handed) <= 2
    first = handed[0]
    assert first["failure_state"]["state"] == "down" and first["failure_state"]["seed"] == 7 and first["force"]
    assert len(live.rows) == 500 and handed[-1]["failure_events"] is live.rows
