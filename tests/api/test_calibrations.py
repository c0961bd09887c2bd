"""Calibration profiles over the REST API (/api/calibrations/): a round trip (create, list by cluster, retrieve,
update, delete), each write in the change log; 400s naming the field (values checked by each parameter's own
declaration: sim.core.params); the owner rule of twin/runs/ownership.py (another user holding every model permission
gets 403, a manage-any holder may); the calibration parameter of a run refused with 400 naming it when the profile
is unknown or another cluster's. Real database, DRF's APIClient. Given / when / then."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from sim.jobs.params import JOB
from twin.api.models import ApiToken
from twin.api.permissions import HIDDEN_NAME
from twin.inventory.models import Cluster, ObjectChange

SHARED_DEMO = True
URL = "/api/calibrations/"


def _client(name, *, manage=False):
    """A user holding every model permission of runs (the manage-any ones only if ``manage``), and its client."""
    user = User.objects.create_user(name)
    granted = Permission.objects.filter(content_type__app_label="runs")
    if not manage:
        granted = granted.exclude(codename__startswith="manage_any")
    user.user_permissions.add(*granted)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client


@pytest.fixture
def alice(db):
    return _client("alice-calib")


def _profile(demo, **over):
    return {"cluster": demo.name, "name": "fitted-1", "values": {"gemm_efficiency": 0.6},
            "intervals": {"gemm_efficiency": [0.59, 0.61]}, "summary": {"before": {"median": 0.2}},
            "notes": "three job step times", **over}


def test_a_profile_round_trips_through_the_api_with_its_change_log(alice, anon, demo):
    # given alice, who may write runs
    # when she creates a profile of demo-256
    r = alice.post(URL, _profile(demo), format="json")
    # then it is saved as given, hers, and the change log says she created it with its values
    assert r.status_code == 201, r.json()
    made = r.json()
    assert made["values"] == {"gemm_efficiency": 0.6} and made["intervals"] == {"gemm_efficiency": [0.59, 0.61]}
    assert made["created_by"] == "alice-calib" and made["can_change"] and made["cluster"]["id"] == demo.pk
    log = alice.get("/api/inventory/changes/", {"model": "calibrationprofile", "object_id": made["id"]})
    assert log.status_code == 200, log.json()
    assert [(c["action"], c["after"]["values"]) for c in log.json()["results"]] == [("create", {"gemm_efficiency":
                                                                                               0.6})]
    # and anyone who may read runs lists it by its cluster (by id and by name; an anonymous reader sees no user's
    # name); another cluster lists none
    other = Cluster.objects.create(name="other", title="another cluster", spec={})
    for query in ({"cluster": demo.pk}, {"cluster__name": demo.name}):
        listed = anon.get(URL, query).json()["results"]
        assert [p["name"] for p in listed] == ["fitted-1"] and listed[0]["created_by"] == HIDDEN_NAME
    assert anon.get(URL, {"cluster": other.pk}).json()["results"] == []
    # when she changes its values
    r = alice.patch(f"{URL}{made['id']}/", {"values": {"gemm_efficiency": 0.65, "attention_efficiency": 0.5}},
                    format="json")
    # then they are saved, the rest kept, and the log records before and after
    assert r.status_code == 200, r.json()
    assert r.json()["values"] == {"gemm_efficiency": 0.65, "attention_efficiency": 0.5}
    assert r.json()["notes"] == "three job step times"
    update = ObjectChange.objects.filter(model="calibrationprofile", action="update").get()
    assert update.before == {"values": {"gemm_efficiency": 0.6}}
    assert update.after == {"values": {"gemm_efficiency": 0.65, "attention_efficiency": 0.5}}
    # when she deletes it, it is gone, logged
    assert alice.delete(f"{URL}{made['id']}/").status_code == 204
    assert alice.get(f"{URL}{made['id']}/").status_code == 404
    assert ObjectChange.objects.filter(model="calibrationprofile", action="delete", object_id=made["id"]).exists()


def test_bad_profiles_are_refused_naming_the_field(alice, demo):
    gemm = JOB.by_name["gemm_efficiency"]
    cases = [
        ({"values": {"gemm_efficiency": gemm.max * 2}}, "values", "gemm_efficiency", "at most"),
        ({"values": {"no_such_parameter": 1.0}}, "values", "no_such_parameter", "not a number parameter"),
        ({"values": {"model": 1.0}}, "values", "model", "not a number parameter"),          # a choice, not a number
        ({"values": {"gemm_efficiency": "0.6"}}, "values", "gemm_efficiency", "must be a number"),
        ({"intervals": {"gemm_efficiency": [0.7, 0.5]}}, "intervals", "gemm_efficiency", "above"),
        ({"intervals": {"hbm_gb": [1, 2]}}, "intervals", "hbm_gb", "not a parameter of the profile"),
        ({"name": "has spaces"}, "name", None, "slug"),
    ]
    for over, field, name, words in cases:
        # when a profile with one bad field is posted
        r = alice.post(URL, _profile(demo, **over), format="json")
        # then 400 naming that field (and the parameter), nothing saved
        assert r.status_code == 400, (over, r.json())
        detail = r.json()[field]
        text = str(detail[name] if name else detail)
        assert words in text.lower(), (over, detail)
    assert alice.get(URL).json()["count"] == 0
    # and a name is unique per cluster
    assert alice.post(URL, _profile(demo), format="json").status_code == 201
    again = alice.post(URL, _profile(demo), format="json")
    assert again.status_code == 400 and "unique" in str(again.json()), again.json()


def test_a_profile_keeps_the_held_out_error_and_the_refused_parameters(alice, demo):
    # given the held-out error and the refusals of a fit (what python -m sim calibrate --json gives)
    holdout = {"method": "folds", "folds": 5, "fraction": None, "seed": 0, "count": 10, "median_abs_error": 0.031,
               "before_median_abs_error": 0.2, "in_sample_median_abs_error": 0.02, "reason": None}
    refused = [{"name": "server_cores", "reason": "no measurement moves it",
                "would": "a checkpoint's blocked_s, durable_s or write_gbps"}]
    # when a profile is saved with them
    r = alice.post(URL, _profile(demo, holdout=holdout, refused=refused), format="json")
    # then it keeps them as given; a profile saved without them has none
    assert r.status_code == 201, r.json()
    got = alice.get(f"{URL}{r.json()['id']}/").json()
    assert got["holdout"] == holdout and got["refused"] == refused
    bare = alice.post(URL, _profile(demo, name="bare"), format="json").json()
    assert bare["holdout"] == {} and bare["refused"] == []
    # and malformed ones are 400s naming the field
    for over, field in (({"holdout": {"median_abs_error": -1}}, "holdout"), ({"holdout": [1]}, "holdout"),
                        ({"refused": [{"name": "x"}]}, "refused"), ({"refused": {"name": "x"}}, "refused")):
        bad = alice.post(URL, _profile(demo, name="bad", **over), format="json")
        assert bad.status_code == 400 and field in bad.json(), (over, bad.json())


def test_only_the_owner_or_a_manage_any_holder_changes_a_profile(alice, demo):
    # given alice's profile, bob holding every model permission of runs, carol also runs.manage_any_calibration
    made = alice.post(URL, _profile(demo), format="json").json()
    bob, carol = _client("bob-calib"), _client("carol-calib", manage=True)
    # when bob edits or deletes it: 403 saying why; it is unchanged
    assert not bob.get(f"{URL}{made['id']}/").json()["can_change"]
    for method, body in (("patch", {"notes": "mine"}), ("put", _profile(demo, notes="mine")), ("delete", None)):
        r = getattr(bob, method)(f"{URL}{made['id']}/", body, format="json")
        assert r.status_code == 403 and "manage_any_calibration" in r.json()["detail"], (method, r.json())
    assert alice.get(f"{URL}{made['id']}/").json()["notes"] == "three job step times"
    # and an anonymous client may not write at all
    assert APIClient().patch(f"{URL}{made['id']}/", {"notes": "x"}, format="json").status_code in (401, 403)
    # when carol edits it, she may
    r = carol.patch(f"{URL}{made['id']}/", {"notes": "checked"}, format="json")
    assert r.status_code == 200 and r.json()["notes"] == "checked"


def test_a_run_naming_an_unknown_or_another_clusters_profile_is_refused(alice, demo):
    # given a profile of another cluster only
    other = Cluster.objects.create(name="other", title="another cluster", spec={})
    assert alice.post(URL, _profile(other, name="elsewhere"), format="json").status_code == 201
    for name, words in (("nope", "calibration profile 'nope' does not exist on demo-256"),
                        ("elsewhere", "another cluster's")):
        # when a run on demo-256 names it
        r = alice.post("/api/runs/", {"kind": "job", "cluster": demo.name,
                                      "params": {"model": "llama3-8b", "gpus": 16, "tp": 8, "calibration": name}},
                       format="json")
        # then 400 naming calibration, and no run
        assert r.status_code == 400, r.json()
        assert words in r.json()["params"]["calibration"][0], r.json()
    assert alice.get("/api/runs/").json()["count"] == 0


def test_the_schema_describes_a_profile_and_a_run_naming_one(alice, anon, demo):
    """The schema tells the truth (docs/api.md): a profile as answered, and the record a run keeps, are what the
    schema's Calibration and JobParams components say (OpenAPI's ``nullable`` aside)."""
    import jsonschema
    schema = anon.get("/api/schema/?format=json").json()["components"]["schemas"]
    made = alice.post(URL, _profile(demo, values={"gemm_efficiency": 0.6, "base_rtt_us": 2.0}), format="json").json()
    values = schema["Calibration"]["properties"]["values"]
    jsonschema.validate(made["values"], values)
    assert values["properties"]["gemm_efficiency"]["maximum"] == JOB.by_name["gemm_efficiency"].max
    with pytest.raises(jsonschema.ValidationError):           # a name that is no number parameter: not in it
        jsonschema.validate({"model": 1.0}, values)
    run = alice.post("/api/runs/", {"kind": "job", "cluster": demo.name, "params": {
        "model": "llama3-8b", "gpus": 16, "tp": 8, "calibration": "fitted-1"}}, format="json")
    assert run.status_code == 201, run.json()
    field = {k: v for k, v in schema["JobParams"]["properties"]["calibration"].items() if k != "nullable"}
    jsonschema.validate(run.json()["params"]["calibration"], field)
    jsonschema.validate("fitted-1", field)
