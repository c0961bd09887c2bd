"""The `figure` run kind: the published AllGather figure (sim.fabric.figures) on a cluster read from the database, run by a
real Celery worker. Given / when / then."""
import pytest

from sim.core.units import GiB
from sim.fabric import figures
from tests.runs.test_runs import finished, running
from twin.capabilities.collectives.kinds import default_figure_jobs
from twin.runs.params import validate_params

QUICK = {"figure": "allgather-scale", "jobs": [32, 64, 128], "seeds": 2}


@pytest.mark.django_db(transaction=True)
def test_a_figure_run_on_demo_draws_every_series_through_a_worker(workers, runner, demo):
    # given demo-256 and two workers
    # when a quick figure run is started over REST
    r = runner.post("/api/runs/", {"kind": "figure", "cluster": "demo-256", "params": QUICK}, format="json")
    assert r.status_code == 201, r.json()
    # then a worker runs every series of the published figure on it
    run = finished(runner, r.json()["id"], timeout=60)
    assert run["status"] == "succeeded", run["error"]
    assert run["worker"] in workers.hostnames and run["progress"] == 100.0
    s = run["summary"]
    keys = [x["key"] for x in s["series"]]
    assert keys == [x.key for x in figures.allgather_series("roce")]
    assert s["jobs"] == [32, 64, 128] and s["seeds"] == 2 and s["fabric"] == "roce"
    assert s["panels"] == [{"title": t, "series": k} for t, k in figures.SCALE_PANELS]
    # and every series has a point per job size it fits, each the min/median/max over the 2 seeds, in 0..1
    for key in keys:
        points = [p for p in s["summary"] if p["series"] == key]
        assert points, f"series {key} has no point"
        for p in points:
            assert p["runs"] == 2
            assert 0 <= p["min"] <= p["median"] <= p["max"] <= 1, p
    assert s["runs"] == sum(p["runs"] for p in s["summary"])
    # and the optimized configuration beats 5-tuple ECMP on fragmented placement, as published
    best = {p["series"]: p["median"] for p in s["summary"] if p["gpus"] == 128}
    assert best["c"] > best["b-ecmp"]


@pytest.mark.django_db(transaction=True)
def test_a_sweep_of_figures_succeeds_and_ranks_by_the_optimized_series(workers, runner, demo):
    # given a sweep of two tiny figure runs on demo-256 (16-GPU jobs, 1 or 2 seeds, no busy-cluster series)
    r = runner.post("/api/runs/", {"kind": "sweep", "cluster": "demo-256", "params": {
        "kind": "figure", "params": {"jobs": [16], "background": False}, "sweep": {"seeds": [1, 2]}}}, format="json")
    assert r.status_code == 201, r.json()
    # when the workers run it
    sweep = finished(runner, r.json()["id"], timeout=90)
    # then it succeeds: its children are counted by their status (a figure has no norm_busbw)
    assert sweep["status"] == "succeeded", (sweep["error"], sweep["summary"])
    s = sweep["summary"]
    assert (s["succeeded"], s["failed"]) == (2, 0) and s["best_by"] == "optimized_norm_busbw"
    # and each row carries its child's headline figures, the best being the highest optimized median
    children = {c["id"]: c for c in runner.get(f"/api/runs/?parent={sweep['id']}").json()["results"]}
    for row in s["children"]:
        child = children[row["run"]]["summary"]
        assert row["optimized_norm_busbw"] == child["optimized_norm_busbw"]
        top = max((p for p in child["summary"] if p["series"] == "c"), key=lambda p: p["gpus"])
        assert child["optimized_norm_busbw"] == {k: top[k] for k in ("median", "min", "max")}
    assert s["best"]["optimized_norm_busbw"]["median"] == max(r["optimized_norm_busbw"]["median"]
                                                              for r in s["children"])


@pytest.mark.django_db(transaction=True)
def test_a_figure_run_can_be_cancelled(workers, runner, demo):
    # given a long figure run in progress (16 seeds of every series)
    run_id = runner.post("/api/runs/", {"kind": "figure", "cluster": "demo-256",
                                        "params": {"jobs": [16, 32, 64, 128, 256], "seeds": 16}},
                         format="json").json()["id"]
    running(run_id, progress=1.0)
    # when it is cancelled, then the worker stops it at its next progress report
    assert runner.post(f"/api/runs/{run_id}/cancel/").status_code == 200
    run = finished(runner, run_id, timeout=15)
    assert run["status"] == "cancelled" and run["progress"] < 100 and run["summary"] is None


@pytest.mark.django_db
@pytest.mark.parametrize("params, field, says", [
    ({"figure": "roce-vs-ib"}, "figure", "choose one of allgather-scale"),
    ({"figure": "nonsense"}, "figure", "allgather-scale"),
    ({"jobs": [64, 512]}, "jobs", "512 GPUs asked, demo-256 has 256"),
    ({"jobs": []}, "jobs", "non-empty list"),
    ({"jobs": ["many"]}, "jobs", "whole number"),
    ({"jobs": [1]}, "jobs", "at least 2"),
    ({"seeds": 0}, "seeds", "at least 1"),
    ({"background": "maybe"}, "background", "true or false"),
    ({"size": "lots"}, "size", "bad size"),
    ({"colour": "red"}, "colour", "unknown parameter"),
])
def test_a_figure_run_with_bad_params_is_refused_naming_the_field(runner, demo, params, field, says):
    # when a figure run is asked with a bad parameter
    r = runner.post("/api/runs/", {"kind": "figure", "cluster": "demo-256", "params": params}, format="json")
    # then it is a 400 naming that parameter and saying why
    assert r.status_code == 400
    errors = r.json()["params"][field]
    assert says in str(errors), errors


@pytest.mark.django_db
def test_figure_jobs_default_to_the_published_sizes_that_fit_the_cluster(demo):
    # the full-scale job sizes on a 24k cluster, the quick ones on a small cluster
    assert default_figure_jobs(24_576) == list(figures.DEFAULT_JOBS)
    assert default_figure_jobs(4_096) == [512, 1024, 2048, 4096]
    assert default_figure_jobs(256) == list(figures.QUICK_JOBS)
    # and a run asked without jobs records the sizes it will use
    assert validate_params("figure", {}, demo) == {"figure": "allgather-scale", "jobs": [32, 64, 128],
                                                   "seeds": figures.DEFAULT_SEEDS, "size": 1 << 30,
                                                   "background": True, "hash": "uniform"}
    assert validate_params("figure", {"jobs": [128, 32, 32]}, demo)["jobs"] == [32, 128]


def test_run_series_reports_each_run_and_can_be_stopped():
    # given the quick cluster's topology
    from sim.fabric.topology import load_topology
    _, topo = load_topology(figures.QUICK_PRESET, None, lambda m: None)
    series = figures.allgather_series(topo.kind)[:2]
    calls = []
    # when run_series runs with a progress hook
    rows = figures.run_series(topo, "demo", series, (32, 64), 2, GiB, on_run=lambda d, t: calls.append((d, t)))
    # then the hook saw every run, counted against the planned total
    assert calls == [(i + 1, len(rows)) for i in range(len(rows))]

    # and a hook that raises stops the figure there
    class Stop(Exception):
        pass

    def stop_after_3(done, total):
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        figures.run_series(topo, "demo", series, (32, 64), 2, GiB, on_run=stop_after_3)
