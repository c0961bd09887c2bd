"""The power run kind at the API: bad input is refused with a 400 naming the field and the reason, before anything
is queued (the engine's declaration, the cluster's GPUs and their power limits, the twin's limits); a power run
belongs to its creator as every run does. Given / when / then."""
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from twin.api.models import ApiToken
from twin.runs.models import SimulationRun

SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "batch_tokens": "1M"}


def client_of(name: str, manage: bool = False) -> tuple[User, APIClient]:
    user = User.objects.create_user(name)
    perms = Permission.objects.filter(content_type__app_label="runs")
    if not manage:
        perms = perms.exclude(codename__startswith="manage_any")
    user.user_permissions.add(*perms)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return user, client


@pytest.mark.django_db
@pytest.mark.parametrize("params, field, says", [
    ({"power_cap": 100}, "power_cap", "outside the GPU's power limits"),
    ({"power_floor": 900}, "power_floor", "outside the GPU's power limits"),
    ({"cap_sweep": [150, 500]}, "cap_sweep", "150 W is outside"),
    ({"power_cap": 500, "cap_from": "rack"}, "cap_from", "leave power_cap empty"),
    ({"cap_from": "building"}, "building_budget_mw", "is required"),
    ({"power_cap": 400, "power_floor": 450}, "power_floor", "above the cap"),
    ({"days": 2}, "failures", "add failures"),
    ({"failures": True}, "days", "is required"),
    ({"days": 100000, "failures": True}, "days", ""),
    ({"resolution_ms": 0}, "resolution_ms", ""),
    ({"gpus": 512, "dp": 32}, "gpus", "usable"),
    ({"cap_from": "sideways"}, "cap_from", ""),
    ({"rack_budget_kw": -1}, "rack_budget_kw", ""),
    ({"days": 54, "failures": True, "timeline_step_s": 0.1}, "timeline_step_s", ""),
])
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_queued(demo, params, field, says):
    _, client = client_of("power-bad")
    before = SimulationRun.objects.count()
    r = client.post("/api/runs/", {"kind": "power", "cluster": "demo-256", "params": {**JOB, **params}},
                    format="json")
    assert r.status_code == 400, r.json()
    errors = r.json()["params"]
    assert field in errors, errors
    assert says in str(errors[field]), errors
    assert SimulationRun.objects.count() == before


@pytest.mark.django_db
def test_a_power_run_is_its_creators(demo):
    # given alice's power run (queued: no worker runs here) and bob, who may start and cancel runs
    _, alice = client_of("power-alice")
    _, bob = client_of("power-bob")
    r = alice.post("/api/runs/", {"kind": "power", "cluster": "demo-256", "params": JOB}, format="json")
    assert r.status_code == 201, r.json()
    run = r.json()["id"]
    # when bob cancels or deletes it, then 403 saying why, and the run is as it was
    for method, path in (("post", f"/api/runs/{run}/cancel/"), ("delete", f"/api/runs/{run}/")):
        answer = getattr(bob, method)(path)
        assert answer.status_code == 403 and "another user's" in answer.json()["detail"], answer.json()
    assert SimulationRun.objects.get(pk=run).status == "queued"
    assert bob.get(f"/api/runs/{run}/").json()["can_change"] is False
    # and a holder of runs.manage_any_run may, and alice may
    _, carol = client_of("power-carol", manage=True)
    assert carol.post(f"/api/runs/{run}/cancel/").json()["status"] == "cancelled"
    assert alice.delete(f"/api/runs/{run}/").status_code == 204
