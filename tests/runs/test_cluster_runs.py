"""Clusters built, rebuilt and deleted as runs (issue 40, item 9; twin/runs/clusters.py, /api/clusters/): the presets
with their estimated build time from the measured throughput, a build and a delete run by a real worker with their
progress, a cancelled build leaving nothing, spec uploads refused naming the field, and who may delete or rebuild
(another user's runs: staff only, 403 naming them). Real database, Redis and Celery workers. Given / when / then."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from rest_framework.test import APIClient

from sim.fabric.layout import expand
from sim.fabric.spec import PRESETS_DIR, load_spec, preset_names
from tests.processes import wait_for
from tests.runs.test_runs import FINISHED, finished
from twin.api.models import ApiToken
from twin.inventory.builder import CLUSTER_TABLES, total_rows
from twin.inventory.models import GPU, Cluster
from twin.runs.models import SimulationRun

SMALL = "aws-p4d-pod"          # 512 GPUs, 4,551 rows: a build of a second or less


def _client(name, *, staff=False, perms=("runs", "inventory", "django_celery_beat")):
    """A user with every model permission of ``perms``' apps (not the "manage any" ones), and a client with its
    token."""
    user = User.objects.create_user(name, is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label__in=perms)
                              .exclude(codename__startswith="manage_any"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return user, client


def _rows(name: str) -> int:
    """Rows a build of the preset ``name`` writes."""
    return total_rows(expand(load_spec(name)))


def _stored(name: str) -> int:
    """Rows of the cluster ``name`` in the hardware tables (its fabrics and storage clusters too)."""
    return sum(model.objects.filter(cluster__name=name).count() for model in CLUSTER_TABLES)


@pytest.mark.django_db(transaction=True)
def test_a_preset_built_and_deleted_over_the_api_by_a_worker(workers):
    _, alice = _client("alice")
    # given the presets, each with its size and an estimate from the throughput setting (no cluster run yet)
    body = alice.get("/api/clusters/presets/").json()
    rates = body["throughput"]
    assert rates["write_runs"] == 0 and {p["name"] for p in body["presets"]} == set(preset_names())
    small = next(p for p in body["presets"] if p["name"] == SMALL)
    assert small["gpus"] == load_spec(SMALL).layout.gpus and small["rows"] == _rows(SMALL) and not small["built"]
    assert small["estimated_build_s"] == pytest.approx(small["rows"] / rates["write"])
    # when alice builds it
    r = alice.post("/api/clusters/", {"preset": SMALL}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["kind"] == "cluster_build" and r.json()["cluster"] is None
    assert r.json()["params_text"] == f"build {SMALL} from preset {SMALL}"
    run = finished(alice, r.json()["id"])
    # then a worker built it: its rows, its GPUs, the run now on it at 100 %
    assert run["status"] == "succeeded", run["error"]
    cluster = Cluster.objects.get(name=SMALL)
    assert run["cluster"]["id"] == cluster.pk and run["progress"] == 100.0
    assert run["summary"]["rows_write"] == _rows(SMALL) and run["summary"]["write_s"] > 0
    assert GPU.objects.filter(cluster=cluster).count() == small["gpus"]
    # and the list shows it, from its preset; the estimates now divide by what this build measured
    row = alice.get(f"/api/clusters/{SMALL}/").json()
    assert row["preset"] == SMALL and row["gpus"] == small["gpus"] and row["active"] is None
    assert row["delete_refusal"] == ""
    rates = alice.get("/api/clusters/presets/").json()["throughput"]
    assert rates["write_runs"] == 1
    assert rates["write"] == pytest.approx(run["summary"]["rows_write"] / run["summary"]["write_s"])
    # when she builds it again without replace: refused, naming the preset
    again = alice.post("/api/clusters/", {"preset": SMALL}, format="json")
    assert again.status_code == 400 and "already exists" in again.json()["preset"][0], again.json()
    # and when she deletes it
    stored = _stored(SMALL)
    r = alice.delete(f"/api/clusters/{SMALL}/")
    assert r.status_code == 202, r.json()
    gone = finished(alice, r.json()["id"])
    # then it is gone; the build run stays, without its cluster
    assert gone["status"] == "succeeded", gone["error"]
    assert gone["summary"]["rows_delete"] == stored + 1           # and the cluster's own row
    assert not Cluster.objects.filter(name=SMALL).exists()
    assert SimulationRun.objects.get(pk=run["id"]).cluster is None
    assert alice.get(f"/api/clusters/{SMALL}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_a_build_cancelled_while_it_runs_leaves_nothing(workers):
    _, alice = _client("alice")
    # given a build of meta-roce-24k (311,461 rows: seconds), running, its progress (rows written over its rows) on
    # its live stream (the row keeps it on PostgreSQL; on SQLite, one writer at a time, only once the build ends)
    run_id = alice.post("/api/clusters/", {"preset": "meta-roce-24k"}, format="json").json()["id"]

    def moving():
        snapshot = alice.get(f"/api/live/runs/{run_id}/snapshot/").json()
        return snapshot if snapshot["status"] == "running" and snapshot["progress"] > 0 else None
    snapshot = wait_for(moving, 60, interval=0.05, what="the build's live progress")
    assert 0 < snapshot["progress"] < 100 and not snapshot["final"]
    # when it is cancelled
    assert alice.post(f"/api/runs/{run_id}/cancel/").status_code == 200
    # then it ends cancelled, and nothing of the cluster was kept
    run = finished(alice, run_id, timeout=60)
    assert run["status"] == "cancelled", run
    assert not Cluster.objects.filter(name="meta-roce-24k").exists()


@pytest.mark.django_db
def test_a_rebuild_replaces_the_cluster_from_its_stored_spec(runner, demo):
    # given demo-256 built (no worker: the run stays queued)
    r = runner.post("/api/clusters/demo-256/rebuild/", {}, format="json")
    # then the rebuild is a build with replace, from the stored spec, counting the rows it deletes
    assert r.status_code == 201, r.json()
    params = r.json()["params"]
    assert params["replace"] is True and params["spec"] == demo.spec and params["preset"] == "demo-256"
    assert params["rows"] == {"write": _rows("demo-256"), "delete": _stored("demo-256")}
    assert r.json()["params_text"] == "rebuild demo-256 from preset demo-256"
    # and a second build or delete of it while this one is queued is a conflict naming the run
    busy = runner.delete("/api/clusters/demo-256/")
    assert busy.status_code == 409 and f"#{r.json()['id']}" in busy.json()["detail"]
    # and the run's page and the Clusters page show it (a run with no cluster yet)
    page = Client().get(f"/experiments/{r.json()['id']}/")
    assert page.status_code == 200 and b"cluster_build" in page.content
    assert Client().get("/clusters/").status_code == 200
    assert runner.get("/api/clusters/demo-256/").json()["active"]["id"] == r.json()["id"]


@pytest.mark.django_db
def test_only_staff_delete_or_rebuild_a_cluster_other_users_runs_depend_on(demo):
    alice, a = _client("alice")
    _, bob = _client("bob")
    _, staff = _client("carol", staff=True)
    # given alice's run on demo-256 (queued: no worker)
    run = a.post("/api/runs/", {"kind": "collective", "cluster": "demo-256", "params": {"gpus": 8, "sizes": "1M"}},
                 format="json").json()["id"]
    # then bob, who holds every model permission but is not staff, may not delete nor rebuild it: 403 naming the run
    for response in (bob.delete("/api/clusters/demo-256/"), bob.post("/api/clusters/demo-256/rebuild/", {},
                                                                     format="json"),
                     bob.post("/api/clusters/", {"preset": "demo-256", "replace": True}, format="json"),
                     bob.delete(f"/api/inventory/clusters/{demo.pk}/")):
        assert response.status_code == 403, response.json()
        assert f"#{run} collective (alice)" in response.json()["detail"] and "staff" in response.json()["detail"]
    row = bob.get("/api/clusters/demo-256/").json()
    assert f"#{run}" in row["delete_refusal"] and row["runs"] == 1
    assert not SimulationRun.objects.filter(kind__in=("cluster_build", "cluster_delete")).exists()
    assert Cluster.objects.filter(name="demo-256").exists()
    # and alice, whose run it is, may (her own runs go with it)
    assert a.get("/api/clusters/demo-256/").json()["delete_refusal"] == ""
    # and staff may: the delete is queued
    r = staff.delete("/api/clusters/demo-256/")
    assert r.status_code == 202 and r.json()["kind"] == "cluster_delete" and r.json()["params"]["name"] == "demo-256"


@pytest.mark.django_db
def test_builds_need_their_permissions_and_a_signed_in_user(demo):
    _, reader = _client("reader", perms=("runs",))
    # an anonymous reader sees the presets and clusters, and may not build
    anonymous = APIClient()
    assert anonymous.get("/api/clusters/").status_code == 200
    assert anonymous.post("/api/clusters/", {"preset": SMALL}, format="json").status_code in (401, 403)
    assert "log in" in anonymous.get("/api/clusters/demo-256/").json()["delete_refusal"]
    # a user without the inventory's permissions is told which
    r = reader.post("/api/clusters/", {"preset": SMALL}, format="json")
    assert r.status_code == 403 and "'inventory.add_cluster'" in r.json()["detail"]
    r = reader.delete("/api/clusters/demo-256/")
    assert r.status_code == 403 and "'inventory.delete_cluster'" in r.json()["detail"]


@pytest.mark.django_db
def test_a_spec_upload_is_read_as_the_cli_reads_it_and_refused_naming_the_field(runner, demo):
    toml = (PRESETS_DIR / "demo-256.toml").read_text()
    # an uploaded TOML file (the CLI's format) under a new name: previewed, then built as a queued run
    check = runner.post("/api/clusters/check/", {"spec": toml, "name": "my-demo"}, format="json")
    assert check.status_code == 200, check.json()
    assert check.json()["name"] == "my-demo" and check.json()["gpus"] == 256 and not check.json()["exists"]
    assert check.json()["rows"] == _rows("demo-256")
    r = runner.post("/api/clusters/", {"spec": toml, "name": "my-demo"}, format="json")
    assert r.status_code == 201 and r.json()["params"]["spec"]["name"] == "my-demo"
    # refusals, each naming its field
    bad_uplinks = toml.replace("uplinks = 16", "uplinks = 15", 1)
    both, build = ("/api/clusters/check/", "/api/clusters/"), ("/api/clusters/",)
    cases = [
        ({"spec": "layout = ["}, both, "spec", "cannot be parsed"),
        ({"spec": bad_uplinks, "name": "x1"}, both, "spec", "backend.leaf.uplinks: 15"),
        ({"spec": toml, "format": "yaml"}, both, "format", "toml, json"),
        ({"spec": toml, "name": "no spaces"}, both, "name", "letters, digits and dashes"),
        ({"preset": "meta-roce-48k"}, both, "preset", "not a preset"),
        ({"preset": SMALL, "spec": toml}, both, "preset", "not both"),
        ({"spec": "x" * (256 * 1024 + 1)}, both, "spec", "at most"),
        ({"preset": SMALL, "colour": "red"}, build, "colour", "unknown field"),
        ({"preset": SMALL, "replace": True}, build, "replace", "does not exist"),
        ({"spec": toml}, build, "spec", "already exists"),
    ]
    for body, paths, field, words in cases:
        for path in paths:
            r = runner.post(path, body, format="json")
            assert r.status_code == 400, (path, body, r.json())
            assert words in " ".join(r.json()[field]), (path, body, r.json())
    # and the generic runs API never starts a cluster run
    r = runner.post("/api/runs/", {"kind": "cluster_build", "cluster": "demo-256", "params": {"preset": SMALL}},
                    format="json")
    assert r.status_code == 400 and "/api/clusters/" in str(r.json())
    assert set(SimulationRun.objects.values_list("kind", flat=True)) == {"cluster_build"}
