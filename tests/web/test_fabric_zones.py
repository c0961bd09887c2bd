"""The fabric page at scale: one zone's fabric.json (``?zone=``) holds the links of the zone's lower switches (a NIC
cable's leaf), in the order of a zone-scoped live frame, with their statuses; the zone overview's figures per zone and
tier are sums over those links (not active: their own status or a switch at either end; utilization: the last
frame's)."""
import json

import numpy as np
import pytest

from twin.inventory import models as m
from twin.live import frames, scope, store

pytestmark = pytest.mark.django_db
ZONE = "demo-256.z00"


def get_json(client, path):
    response = client.get(f"/clusters/demo-256/{path}")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def link_ids(doc):
    return [first + k for first, count in doc["links"]["id_runs"] for k in range(count)]


def test_a_zone_fabric_holds_the_zone_links_in_scoped_frame_order(client, demo):
    full, part = get_json(client, "fabric.json"), get_json(client, f"fabric.json?zone={ZONE}")
    items = scope.cluster_zones(demo).items(ZONE)
    ids = link_ids(full)
    # the zone's links are those of the scoped frame, in its order
    assert link_ids(part) == [ids[k] for k in items.links] and part["zone"] == ZONE
    # and they are the links whose row switch (lower end; the leaf for a NIC cable) is in the zone
    zone_of = dict(m.Switch.objects.filter(fabric__cluster=demo).values_list("id", "zone__name"))
    sw = full["switches"]["id"]
    rows = [full["links"]["b"][i] if full["links"]["tier"][i] == 0 else full["links"]["a"][i] for i in range(len(ids))]
    assert sorted(ids[i] for i in range(len(ids)) if zone_of[sw[rows[i]]] == ZONE) == link_ids(part)
    # a failed link of the zone shows at its position in the zone's arrays
    link = m.Link.objects.get(id=link_ids(part)[7])
    link.status = "failed"
    link.save()
    status = get_json(client, f"fabric/status.json?zone={ZONE}")
    assert status["links"]["count"] == len(items.links) and status["link_status"]["index"] == [7]


def test_the_overview_sums_each_zone_and_tier(client, demo, monkeypatch):
    zones = scope.cluster_zones(demo)
    util = np.linspace(0, 1, len(zones.link_ids))
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=2, run_id=5, status="succeeded",
                                     sections=frames.build_sections(link_util=util)))
    mine = store.cluster_stream(demo.id)
    monkeypatch.setattr(store, "load_last", lambda stream: (2, raw) if stream == mine else None)
    # given a failed leaf in zone 0: its host links and uplinks count as not active
    leaf = m.Switch.objects.filter(fabric__cluster=demo, zone__name=ZONE, tier=0).order_by("id").first()
    leaf.status = "failed"
    leaf.save()
    doc = get_json(client, "fabric/zones.json")
    q = frames.dequantize_util(frames.quantize_util(util))
    z = doc["zones"].index(ZONE)
    for t in doc["tiers"]:
        mine = (zones.link_zone == zones.zone_id(ZONE)) & (zones.link_tier == t["code"])
        down = mine & ((zones.link_a == leaf.id) | (zones.link_b == leaf.id))
        ok = mine & ~down
        assert t["links"][z] == mine.sum() and t["down"][z] == down.sum()
        assert t["mean"][z] == pytest.approx(q[ok].mean(), abs=1e-4)
        assert t["max"][z] == pytest.approx(q[ok].max(), abs=1e-4)
    assert sum(sum(t["links"]) for t in doc["tiers"]) == doc["links"]["count"] == len(zones.link_ids)
    assert doc["run"]["id"] == 5


def test_the_page_views_and_an_unknown_zone(client, demo):
    assert b'data-view="all"' in client.get("/clusters/demo-256/fabric/").content
    page = client.get("/clusters/demo-256/fabric/?view=zones").content
    assert b'data-view="zones"' in page and b"fabric-overview.js" in page and b"summary=1" in page
    page = client.get(f"/clusters/demo-256/fabric/?zone={ZONE}").content
    assert b'data-view="zone"' in page and f"binary=1&amp;zone={ZONE}".encode() in page
    assert client.get("/clusters/demo-256/fabric.json?zone=nowhere").status_code == 404
    assert client.get("/clusters/demo-256/fabric/?zone=nowhere").status_code == 404
