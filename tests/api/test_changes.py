"""The change log through the REST API: writes are logged (who, when, before and after), all or nothing, and
/api/inventory/changes/ reads them back, filtered, paginated, at a fixed number of queries."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sim.fabric.layout import expand
from sim.fabric.spec import load_spec
from twin.inventory import changelog
from twin.inventory.builder import total_rows
from twin.inventory.models import Cluster, Link, ObjectChange, Switch

SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
CHANGES = "/api/inventory/changes/"


def links(demo, n):
    return list(Link.objects.filter(cluster=demo).order_by("id")[:n])


def test_a_single_patch_logs_who_when_before_and_after(writer, demo):
    link = links(demo, 1)[0]
    started = timezone.now()
    # when the writer fails a link
    response = writer.patch(f"/api/inventory/links/{link.id}/", {"status": "failed"}, format="json")
    assert response.status_code == 200 and response.data["status"] == "failed"
    # then one entry says who, when, which item, and the status before and after
    change = ObjectChange.objects.get(model="link", object_id=link.id)
    assert change.user.username == change.user_name == "writer"
    assert started <= change.time <= timezone.now()
    assert (change.action, change.object_name, change.cluster_id, change.cluster_name) == \
        ("update", link.name, demo.id, demo.name)
    assert (change.before, change.after) == ({"status": "active"}, {"status": "failed"})
    # and the endpoint returns it
    rows = writer.get(CHANGES, {"model": "link", "object_id": link.id}).data["results"]
    assert [(r["id"], r["user_name"], r["before"], r["after"], r["cluster"]) for r in rows] == \
        [(change.id, "writer", {"status": "active"}, {"status": "failed"}, demo.id)]


def test_an_update_logs_only_the_fields_it_changed(writer, demo):
    switch = Switch.objects.filter(cluster=demo).first()
    response = writer.patch(f"/api/inventory/switches/{switch.id}/",
                            {"status": "drained", "serial": "SW-NEW-1", "role": switch.role}, format="json")
    assert response.status_code == 200, response.data
    change = ObjectChange.objects.get(model="switch", object_id=switch.id)
    assert change.before == {"status": "active", "serial": switch.serial}
    assert change.after == {"status": "drained", "serial": "SW-NEW-1"}


def test_a_bulk_patch_logs_every_item_in_a_fixed_number_of_queries(writer, demo):
    counts = []
    for n, status in ((3, "failed"), (60, "drained")):
        body = [{"id": link.id, "status": status} for link in links(demo, n)]
        with CaptureQueriesContext(connection) as queries:
            response = writer.patch("/api/inventory/links/", body, format="json")
        assert response.status_code == 200 and {r["status"] for r in response.data} == {status}
        counts.append(len(queries))
        assert Link.objects.filter(id__in=[b["id"] for b in body], status=status).count() == n
    assert counts[0] == counts[1], counts
    # 3 entries from the first call (active -> failed), 60 from the second (3 failed -> drained, 57 active -> drained)
    logged = ObjectChange.objects.filter(model="link")
    assert logged.count() == 63
    assert sorted(c.before["status"] for c in logged.filter(after={"status": "drained"})) == \
        ["active"] * 57 + ["failed"] * 3


def test_a_refused_bulk_patch_writes_and_logs_nothing(writer, demo):
    a, b = links(demo, 2)
    response = writer.patch("/api/inventory/links/", [{"id": a.id, "status": "failed"},
                                                      {"id": b.id, "status": "broken"}], format="json")
    assert response.status_code == 400 and "status" in response.data[1]
    assert not ObjectChange.objects.filter(model="link").exists() and Link.objects.get(id=a.id).status == "active"


def test_a_write_that_fails_half_way_leaves_no_log_row(writer, demo, monkeypatch):
    link = links(demo, 1)[0]

    def broken(entries):
        raise RuntimeError("disk full")
    monkeypatch.setattr(changelog, "write", broken)
    with pytest.raises(RuntimeError):
        writer.patch(f"/api/inventory/links/{link.id}/", {"status": "failed"}, format="json")
    assert Link.objects.get(id=link.id).status == "active" and not ObjectChange.objects.filter(model="link").exists()


def test_create_and_delete_are_logged_with_their_fields(writer, demo):
    link = links(demo, 1)[0]
    body = {"name": "spare-cable", "serial": "CBL-SPARE-1", "cluster": demo.id, "fabric": link.fabric_id,
            "tier": link.tier, "speed_gbps": link.speed_gbps, "cable": link.cable_id, "status": "maintenance",
            "a_port": link.a_port_id, "b_port": link.b_port_id}
    link.delete()   # frees its ports for the new cable
    created = writer.post("/api/inventory/links/", body, format="json")
    assert created.status_code == 201, created.data
    assert writer.delete(f"/api/inventory/links/{created.data['id']}/").status_code == 204
    rows = writer.get(CHANGES, {"object_id": created.data["id"]}).data["results"]
    assert [r["action"] for r in rows] == ["delete", "create"]       # newest first
    assert rows[1]["after"]["serial"] == "CBL-SPARE-1" and rows[1]["after"]["a_port"] == body["a_port"]
    assert rows[0]["before"]["status"] == "maintenance" and rows[0]["after"] is None


def test_a_cluster_built_and_deleted_through_the_api_is_one_entry_each(writer, demo):
    spec = Cluster.objects.get(id=demo.id).spec
    writer.delete(f"/api/inventory/clusters/{demo.id}/")
    response = writer.post("/api/inventory/clusters/", {"spec": spec, "title": "rebuilt"}, format="json")
    assert response.status_code == 201, response.data
    rows = writer.get(CHANGES, {"model": "cluster"}).data["results"]
    assert [(r["action"], r["object_name"], r["user_name"]) for r in rows] == \
        [("create", demo.name, "writer"), ("delete", demo.name, "writer"), ("create", demo.name, "")]
    assert rows[0]["after"]["title"] == "rebuilt"
    assert rows[0]["after"]["rows"] == total_rows(expand(load_spec(demo.name)))     # the rows the build wrote
    assert ObjectChange.objects.count() == 3


def test_filters_by_cluster_model_user_action_field_and_time(writer, demo, anon):
    link, switch = links(demo, 1)[0], Switch.objects.filter(cluster=demo).first()
    writer.patch(f"/api/inventory/links/{link.id}/", {"status": "failed"}, format="json")
    writer.patch(f"/api/inventory/switches/{switch.id}/", {"serial": "SW-X"}, format="json")
    build = ObjectChange.objects.get(model="cluster")     # the build, by the system

    def ids(**params):
        response = anon.get(CHANGES, params)
        assert response.status_code == 200, response.data
        return {(r["model"], r["action"]) for r in response.data["results"]}

    everything = {("link", "update"), ("switch", "update"), ("cluster", "create")}
    assert ids(cluster=demo.name) == ids(cluster=demo.id) == everything
    assert ids(cluster="another") == set()
    assert ids(model=["link", "switch"]) == {("link", "update"), ("switch", "update")}
    # by user: by id for anonymous readers, by name too for signed-in ones (anonymous readers learn no names)
    writer_id = ObjectChange.objects.filter(user_name="writer").values_list("user_id", flat=True).first()
    assert ids(user=str(writer_id)) == {("link", "update"), ("switch", "update")}
    assert ids(user="writer") == set()
    by_name = writer.get(CHANGES, {"user": "writer"}).data["results"]
    assert {(r["model"], r["action"]) for r in by_name} == {("link", "update"), ("switch", "update")}
    assert ids(action="create") == {("cluster", "create")}
    assert ids(field="status") == {("link", "update")}
    assert ids(time__lte=build.time.isoformat()) == {("cluster", "create")}
    assert ids(time__gte=(timezone.now() + timedelta(minutes=1)).isoformat()) == set()


@pytest.mark.parametrize("field, value", [("time__gte", "yesterday"), ("time__lte", "2026-13-01"),
                                          ("object_id", "abc"), ("model", "router"), ("action", "rename")])
def test_bad_filter_input_is_a_400_naming_the_field(anon, demo, field, value):
    response = anon.get(CHANGES, {field: value})
    assert response.status_code == 400 and field in response.data, response.data


def test_the_list_costs_the_same_queries_for_2_or_40_rows_and_cursors_walk_it_newest_first(writer, demo, anon):
    writer.patch("/api/inventory/links/", [{"id": link.id, "status": "failed"} for link in links(demo, 45)],
                 format="json")
    counts = []
    for limit in (2, 40):
        with CaptureQueriesContext(connection) as queries:
            assert len(anon.get(CHANGES, {"limit": limit}).data["results"]) == limit
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    seen, url = [], f"{CHANGES}?pagination=cursor&limit=7"
    while url:
        page = anon.get(url).data
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert seen == sorted(ObjectChange.objects.values_list("id", flat=True), reverse=True) and len(seen) == 46


def test_the_log_is_read_only(writer, demo):
    change = ObjectChange.objects.first()
    assert writer.post(CHANGES, {"model": "link"}, format="json").status_code == 405
    assert writer.patch(f"{CHANGES}{change.id}/", {"after": {}}, format="json").status_code == 405
    assert writer.delete(f"{CHANGES}{change.id}/").status_code == 405
