"""Runs, scenarios and schedules belong to their creator (twin/runs/ownership.py): another user with every model
permission gets 403 saying why on cancel, delete and PATCH; the owner and a "manage any" holder succeed; the API says
per row whether the reader may change it; the runs a schedule starts are its owner's. Dumps archives follow
TWIN_DUMPS_ACCESS. Anonymous responses carry no user names and no response carries a worker's temporary path.
Real database, real Redis (throttle counts), DRF's APIClient. Given / when / then."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry
from rest_framework.test import APIClient

from twin.api.models import ApiToken
from twin.celery import app as celery_app
from twin.inventory.models import GPU
from twin.runs import files
from twin.runs.models import Job, Scenario, SimulationRun
from twin.runs.tasks import run_scenario

PARAMS = {"collective": "allgather", "gpus": 8, "sizes": "1M"}
MANAGE_ANY = ("manage_any_run", "manage_any_scenario", "manage_any_schedule")


def _user(name, *, manage=False, perms=True):
    """A user with every model permission of runs, schedules and the inventory (not the "manage any" ones unless
    ``manage``), and a client holding its token."""
    user = User.objects.create_user(name)
    if perms:
        granted = Permission.objects.filter(content_type__app_label__in=("runs", "django_celery_beat", "inventory"))
        if not manage:
            granted = granted.exclude(codename__in=MANAGE_ANY)
        user.user_permissions.add(*granted)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return user, client


@pytest.fixture
def owned(demo):
    """Alice's scenario, run (with a dumps archive) and schedule, made over the API."""
    alice, a = _user("alice-owner")
    scenario = a.post("/api/runs/scenarios/", {"name": "alices", "cluster": demo.pk, "kind": "collective",
                                                "params": PARAMS}, format="json")
    assert scenario.status_code == 201, scenario.json()
    run = a.post("/api/runs/", {"scenario": scenario.json()["id"]}, format="json")
    assert run.status_code == 201, run.json()
    schedule = a.post("/api/runs/schedules/", {"name": "alices nightly", "scenario": scenario.json()["id"],
                                               "crontab": {"minute": "0", "hour": "3"}}, format="json")
    assert schedule.status_code == 201, schedule.json()
    return {"alice": alice, "a": a, "scenario": scenario.json()["id"], "run": run.json()["id"],
            "schedule": schedule.json()["id"]}


def _dumps(run_id, tmp_path):
    (tmp_path / "nccl_trace_rank_0").write_bytes(b"dump")
    files.pack_folder(run_id, tmp_path)
    assert files.stored(run_id) is not None


def _writes(o):
    return [("post", f"/api/runs/{o['run']}/cancel/", None),
            ("delete", f"/api/runs/{o['run']}/", None),
            ("patch", f"/api/runs/scenarios/{o['scenario']}/", {"description": "mine now"}),
            ("patch", f"/api/runs/schedules/{o['schedule']}/", {"enabled": False}),
            ("delete", f"/api/runs/schedules/{o['schedule']}/", None),
            ("delete", f"/api/runs/scenarios/{o['scenario']}/", None)]     # last: its schedules go with it


def test_another_user_with_every_model_permission_may_not_change_what_is_not_theirs(owned, tmp_path):
    # given alice's run (with its dumps), scenario and schedule, and bob, who holds every model permission
    _dumps(owned["run"], tmp_path)
    _bob, b = _user("bob-other")
    # when bob cancels, deletes or edits any of them
    for method, path, body in _writes(owned):
        r = getattr(b, method)(path, body, format="json")
        # then 403, saying why
        assert r.status_code == 403, (method, path, r.status_code)
        assert "another user's" in r.json()["detail"] and "manage_any" in r.json()["detail"], r.json()
    # and nothing changed: the run still queued with its dumps, the scenario and the schedule as they were
    run = SimulationRun.objects.get(pk=owned["run"])
    assert run.status == "queued" and not run.cancel_requested and files.stored(run.pk) is not None
    assert Scenario.objects.get(pk=owned["scenario"]).description == ""
    assert PeriodicTask.objects.get(pk=owned["schedule"]).enabled
    # and every row tells bob he may not, and alice that she may
    for path in (f"/api/runs/{owned['run']}/", f"/api/runs/scenarios/{owned['scenario']}/",
                 f"/api/runs/schedules/{owned['schedule']}/"):
        assert b.get(path).json()["can_change"] is False, path
        assert owned["a"].get(path).json()["can_change"] is True, path
    assert [r["can_change"] for r in b.get("/api/runs/").json()["results"]] == [False]


def test_the_owner_changes_and_deletes_what_is_theirs(owned, tmp_path):
    _dumps(owned["run"], tmp_path)
    a = owned["a"]
    assert a.patch(f"/api/runs/scenarios/{owned['scenario']}/", {"description": "mine"}, format="json").status_code == 200
    assert a.patch(f"/api/runs/schedules/{owned['schedule']}/", {"enabled": False}, format="json").status_code == 200
    r = a.post(f"/api/runs/{owned['run']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert a.delete(f"/api/runs/{owned['run']}/").status_code == 204
    assert not SimulationRun.objects.filter(pk=owned["run"]).exists()
    assert a.delete(f"/api/runs/schedules/{owned['schedule']}/").status_code == 204
    assert a.delete(f"/api/runs/scenarios/{owned['scenario']}/").status_code == 204


def test_a_manage_any_holder_changes_anyones(owned):
    _carol, c = _user("carol-admin", manage=True)
    for method, path, body in _writes(owned):
        r = getattr(c, method)(path, body, format="json")
        assert r.status_code in (200, 204), (method, path, r.status_code, r.content[:200])
    assert not SimulationRun.objects.filter(pk=owned["run"]).exists()


def test_a_run_with_no_owner_is_changed_by_permission_holders_only(demo):
    run = SimulationRun.objects.create(kind="fabric_health", cluster=demo, params={})     # the system's
    _bob, b = _user("bob-other")
    r = b.post(f"/api/runs/{run.pk}/cancel/")
    assert r.status_code == 403 and "the system's" in r.json()["detail"]
    _carol, c = _user("carol-admin", manage=True)
    assert c.post(f"/api/runs/{run.pk}/cancel/").status_code == 200


def test_the_runs_a_schedule_starts_are_its_owners(owned):
    # given alice's schedule as beat reads it (its entry: the task, its arguments and the headers beat sends)
    task = PeriodicTask.objects.get(pk=owned["schedule"])
    entry = ModelEntry(task, app=celery_app)
    # when beat fires it
    run_id = run_scenario.apply(args=entry.args, kwargs=entry.kwargs, **entry.options).get()
    # then the run is alice's: bob may not cancel it, and it counts against her active runs
    run = SimulationRun.objects.get(pk=run_id)
    assert run.created_by == owned["alice"]
    _bob, b = _user("bob-other")
    assert b.post(f"/api/runs/{run_id}/cancel/").status_code == 403
    # and a schedule made in the admin (no owner) starts runs of nobody
    other = PeriodicTask.objects.create(name="admin-made", task=task.task, kwargs=task.kwargs, crontab=task.crontab)
    entry = ModelEntry(other, app=celery_app)
    run_id = run_scenario.apply(args=entry.args, kwargs=entry.kwargs, **entry.options).get()
    assert SimulationRun.objects.get(pk=run_id).created_by is None


def test_a_schedule_whose_owner_is_at_the_active_limit_starts_nothing_and_says_why(owned, settings, caplog):
    # given alice already at her limit of active runs (her run of the fixture is queued)
    settings.TWIN_RUNS_MAX_ACTIVE_PER_USER = 1
    task = PeriodicTask.objects.get(pk=owned["schedule"])
    entry = ModelEntry(task, app=celery_app)
    before = SimulationRun.objects.count()
    # when beat fires her schedule, the task ends normally, starts nothing and logs the refusal
    assert run_scenario.apply(args=entry.args, kwargs=entry.kwargs, **entry.options).get() is None
    assert SimulationRun.objects.count() == before
    assert "not started" in caplog.text and "TWIN_RUNS_MAX_ACTIVE_PER_USER" in caplog.text


def test_the_run_page_offers_cancel_only_to_who_may(owned, settings):
    alice, bob = owned["alice"], _user("bob-other")[0]
    for user, offered in ((alice, True), (bob, False)):
        page = Client()
        page.force_login(user)
        body = page.get(f"/experiments/{owned['run']}/").content.decode()
        assert f'"can_cancel": {str(offered).lower()}' in body, user


# ------------------------------------------------------------------------------------------------------ dumps
@pytest.mark.parametrize("access, anonymous, other, owner", [
    ("authenticated", 401, 200, 200),
    ("anyone", 200, 200, 200),
    ("owner", 401, 403, 200),
])
def test_dumps_follow_twin_dumps_access(owned, tmp_path, settings, access, anonymous, other, owner):
    _dumps(owned["run"], tmp_path)
    settings.TWIN_DUMPS_ACCESS = access
    path = f"/api/runs/{owned['run']}/dumps/"
    bob, carol = _user("bob-other")[1], _user("carol-admin", manage=True)[1]
    assert APIClient().get(path).status_code == anonymous
    assert bob.get(path).status_code == other
    assert owned["a"].get(path).status_code == owner
    assert carol.get(path).status_code == 200
    # and one rank's dump follows the same rule (then 404: this run, made before, keeps only its stored archive)
    one = f"/api/runs/{owned['run']}/dumps/0/"
    for client, code in ((APIClient(), anonymous), (bob, other), (owned["a"], owner), (carol, 200)):
        assert client.get(one).status_code == (404 if code == 200 else code)


def test_dumps_are_refused_to_anonymous_readers_by_default(owned, tmp_path):
    _dumps(owned["run"], tmp_path)
    r = APIClient().get(f"/api/runs/{owned['run']}/dumps/")
    assert r.status_code == 401 and "TWIN_DUMPS_ACCESS" in r.json()["detail"]


def test_a_debug_run_row_and_its_page_say_who_may_download_its_dumps(owned, demo):
    # given a debug run of alice's (its kind keeps dumps) and the default TWIN_DUMPS_ACCESS (signed-in users)
    run = SimulationRun.objects.create(kind="debug", cluster=demo, params={}, created_by=owned["alice"])
    api, page = f"/api/runs/{run.pk}/", f"/clusters/{demo.name}/debug/{run.pk}.json"
    # then anonymous readers are told why, in the row and on the Debug page's data; alice is offered the download
    assert "sign in" in APIClient().get(api).json()["dumps_refusal"]
    assert "sign in" in Client().get(page).json()["dumps_refusal"]
    assert owned["a"].get(api).json()["dumps_refusal"] == ""
    # and a kind that keeps no dumps says nothing
    assert APIClient().get(f"/api/runs/{owned['run']}/").json()["dumps_refusal"] == ""


# -------------------------------------------------------------------------------------------- names and paths
def test_anonymous_responses_carry_no_user_names(owned, demo):
    # given alice's scenario, run, schedule, a job of hers and an inventory change she made
    a = owned["a"]
    Job.objects.create(name="alices-job", cluster=demo, run_id=owned["run"], created_by=owned["alice"])
    gpu = GPU.objects.filter(cluster=demo).first()
    assert a.patch(f"/api/inventory/gpus/{gpu.pk}/", {"status": "failed"}, format="json").status_code == 200
    paths = ["/api/runs/", f"/api/runs/{owned['run']}/", "/api/runs/scenarios/",
             f"/api/runs/scenarios/{owned['scenario']}/", "/api/runs/schedules/", "/api/runs/jobs/",
             "/api/inventory/changes/", f"/api/inventory/changes/?user={owned['alice'].username}",
             f"/inventory/gpu/{gpu.pk}/"]
    # when anonymous readers read them, then no name is there
    for path in paths:
        r = Client().get(path)
        assert r.status_code == 200, path
        assert b"alice-owner" not in r.content, path
    assert APIClient().get("/api/inventory/changes/").json()["results"][0]["user"] is None
    # while a signed-in reader (no permission) sees who
    _reader, reader = _user("rita-reader", perms=False)
    assert reader.get(f"/api/runs/{owned['run']}/").json()["created_by"] == "alice-owner"
    assert reader.get("/api/inventory/changes/").json()["results"][0]["user_name"] == "alice-owner"


def test_no_response_carries_a_workers_temporary_path(demo):
    folder = "/tmp/twin-debug-7-x1y2z3"
    run = SimulationRun.objects.create(
        kind="debug", cluster=demo, params={}, status="failed",
        summary={"folder": folder, "dumps": 3}, notes=f"kept {folder}/nccl_trace_rank_0",
        error=f"DumpError: {folder}/nccl_trace_rank_3: not a readable flight recorder dump")
    for client in (APIClient(), _user("rita-reader", perms=False)[1]):
        for path in (f"/api/runs/{run.pk}/", f"/api/runs/{run.pk}/results/", "/api/runs/"):
            body = client.get(path).content.decode()
            assert "/tmp" not in body and "twin-debug-7-x1y2z3" in body, (path, body[:300])
    assert "nccl_trace_rank_3: not a readable" in APIClient().get(f"/api/runs/{run.pk}/").json()["error"]


def test_a_write_token_grants_no_manage_any_permission(db):
    import io

    from django.core.management import call_command
    call_command("create_api_token", "script", "--create", "--write", stdout=io.StringIO())
    user = User.objects.get(username="script")
    assert user.has_perm("runs.delete_simulationrun") and user.has_perm("runs.change_scenario")
    assert not any(user.has_perm(f"runs.{p}") for p in MANAGE_ANY)
