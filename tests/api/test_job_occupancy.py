"""Occupancy (issue 25, item 2): only running jobs that are not what-ifs hold GPUs (twin.runs.job_actions.holding),
wherever it is counted or drawn: the API's occupancy, what runs where (the GPU page's training colours, the live
gpu_job section), the job a GPU runs. A what-if has a name of its own; a release (its owner or
runs.manage_any_job) ends a running job and frees its GPUs, and says so on the cluster's live stream."""
import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from twin.api.models import ApiToken
from twin.live import frames, store
from twin.runs import actions, job_actions
from twin.runs.choices import JobState
from twin.runs.models import Job

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional

JOB = {"model": "llama3-8b", "gpus": 16, "tp": 8, "pp": 1, "batch_tokens": "1M"}


def client_of(name, *codenames):
    user = User.objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs", codename__in=codenames))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    client.user = user
    return client


def running(cluster, gpus, *, name="j", user=None):
    job = job_actions.create_job(cluster=cluster, name=name, model="llama3-8b", params={}, user=user)
    return job_actions.place_job(job, gpus)


def occupancy(client, cluster):
    response = client.get("/api/runs/jobs/occupancy/", {"cluster": cluster.id})
    assert response.status_code == 200, response.data
    return response.data


def test_finished_and_what_if_jobs_never_count(anon, demo):
    # the probe: 3 jobs placed on the same GPUs, finished or what-ifs, were counted as held GPUs
    a = running(demo, np.arange(0, 64), name="a")
    job_actions.step_simulated(a, {"mfu": 0.4})                           # a real job keeps running: it holds
    done = running(demo, np.arange(0, 64), name="done")
    job_actions.finish_job(done, {"mfu": 0.4})
    whatif = job_actions.create_job(cluster=demo, name="a", model="llama3-8b", params={})
    job_actions.make_whatif(whatif, a, "placement random")
    job_actions.place_job(whatif, np.arange(64, 128))                     # being simulated: still not holding
    assert occupancy(anon, demo) == {"cluster": demo.id, "jobs": 1, "held_gpus": 64, "gpus": 256}
    index, jobs, _ = job_actions.gpu_jobs(demo, 256, extra=[(whatif, "simulating")])
    assert set(np.flatnonzero(index)) == set(range(64)), "a what-if drawn as holding GPUs"
    job_actions.step_simulated(whatif, {"mfu": 0.3})
    whatif.refresh_from_db()
    assert whatif.state == JobState.FINISHED and not job_actions.holds_gpus(whatif)
    assert whatif.name == "a (what-if: placement random)" and whatif.whatif_of == a
    row = anon.get(f"/api/runs/jobs/{whatif.id}/").data
    assert row["whatif"] == "placement random" and row["whatif_of"]["id"] == a.id and row["holds_gpus"] is False
    assert anon.get(f"/api/runs/jobs/{a.id}/").data["holds_gpus"] is True
    assert anon.get("/api/runs/jobs/on-gpu/", {"cluster": demo.id, "gpu": 70}).status_code == 404


def test_a_what_if_name_stays_within_the_field():
    original = Job(name="x" * 100)
    name = job_actions.whatif_name(original, "cluster " + "y" * 80)
    assert len(name) <= 100 and "(what-if: cluster" in name


@pytest.mark.parametrize("query", [{}, {"cluster": "x"}, {"cluster": -1}, {"cluster": 999999}])
def test_occupancy_bad_cluster_names_the_field(anon, demo, query):
    response = anon.get("/api/runs/jobs/occupancy/", query)
    assert response.status_code == 400 and "cluster" in response.data, response.data


def test_a_release_frees_the_jobs_gpus_and_says_so_live(demo, django_capture_on_commit_callbacks):
    owner = client_of("owner", "add_simulationrun")
    other = client_of("other", "add_simulationrun")
    manager = client_of("manager", "add_simulationrun", "manage_any_job")
    mine = running(demo, np.arange(0, 64), name="mine", user=owner.user)
    theirs = running(demo, np.arange(64, 96), name="theirs", user=other.user)
    assert occupancy(owner, demo)["held_gpus"] == 96
    assert owner.get(f"/api/runs/jobs/{mine.id}/").data["can_release"] is True
    assert owner.get(f"/api/runs/jobs/{theirs.id}/").data["can_release"] is False
    # not the owner: refused, saying why; anonymous: refused
    response = owner.post(f"/api/runs/jobs/{theirs.id}/release/")
    assert response.status_code == 403 and "manage_any_job" in str(response.data), response.data
    assert APIClient().post(f"/api/runs/jobs/{mine.id}/release/").status_code in (401, 403)
    # the owner releases: finished, its GPUs free, the count drops, the cluster's stream says so
    seq = store.last_seq(store.cluster_stream(demo.id))
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(f"/api/runs/jobs/{mine.id}/release/")
    assert response.status_code == 200 and response.data["state"] == "finished", response.data
    assert response.data["holds_gpus"] is False and response.data["finished_at"]
    assert occupancy(owner, demo) == {"cluster": demo.id, "jobs": 1, "held_gpus": 32, "gpus": 256}
    assert not job_actions.held_mask(demo, 256)[:64].any()
    last = store.load_last(store.cluster_stream(demo.id))
    assert last[0] > seq
    frame = frames.decode(last[1])
    index = frame.value("gpu_job")
    assert not index[:64].any() and index[64:96].all()
    assert {r["job"]: r["phase"] for r in frame.value("job_stats")}[mine.id] == "finished"
    # twice: a conflict, not a second release
    assert owner.post(f"/api/runs/jobs/{mine.id}/release/").status_code == 409
    # a manager releases another user's job
    assert manager.post(f"/api/runs/jobs/{theirs.id}/release/").status_code == 200
    assert occupancy(owner, demo)["held_gpus"] == 0


def test_whatifs_of_a_job_are_named_for_what_they_vary(demo):
    owner = client_of("owner", "add_simulationrun")
    run = actions.create_run("job", JOB, demo, user=owner.user, enqueue=False)
    original = Job.objects.get(run=run)
    response = owner.post(f"/api/runs/jobs/{original.id}/whatif/",
                          {"vary": "placement", "values": ["random", "first-fit"]}, format="json")
    assert response.status_code == 201, response.data
    jobs = Job.objects.filter(run_id__in=[r["id"] for r in response.data]).order_by("id")
    assert [j.name for j in jobs] == [f"{original.name} (what-if: placement random)",
                                      f"{original.name} (what-if: placement first-fit)"]
    assert [j.run.params["placement"] for j in jobs] == ["random", "first-fit"]
    assert all(j.whatif_of_id == original.id for j in jobs)
    # a bad value names the field, and nothing is made
    before = Job.objects.count()
    for body, field in [({"vary": "placement", "values": ["nowhere"]}, "values"),
                        ({"vary": "cluster", "values": ["no-such-cluster"]}, "values"),
                        ({"vary": "hbm_gb", "values": ["1"]}, "vary"), ({"vary": "qps", "values": []}, "values")]:
        response = owner.post(f"/api/runs/jobs/{original.id}/whatif/", body, format="json")
        assert response.status_code == 400 and field in response.data, (body, response.data)
    assert Job.objects.count() == before
