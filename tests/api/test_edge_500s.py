"""Probes of issue 24 that answered 500: a format suffix on a custom action (TypeError: the action did not take
``format``), and OPTIONS with a write token on the inventory's list endpoints (AssertionError building a form)."""
import pytest
from django.contrib.auth.models import Permission, User
from django.urls import get_resolver
from rest_framework.test import APIClient

from twin.api.inventory.views import ENDPOINTS
from twin.api.models import ApiToken
from twin.inventory import models as m
from twin.runs.choices import RunStatus
from twin.runs.models import Job, Scenario, SimulationRun

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


@pytest.fixture
def admin_writer(db):
    """A token of a user holding every permission of the inventory and the runs (not a superuser)."""
    user = User.objects.create_user("edge-writer")
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label__in=("inventory", "runs", "django_celery_beat")))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client


def custom_action_paths(ids):
    """Every custom action route of the API (``<prefix>/<pk>/<action>/`` and ``<prefix>/<action>/``), as paths with
    a real id, from the router itself: a new action is probed without naming it here."""
    from twin.api_urls import router
    paths = []
    for prefix, viewset, basename in router.registry:
        for act in viewset.get_extra_actions():
            pk = ids.get(basename)
            if act.detail and pk is None:
                continue
            middle = f"{pk}/" if act.detail else ""
            paths.append(f"/api/{prefix}/{middle}{act.url_path}")
    return paths


def test_format_suffix_on_every_custom_action(demo, admin_writer):
    scenario = Scenario.objects.create(name="s", kind="collective", cluster=demo, params={})
    run = SimulationRun.objects.create(kind="collective", cluster=demo, status=RunStatus.SUCCEEDED, summary={})
    job = Job.objects.create(name="j", cluster=demo)
    ids = {"cluster": demo.pk, "fabric": demo.fabrics.first().pk, "scenario": scenario.pk, "simulationrun": run.pk,
           "job": job.pk, "switch": m.Switch.objects.first().pk, "nic": m.NIC.objects.first().pk,
           "host": m.Host.objects.first().pk, "storage-server": m.StorageServer.objects.first().pk}
    paths = custom_action_paths(ids)
    assert len(paths) >= 14, paths
    for path in paths:
        for method in ("get", "post"):
            r = getattr(admin_writer, method)(f"{path}.json")
            assert r.status_code < 500, (method, path, r.status_code)
            if r.status_code != 405:
                assert r["Content-Type"].startswith(("application/json", "application/gzip", "text/")), path
        r = admin_writer.get(f"{path}.json")
        plain = admin_writer.get(f"{path}/")
        assert r.status_code == plain.status_code, path
        unknown = admin_writer.get(f"{path}.xml")                       # a format no renderer has: a JSON 404
        assert unknown.status_code == 404 and unknown["Content-Type"].startswith("application/json"), path


def test_options_on_every_inventory_list_endpoint(demo, admin_writer):
    assert len(ENDPOINTS) == 20
    for segment in ENDPOINTS.values():
        r = admin_writer.options(f"/api/inventory/{segment}/")
        assert r.status_code == 200, (segment, r.status_code)
        detail = admin_writer.options(f"/api/inventory/{segment}/{m.Cluster.objects.first().pk}/")
        assert detail.status_code in (200, 404), (segment, detail.status_code)
        html = admin_writer.options(f"/api/inventory/{segment}/", HTTP_ACCEPT="text/html")
        assert html.status_code == 200, (segment, html.status_code)
