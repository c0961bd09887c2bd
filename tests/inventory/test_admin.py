"""Every inventory model is in the admin, and its list, search and filters load for a staff user."""
import io

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from twin.inventory import models as m

pytestmark = pytest.mark.django_db
INVENTORY_MODELS = [model for model in admin.site._registry if model._meta.app_label == "inventory"]


def test_every_inventory_model_is_registered():
    expected = set(m.CATALOG_MODELS.values()) | {m.Cluster, m.Fabric, m.Zone, m.Rack, m.Host, m.GPU, m.NIC, m.Switch,
                                                 m.Port, m.Link, m.StorageCluster, m.StorageServer, m.SSD,
                                                 m.ObjectChange, m.NetBoxTransfer}
    assert set(INVENTORY_MODELS) == expected


@pytest.mark.parametrize("model", INVENTORY_MODELS, ids=lambda model: model.__name__)
def test_changelist_search_and_filter_load(admin_client, model):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    url = reverse(f"admin:inventory_{model._meta.model_name}_changelist")
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(url).status_code == 200
    assert len(queries) < 20, [q["sql"] for q in queries]  # no query per row
    assert admin_client.get(url, {"q": "z01"}).status_code == 200
    if "status" in {f.name for f in model._meta.fields}:
        assert admin_client.get(url, {"status__exact": "failed"}).status_code == 200


def test_marking_links_failed_from_the_admin(admin_client):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    ids = list(m.Link.objects.values_list("id", flat=True)[:3])
    response = admin_client.post(reverse("admin:inventory_link_changelist"),
                                 {"action": "mark_failed", "_selected_action": ids})
    assert response.status_code == 302
    assert set(m.Link.objects.filter(id__in=ids).values_list("status", flat=True)) == {"failed"}
