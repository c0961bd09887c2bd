"""Limits that hold for every run kind (issue 24): every kind declares its cost, in a unit of its own with caps per
run and per sweep, and an estimate of its time against the worker's time limit; a sweep's children and a fanned-out
run's chunks count against the active-run limits, per user and over all users. Each probe of the issue is refused
at the API with a 400 naming the field and the setting. Given / when / then."""
import math
import threading

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from rest_framework import serializers
from rest_framework.test import APIClient

from sim.core.params import Param, ParamSet
from twin.api.models import ApiToken
from twin.runs import limits, registry
from twin.runs.constants import DEFAULTS, setting
from twin.runs.models import SimulationRun
from twin.runs.params import validate_params

FAILURES = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M", "days": 3, "rate_scale": 40,
            "checkpoint_interval": "1h"}


def client_of(name: str) -> APIClient:
    """A client with a token of a new user who may start runs."""
    user = User.objects.create_user(name)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client


def start(client, kind, params):
    return client.post("/api/runs/", {"kind": kind, "cluster": "demo-256", "params": params}, format="json")


def refused(response, field, where="params") -> str:
    assert response.status_code == 400, response.json()
    errors = response.json()[where] if where else response.json()
    assert field in errors, errors
    return str(errors[field])


# ------------------------------------------------------------------------------------------ every kind declares
@pytest.mark.django_db
def test_every_registered_kind_declares_a_cost_in_known_units_and_a_time_estimate(demo):
    for kind in registry.kinds().values():
        if kind.name == registry.SWEEP or not kind.run.__module__.startswith("twin."):   # the product's kinds
            continue
        assert kind.cost is not None and kind.estimate is not None, kind.name
        assert kind.throughputs and all(t in DEFAULTS for t in kind.throughputs), kind.name
        try:
            values = validate_params(kind.name, {}, demo)
        except serializers.ValidationError:            # a kind that needs a parameter (a jobs file) has no default run
            continue
        cost = limits.cost_of(kind, values, demo)
        assert cost and set(cost) <= set(limits.UNITS), (kind.name, cost)
        seconds = limits.seconds_of(kind, values, demo)
        assert math.isfinite(seconds) and 0 <= seconds <= setting(limits.TIME_LIMIT), (kind.name, seconds)


def test_a_kind_without_a_cost_or_an_estimate_is_refused_at_registration():
    bare = ParamSet("bare", (Param("n", "int", 1, "units", min=1, max=10),))
    run = lambda layout, p, progress: ({}, {})                           # noqa: E731
    with pytest.raises(ValueError, match="declares no cost"):
        registry.register(registry.Kind("bare", "Bare", bare, run, estimate=lambda v, c: 1.0))
    with pytest.raises(ValueError, match="declares no estimate"):
        registry.register(registry.Kind("bare", "Bare", bare, run, cost=lambda v, c: {"flows": 1}))
    assert "bare" not in registry.kinds()


# ---------------------------------------------------------------------------------- probe: a failures sweep
@pytest.mark.django_db
def test_a_failures_sweep_of_25600_timelines_is_refused_naming_sweep(runner, demo):
    # given a sweep of failures runs of 100 seeds at 256 placements: 25,600 timelines (each run alone is 100)
    sweep = {"kind": "failures", "params": {**FAILURES, "seeds": 100}, "sweep": {"seed": list(range(256))}}
    says = refused(start(runner, "sweep", sweep), "sweep")
    # then it is refused naming the sweep's cap on timelines
    assert "25,600" in says and "TWIN_RUNS_MAX_SWEEP_TIMELINES" in says, says
    assert not SimulationRun.objects.exists()
    # and a sweep within the cap is accepted
    small = {**sweep, "sweep": {"seed": [1, 2]}}
    assert start(runner, "sweep", small).status_code == 201


@pytest.mark.django_db
def test_a_sweep_s_child_is_bounded_by_its_own_time_as_it_does_not_fan_out(runner, demo, settings):
    # given a failures run whose chunks fit the time limit but whose whole does not
    params = {**FAILURES, "seeds": 40}
    settings.TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND = 1                 # so that its seconds are thousands
    kind = registry.get("failures")
    values = validate_params("failures", params, demo)
    chunk, whole = limits.seconds_of(kind, values, demo), limits.seconds_of(kind, values, demo, alone=True)
    assert chunk < whole
    settings.TWIN_RUNS_SOFT_TIME_LIMIT = int((chunk + whole) / 2)
    # then the run itself (it fans out into chunks) is accepted, a sweep of it (its children compute whole) is not
    says = refused(start(runner, "sweep", {"kind": "failures", "params": params, "sweep": {"seed": [1]}}), "sweep")
    assert "TWIN_RUNS_SOFT_TIME_LIMIT" in says, says
    assert start(runner, "failures", params).status_code == 201


# ------------------------------------------------------------------------------- probe: active runs counted
@pytest.mark.django_db
def test_a_sweep_counts_as_its_children_before_it_is_queued(runner, demo, settings):
    settings.TWIN_RUNS_MAX_ACTIVE_PER_USER = 5
    sweep = {"kind": "collective", "params": {"gpus": 16}, "sweep": {"qps": [1, 2], "routing": ["ecmp", "eecmp"]}}
    # given a queued sweep of four children (not fanned out yet)
    assert start(runner, "sweep", sweep).status_code == 201
    # when the user queues a second sweep of four
    says = refused(start(runner, "sweep", sweep), "active_runs", where=None)
    # then it is refused before it is queued, naming the setting and the count
    assert "TWIN_RUNS_MAX_ACTIVE_PER_USER" in says and "4" in says, says
    assert SimulationRun.objects.count() == 1
    # and a fanned-out failures run counts as its chunks (seeds 20 at 10 per chunk: two)
    settings.TWIN_FAILURES_SEEDS_PER_CHILD = 10
    refused(start(runner, "failures", {**FAILURES, "seeds": 20}), "active_runs", where=None)
    assert start(runner, "failures", {**FAILURES, "seeds": 10}).status_code == 201


@pytest.mark.django_db
def test_the_global_cap_counts_every_user_s_runs(demo, settings):
    settings.TWIN_RUNS_MAX_ACTIVE = 3
    alice, bob = client_of("alice"), client_of("bob")
    sweep = {"kind": "collective", "params": {"gpus": 16}, "sweep": {"qps": [1, 2]}}
    # given alice's sweep of two children
    assert start(alice, "sweep", sweep).status_code == 201
    # when bob asks for two more
    says = refused(start(bob, "sweep", sweep), "active_runs", where=None)
    # then he is refused naming the global setting, and one more run fits
    assert "TWIN_RUNS_MAX_ACTIVE" in says and "TWIN_RUNS_MAX_ACTIVE_PER_USER" not in says, says
    assert start(bob, "collective", {"gpus": 16}).status_code == 201
    refused(start(alice, "collective", {"gpus": 16}), "active_runs", where=None)


@pytest.mark.django_db(transaction=True)
def test_two_users_racing_cannot_both_pass_the_global_cap(settings):
    import io

    from django.core.management import call_command
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    settings.TWIN_RUNS_MAX_ACTIVE = 1
    clients = [client_of("alice"), client_of("bob")]
    for attempt in range(3):
        barrier, codes = threading.Barrier(2), []

        def post(client):
            try:
                barrier.wait()
                codes.append(start(client, "collective", {"gpus": 16}).status_code)
            finally:
                connection.close()

        threads = [threading.Thread(target=post, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # exactly one of the two is queued, the other refused
        assert sorted(codes) == [201, 400], codes
        assert SimulationRun.objects.count() == 1      # made once (a session's worker may already have run it)
        SimulationRun.objects.all().delete()


# --------------------------------------------------------------------------- probe: a run past the time limit
@pytest.mark.django_db
def test_a_schedule_of_100000_arrivals_is_refused_naming_arrivals(runner, demo):
    says = refused(start(runner, "schedule", {"arrivals": 100_000}), "arrivals")
    assert "TWIN_RUNS_SOFT_TIME_LIMIT" in says and "TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND" in says, says
    assert not SimulationRun.objects.exists()
    assert start(runner, "schedule", {"arrivals": 200}).status_code == 201


@pytest.mark.django_db
def test_a_run_s_estimate_is_its_cost_over_its_throughput_against_the_time_limit(runner, demo, settings):
    # given a collective whose estimate is its flows over TWIN_RUNS_FLOWS_PER_SECOND
    params = {"gpus": 128, "qps": 4, "seeds": 3}
    flows = registry.get("collective").cost(validate_params("collective", params, demo), demo)["flows"]
    settings.TWIN_RUNS_SOFT_TIME_LIMIT = 10
    settings.TWIN_RUNS_FLOWS_PER_SECOND = flows // 10 - 1                # a little over 10 s
    says = refused(start(runner, "collective", params), "cost")
    assert "TWIN_RUNS_SOFT_TIME_LIMIT" in says and "TWIN_RUNS_FLOWS_PER_SECOND" in says, says
    settings.TWIN_RUNS_FLOWS_PER_SECOND = flows // 10 + 1
    assert start(runner, "collective", params).status_code == 201


@pytest.mark.django_db
def test_debug_s_estimate_counts_its_dump_entries(runner, demo, settings):
    params = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "entries": 1000}
    settings.TWIN_RUNS_SOFT_TIME_LIMIT = 10
    settings.TWIN_RUNS_DUMP_ENTRIES_PER_SECOND = 64 * 1000 // 20                # 20 s of dumps
    says = refused(start(runner, "debug", params), "gpus")
    assert "TWIN_RUNS_DUMP_ENTRIES_PER_SECOND" in says, says
