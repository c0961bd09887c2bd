"""The inventory browser: each level of the drill-down shows its children with counts by status and a breadcrumb,
the status form appears only with the model's change permission, search finds by name and serial and filters by
status, and a page's query count does not grow with its number of children."""

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.db.models import Q
from django.test import Client
from django.test.utils import CaptureQueriesContext

from twin.inventory import models as m

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def url(kind, pk):
    return f"/inventory/{kind}/{pk}/"


def page(client, path, **params):
    response = client.get(path, params)
    assert response.status_code == 200, response.content[:500]
    return response


def crumbs(response):
    return [c["name"] for c in response.context["crumbs"]]


def login(user_perms=()):
    """A client logged in as a user holding the given inventory permissions (codenames)."""
    user = User.objects.create_user("engineer", password="pw")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory",
                                                         codename__in=user_perms))
    client = Client()
    client.force_login(user)
    return client


# --- drill-down ------------------------------------------------------------------------------------------------

def test_clusters_page_lists_each_cluster_with_counts(client, demo):
    response = page(client, "/inventory/")
    row = next(r for r in response.context["clusters"] if r["name"] == "demo-256")
    assert (row["gpus"].total, row["hosts"].total, row["zones"].total) == (256, 32, 4)
    assert response.context["nav"] == "inventory"
    assert f'href="{url("cluster", demo.id)}"' in response.content.decode()


def test_cluster_page_shows_zones_fabrics_storage_and_counts_by_status(client, demo):
    # given a failed GPU in the first zone
    gpu = m.GPU.objects.filter(cluster=demo).order_by("index").first()
    m.GPU.objects.filter(pk=gpu.pk).update(status="failed")
    # when
    response = page(client, url("cluster", demo.id))
    # then
    zones = {z["name"]: z for z in response.context["zones"]}
    z0 = zones["demo-256.z00"]
    assert (z0["racks"].total, z0["hosts"].total, z0["gpus"].total, z0["gpus"].off) == (8, 16, 128, {"failed": 1})
    assert z0["health"] == "bad" and zones["demo-256.z01"]["health"] == "ok"
    counts = dict(response.context["counts"])
    assert (counts["GPUs"].total, counts["GPUs"].active) == (256, 255)
    assert counts["Links"].total == m.Link.objects.filter(cluster=demo).count()
    assert {f["name"] for f in response.context["fabrics"]} == {"demo-256.be", "demo-256.fe"}
    assert {s["name"]: s["servers"].total for s in response.context["storage"]} == {"demo-256.tectonic": 8,
                                                                                    "demo-256.hammerspace": 2}
    assert '<span class="badge failed">1 failed</span>' in response.content.decode()
    assert crumbs(response) == []


def test_zone_page_shows_racks_with_gpu_health_and_the_zone_switches(client, demo):
    zone = m.Zone.objects.get(name="demo-256.z01")
    response = page(client, url("zone", zone.id))
    racks = response.context["racks"]
    assert len(racks) == 8 and all((r["hosts"].total, r["gpus"].total) == (2, 16) for r in racks)
    assert all({s["role"] for s in r["switches"]} == {"rtsw", "frtsw"} for r in racks)
    assert {(s["role"], s["tier"]) for s in response.context["spines"]} == {("ctsw", 1), ("fcsw", 1)}
    assert crumbs(response) == ["demo-256"]
    # only racks with a problem, when asked
    host = m.Host.objects.filter(rack__zone=zone).order_by("id").last()
    m.Host.objects.filter(pk=host.pk).update(status="drained")
    listed = page(client, url("zone", zone.id), show="problems").context["rack_page"].object_list
    assert [r["id"] for r in listed] == [host.rack_id] and listed[0]["health"] == "warn"


def test_rack_page_shows_hosts_with_their_gpus_and_the_rack_switches(client, demo):
    rack = m.Rack.objects.get(name="demo-256.z00.r003")
    response = page(client, url("rack", rack.id))
    hosts = response.context["hosts"]
    assert [h["name"] for h in hosts] == ["demo-256.z00.r003.h0", "demo-256.z00.r003.h1"]
    assert [[g["slot"] for g in h["gpus"]] for h in hosts] == [list(range(8))] * 2
    assert {s["role"] for s in response.context["switches"]} == {"rtsw", "frtsw"}
    assert crumbs(response) == ["demo-256", "demo-256.z00"]


def test_host_page_shows_gpus_and_nics_with_links_to_the_leaf(client, demo):
    host = m.Host.objects.get(name="demo-256.z00.r003.h1")
    response = page(client, url("host", host.id))
    assert [g["slot"] for g in response.context["gpus"]] == list(range(8))
    backend = [n for n in response.context["nics"] if n["fabric__role"] == 0]
    assert len(backend) == 8
    for nic in backend:
        (port,) = nic["ports"]
        far = port["cable"]["far"]
        assert far["device"]["kind"] == "switch" and far["device"]["role"] == "rtsw"
        assert port["cable"]["link"]["direction"] == "up"
    assert crumbs(response) == ["demo-256", "demo-256.z00", "demo-256.z00.r003"]


def test_item_header_has_name_serial_model_status_location_api_and_admin(client, demo):
    gpu = m.GPU.objects.get(name="demo-256.z01.r002.h0.gpu5")
    html = page(client, url("gpu", gpu.id)).content.decode()
    for text in (gpu.name, gpu.serial, str(gpu.model), 'id="item-status" class="badge active"',
                 f'href="/api/inventory/gpus/{gpu.id}/"', f'href="/admin/inventory/gpu/{gpu.id}/change/"',
                 f'href="{url("host", gpu.host_id)}"', f'href="{url("rack", gpu.host.rack_id)}"',
                 f'href="{url("nic", gpu.nic.id)}"', 'id="inventory-search"', 'name="q"'):
        assert text in html, text


def test_gpu_nic_port_link_and_switch_pages_walk_down_to_the_leaf(client, demo):
    gpu = m.GPU.objects.get(name="demo-256.z00.r000.h0.gpu2")
    nic = gpu.nic
    port = nic.ports.get()
    link = port.link_as_a
    leaf = link.b_switch
    # the GPU page shows its rail NIC and the leaf at the other end
    response = page(client, url("gpu", gpu.id))
    assert response.context["nics"][0]["ports"][0]["cable"]["far"]["device"]["id"] == leaf.id
    assert len(response.context["siblings"]) == 8
    assert crumbs(page(client, url("nic", nic.id))) == ["demo-256", "demo-256.z00", "demo-256.z00.r000",
                                                        "demo-256.z00.r000.h0"]
    assert page(client, url("port", port.id)).context["cable"]["link"]["id"] == link.id
    ends = page(client, url("link", link.id)).context["ends"]
    assert [e["device"] for _, e in ends] == [nic, leaf]
    switch = page(client, url("switch", leaf.id))
    down_ports = [p for p in switch.context["ports"].object_list if p["cable"]["link"]["direction"] == "down"]
    assert port.id in {p["cable"]["far"]["port"]["id"] for p in down_ports}
    assert crumbs(switch) == ["demo-256", "demo-256.z00", "demo-256.z00.r000"]


def test_gpu_and_nic_pages_show_their_models_generation_specs(client, demo):
    gpu = m.GPU.objects.get(name="demo-256.z00.r000.h0.gpu2")
    facts = {f["label"]: f["value"] for f in page(client, url("gpu", gpu.id)).context["facts"]}
    assert facts["Architecture"] == "Hopper (sm_90)" and facts["NVLink"] == "7,200 Gb/s, NVLink 4, NVLink SHARP"
    assert facts["Compute"] == "989 BF16 / 1,979 FP8 dense TFLOP/s"
    facts = {f["label"]: f["value"] for f in page(client, url("nic", gpu.nic.id)).context["facts"]}
    assert facts["Speed"] == "1 × 400 Gb/s" and facts["Host link"] == "PCIe Gen5 x16"
    # a model added by hand without its generation's specs: the page says what it knows
    gpu.model.arch, gpu.model.compute_capability, gpu.model.nvls, gpu.model.nvlink_generation = "", None, None, None
    gpu.model.fp8_tflops = 0
    gpu.model.save()
    facts = {f["label"]: f["value"] for f in page(client, url("gpu", gpu.id)).context["facts"]}
    assert facts["Architecture"] is None and facts["NVLink"] == "7,200 Gb/s"
    assert facts["Compute"] == "989 BF16 / no FP8 dense TFLOP/s"


def test_switch_ports_are_paginated_and_filtered_to_problems(client, demo):
    spine = m.Switch.objects.filter(cluster=demo, role="ctsw").order_by("id").first()
    ports = m.Port.objects.filter(switch=spine).count()
    response = page(client, url("switch", spine.id))
    assert response.context["ports"].paginator.count == ports
    link = m.Link.objects.filter(b_switch=spine).order_by("id").first()
    m.Link.objects.filter(pk=link.pk).update(status="failed")
    response = page(client, url("switch", spine.id), show="problems")
    assert [p["cable"]["link"]["id"] for p in response.context["ports"].object_list] == [link.id]
    assert dict(response.context["counts"])["Links down"].off == {"failed": 1}


@pytest.mark.parametrize("kind, model", [("fabric", m.Fabric), ("storageserver", m.StorageServer), ("ssd", m.SSD),
                                         ("zone", m.Zone), ("port", m.Port)])
def test_every_kind_renders(client, demo, kind, model):
    obj = model.objects.filter(cluster=demo).order_by("-id").first()
    assert obj.name in page(client, url(kind, obj.id)).content.decode()


@pytest.mark.parametrize("path", ["/inventory/router/1/", "/inventory/gpu/999999/", "/inventory/cluster/0/"])
def test_unknown_kind_or_id_is_404(client, demo, path):
    assert client.get(path).status_code == 404


# --- status form ----------------------------------------------------------------------------------------------

def test_status_is_read_only_without_the_permission(client, demo):
    link = m.Link.objects.filter(cluster=demo).first()
    html = page(client, url("link", link.id)).content.decode()
    assert 'id="status-form"' not in html
    assert 'id="status-readonly"' in html and "/accounts/login/?next=" in html
    # a user with another model's permission still reads only
    html = page(login(["change_gpu"]), url("link", link.id)).content.decode()
    assert 'id="status-form"' not in html and "change link" in html


def test_status_form_with_the_permission_and_the_patch_it_sends(demo):
    link = m.Link.objects.filter(cluster=demo, tier=1).first()
    client = login(["change_link"])
    html = page(client, url("link", link.id)).content.decode()
    assert 'id="status-form"' in html and f'data-api="/api/inventory/links/{link.id}/"' in html
    assert "routed around" in html                            # simulations read a link's status
    assert 'id="status-form"' not in page(client, url("host", m.Host.objects.first().id)).content.decode()
    # the PATCH the form sends (session and CSRF, as twin.js api() does) changes the status or names the field
    csrf = Client(enforce_csrf_checks=True)
    csrf.cookies = client.cookies
    page(csrf, url("link", link.id))
    token = csrf.cookies["csrftoken"].value

    def patch(body):
        return csrf.patch(f"/api/inventory/links/{link.id}/", body, content_type="application/json",
                          HTTP_X_CSRFTOKEN=token)

    assert patch({"status": "failed"}).status_code == 200
    link.refresh_from_db()
    assert link.status == "failed"
    bad = patch({"status": "broken"})
    assert bad.status_code == 400 and "status" in bad.json()


# --- change log -----------------------------------------------------------------------------------------------

def test_an_item_page_lists_its_last_changes_newest_first(demo):
    link = m.Link.objects.filter(cluster=demo).first()
    client = login(["change_link"])
    html = page(client, url("link", link.id)).content.decode()
    assert 'id="change-list"' in html and "No change logged." in html
    for status in ("failed", "maintenance", "active"):
        client.patch(f"/api/inventory/links/{link.id}/", {"status": status}, content_type="application/json")
    response = page(client, url("link", link.id))
    assert [(c.user_name, c.summary) for c in response.context["changes"]] == [
        ("engineer", "status maintenance → active"), ("engineer", "status failed → maintenance"),
        ("engineer", "status active → failed")]
    html = response.content.decode()
    assert "status failed → maintenance" in html and f"object_id={link.id}" in html
    # the cluster's page shows its build, by the system
    [build] = page(client, url("cluster", demo.id)).context["changes"]
    assert build.user_name == "" and build.summary.startswith("created (") and build.summary.endswith(" rows)")


def test_an_item_page_lists_at_most_its_last_changes(demo):
    from twin.inventory import actions
    from twin.web.views.inventory.changes import ITEM_CHANGES

    link = m.Link.objects.filter(cluster=demo).first()
    for k in range(ITEM_CHANGES + 1):
        actions.set_status(m.Link, [link.id], "failed" if k % 2 == 0 else "active")
    response = page(Client(), url("link", link.id))
    assert len(response.context["changes"]) == ITEM_CHANGES and response.context["more_changes"]
    assert "all in the API" in response.content.decode()


# --- search ---------------------------------------------------------------------------------------------------

def hits(response):
    return {h.kind.key: [r["name"] for r in h.rows] for h in response.context["hits"] if h.count}


def test_search_by_name_anywhere_and_by_serial_prefix(client, demo):
    found = hits(page(client, "/inventory/search/", q="z01.r002.h1"))
    assert found["host"] == ["demo-256.z01.r002.h1"]
    assert len(found["gpu"]) == 8 and len(found["port"]) == 10 and len(found["link"]) == 10
    gpu = m.GPU.objects.get(name="demo-256.z01.r002.h1.gpu3")
    assert hits(page(client, "/inventory/search/", q=gpu.serial)) == {"gpu": [gpu.name]}
    assert gpu.name in hits(page(client, "/inventory/search/", q=gpu.serial[:-1].lower(), kind="gpu"))["gpu"]
    html = page(client, "/inventory/search/", q="z01.r002.h1").content.decode()
    assert f'href="{url("host", gpu.host_id)}"' in html


def test_search_by_start_of_name_then_anywhere(client, demo):
    # names that start with q after the fabric's name: the leaf, its ports and the links up from it
    leaf = m.Switch.objects.get(name="demo-256.be.rtsw.z00.000")
    response = page(client, "/inventory/search/", q="be.rtsw.z00.000")
    assert not response.context["anywhere"]
    found = hits(response)
    assert found["switch"] == [leaf.name]
    assert len(found["link"]) == m.Link.objects.filter(a_switch=leaf).count()
    # anywhere, when asked: the links down to the NICs too
    found = hits(page(client, "/inventory/search/", q="be.rtsw.z00.000", kind="link", match="anywhere"))
    assert len(found["link"]) == m.Link.objects.filter(Q(a_switch=leaf) | Q(b_switch=leaf)).count()
    # anywhere, by itself, when no name starts with q
    response = page(client, "/inventory/search/", q="h1.gpu3")
    assert response.context["widened"] and len(hits(response)["gpu"]) == 16


def test_search_filters_by_status_kind_and_cluster(client, demo):
    links = list(m.Link.objects.filter(cluster=demo).order_by("id")[:3])
    m.Link.objects.filter(pk__in=[link.pk for link in links]).update(status="failed")
    m.Switch.objects.filter(name="demo-256.be.rtsw.z00.000").update(status="drained")
    assert hits(page(client, "/inventory/search/", status="failed")) == {"link": [link.name for link in links]}
    assert set(hits(page(client, "/inventory/search/", status="not-active"))) == {"link", "switch"}
    assert hits(page(client, "/inventory/search/", q="rtsw.z00.000", status="drained", cluster="demo-256")) == {
        "switch": ["demo-256.be.rtsw.z00.000"]}
    # one kind: paginated
    response = page(client, "/inventory/search/", q="demo-256.z00", kind="port")
    assert response.context["page"].paginator.count == m.Port.objects.filter(name__contains="demo-256.z00").count()
    assert len(response.context["hits"][0].rows) == 50
    # bad input: a message naming the field
    assert "cluster:" in page(client, "/inventory/search/", q="x", cluster="nope").context["error"]
    assert page(client, "/inventory/search/").context["error"].startswith("q:")


# --- cost -----------------------------------------------------------------------------------------------------

def queries(client, path):
    client.get(path)  # warm: the session, the user, the content types
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured)


def add_hosts(rack, n):
    """n more hosts with 8 GPUs each in ``rack`` (bulk, names that cannot clash with the builder's)."""
    first = m.Host.objects.filter(rack=rack).first()
    model = m.GPU.objects.filter(host=first).first().model
    hosts = m.Host.objects.bulk_create(
        m.Host(rack=rack, platform=first.platform, slot=100 + i, cluster_id=rack.cluster_id,
               name=f"{rack.name}.extra{i}", serial=f"X-{rack.id}-{i}") for i in range(n))
    base = m.GPU.objects.filter(cluster_id=rack.cluster_id).order_by("-index").first().index + 1
    m.GPU.objects.bulk_create(
        m.GPU(host=h, model=model, slot=s, index=base + 8 * i + s, cluster_id=rack.cluster_id,
              name=f"{h.name}.gpu{s}", serial=f"XG-{h.id}-{s}") for i, h in enumerate(hosts) for s in range(8))


def add_links(switch, n):
    """n more links between new ports of ``switch``."""
    link = m.Link.objects.filter(b_switch=switch).first()
    ports = m.Port.objects.bulk_create(
        m.Port(cluster_id=switch.cluster_id, name=f"{switch.name}:x{i}", switch=switch, slot=1000 + i, speed_gbps=400)
        for i in range(2 * n))
    m.Link.objects.bulk_create(
        m.Link(cluster_id=switch.cluster_id, fabric_id=switch.fabric_id, tier=link.tier, a_port=a, b_port=b,
               a_switch=switch, b_switch=switch, speed_gbps=400, cable_id=link.cable_id, name=f"{a.name}~{b.name}",
               serial=f"XL-{a.id}") for a, b in zip(ports[::2], ports[1::2]))


def test_query_count_does_not_grow_with_the_children(client, demo):
    rack = m.Rack.objects.get(name="demo-256.z00.r001")
    host = m.Host.objects.filter(rack=rack).first()
    spine = m.Switch.objects.filter(cluster=demo, role="ctsw").first()
    paths = [url("cluster", demo.id), url("zone", rack.zone_id), url("rack", rack.id), url("host", host.id),
             url("switch", spine.id), url("fabric", spine.fabric_id), "/inventory/", "/inventory/search/?q=z00.r001"]
    before = {path: queries(client, path) for path in paths}
    # given more of every kind of child
    add_hosts(rack, 6)
    for other in m.Rack.objects.filter(zone=rack.zone).exclude(pk=rack.pk)[:3]:
        add_hosts(other, 2)
    add_links(spine, 150)  # past one page of ports
    # then the same number of queries
    assert {path: queries(client, path) for path in paths} == before
    assert len(page(client, url("rack", rack.id)).context["hosts"]) == 8
    assert page(client, url("switch", spine.id)).context["ports"].paginator.num_pages > 1
