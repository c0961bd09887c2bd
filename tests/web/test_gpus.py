"""The GPU grid page and its data: gpus.json has one entry per GPU in GPU.index order (the live gpu_state order)
whose host, rack, zone and NIC-cable positions agree with the database and with the live link_util order; statuses
are current although the structure is cached; the GPUs it calls unusable are exactly those the simulator cannot
place; unknown clusters are a 404 that says so."""
import json

import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from sim.fabric.layout import STATUS_NAMES
from sim.fabric.topology import topology_from_layout
from tests.module_db import build
from twin.api.models import ApiToken
from twin.inventory import models as m
from twin.inventory.adapter import layout_from_db
from twin.live.meta import link_index
from twin.inventory.gpu_grid import REASONS

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
FAILED, DRAINED, MAINTENANCE = (STATUS_NAMES.index(s) for s in ("failed", "drained", "maintenance"))
BIT = {name: 1 << k for k, name in enumerate(REASONS)}


def gpus_json(client, name="demo-256", path="gpus.json"):
    response = client.get(f"/clusters/{name}/{path}")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def gpu_rows(cluster):
    return list(m.GPU.objects.filter(cluster=cluster).order_by("index")
                .values_list("id", "index", "slot", "host_id", "host__rack_id", "host__rack__zone__name"))


def test_one_entry_per_gpu_in_index_order_with_its_host_rack_and_zone(client, demo):
    # given the demo cluster, when the page loads its data
    doc = gpus_json(client)
    rows = gpu_rows(demo)
    g, hosts, racks, zones = doc["gpus"], doc["hosts"], doc["racks"], doc["zones"]
    # then there is one entry per GPU, in GPU.index order (0..255, so no explicit index array)
    assert g["count"] == len(rows) == 256 and g["index"] is None
    assert len(g["host"]) == len(g["slot"]) == len(g["link"]) == len(doc["status"]) == 256
    # and each GPU's host, that host's rack and that rack's zone are the database's, by position
    assert [hosts["id"][h] for h in g["host"]] == [r[3] for r in rows]
    rack_names = dict(m.Rack.objects.filter(cluster=demo).values_list("id", "name"))
    assert [racks["name"][hosts["rack"][h]] for h in g["host"]] == [rack_names[r[4]] for r in rows]
    assert [zones["name"][racks["zone"][hosts["rack"][h]]] for h in g["host"]] == [r[5] for r in rows]
    assert g["slot"] == [r[2] for r in rows]
    # and only the compute zones and racks are there (storage racks hold no host)
    assert zones["name"] == ["demo-256.z00", "demo-256.z01"] and len(racks["name"]) == 16
    # and positions inside a zone and a rack follow the rack number and the host slot
    rack_numbers = dict(m.Rack.objects.filter(cluster=demo).values_list("name", "number"))
    assert racks["pos"] == [rack_numbers[name] for name in racks["name"]]
    host_slots = dict(m.Host.objects.filter(cluster=demo).values_list("id", "slot"))
    assert hosts["pos"] == [host_slots[h] for h in hosts["id"]]
    # and the GPU names the page derives ("<host>.gpu<slot>") are the database's, so none is sent
    assert g["names"] == {}
    names = dict(m.GPU.objects.filter(cluster=demo).values_list("index", "name"))
    assert all(names[i] == f"{hosts['name'][g['host'][i]]}.gpu{g['slot'][i]}" for i in range(256))


def test_nic_cable_positions_are_positions_in_the_live_link_order(client, demo):
    doc = gpus_json(client)
    live_ids = json.loads(link_index(demo)[1])["ids"]        # the order of the link_util section
    assert doc["links"]["count"] == len(live_ids) == 576
    cable_of_gpu = dict(m.Link.objects.filter(fabric__cluster=demo, fabric__role=0, a_port__nic__gpu__isnull=False)
                        .values_list("a_port__nic__gpu__index", "id"))
    assert [live_ids[p] for p in doc["gpus"]["link"]] == [cable_of_gpu[i] for i in range(256)]


def test_a_renamed_gpu_and_an_index_gap_are_sent(client, demo):
    gpus_json(client)
    # given GPU 5 renamed and the last GPU removed, then one added with index 300
    m.GPU.objects.filter(cluster=demo, index=5).update(name="spare-gpu")
    last = m.GPU.objects.get(cluster=demo, index=255)
    last.delete()
    last.pk, last.index, last.name, last.serial = None, 300, "demo-256.late", "LATE-1"
    last.save()
    # then the data (its structure rebuilt: another GPU count and top id) names and numbers them
    g = gpus_json(client)["gpus"]
    assert g["names"]["5"] == "spare-gpu" and g["names"]["255"] == "demo-256.late"
    assert g["index"] == list(range(255)) + [300]
    assert g["link"][255] == -1                            # the new GPU has no NIC cable


def test_gpu_statuses_are_current_though_the_structure_is_cached(client, demo):
    # given the data was loaded once (its structure is now cached)
    assert set(gpus_json(client)["status"]) == {0}
    gpu_ids = dict(m.GPU.objects.filter(cluster=demo).values_list("index", "id"))
    # when one GPU is failed through the REST API and two are drained and under maintenance in the database
    user = User.objects.create_user("ops")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    assert api.patch(f"/api/inventory/gpus/{gpu_ids[13]}/", {"status": "failed"}, format="json").status_code == 200
    m.GPU.objects.filter(id=gpu_ids[200]).update(status="drained")
    m.GPU.objects.filter(id=gpu_ids[201]).update(status="maintenance")
    # then each shows its status by position, in gpus.json and in status.json
    doc = gpus_json(client)
    assert {i: s for i, s in enumerate(doc["status"]) if s} == {13: FAILED, 200: DRAINED, 201: MAINTENANCE}
    assert doc["status_names"][FAILED] == "failed"
    status = gpus_json(client, path="gpus/status.json")
    assert status["status"] == doc["status"] and "hosts" not in status
    # and a host taken out shows too
    host = m.GPU.objects.get(id=gpu_ids[40]).host_id
    m.Host.objects.filter(id=host).update(status="maintenance")
    doc = gpus_json(client)
    assert doc["hosts_not_active"] == {"host": [doc["hosts"]["id"].index(host)], "status": [MAINTENANCE]}


def test_unusable_gpus_are_those_the_simulator_cannot_place(client, demo):
    # given a failed NIC cable, a failed NIC, a drained leaf port, a leaf switch in maintenance and a failed GPU
    cables = {i: (link, nic, leaf_port, leaf) for i, link, nic, leaf_port, leaf in
              m.Link.objects.filter(fabric__cluster=demo, fabric__role=0, a_port__nic__gpu__isnull=False)
              .values_list("a_port__nic__gpu__index", "id", "a_port__nic_id", "b_port_id", "b_switch_id")}
    m.Link.objects.filter(id=cables[3][0]).update(status="failed")
    m.NIC.objects.filter(id=cables[70][1]).update(status="failed")
    m.Port.objects.filter(id=cables[71][2]).update(status="drained")
    m.Switch.objects.filter(id=cables[130][3]).update(status="maintenance")
    m.GPU.objects.filter(cluster=demo, index=250).update(status="failed")
    # when the page loads its data
    doc = gpus_json(client)
    reasons = dict(zip(doc["unusable"]["gpu"], doc["unusable"]["reasons"]))
    # then each part's GPUs carry its reason (a leaf serves the 16 GPUs of its rack)
    assert reasons[3] == BIT["cable"] and reasons[70] == BIT["NIC"] and reasons[71] == BIT["leaf port"]
    leaf_gpus = {i for i, c in cables.items() if c[3] == cables[130][3]}
    assert len(leaf_gpus) == 16 and all(reasons[i] == BIT["leaf switch"] for i in leaf_gpus)
    # and GPUs unusable for a part, with the GPUs not active, are exactly those the simulator excludes
    not_active = {i for i, s in enumerate(doc["status"]) if s}
    usable = topology_from_layout(layout_from_db(demo)).gpu_usable
    assert set(reasons) | not_active == set(np.flatnonzero(~usable).tolist())


def test_a_rebuilt_cluster_is_read_afresh(client, demo):
    before = gpus_json(client)["hosts"]["id"]
    rebuilt = build("demo-256", "--replace")
    doc = gpus_json(client)
    assert doc["cluster"]["id"] == rebuilt.id
    assert doc["hosts"]["id"] == list(m.Host.objects.filter(cluster=rebuilt).order_by("id")
                                      .values_list("id", flat=True))
    assert doc["hosts"]["id"] != before


def test_warm_data_costs_a_fixed_number_of_queries(client, demo, django_assert_num_queries):
    gpus_json(client)
    m.GPU.objects.filter(cluster=demo, index__lt=10).update(status="failed")
    # cluster, fabric, three fingerprint aggregates, non-active GPUs, NICs, ports, links, switches, hosts
    with django_assert_num_queries(11):
        gpus_json(client)


@pytest.mark.parametrize("url", ["/clusters/nope/gpus.json", "/clusters/nope/gpus/status.json"])
def test_unknown_cluster_data_is_a_404_saying_so(client, demo, url):
    response = client.get(url)
    assert response.status_code == 404
    assert response.json() == {"detail": "no cluster named 'nope' (built: demo-256)"}


def test_unknown_cluster_page_is_a_404_saying_so(client, demo):
    response = client.get("/clusters/nope/gpus/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "no cluster named &#x27;nope&#x27; (built: demo-256)" in page and 'id="gpu-grid"' not in page


def test_the_page_renders_its_hooks(client, demo):
    page = client.get("/clusters/demo-256/gpus/").content.decode()
    assert 'data-wait-ready="1"' in page and 'data-cluster="demo-256"' in page
    assert 'data-data-url="/clusters/demo-256/gpus.json"' in page
    assert 'data-status-url="/clusters/demo-256/gpus/status.json"' in page
    # (the colour select's options come from the colour modes registered in the browser: tests/e2e/test_gpus_live.py)
    for hook in ('<canvas id="gpu-grid" data-cells="0"', '<select id="gpu-color-mode"></select>', 'id="gpu-tooltip"',
                 'id="gpu-legend"', "js/gpus.js", "css/gpus.css", 'id="twin-capabilities"'):
        assert hook in page
    assert 'aria-current="page">GPUs<' in page


def test_data_follows_the_anonymous_read_setting(client, settings, demo):
    settings.TWIN_API_ANONYMOUS_READ = False
    assert client.get("/clusters/demo-256/gpus.json").status_code == 401
    assert client.get("/clusters/demo-256/gpus/status.json").status_code == 401
    assert client.get("/clusters/demo-256/gpus/").status_code == 302
