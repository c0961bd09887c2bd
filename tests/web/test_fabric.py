"""The fabric page and its data: fabric.json's arrays follow the live frames' link order and agree with the
database; statuses are current (a link failed through the ORM or the API shows as not active at once, though the
structure is cached); unknown clusters are a 404 that says so."""
import json

import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from sim.fabric.layout import STATUS_NAMES
from tests.module_db import build
from twin.api.models import ApiToken
from twin.inventory import models as m
from twin.inventory.choices import FabricRole
from twin.live.meta import link_index

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
FAILED, DRAINED = STATUS_NAMES.index("failed"), STATUS_NAMES.index("drained")


def backend_links(cluster):
    return m.Link.objects.filter(fabric__cluster=cluster, fabric__role=FabricRole.BACKEND).order_by("id")


def fabric_json(client, name="demo-256"):
    response = client.get(f"/clusters/{name}/fabric.json")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def link_ids(doc):
    return [first + k for first, count in doc["links"]["id_runs"] for k in range(count)]


def test_links_are_in_the_live_frames_order_and_agree_with_the_database(client, demo):
    # given the demo cluster, when the page loads its data
    doc = fabric_json(client)
    links = doc["links"]
    rows = list(backend_links(demo).values_list("id", "tier", "a_switch_id", "b_switch_id", "a_port__slot",
                                                "b_port__slot"))
    # then the link order is the backend Link rows by id, which is the live link_util section's order
    assert link_ids(doc) == [r[0] for r in rows] == json.loads(link_index(demo)[1])["ids"]
    assert links["count"] == len(rows) == 576
    # and each link's tier and ends are the database's, switches given by position in the switch arrays
    switch_ids = doc["switches"]["id"]
    assert switch_ids == list(m.Switch.objects.filter(cluster=demo, fabric__role=FabricRole.BACKEND).order_by("id")
                              .values_list("id", flat=True))
    assert links["tier"] == [r[1] for r in rows]
    assert [switch_ids[a] if a >= 0 else None for a in links["a"]] == [r[2] for r in rows]
    assert [switch_ids[b] for b in links["b"]] == [r[3] for r in rows]
    # and the columns rank each row's links of a tier by the row switch's port slot
    tier, a, b, col = (np.array(links[k]) for k in ("tier", "a", "b", "col"))
    row = np.where(tier == 0, b, a)
    slot = np.array([r[5] if r[1] == 0 else r[4] for r in rows])
    for key in set(zip(tier.tolist(), row.tolist())):
        mine = (tier == key[0]) & (row == key[1])
        assert sorted(col[mine].tolist()) == list(range(mine.sum()))
        assert (np.argsort(col[mine]) == np.argsort(slot[mine], kind="stable")).all()


def test_tiers_switches_and_zones_are_the_clusters(client, demo):
    doc = fabric_json(client)
    assert doc["switch_tiers"] == ["rtsw", "ctsw", "atsw"]
    per_tier = {t: backend_links(demo).filter(tier=t).count() for t in range(3)}
    assert [(t["name"], t["links"]) for t in doc["link_tiers"]] == \
        [("nic-rtsw", per_tier[0]), ("rtsw-ctsw", per_tier[1]), ("ctsw-atsw", per_tier[2])]
    assert [t["cols"] for t in doc["link_tiers"]] == [16, 16, 8]           # host ports, leaf and spine uplinks
    sw = doc["switches"]
    assert doc["zones"] == ["demo-256.z00", "demo-256.z01"]
    leaf = m.Switch.objects.get(name="demo-256.be.rtsw.z01.003")
    k = sw["id"].index(leaf.id)
    assert (sw["name"][k], sw["tier"][k], doc["zones"][sw["zone"][k]], sw["group"][k]) == \
        (leaf.name, 0, "demo-256.z01", 3)
    assert doc["racks"][sw["rack"][k]] == leaf.rack.name and doc["models"][sw["model"][k]] == leaf.model.slug
    core = sw["tier"].index(2)
    assert sw["zone"][core] == -1 and sw["rack"][core] == -1
    assert doc["link_status"] == {"index": [], "code": []} and doc["switch_status"] == {"index": [], "code": []}


def test_a_link_failed_through_the_orm_or_the_api_shows_as_not_active(client, demo):
    # given the page data was loaded once (its structure is now cached)
    fabric_json(client)
    ids = list(backend_links(demo).values_list("id", flat=True))
    drained, failed = ids[3], ids[400]
    # when one link is drained in the database and another is failed through the REST API
    m.Link.objects.filter(id=drained).update(status="drained")
    user = User.objects.create_user("ops")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    assert api.patch(f"/api/inventory/links/{failed}/", {"status": "failed"}, format="json").status_code == 200
    # then both show, by position in the live order, in fabric.json and in status.json
    doc = fabric_json(client)
    assert doc["link_status"] == {"index": [3, 400], "code": [DRAINED, FAILED]}
    status = json.loads(client.get("/clusters/demo-256/fabric/status.json").content)
    assert status["link_status"] == doc["link_status"] and status["links"]["count"] == 576
    # and a failed switch too
    leaf = m.Switch.objects.filter(cluster=demo, fabric__role=FabricRole.BACKEND).order_by("id")[5]
    m.Switch.objects.filter(id=leaf.id).update(status="failed")
    assert fabric_json(client)["switch_status"] == {"index": [5], "code": [FAILED]}


def test_a_rebuilt_cluster_is_read_afresh(client, demo):
    before = link_ids(fabric_json(client))
    build("demo-256", "--replace")
    after = link_ids(fabric_json(client))
    assert after == list(backend_links(m.Cluster.objects.get(name="demo-256")).values_list("id", flat=True))
    assert after != before


def test_a_recabled_fabric_is_read_afresh(client, demo):
    # given the cached structure, when a leaf uplink is moved to another free port of its leaf
    fabric_json(client)
    link = backend_links(demo).filter(tier=1).first()
    port = link.a_port
    free = m.Port.objects.create(cluster=demo, name=f"{port.switch.name}:99", switch=port.switch, slot=99,
                                 speed_gbps=port.speed_gbps)
    link.a_port = free
    link.save()
    # then the link is the last of its row (port 99 is its leaf's highest)
    doc = fabric_json(client)
    k = link_ids(doc).index(link.id)
    assert doc["links"]["col"][k] == 15
    # and when a link is removed, it is gone from the arrays
    m.Link.objects.filter(id=link.id).delete()
    doc = fabric_json(client)
    assert link.id not in link_ids(doc) and doc["links"]["count"] == 575


def test_warm_data_costs_a_fixed_number_of_queries(client, demo, django_assert_num_queries):
    fabric_json(client)
    # the fabric with its cluster, the two fingerprint aggregates, link and switch statuses
    with django_assert_num_queries(5):
        fabric_json(client)


def test_link_details_name_both_ends(client, demo):
    host_link, uplink = backend_links(demo).filter(tier=0).first(), backend_links(demo).filter(tier=1).first()
    body = json.loads(client.get(f"/clusters/demo-256/fabric/links.json?id={host_link.id},{uplink.id}").content)
    first, second = body["results"]
    assert first["name"] == host_link.name and first["status"] == "active" and first["speed_gbps"] == 400
    assert first["a"] == {"port": host_link.a_port.name, "device": host_link.a_port.nic.name}
    assert first["b"] == {"port": host_link.b_port.name, "device": host_link.b_switch.name}
    assert second["a"]["device"] == uplink.a_switch.name and second["b"]["device"] == uplink.b_switch.name


def test_link_details_refuse_bad_ids_naming_the_field(client, demo):
    for bad in ("3,x", "-1", "99999999999999999999"):
        response = client.get(f"/clusters/demo-256/fabric/links.json?id={bad}")
        assert response.status_code == 400 and "positive integers" in response.json()["id"][0]
    response = client.get("/clusters/demo-256/fabric/links.json?id=" + ",".join(map(str, range(1, 600))))
    assert response.status_code == 400 and "at most 500" in response.json()["id"][0]


def test_a_frontend_link_is_not_described_as_a_backend_one(client, demo):
    frontend = m.Link.objects.filter(fabric__cluster=demo, fabric__role=FabricRole.FRONTEND).first()
    body = json.loads(client.get(f"/clusters/demo-256/fabric/links.json?id={frontend.id}").content)
    assert body["results"] == []


@pytest.mark.parametrize("url", ["/clusters/nope/fabric.json", "/clusters/nope/fabric/status.json",
                                 "/clusters/nope/fabric/links.json?id=1"])
def test_unknown_cluster_data_is_a_404_saying_so(client, demo, url):
    response = client.get(url)
    assert response.status_code == 404 and response.json() == {"detail": "no cluster named 'nope'"}


def test_unknown_cluster_page_is_a_404_saying_so(client, demo):
    response = client.get("/clusters/nope/fabric/")
    assert response.status_code == 404
    assert "No cluster named &#x27;nope&#x27;" in response.content.decode()


def test_the_page_renders_its_hooks(client, demo):
    page = client.get("/clusters/demo-256/fabric/").content.decode()
    assert 'data-wait-ready="1"' in page and 'data-cluster="demo-256"' in page
    assert 'data-data-url="/clusters/demo-256/fabric.json"' in page
    for hook in ('id="heatmaps"', 'id="hottest-links"', 'id="fabric-run"', 'id="zone-table"', 'id="switch-panel"',
                 'id="change-list"', "js/fabric.js", "css/fabric.css"):
        assert hook in page
    assert 'aria-current="page">Fabric<' in page


def test_data_follows_the_anonymous_read_setting(client, settings, demo):
    settings.TWIN_API_ANONYMOUS_READ = False
    assert client.get("/clusters/demo-256/fabric.json").status_code == 401
    assert client.get("/clusters/demo-256/fabric/").status_code == 302
