"""Simulation runs end to end: REST -> Redis -> real Celery worker processes -> database -> REST. Given / when / then."""
import pytest

import tests.runs.echo_kind  # noqa: F401 - registers the echo kind in this process too (the workers have it)
from tests.processes import wait_for
from twin.inventory.models import GPU, Link
from twin.runs.actions import create_run, sweep_stuck_runs
from twin.runs.models import SimulationRun

FINISHED = {"succeeded", "failed", "cancelled"}
# A run that lasts 25 s wherever it runs (tests/runs/echo_kind.py: 50 steps of 0.5 s), whatever the machine's speed:
# a real simulation long enough on a slow machine ends before its cancel on a fast one.
SLOW = {"n": 50, "pause": 0.5}


def finished(client, run_id, timeout=30.0):
    def done():
        body = client.get(f"/api/runs/{run_id}/").json()
        return body if body["status"] in FINISHED else None
    return wait_for(done, timeout, what=f"run {run_id} to finish")


def running(run_id, timeout=30.0, progress=0.0):
    return wait_for(lambda: SimulationRun.objects.filter(pk=run_id, status="running", progress__gt=progress).first(),
                    timeout, what=f"run {run_id} to be running")


@pytest.mark.django_db(transaction=True)
def test_a_run_started_over_rest_is_executed_by_a_worker_with_real_results(workers, runner, demo):
    # given demo-256 and two workers
    # when a collective is started over REST
    r = runner.post("/api/runs/", {"kind": "collective", "cluster": "demo-256",
                                   "params": {"collective": "allgather", "gpus": 64, "sizes": "1M:64M",
                                              "placement": "fragmented", "routing": "ecmp", "qps": 1}},
                    format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["status"] == "queued"
    # then a worker runs it and stores the nccl-tests rows, the inventory state and the link utilization
    run = finished(runner, r.json()["id"])
    assert run["status"] == "succeeded", run["error"]
    assert run["worker"] in workers.hostnames and run["progress"] == 100.0
    assert [row["size"] for row in run["summary"]["rows"]] == [1 << 20, 1 << 21, 1 << 22, 1 << 23, 1 << 24,
                                                               1 << 25, 1 << 26]
    s = run["summary"]
    # and one seed: its figures are that run's (median = min = max), its table is that run's
    assert 0 < s["norm_busbw"]["median"] == s["norm_busbw"]["min"] == s["norm_busbw"]["max"] <= 1
    assert s["seeds"] == 1 and s["table_of"] == "the run (seed 0)"
    assert s["rows"][-1]["norm_busbw"] == s["norm_busbw"]["median"]
    assert s["rows"][-1]["busbw_GBps"] == pytest.approx(s["busbw_GBps"]["median"])
    assert run["inventory_state"]["cluster"] == demo.pk and len(run["inventory_state"]["status_hash"]) == 64
    results = runner.get(f"/api/runs/{run['id']}/results/").json()
    util = results["arrays"]["link_utilization"]
    n_backend = Link.objects.filter(cluster=demo, fabric__role=0).count()
    assert util["dtype"] == "<f2" and util["shape"] == [n_backend] and 0 < max(util["data"]) <= 1.001
    assert results["arrays"]["gpu_state"]["shape"] == [256] and results["arrays"]["gpu_state"]["data"].count(1) == 64
    b64 = runner.get(f"/api/runs/{run['id']}/results/?arrays=base64").json()
    assert isinstance(b64["arrays"]["link_utilization"]["data"], str)
    # and the list filters by status and kind
    assert [x["id"] for x in runner.get("/api/runs/?status=succeeded&kind=collective").json()["results"]] == [run["id"]]
    assert runner.get("/api/runs/?status=failed").json()["results"] == []


@pytest.mark.django_db(transaction=True)
def test_a_run_with_a_host_list_places_the_ranks_as_listed(workers, runner, demo):
    # given demo-256 whose hosts are named by the inventory, and a host list in an order of its own
    hosts = ["demo-256.z01.r006.h1", "demo-256.z00.r002.h0", "demo-256.z01.r000.h0"]
    text = f"# job\n{hosts[0]}\n{hosts[1]} slots=4\n{hosts[2]}:2\n"
    # when a collective is started over REST with it (gpus left out)
    r = runner.post("/api/runs/", {"kind": "collective", "cluster": "demo-256",
                                   "params": {"hosts": text, "sizes": "1M"}}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["params"]["gpus"] == 14 and r.json()["params"]["placement"] == "given"
    # then the worker runs exactly those GPUs, and says the placement was given
    run = finished(runner, r.json()["id"])
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    assert s["placement"] == "given" and s["ranks"] == 14 and s["hosts"] == 3 and s["order_note"] is None
    state = runner.get(f"/api/runs/{run['id']}/results/").json()["arrays"]["gpu_state"]["data"]
    in_job = {i for i, v in enumerate(state) if v == 1}
    gpus = GPU.objects.filter(cluster=demo)
    want = {g.index for g in gpus.filter(host__name=hosts[0])} | \
        {g.index for g in gpus.filter(host__name=hosts[1], slot__lt=4)} | \
        {g.index for g in gpus.filter(host__name=hosts[2], slot__lt=2)}
    assert in_job == want


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_run_ends_cancelled(workers, runner, demo):
    # given a long run in progress
    run_id = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": SLOW},
                         format="json").json()["id"]
    running(run_id)
    # when it is cancelled over REST
    r = runner.post(f"/api/runs/{run_id}/cancel/")
    assert r.status_code == 200 and r.json()["cancel_requested"] is True
    # then the worker stops it at its next progress report
    run = finished(runner, run_id, timeout=15)
    assert run["status"] == "cancelled" and run["progress"] < 100 and run["summary"] is None


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_cancelled_before_it_starts_never_runs(runner, demo):
    # given a run still waiting in the queue (here: not sent to any worker)
    run_id = create_run("collective", {}, demo, enqueue=False).pk
    # when it is cancelled, then it ends at once
    assert runner.post(f"/api/runs/{run_id}/cancel/").json()["status"] == "cancelled"
    assert SimulationRun.objects.get(pk=run_id).finished_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_leaves_the_run_requeued_then_failed_by_the_sweeper(workers, runner, demo):
    # given a long run in progress on one of the two workers
    run_id = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": SLOW},
                         format="json").json()["id"]
    first = running(run_id)
    # when that worker is killed (SIGKILL, mid-run)
    workers.by_hostname(first.worker).kill()
    # then the sweeper sees the silent heartbeat and requeues the run once; the other worker takes it
    swept = wait_for(lambda: sweep_stuck_runs(stale_after=1.0), timeout=15, what="the sweeper to act")
    assert swept[0]["run"] == run_id and swept[0]["outcome"] == "requeued"
    second = wait_for(lambda: SimulationRun.objects.filter(pk=run_id, status="running", attempts=2).first(),
                      timeout=15, what="the requeued run to start again")
    assert second.worker != first.worker and "worker lost (no heartbeat since" in second.notes
    # when that worker dies too
    workers.by_hostname(second.worker).kill()
    # then the run is failed, with the reason on it
    swept = wait_for(lambda: sweep_stuck_runs(stale_after=1.0), timeout=15, what="the sweeper to act")
    assert swept[0]["outcome"] == "failed"
    run = runner.get(f"/api/runs/{run_id}/").json()
    assert run["status"] == "failed" and run["error"].startswith("worker lost (no heartbeat since")
    assert second.worker in run["error"] and run["finished_at"]


@pytest.mark.django_db      # no worker: refused before anything is written, in the test's own transaction
@pytest.mark.parametrize("body, field, text", [
    ({"kind": "collective", "params": {"qps": 0}}, "qps", "must be at least 1"),
    ({"kind": "collective", "params": {"collective": "allsort"}}, "collective", "allsort"),
    ({"kind": "collective", "params": {"sizes": "1M:lots"}}, "sizes", "bad size"),
    ({"kind": "collective", "params": {"gpus": 100000}}, "gpus", "has 256"),
    ({"kind": "collective", "params": {"qbs": 4}}, "qbs", "unknown parameter"),
    ({"kind": "fabric_health", "params": {"threshold": 2}}, "threshold", "must be at most 1"),
    ({"kind": "fabric_health", "params": {"gpus": 512}}, "gpus", "has 256"),
    ({"kind": "sweep", "params": {"kind": "sweep", "params": {}, "sweep": {"kind": ["x"]}}}, "kind", "cannot sweep"),
    ({"kind": "sweep", "params": {"kind": "collective", "params": {}, "sweep": {"qps": []}}}, "sweep", "empty"),
    ({"kind": "sweep", "params": {"kind": "collective", "params": {}, "sweep": {"colour": [1]}}}, "sweep", "colour"),
])
def test_a_malformed_scenario_is_refused_naming_the_field(runner, demo, body, field, text):
    # when a scenario with a bad parameter is saved
    r = runner.post("/api/runs/scenarios/", {"name": "bad", "cluster": demo.pk, **body}, format="json")
    # then it is a 400 naming the parameter, and nothing is saved
    assert r.status_code == 400
    errors = r.json()["params"]
    assert field in errors and text in str(errors[field]), errors
    # and a run with the same parameters is refused the same way
    r = runner.post("/api/runs/", {"cluster": "demo-256", **body}, format="json")
    assert r.status_code == 400 and field in r.json()["params"]
    assert not SimulationRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_sweep_fans_out_over_two_workers_and_merges_the_results(workers, runner, demo):
    # given a scenario sweeping routing x QPs of an AllToAll (each child about 0.4 s quiet: long enough that the
    # worker that ran the parent is free before the other has ended the first child)
    scenario = runner.post("/api/runs/scenarios/", {
        "name": "alltoall-routing", "cluster": demo.pk, "kind": "sweep",
        "params": {"kind": "collective", "params": {"collective": "alltoall", "gpus": 64, "sizes": "64M"},
                   "sweep": {"routing": ["ecmp", "eecmp"], "qps": [1, 2]}}}, format="json")
    assert scenario.status_code == 201, scenario.json()
    # when it is started
    r = runner.post(f"/api/runs/scenarios/{scenario.json()['id']}/run/")
    assert r.status_code == 201
    # then one child per combination runs, on both workers, and the chord callback merges their summaries
    run = finished(runner, r.json()["id"], timeout=60)
    assert run["status"] == "succeeded", run
    children = runner.get(f"/api/runs/?parent={run['id']}").json()["results"]
    assert len(children) == 4 and {c["status"] for c in children} == {"succeeded"}
    assert {c["worker"] for c in children} == workers.hostnames
    summary = run["summary"]
    assert sorted((c["routing"], c["qps"]) for c in summary["children"]) == [("ecmp", 1), ("ecmp", 2),
                                                                             ("eecmp", 1), ("eecmp", 2)]
    assert summary["succeeded"] == 4 and set(summary["workers"]) == workers.hostnames
    # ranked by the median of each child's normalized busbw
    assert summary["best_by"] == "norm_busbw"
    assert summary["best"]["norm_busbw"]["median"] == max(c["norm_busbw"]["median"] for c in summary["children"])
    listed = runner.get(f"/api/runs/{run['id']}/").json()
    assert listed["headline"][0]["value"] == summary["best"]["norm_busbw"]


@pytest.mark.django_db(transaction=True)
def test_fabric_health_runs_keep_a_trend_that_sees_a_failed_link(workers, runner, demo):
    # given the nightly fabric-health scenario and schedule of demo-256
    from django.core.management import call_command
    call_command("health_schedules", stdout=open("/dev/null", "w"))
    schedules = runner.get("/api/runs/schedules/").json()["results"]
    assert [s["name"] for s in schedules] == ["nightly fabric health demo-256"]
    assert schedules[0]["crontab"]["hour"] == "3"
    scenario_id = schedules[0]["scenario"]
    # when it runs, a leaf uplink fails, and it runs again
    first = finished(runner, runner.post(f"/api/runs/scenarios/{scenario_id}/run/").json()["id"])
    uplink = Link.objects.filter(cluster=demo, fabric__role=0, tier=1).order_by("id").first()
    assert runner.patch(f"/api/inventory/links/{uplink.id}/", {"status": "failed"}, format="json").status_code == 200
    second = finished(runner, runner.post(f"/api/runs/scenarios/{scenario_id}/run/").json()["id"])
    # then both succeeded, the second saw the failed link, and the trend lists both, oldest first
    assert first["status"] == second["status"] == "succeeded"
    assert first["summary"]["non_active_links"] == 0 and second["summary"]["non_active_links"] == 1
    assert first["summary"]["unreachable_gpus"] == 0 and first["summary"]["job_gpus"] == 256
    trend = runner.get(f"/api/runs/scenarios/{scenario_id}/trend/").json()
    assert [p["run"] for p in trend["points"]] == [first["id"], second["id"]]
    assert trend["points"][0]["value"] == first["summary"]["norm_busbw"]["median"]
    assert trend["points"][0]["status_hash"] != trend["points"][1]["status_hash"]


@pytest.mark.django_db
def test_schedules_are_created_updated_and_deleted_over_the_api(runner, demo):
    scenario = runner.post("/api/runs/scenarios/", {"name": "health", "cluster": demo.pk, "kind": "fabric_health",
                                                    "params": {}}, format="json").json()
    # when a schedule is created with an interval, then switched to a crontab, then deleted
    r = runner.post("/api/runs/schedules/", {"name": "every 6 h", "scenario": scenario["id"],
                                             "interval": {"every": 6, "period": "hours"}}, format="json")
    assert r.status_code == 201, r.json()
    sid = r.json()["id"]
    assert r.json()["interval"] == {"every": 6, "period": "hours"} and r.json()["crontab"] is None
    r = runner.patch(f"/api/runs/schedules/{sid}/", {"crontab": {"minute": "30", "hour": "2"}, "interval": None},
                     format="json")
    assert r.status_code == 200, r.json()
    assert r.json()["crontab"]["hour"] == "2" and r.json()["interval"] is None
    # both or neither is refused
    r = runner.post("/api/runs/schedules/", {"name": "x", "scenario": scenario["id"]}, format="json")
    assert r.status_code == 400 and "crontab" in r.json()
    assert runner.delete(f"/api/runs/schedules/{sid}/").status_code == 204
    assert runner.get("/api/runs/schedules/").json()["results"] == []


def test_the_runs_list_costs_the_same_queries_for_5_and_25_runs(runner, demo):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    counts = []
    for n in (5, 25):
        for _ in range(n - SimulationRun.objects.count()):
            SimulationRun.objects.create(kind="collective", cluster=demo, params={}, summary={"norm_busbw": 0.5})
        with CaptureQueriesContext(connection) as queries:
            assert runner.get("/api/runs/", {"limit": 50}).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_a_running_sweep_s_progress_is_the_mean_of_its_children_s_an_ended_one_counting_whole(demo):
    # given a running sweep with four children, one succeeded, one failed half-way, one running at 40 %
    from twin.runs.actions import sweep_progress
    parent = SimulationRun.objects.create(kind="sweep", cluster=demo, params={}, status="running")
    for status, progress in (("succeeded", 100.0), ("failed", 50.0), ("running", 40.0), ("queued", 0.0)):
        SimulationRun.objects.create(kind="collective", cluster=demo, params={}, parent=parent, status=status,
                                     progress=progress)
    # then its progress is (100 + 100 + 40 + 0) / 4, saved for the API and the list pages
    assert sweep_progress(parent.pk) == 60.0
    parent.refresh_from_db()
    assert parent.progress == 60.0
    # and an ended sweep is left alone
    SimulationRun.objects.filter(pk=parent.pk).update(status="succeeded", progress=100.0)
    assert sweep_progress(parent.pk) is None
    parent.refresh_from_db()
    assert parent.progress == 100.0


def test_the_sweeper_fails_a_sweep_it_cannot_merge_and_still_closes_the_others(demo):
    # given two sweeps whose children all ended an hour ago: one of a kind this process does not know (a deployment
    # module removed since), one of a kind it knows
    from datetime import timedelta

    from django.utils import timezone
    then = timezone.now() - timedelta(hours=1)
    sweeps = {}
    for kind in ("gone", "collective"):
        parent = SimulationRun.objects.create(kind="sweep", cluster=demo, status="running", started_at=then,
                                              params={"kind": kind, "params": {}, "sweep": {"seed": [1]}})
        SimulationRun.objects.create(kind=kind, cluster=demo, params={"seed": 1}, parent=parent,
                                     status="succeeded", summary={}, finished_at=then)
        sweeps[kind] = parent.pk
    # when the sweeper runs
    sweep_stuck_runs(stale_after=60)
    # then the one it cannot merge fails saying why, and the other is closed as succeeded
    gone, known = (SimulationRun.objects.get(pk=sweeps[k]) for k in ("gone", "collective"))
    assert gone.status == "failed" and "unknown kind 'gone'" in gone.error
    assert known.status == "succeeded" and known.summary["succeeded"] == 1
