"""Inventory writes through twin.inventory.actions: the admin's status actions and change form are logged, status
changes are set-based and validated, a build is one entry, and a failure leaves neither the write nor its log."""
import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from twin.inventory import actions, changelog
from twin.inventory.builder import build_cluster
from twin.inventory.models import Cluster, Fabric, Link, ObjectChange, Switch

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return Cluster.objects.get(name="demo-256")


def test_a_build_is_one_entry_for_the_cluster_by_the_system(demo):
    [change] = ObjectChange.objects.all()
    assert (change.action, change.model, change.object_id, change.object_name, change.user, change.user_name) == \
        ("create", "cluster", demo.id, demo.name, None, "")
    assert change.after["rows"] > Link.objects.filter(cluster=demo).count() and change.after["title"] == demo.title


def test_a_rebuild_is_logged_as_the_old_clusters_delete_and_the_new_ones_create(demo):
    call_command("build_cluster", "demo-256", "--no-progress", "--replace", stdout=io.StringIO())
    actions_logged = list(ObjectChange.objects.order_by("id").values_list("action", "object_id"))
    new = Cluster.objects.get(name="demo-256")
    assert actions_logged == [("create", demo.id), ("delete", demo.id), ("create", new.id)]


def test_marking_links_failed_from_the_admin_logs_who_before_and_after(admin_client, demo):
    ids = list(Link.objects.filter(cluster=demo).values_list("id", flat=True)[:3])
    Link.objects.filter(id=ids[0]).update(status="failed")      # already failed: not changed, not logged
    started = timezone.now()
    response = admin_client.post(reverse("admin:inventory_link_changelist"),
                                 {"action": "mark_failed", "_selected_action": ids})
    assert response.status_code == 302
    assert set(Link.objects.filter(id__in=ids).values_list("status", flat=True)) == {"failed"}
    logged = ObjectChange.objects.filter(model="link").order_by("object_id")
    assert [c.object_id for c in logged] == ids[1:]
    assert all(c.user_name == "admin" and c.user.is_superuser and c.time >= started and c.cluster_id == demo.id
               and (c.before, c.after) == ({"status": "active"}, {"status": "failed"}) for c in logged)


def test_the_admin_change_form_is_logged_with_the_fields_it_changed(admin_client, demo):
    switch = Switch.objects.filter(cluster=demo).first()
    url = reverse("admin:inventory_switch_change", args=[switch.id])
    form = admin_client.get(url).context["adminform"].form
    data = {name: form[name].value() for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()} | {"status": "maintenance"}
    assert admin_client.post(url, data).status_code == 302
    change = ObjectChange.objects.get(model="switch")
    assert (change.before, change.after, change.user_name) == ({"status": "active"}, {"status": "maintenance"},
                                                               "admin")


def test_the_change_log_is_read_only_in_the_admin(admin_client, demo):
    change = ObjectChange.objects.get()
    assert admin_client.get(reverse("admin:inventory_objectchange_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:inventory_objectchange_add")).status_code == 403
    assert admin_client.post(reverse("admin:inventory_objectchange_delete", args=[change.id]),
                             {"post": "yes"}).status_code == 403
    assert ObjectChange.objects.filter(id=change.id).exists()


def test_set_status_is_set_based(demo):
    links = Link.objects.filter(cluster=demo).order_by("id")
    counts = []
    for n, status in ((5, "drained"), (500, "failed")):
        with CaptureQueriesContext(connection) as queries:
            changes = actions.set_status(Link, list(links.values_list("id", flat=True)[:n]), status)
        counts.append(len(queries))
        assert len(changes) == n and Link.objects.filter(status=status).count() == n
    # the same queries, plus a few more INSERT batches of log rows (SQLite takes ~90 rows a statement): none per row
    assert counts[1] - counts[0] <= 500 // 50, counts
    # and the rows it logs name each item as it was
    first = Link.objects.order_by("id").first()
    assert ObjectChange.objects.filter(model="link", object_id=first.id).latest("id").object_name == first.name


@pytest.mark.parametrize("model, status", [(Link, "broken"), (Fabric, "failed")])
def test_set_status_refuses_naming_the_field(demo, model, status):
    with pytest.raises(ValidationError) as e:
        actions.set_status(model, model.objects.all(), status)
    assert "status" in e.value.detail
    assert ObjectChange.objects.count() == 1 and not Link.objects.exclude(status="active").exists()


def test_a_failure_after_the_update_leaves_neither_the_status_nor_a_log_row(demo, monkeypatch):
    def broken(entries):
        raise RuntimeError("the log table is locked")
    monkeypatch.setattr(changelog, "write", broken)
    with pytest.raises(RuntimeError):
        actions.set_status(Link, Link.objects.filter(cluster=demo), "failed")
    assert not Link.objects.exclude(status="active").exists() and ObjectChange.objects.count() == 1


def test_a_build_that_fails_half_way_logs_nothing(db, monkeypatch):
    from sim.fabric.spec import load_spec
    from twin.inventory import builder

    def broken(b):
        raise RuntimeError("disk full")
    monkeypatch.setattr(builder, "_write_network", broken)     # after the sites, compute and storage were written
    with pytest.raises(RuntimeError):
        build_cluster(load_spec("demo-256"))
    assert not Cluster.objects.exists() and not ObjectChange.objects.exists()
