"""The Storage page and its data: storage.json lists every storage server in StorageServer id order (the live
server sections' order) with its store, rack and slot as the database holds them, a server of a failed rack as
not active, active SSDs counted; the frontend fabric.json is in the frontend_util section's order; the page embeds
the checkpoint form generated from sim.storage.params.CHECKPOINT; an unknown cluster is a 404 that says so."""
import json

import pytest

from sim.storage.params import CHECKPOINT
from twin.inventory import models as m
from twin.inventory.choices import STATUS_CODE
from twin.runs.calibration import CALIBRATION
from twin.capabilities.storage.kinds import RATED_PEAK_BPS, RATED_SUSTAINED_BPS

pytestmark = pytest.mark.django_db


def get_json(client, url):
    r = client.get(url)
    assert r.status_code == 200, r.content[:300]
    return json.loads(r.content)


def test_storage_json_lists_every_server_in_live_order_with_statuses(client, demo):
    # given a failed SSD, a drained server and a failed storage rack
    servers = m.StorageServer.objects.filter(cluster=demo).order_by("id")
    ssd = m.SSD.objects.filter(server=servers[0]).order_by("id").first()
    ssd.status = "failed"
    ssd.save()
    m.StorageServer.objects.filter(pk=servers[1].pk).update(status="drained")
    rack = servers.filter(storage_cluster__kind="hammerspace").first().rack
    m.Rack.objects.filter(pk=rack.pk).update(status="failed")
    # when the page loads its data
    doc = get_json(client, "/clusters/demo-256/storage.json")
    # then one entry per server, by id, with its store, rack and status as the engine reads them
    s = doc["servers"]
    assert s["id"] == list(servers.values_list("id", flat=True)) and s["count"] == servers.count()
    kinds = [doc["stores"][k]["kind"] for k in s["store"]]
    assert kinds == list(servers.values_list("storage_cluster__kind", flat=True))
    in_rack = set(rack.storage_servers.values_list("id", flat=True))
    expected = ["failed" if i in in_rack else ("drained" if i == servers[1].pk else "active") for i in s["id"]]
    assert [doc["status_names"][c] for c in s["status"]] == expected
    assert s["ssds_active"][0] == s["ssds"][0] - 1 and s["ssds_active"][1] == s["ssds"][1]
    assert {st["nic_gbps"] for st in doc["stores"]} == {100}
    # and the page can write each server's name from its rack's and its slot (storage.js serverNames)
    names = [f"{doc['racks']['name'][r]}.s{slot:02d}" for r, slot in zip(s["rack"], s["slot"])]
    assert names == [n.removeprefix("demo-256.") for n in servers.values_list("name", flat=True)]
    assert doc["rated"]["sustained"] == RATED_SUSTAINED_BPS and doc["rated"]["peak"] == RATED_PEAK_BPS
    assert STATUS_CODE["failed"] == doc["status_names"].index("failed")


def test_the_frontend_fabric_is_in_the_frontend_util_order(client, demo):
    doc = get_json(client, "/clusters/demo-256/storage/fabric.json")
    ids = list(m.Link.objects.filter(cluster=demo, fabric__role=1).order_by("id").values_list("id", flat=True))
    got = [first + j for first, count in doc["links"]["id_runs"] for j in range(count)]
    assert got == ids and doc["links"]["count"] == len(ids)


def test_the_page_embeds_the_checkpoint_form_from_the_declaration(client, demo):
    r = client.get("/clusters/demo-256/storage/")
    assert r.status_code == 200
    html = r.content.decode()
    start = html.index('<script id="checkpoint-form-data" type="application/json">')
    form = json.loads(html[start:].split(">", 1)[1].split("</script>", 1)[0])
    assert [f["name"] for f in form["fields"]] == [p.name for p in CHECKPOINT] + [CALIBRATION.name]
    assert form["kind"] == "checkpoint" and set(form["main"]) <= {p.name for p in CHECKPOINT}
    assert 'id="server-grid"' in html and 'href="/clusters/demo-256/storage/"' in html   # in the navigation
    assert "kind=storageserver" in html and "kind=ssd" in html


def test_an_unknown_cluster_is_a_404_that_says_so(client, demo):
    r = client.get("/clusters/nope/storage/")
    assert r.status_code == 404 and "no cluster named &#x27;nope&#x27;" in r.content.decode()
    assert client.get("/clusters/nope/storage.json").status_code == 404
