"""Training jobs in the API (/api/runs/jobs/): read-only, filtered by cluster and state, a job's rank -> GPU list,
and the job a GPU runs (the newest placed job holding it). Job rows are written by runs through
twin.runs.job_actions, as these tests write them."""
import base64

import numpy as np
import pytest

from twin.runs import job_actions
from twin.runs.choices import JobState
from twin.runs.models import Job

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def make(cluster, gpus, *, name="j", state="finished", results=None):
    job = job_actions.create_job(cluster=cluster, name=name, model="llama3-8b", params={"tp": 8, "dp": len(gpus) // 8},
                                 run=None)
    if state in ("running", "finished"):
        job_actions.place_job(job, gpus)
    if state == "finished":
        job_actions.finish_job(job, results or {"step_time_s": 1.5, "tokens_per_s": 1e5, "mfu": 0.4})
    if state == "failed":
        job_actions.fail_job(job, "no room")
    return job


def test_a_placement_of_16k_ranks_round_trips_compactly(demo):
    rng = np.random.default_rng(0)
    gpus = rng.permutation(24_576)[:16_384]
    job = make(demo, gpus)
    job.refresh_from_db()
    assert np.array_equal(job.gpus, gpus) and job.n_gpus == 16_384
    assert (job.gpu_min, job.gpu_max) == (int(gpus.min()), int(gpus.max()))
    assert len(bytes(job.placement)) <= 4 * 16_384 + 64            # never more than the raw int32 and zlib's frame
    host_order = make(demo, np.arange(16_384))
    assert len(bytes(Job.objects.get(pk=host_order.pk).placement)) < 2_000   # ranks along hosts compress


def test_list_filter_and_retrieve(anon, demo):
    a = make(demo, np.arange(0, 16), name="a")
    b = make(demo, np.arange(16, 32), name="b", state="running")
    c = make(demo, np.arange(32, 48), name="c", state="failed")
    rows = anon.get("/api/runs/jobs/", {"cluster": demo.id}).data["results"]
    assert [r["id"] for r in rows] == [c.id, b.id, a.id]
    assert [r["id"] for r in anon.get("/api/runs/jobs/", {"state": "running"}).data["results"]] == [b.id]
    assert {r["id"] for r in anon.get("/api/runs/jobs/", {"state": ["finished", "failed"]}).data["results"]} == {
        a.id, c.id}
    assert anon.get("/api/runs/jobs/", {"cluster": demo.id + 1}).data["count"] == 0
    one = anon.get(f"/api/runs/jobs/{a.id}/").data
    assert one["state"] == "finished" and one["n_gpus"] == 16 and one["results"]["mfu"] == 0.4
    assert one["cluster"]["id"] == demo.id and "placement" not in one
    assert anon.get(f"/api/runs/jobs/{a.id}/gpus/").data["gpus"] == list(range(16))
    assert c.error == "no room" and anon.get(f"/api/runs/jobs/{c.id}/").data["error"] == "no room"


def test_the_api_does_not_write_jobs(anon, writer, demo):
    job = make(demo, np.arange(8))
    for client in (anon, writer):
        assert client.post("/api/runs/jobs/", {"name": "x"}, format="json").status_code in (401, 403, 405)
        assert client.delete(f"/api/runs/jobs/{job.id}/").status_code in (401, 403, 405)
    assert Job.objects.filter(pk=job.id).exists()


def test_the_job_a_gpu_runs_is_the_newest_running_job_holding_it(anon, demo):
    old = make(demo, np.arange(0, 64), name="old", state="running")
    new = make(demo, np.arange(32, 48), name="new", state="running")
    make(demo, np.arange(0, 8), name="refused", state="failed")         # failed jobs hold no GPU
    make(demo, np.arange(100, 108), name="queued", state="queued")      # nor do queued ones
    make(demo, np.arange(120, 136), name="done")                        # nor finished ones
    on = lambda gpu: anon.get("/api/runs/jobs/on-gpu/", {"cluster": demo.id, "gpu": gpu})   # noqa: E731
    assert on(3).data["id"] == old.id and on(40).data["id"] == new.id and on(63).data["id"] == old.id
    assert on(64).status_code == 404 and on(100).status_code == 404 and on(125).status_code == 404
    index, jobs, rows = job_actions.gpu_jobs(demo, 256)
    assert [j.id for j in jobs] == [new.id, old.id] and [r["phase"] for r in rows] == ["running", "running"]
    assert index[3] == 2 and index[40] == 1 and index[63] == 2 and index[64] == 0 and index[100] == 0


@pytest.mark.parametrize("query, field", [
    ({"gpu": 1}, "cluster"), ({"cluster": 1}, "gpu"), ({"cluster": 1, "gpu": "x"}, "gpu"),
    ({"cluster": 1, "gpu": -1}, "gpu"), ({"cluster": 1, "gpu": 2**40}, "gpu"), ({"cluster": 999, "gpu": 1}, "cluster"),
])
def test_gpu_lookup_bad_input_names_the_field(anon, demo, query, field):
    query = {k: (demo.id if k == "cluster" and v == 1 else v) for k, v in query.items()}
    response = anon.get("/api/runs/jobs/on-gpu/", query)
    assert response.status_code == 400 and field in response.data, response.data


def test_what_runs_where_for_the_pages(client, demo):
    job = make(demo, np.arange(8, 24), name="shown", state="running")
    make(demo, np.arange(40, 56), name="ended")
    doc = client.get(f"/clusters/{demo.name}/jobs/gpus.json").json()
    index = np.frombuffer(base64.b64decode(doc["gpu_job"]), dtype="<u2")
    assert doc["gpus"] == 256 and index.size == 256
    assert doc["jobs"][0]["job"] == job.id and doc["jobs"][0]["name"] == "shown"
    assert set(np.flatnonzero(index)) == set(range(8, 24)) and set(index[index > 0]) == {1}
    assert doc["occupancy"] == {"jobs": 1, "held_gpus": 16, "gpus": 256}
    assert client.get("/clusters/nope/jobs/gpus.json").status_code == 404


def test_states(demo):
    job = make(demo, np.arange(4), state="queued")
    assert job.state == JobState.QUEUED and job.n_gpus == 0 and job.gpus.size == 0
