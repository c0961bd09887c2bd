"""Limits on what one request may make the workers do: each a setting, each refused before a run is queued with a
400 naming its field, nothing written. The bounds a test crosses come from the kinds' own cost hooks and the
engine's own constants, never from a figure typed here. Given / when / then."""
import numpy as np
import pytest

from sim.fabric.collectives import MAX_ALLTOALL_TRANSFERS
from sim.core.params import Param, ParamSet
from sim.fabric.topology import topology_from_layout
from twin.inventory import gpu_grid
from twin.inventory.adapter import layout_from_db
from twin.inventory.choices import Status
from twin.inventory.models import NIC, Switch
from twin.runs import registry
from twin.runs.actions import fan_out_sweep
from twin.runs.models import Scenario, SimulationRun
from twin.runs.params import validate_params


def start(runner, kind, params):
    return runner.post("/api/runs/", {"kind": kind, "cluster": "demo-256", "params": params}, format="json")


def refused(response, field, where="params"):
    """A 400 naming ``field`` (under ``where``), and no run written."""
    assert response.status_code == 400, response.json()
    errors = response.json()[where] if where else response.json()
    assert field in errors, errors
    return str(errors[field])


@pytest.mark.django_db
def test_seeds_are_bounded_by_a_setting_below_the_engine_s_own_limit(runner, demo, settings):
    # the engine's own bound (sim.core.params) holds: 10,000 seeds are refused
    assert "at most" in refused(start(runner, "collective", {"seeds": 10_000}), "seeds")
    # and the twin may lower it
    settings.TWIN_RUNS_MAX_SEEDS = 3
    assert "TWIN_RUNS_MAX_SEEDS" in refused(start(runner, "collective", {"seeds": 4}), "seeds")
    assert not SimulationRun.objects.exists()
    assert start(runner, "collective", {"seeds": 3}).status_code == 201


@pytest.mark.django_db
def test_a_run_s_cost_is_its_kind_s_and_bounded_by_a_setting(runner, demo, settings):
    params = {"gpus": 128, "qps": 4, "seeds": 3}
    flows = registry.get("collective").cost(validate_params("collective", params, demo), demo)["flows"]
    settings.TWIN_RUNS_MAX_RUN_FLOWS = flows - 1
    assert "TWIN_RUNS_MAX_RUN_FLOWS" in refused(start(runner, "collective", params), "cost")
    assert not SimulationRun.objects.exists()
    settings.TWIN_RUNS_MAX_RUN_FLOWS = flows
    assert start(runner, "collective", params).status_code == 201


@pytest.mark.django_db
def test_alltoall_transfers_are_checked_against_the_engine_s_budget_before_the_run_starts(runner, demo):
    # N (N - 1) x qps over the engine's MAX_ALLTOALL_TRANSFERS is refused at the API, naming gpus
    n = 256
    qps = MAX_ALLTOALL_TRANSFERS // (n * (n - 1)) + 1
    says = refused(start(runner, "collective", {"collective": "alltoall", "gpus": n, "qps": qps}), "gpus")
    assert f"{MAX_ALLTOALL_TRANSFERS:,}" in says
    assert not SimulationRun.objects.exists()
    assert start(runner, "collective", {"collective": "alltoall", "gpus": n, "qps": qps - 1}).status_code == 201


@pytest.mark.django_db
def test_a_sweep_s_children_and_their_summed_cost_are_bounded(runner, demo, settings):
    sweep = {"kind": "collective", "params": {"gpus": 64}, "sweep": {"qps": [1, 2], "routing": ["ecmp", "eecmp"]}}
    settings.TWIN_RUNS_MAX_SWEEP_CHILDREN = 3
    assert "TWIN_RUNS_MAX_SWEEP_CHILDREN" in refused(start(runner, "sweep", sweep), "sweep")
    settings.TWIN_RUNS_MAX_SWEEP_CHILDREN = 4
    kind = registry.get("collective")
    total = sum(kind.cost(validate_params("collective", {"gpus": 64, "qps": q, "routing": r}, demo), demo)["flows"]
                for q in (1, 2) for r in ("ecmp", "eecmp"))
    settings.TWIN_RUNS_MAX_SWEEP_FLOWS = total - 1
    assert "TWIN_RUNS_MAX_SWEEP_FLOWS" in refused(start(runner, "sweep", sweep), "sweep")
    assert not SimulationRun.objects.exists()
    settings.TWIN_RUNS_MAX_SWEEP_FLOWS = total
    assert start(runner, "sweep", sweep).status_code == 201


@pytest.mark.django_db
def test_gpus_are_checked_against_the_usable_gpus_as_the_engine_counts_them(runner, demo):
    # given a failed leaf switch and a failed NIC elsewhere
    leaf = Switch.objects.filter(cluster=demo, name__contains="rtsw").order_by("id").first()
    Switch.objects.filter(pk=leaf.pk).update(status=Status.FAILED)
    NIC.objects.filter(pk=NIC.objects.filter(cluster=demo, gpu__isnull=False).order_by("-id").first().pk).update(
        status=Status.FAILED)
    # then the twin's usable count is the engine's (sim.fabric.topology on the inventory as read by the workers)
    usable = int(np.sum(topology_from_layout(layout_from_db(demo)).gpu_usable))
    assert usable < 256 and gpu_grid.usable_gpus(demo) == usable
    # and a job over the usable GPUs is refused naming gpus, one that fits is accepted
    assert f"{usable:,} usable" in refused(start(runner, "collective", {"gpus": usable + 1}), "gpus")
    assert f"{usable:,} usable" in refused(start(runner, "fabric_health", {"gpus": usable + 1}), "gpus")
    assert not SimulationRun.objects.exists()
    assert start(runner, "collective", {"gpus": usable}).status_code == 201


@pytest.mark.django_db
def test_active_runs_per_user_are_bounded_and_a_sweep_counts_as_its_children(runner, demo, settings):
    settings.TWIN_RUNS_MAX_ACTIVE_PER_USER = 5
    # given a sweep that fanned out into four children (four runs doing work)
    sweep = start(runner, "sweep", {"kind": "collective", "params": {"gpus": 16},
                                    "sweep": {"qps": [1, 2], "routing": ["ecmp", "eecmp"]}}).json()
    fan_out_sweep(SimulationRun.objects.get(pk=sweep["id"]))
    assert SimulationRun.objects.filter(parent=sweep["id"]).count() == 4
    # when the user starts one more run, then another
    assert start(runner, "collective", {"gpus": 16}).status_code == 201
    before = SimulationRun.objects.count()
    says = refused(start(runner, "collective", {"gpus": 16}), "active_runs", where=None)
    # then the sixth is refused naming the limit, and nothing is written
    assert "TWIN_RUNS_MAX_ACTIVE_PER_USER" in says and SimulationRun.objects.count() == before
    # and a scenario's run counts the same
    scenario = Scenario.objects.create(name="s", kind="collective", cluster=demo, params={"gpus": 16})
    assert runner.post(f"/api/runs/scenarios/{scenario.pk}/run/").status_code == 400
    # and once the sweep ends there is room again
    runner.post(f"/api/runs/{sweep['id']}/cancel/")
    assert start(runner, "collective", {"gpus": 16}).status_code == 201


@pytest.mark.django_db
def test_a_new_kind_declares_its_own_cost_and_is_bounded_by_it(runner, demo, settings):
    # given a kind registered with a cost hook: n units of a million flows
    priced = ParamSet("priced", (Param("n", "int", 1, "units", min=1, max=1000),))
    registry.register(registry.Kind("priced", "Priced", priced, lambda layout, p, progress: ({}, {}),
                                    cost=lambda values, cluster: {"flows": values["n"] * 1_000_000},
                                    estimate=lambda values, cluster: 1.0))
    try:
        settings.TWIN_RUNS_MAX_RUN_FLOWS = 5_000_000
        assert "TWIN_RUNS_MAX_RUN_FLOWS" in refused(start(runner, "priced", {"n": 6}), "cost")
        assert start(runner, "priced", {"n": 5}).status_code == 201
    finally:
        registry.unregister("priced")


@pytest.mark.django_db
def test_the_per_user_limit_holds_for_a_browser_session_too(demo, settings, client):
    # given a user logged in through the browser (a session: request.user is a lazy object)
    from django.contrib.auth.models import Permission, User
    user = User.objects.create_user("browser")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs"))
    client.force_login(user)
    settings.TWIN_RUNS_MAX_ACTIVE_PER_USER = 1
    body = {"kind": "collective", "cluster": "demo-256", "params": {"gpus": 16}}
    assert client.post("/api/runs/", body, content_type="application/json").status_code == 201
    r = client.post("/api/runs/", body, content_type="application/json")
    assert r.status_code == 400 and "active_runs" in r.json()
