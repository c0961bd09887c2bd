"""The ``calibration`` run parameter (twin/runs/calibration.py): a `job` run naming a profile runs on a real worker
with the profile's gemm_efficiency, and says so in its parameters and its summary; a run without one runs on the
engine's defaults; a value the user gives wins over the profile's; names the kind does not declare are ignored and
listed; stored parameters given back (a scenario's, a what-if's) take the profile's values as they are now. Given /
when / then."""
from __future__ import annotations

import pytest
from rest_framework.exceptions import ValidationError

from sim.jobs.params import JOB
from tests.runs.test_runs import finished
from twin.runs import actions
from twin.runs.calibration import CALIBRATION
from twin.runs.params import form_fields, serializer_for, validate_params
from twin.runs.sweep import merge_sweep

JOB_PARAMS = {"model": "llama3-8b", "gpus": 16, "tp": 8, "batch_tokens": "1M"}


def _profile(client, cluster, values, name="fitted"):
    r = client.post("/api/calibrations/", {"cluster": cluster.name, "name": name, "values": values}, format="json")
    assert r.status_code == 201, r.json()
    return r.json()


@pytest.mark.django_db(transaction=True)
def test_a_job_run_naming_a_profile_runs_with_its_values(workers, runner, demo):
    # given a profile of demo-256 with a gemm_efficiency away from the engine's default, and a name no job declares
    gemm = 0.4
    assert JOB.by_name["gemm_efficiency"].default is None           # the engine's own default applies without it
    profile = _profile(runner, demo, {"gemm_efficiency": gemm, "base_rtt_us": 2.0})
    # when a job run names it, and the same job runs without it
    made = runner.post("/api/runs/", {"kind": "job", "cluster": demo.name,
                                      "params": {**JOB_PARAMS, "calibration": "fitted"}}, format="json")
    plain = runner.post("/api/runs/", {"kind": "job", "cluster": demo.name, "params": JOB_PARAMS}, format="json")
    assert made.status_code == 201 and plain.status_code == 201, (made.json(), plain.json())
    # then the calibrated run's parameters hold the profile's value and the record of what it applied
    record = {"profile": "fitted", "id": profile["id"], "applied": {"gemm_efficiency": gemm},
              "ignored": ["base_rtt_us"]}
    assert made.json()["params"]["gemm_efficiency"] == gemm and made.json()["params"]["calibration"] == record
    assert made.json()["params_text"].endswith(" · calibration fitted") and "calibration" not in plain.json()[
        "params_text"]
    assert "calibration" not in plain.json()["params"] and plain.json()["params"]["gemm_efficiency"] is None
    # and once run by a worker, its summary records the profile and what it applied, and its MFU differs from the
    # uncalibrated run's (the GEMMs at another share of the peak)
    calibrated, default = finished(runner, made.json()["id"], timeout=90), finished(runner, plain.json()["id"],
                                                                                    timeout=90)
    assert calibrated["status"] == "succeeded" and default["status"] == "succeeded", (calibrated["error"],
                                                                                       default["error"])
    assert calibrated["summary"]["calibration"] == record and "calibration" not in default["summary"]
    assert calibrated["summary"]["mfu"] != default["summary"]["mfu"]
    assert calibrated["summary"]["step_time"] > default["summary"]["step_time"]     # 0.4 of the peak: below the curve


def test_a_value_given_wins_and_stored_parameters_take_the_profile_as_it_is_now(runner, demo):
    # given a profile with gemm and attention efficiencies
    profile = _profile(runner, demo, {"gemm_efficiency": 0.6, "attention_efficiency": 0.5})
    # when a job names it and gives its own gemm_efficiency
    p = validate_params("job", {**JOB_PARAMS, "gemm_efficiency": 0.7, "calibration": "fitted"}, demo)
    # then the given value wins and the record lists only what the profile applied
    assert p["gemm_efficiency"] == 0.7 and p["attention_efficiency"] == 0.5
    assert p["calibration"]["applied"] == {"attention_efficiency": 0.5}
    # and a null value is no value: the profile's applies
    p = validate_params("job", {**JOB_PARAMS, "gemm_efficiency": None, "calibration": "fitted"}, demo)
    assert p["gemm_efficiency"] == 0.6
    # when a scenario names it and the profile is changed afterwards
    scenario = actions.save_scenario(name="calibrated", kind="job", cluster=demo,
                                     params={**JOB_PARAMS, "calibration": "fitted"})
    assert scenario.params["gemm_efficiency"] == 0.6
    r = runner.patch(f"/api/calibrations/{profile['id']}/", {"values": {"gemm_efficiency": 0.65}}, format="json")
    assert r.status_code == 200, r.json()
    # then its stored parameters, given back, take the profile's values as they are now (attention_efficiency is no
    # longer the profile's: it stays as stored), and a value changed by hand (a what-if's) still wins
    again = validate_params("job", scenario.params, demo)
    assert again["gemm_efficiency"] == 0.65 and again["calibration"]["applied"] == {"gemm_efficiency": 0.65}
    varied = validate_params("job", {**scenario.params, "gemm_efficiency": 0.9}, demo)
    assert varied["gemm_efficiency"] == 0.9 and varied["calibration"]["applied"] == {}
    # when the scenario is started naming another profile, which holds attention_efficiency only
    _profile(runner, demo, {"attention_efficiency": 0.4}, name="other")
    r = runner.post("/api/runs/", {"scenario": scenario.pk, "params": {"calibration": "other"}}, format="json")
    # then the run takes the other profile's values and none of the first's (gemm_efficiency at the engine's default)
    assert r.status_code == 201, r.json()
    p = r.json()["params"]
    assert p["attention_efficiency"] == 0.4 and p["gemm_efficiency"] is None and p["calibration"]["profile"] == "other"


def test_the_parameter_is_declared_once_for_every_kind_s_form_and_schema(demo):
    # the API serializer of every kind with parameters and every run form offer it, from the one declaration
    fields = serializer_for("job")().fields
    assert fields["calibration"].help_text == CALIBRATION.help and not fields["calibration"].required
    form = {f["name"]: f for f in form_fields(JOB, demo)}
    assert form["calibration"]["help"] == CALIBRATION.help and form["calibration"]["default"] is None
    assert "calibration" in serializer_for("collective")().fields


def test_a_sweep_compares_profiles_side_by_side(runner, demo):
    # given two profiles of demo-256
    _profile(runner, demo, {"gemm_efficiency": 0.6}, name="low")
    _profile(runner, demo, {"gemm_efficiency": 0.8}, name="high")
    # when a sweep of job runs sweeps calibration over them
    sweep = {"kind": "job", "params": JOB_PARAMS, "sweep": {"calibration": ["low", "high"]}}
    validate_params("sweep", sweep, demo)
    # then each combination is validated with its profile applied, and a merged row names its child's profile
    children = [validate_params("job", {**JOB_PARAMS, "calibration": name}, demo) for name in ("low", "high")]
    assert [c["gemm_efficiency"] for c in children] == [0.6, 0.8]
    rows = merge_sweep(sweep, [{"id": i, "params": c, "status": "succeeded", "worker": "w", "summary": {},
                                "error": ""} for i, c in enumerate(children)])["children"]
    assert [r["calibration"] for r in rows] == ["low", "high"]
    # and an unknown profile among the values is refused naming the combination and calibration
    with pytest.raises(ValidationError) as e:
        validate_params("sweep", {**sweep, "sweep": {"calibration": ["low", "nope"]}}, demo)
    assert "calibration" in str(e.value.detail["params"]["sweep"]["errors"])
