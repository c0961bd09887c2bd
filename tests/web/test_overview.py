"""The overview lists each cluster with its key figures, worked out from the inventory as it is now."""
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from twin.inventory import build_status
from twin.inventory import models as m
from twin.inventory.topology import cluster_summary
from twin.runs.models import SimulationRun
from twin.web.management.commands import ensure_admin

pytestmark = pytest.mark.django_db


def test_overview_shows_health_bisection_and_running_runs(client, demo):
    # given two failed GPUs, a failed leaf uplink and a queued run
    gpus = list(m.GPU.objects.filter(cluster=demo).order_by("index")[:2])
    m.GPU.objects.filter(pk__in=[g.pk for g in gpus]).update(status="failed")
    uplink = m.Link.objects.filter(cluster=demo, fabric__role=0, tier=1).order_by("id").first()
    m.Link.objects.filter(pk=uplink.pk).update(status="failed")
    run = SimulationRun.objects.create(kind="collective", cluster=demo, params={})
    # when
    page = client.get("/").content.decode()
    # then: the figures are the inventory's
    assert "256</span><span class=\"label\">GPUs" in page
    assert "254</span><span class=\"label\">healthy" in page
    assert "2</span><span class=\"label\">failed" in page
    backend = next(f for f in cluster_summary(demo)["fabrics"] if f["kind"].startswith("backend"))
    assert backend["bisection_gbps"] > 0
    shown = f"{backend['bisection_gbps'] / 1000:,.0f} Tb/s" if backend["bisection_gbps"] >= 10_000 \
        else f"{backend['bisection_gbps']:,.0f} Gb/s"
    assert shown in page
    assert f'data-run="{run.id}"' in page and "Simulations running: <span class=\"run-count\">1</span>" in page


def test_the_cards_json_has_the_figures_and_runs_the_page_draws_again(client, demo):
    # given a failed backend uplink and a queued run
    uplink = m.Link.objects.filter(cluster=demo, fabric__role=0, tier=1).order_by("id").first()
    m.Link.objects.filter(pk=uplink.pk).update(status="failed")
    run = SimulationRun.objects.create(kind="collective", cluster=demo, params={})
    # then the JSON the overview reads on events and reconnections counts it, as the page words the bisection
    card = client.get("/overview/activity.json").json()["demo-256"]
    figures = card["figures"]
    assert figures["links_failed"] == 1 and figures["links"] == m.Link.objects.filter(cluster=demo).count()
    assert figures["gpus_active"] == figures["gpus"] == 256 and card["not_active"]["links"] == 1
    assert figures["bisection_text"] in client.get("/").content.decode()
    assert [r["id"] for r in card["runs"]] == [run.id] and card["runs"][0]["status"] == "queued"


def test_overview_without_clusters_says_how_to_build_one(client):
    assert "build_cluster" in client.get("/").content.decode()


def test_pages_follow_the_anonymous_read_setting(client, settings, demo):
    settings.TWIN_API_ANONYMOUS_READ = False
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_ensure_admin_creates_one_superuser_once(tmp_path, monkeypatch):
    monkeypatch.setattr(ensure_admin, "PASSWORD_FILE", tmp_path / "admin-password")
    monkeypatch.delenv("TWIN_ADMIN_PASSWORD", raising=False)
    call_command("ensure_admin", stdout=io.StringIO())
    password = (tmp_path / "admin-password").read_text().strip()
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(password)
    call_command("ensure_admin", stdout=io.StringIO())
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
    assert (tmp_path / "admin-password").read_text().strip() == password


def test_the_header_follows_the_cluster_a_page_is_about(client, settings, demo):
    # given another cluster that is the default, and a run and a host of demo-256
    m.Cluster.objects.create(name="another", title="Another", spec={})
    settings.TWIN_DEFAULT_CLUSTERS = ["another"]
    assert "<option selected>another</option>" in client.get("/").content.decode()
    run = SimulationRun.objects.create(kind="collective", cluster=demo, params={})
    host = m.Host.objects.filter(cluster=demo).first()
    for url in (f"/experiments/{run.id}/", f"/inventory/host/{host.id}/", "/clusters/demo-256/fabric/"):
        page = client.get(url).content.decode()
        assert "<option selected>demo-256</option>" in page, url
        assert 'href="/clusters/demo-256/gpus/"' in page, url


def test_overview_activity_says_what_runs_on_each_cluster(client, demo):
    # given a running job of 64 GPUs, a finished one (it holds none), a succeeded checkpoint run, a failed run and a
    # failed GPU
    from django.utils import timezone

    from twin.runs.models import Job
    Job.objects.create(name="llama", cluster=demo, state="running", n_gpus=64)
    Job.objects.create(name="done", cluster=demo, state="finished", n_gpus=128)
    cp = SimulationRun.objects.create(kind="checkpoint", cluster=demo, params={}, status="succeeded",
                                      finished_at=timezone.now(), summary={"save_s": 12.5})
    failed = SimulationRun.objects.create(kind="collective", cluster=demo, params={}, status="failed",
                                          finished_at=timezone.now(), error="refused: no GPU\nTraceback")
    m.GPU.objects.filter(pk=m.GPU.objects.filter(cluster=demo).order_by("index").first().pk).update(status="failed")
    # when the page's data is read
    a = client.get("/overview/activity.json").json()["demo-256"]
    # then it holds the running job's GPUs only, the checkpoint with its headline, the failure and the failed GPU
    assert a["jobs"] == {"jobs": 1, "gpus": 64} and a["gpus"] == 256
    assert a["checkpoint"]["id"] == cp.id and a["checkpoint"]["headline"], a["checkpoint"]
    assert [r["id"] for r in a["failed_runs"]] == [failed.id] and a["failed_runs"][0]["error"] == "refused: no GPU"
    assert a["not_active"]["gpus"] == 1 and a["not_active"]["links"] == 0
    # and the page carries the same for its script
    assert 'id="cluster-activity"' in client.get("/").content.decode()


def test_a_cluster_being_built_shows_on_the_overview_with_its_progress(client):
    # given a build a quarter done (as build_cluster reports it) and one announced by the launcher
    build_status.report("meta-roce-24k", "ports", 100, 400)
    build_status.report("meta-ib-24k", build_status.WAITING)
    try:
        # then the page shows both, with their progress, and not "no cluster is built yet"
        page = client.get("/").content.decode()
        assert 'data-building="meta-roce-24k"' in page and "25 %" in page and 'data-building="meta-ib-24k"' in page
        assert '<p id="no-cluster" hidden>' in page and 'data-wait-ready="1"' in page
        listed = client.get("/overview/building.json").json()["building"]
        assert [(b["name"], b["phase"], b["percent"]) for b in listed] == [
            ("meta-ib-24k", "waiting", 0), ("meta-roce-24k", "ports", 25)]
    finally:
        build_status.finished("meta-roce-24k", "meta-ib-24k")
    # when they end, nothing is shown
    assert client.get("/overview/building.json").json() == {"building": []}
    assert '<section class="panel building" id="building" hidden>' in client.get("/").content.decode()


def test_a_build_that_stopped_reporting_is_not_shown(client, monkeypatch):
    build_status.report("demo-256", "ports", 1, 2)
    try:
        monkeypatch.setattr(build_status, "STALE_S", -1.0)      # as if its last report were older than STALE_S
        assert build_status.current() == []
    finally:
        build_status.finished("demo-256")


def test_build_cluster_reports_its_progress_and_clears_it_when_done(monkeypatch):
    from twin.inventory.management.commands import build_cluster
    seen = []
    report = build_status.report
    monkeypatch.setattr(build_cluster, "REPORT_EVERY_S", 0.0)
    monkeypatch.setattr(build_status, "report", lambda *a: (seen.append(build_status.current()), report(*a)))
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    # each report after the first saw the one before it: demo-256 in some table, its rows counted up
    shown = [b for snapshot in seen for b in snapshot]
    assert shown and {b["name"] for b in shown} == {"demo-256"}
    assert [b["done"] for b in shown] == sorted(b["done"] for b in shown) and shown[-1]["total"] > 0
    assert build_status.current() == []
