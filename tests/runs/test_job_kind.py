"""The `job` run kind on a real worker: REST -> worker -> sim.jobs.job -> the Job row (queued when the run is, then
placed, then finished with the step model's figures) -> the API and the cluster's live frames (gpu_job and
job_stats: which GPU runs which job). Given / when / then."""
import base64
import json

import numpy as np
import pytest

from tests.runs.test_runs import finished
from twin.inventory.models import GPU
from twin.live import frames
from twin.runs import actions
from twin.runs.models import Job
from twin.runs.params import validate_params

SMALL = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M"}


@pytest.mark.django_db(transaction=True)
def test_a_job_run_places_simulates_and_records_its_job(workers, runner, demo):
    # given demo-256 with one failed GPU, and two workers
    GPU.objects.filter(cluster=demo, index=3).update(status="failed")
    # when a job is submitted over REST
    r = runner.post("/api/runs/", {"kind": "job", "cluster": "demo-256", "params": SMALL}, format="json")
    assert r.status_code == 201, r.json()
    run_id = r.json()["id"]
    # then its Job exists at once, queued, named after its model and layout
    queued = runner.get("/api/runs/jobs/", {"run": run_id}).json()["results"]
    assert len(queued) == 1 and queued[0]["name"] == "llama3-8b 64 GPUs tp8 cp1 pp2 dp4"
    # and once a worker ran it, the job is running (it holds its GPUs until released) with the engine's figures
    # and a placement of 64 usable GPUs
    run = finished(runner, run_id, timeout=60)
    assert run["status"] == "succeeded", run["error"]
    job = runner.get(f"/api/runs/jobs/{queued[0]['id']}/").json()
    assert job["state"] == "running" and job["n_gpus"] == 64 and job["holds_gpus"]
    s, res = run["summary"], job["results"]
    assert res["step_time_s"] == s["step_time"] and res["mfu"] == s["mfu"] and 0 < s["mfu"] < 1
    assert res["breakdown"] == {k: v for k, v in s["breakdown"].items() if k != "step"}
    assert abs(sum(res["breakdown"].values()) - s["step_time"]) < 1e-9 * s["step_time"]
    # and the run's summary and the job's results carry the nearest published run beside the simulated figures
    assert [x["key"] for x in s["published"]] == [x["key"] for x in res["published"]] and len(s["published"]) == 2
    assert {x["unit"]: x["simulated"] for x in s["published"]} == {"TFLOP/s": s["tflops_per_gpu"], "fraction": s["mfu"]}
    gpus = runner.get(f"/api/runs/jobs/{job['id']}/gpus/").json()["gpus"]
    assert len(set(gpus)) == 64 and 3 not in gpus
    # and the run keeps its pipeline's slot table: both stages' forwards and backwards of every micro-batch, ending at
    # the step's pipelined time (the step less the exposed DP)
    table = runner.get(f"/api/runs/{run_id}/results/", {"names": "pipeline"}).json()["arrays"]["pipeline"]
    rows = table["data"]
    assert table["dtype"] == "<f8" and table["shape"] == [len(rows), 6]           # float64, little-endian
    m = s["layout"]["micro_batches"]
    assert sorted({int(r[0]) for r in rows}) == [0, 1] and len(rows) == 2 * 2 * m
    assert max(r[5] for r in rows) <= s["step_time"] + 1e-9
    # and the GPU page's lookup names it for each of its GPUs, none for the failed one
    lookup = lambda g: runner.get("/api/runs/jobs/on-gpu/", {"cluster": demo.id, "gpu": g})   # noqa: E731
    assert lookup(gpus[17]).json()["id"] == job["id"] and lookup(3).status_code == 404
    # and the run's last frame says which GPU runs which job, with the job's figures
    raw = base64.b64decode(runner.get(f"/api/live/runs/{run_id}/snapshot/").json()["frame_b64"])
    f = frames.decode(raw)
    rows = f.value("job_stats")
    mine = [k + 1 for k, row in enumerate(rows) if row["job"] == job["id"]]
    assert len(mine) == 1 and rows[mine[0] - 1]["phase"] == "running"
    assert abs(rows[mine[0] - 1]["step_time_s"] - s["step_time"]) < 1e-6 * s["step_time"]
    assert set(np.flatnonzero(f.value("gpu_job") == mine[0]).tolist()) == set(gpus)
    # and a second job is placed on GPUs the first does not hold; a what-if of it may take the first's place
    r = runner.post("/api/runs/", {"kind": "job", "cluster": "demo-256", "params": {**SMALL, "gpus": 128, "pp": 4}},
                    format="json")
    second = finished(runner, r.json()["id"], timeout=60)
    assert second["status"] == "succeeded", second["error"]
    second_job = runner.get("/api/runs/jobs/", {"run": second["id"]}).json()["results"][0]
    second_gpus = runner.get(f"/api/runs/jobs/{second_job['id']}/gpus/").json()["gpus"]
    assert not set(second_gpus) & set(gpus) and 3 not in second_gpus
    assert runner.get("/api/runs/jobs/occupancy/", {"cluster": demo.id}).json()["held_gpus"] == 192
    # (255 usable GPUs, 192 held: a what-if of the first job, 64 GPUs, fits only where the first job is)
    r = runner.post(f"/api/runs/jobs/{job['id']}/whatif/", {"vary": "placement", "values": ["random"]}, format="json")
    assert r.status_code == 201, r.json()
    whatif_run = finished(runner, r.json()[0]["id"], timeout=60)
    assert whatif_run["status"] == "succeeded", whatif_run["error"]
    whatif = runner.get("/api/runs/jobs/", {"run": whatif_run["id"]}).json()["results"][0]
    assert whatif["state"] == "finished" and whatif["name"].endswith("(what-if: placement random)")
    assert runner.get("/api/runs/jobs/occupancy/", {"cluster": demo.id}).json()["held_gpus"] == 192


@pytest.mark.django_db
def test_a_cancelled_job_run_fails_its_job(demo):
    # given a queued job run (no worker takes it)
    run = actions.create_run("job", validate_params("job", SMALL, demo), demo, enqueue=False, validated=True)
    job = Job.objects.get(run=run)
    assert job.state == "queued"
    # when it is cancelled, then its job ends failed, saying why
    actions.cancel_run(run)
    job.refresh_from_db()
    assert job.state == "failed" and "cancelled" in job.error


@pytest.mark.django_db(transaction=True)
def test_a_schedule_run_reports_each_policy_figure_through_a_worker(workers, runner, demo):
    # given demo-256 with one failed GPU: its host takes no job
    GPU.objects.filter(cluster=demo, index=9).update(status="failed")
    # when a small synthetic queue is scheduled topology-aware over REST
    params = {"policy": "topology", "arrivals": 12, "days": 1, "max_gpus": 64}
    r = runner.post("/api/runs/", {"kind": "schedule", "cluster": "demo-256", "params": params}, format="json")
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    # then the worker reports utilization, fragmentation, waits and every job's figures
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    assert s["policy"] == "topology" and len(s["jobs"]) == 12 and 0 < s["utilization"] <= 1
    assert s["usable_gpus"] <= 248                   # the failed GPU's host (8 GPUs) is not offered
    assert s["jobs_run"] + s["jobs_never_started"] == 12
    assert run["headline"][0]["key"] == "utilization" and run["headline"][0]["value"] == s["utilization"]


@pytest.mark.django_db(transaction=True)
def test_a_jobs_run_solves_jobs_together_and_alone_and_records_each_job(workers, runner, demo):
    # given demo-256 (1:4 at the zone layer) with one failed GPU, and two fragmented DDP jobs over both zones
    GPU.objects.filter(cluster=demo, index=5).update(status="failed")
    job = {"model": "llama3-8b", "gpus": 64, "tp": 8, "batch_tokens": "512K", "placement": "fragmented",
           "fsdp": False, "overlap": False}
    entries = [{**job, "name": "first"}, {**job, "name": "second", "seed": 1}]
    # when they are submitted over REST as one jobs run
    r = runner.post("/api/runs/", {"kind": "jobs", "cluster": "demo-256",
                                   "params": {"jobs": json.dumps(entries), "qps": 2}}, format="json")
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=120)
    # then the summary holds each job together and alone, the headline the worst slowdown
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    assert [j["name"] for j in s["jobs"]] == ["first", "second"] and s["gpus"] == 128
    assert s["worst_slowdown"] == pytest.approx(max(j["slowdown"] for j in s["jobs"]) - 1) and s["worst_slowdown"] > 0
    assert run["headline"][0]["key"] == "worst_slowdown" and run["headline"][0]["value"] == s["worst_slowdown"]
    # and each job is a finished Job on its own usable GPUs, none on the failed GPU, the two disjoint
    placed = []
    for j in s["jobs"]:
        row = runner.get(f"/api/runs/jobs/{j['job']}/").json()
        assert row["state"] == "finished" and row["n_gpus"] == 64 and row["name"].startswith(j["name"])
        assert row["results"]["slowdown"] == j["slowdown"] and row["results"]["step_time_s"] == j["step_time"]
        placed.append(set(runner.get(f"/api/runs/jobs/{j['job']}/gpus/").json()["gpus"]))
    assert not placed[0] & placed[1] and 5 not in placed[0] | placed[1]
