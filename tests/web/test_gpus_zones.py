"""The GPU page at scale: one zone's page data (``?zone=``) is the whole cluster's cut to that zone, its NIC links
at their positions in a zone-scoped live frame; the zone overview's per-rack figures are the sums of the GPUs' own
(statuses, the last frame's states and NIC-link utilization); a zone the cluster does not have is a 404 naming it."""
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from twin.inventory import models as m
from twin.live import frames, scope, store
from twin.live import sections as live_sections

pytestmark = pytest.mark.django_db
ZONE = "demo-256.z01"


def get_json(client, path):
    response = client.get(f"/clusters/demo-256/{path}")
    assert response.status_code == 200, response.content
    return json.loads(response.content)


def test_a_zone_page_is_the_cluster_page_cut_to_its_zone(client, demo):
    # given the whole cluster's page data and the zone's
    full, part = get_json(client, "gpus.json"), get_json(client, f"gpus.json?zone={ZONE}")
    zone_of = [full["zones"]["name"][full["racks"]["zone"][full["hosts"]["rack"][h]]] for h in full["gpus"]["host"]]
    inside = [i for i, z in enumerate(zone_of) if z == ZONE]
    # then the zone's page holds exactly the zone's GPUs, in GPU.index order, with their slots
    assert part["zone"] == ZONE and part["zones"]["name"] == [ZONE]
    assert part["gpus"]["count"] == len(inside) == 128 and part["gpus"]["index"] == inside
    assert part["gpus"]["slot"] == [full["gpus"]["slot"][i] for i in inside]
    assert [part["hosts"]["id"][h] for h in part["gpus"]["host"]] == [full["hosts"]["id"][full["gpus"]["host"][i]]
                                                                      for i in inside]
    # and each GPU's NIC link, looked up in the zone's frame order, is the same link as in the whole order
    items = scope.cluster_zones(demo).items(ZONE)
    assert part["links"]["count"] == len(items.links)
    assert [int(items.links[k]) for k in part["gpus"]["link"]] == [full["gpus"]["link"][i] for i in inside]


def test_a_zone_scoped_frame_carries_the_zone_items_in_frame_order(demo):
    zones = scope.cluster_zones(demo)
    items = zones.items(ZONE)
    n_gpus, n_links, n_hosts = len(zones.gpu_zone), len(zones.link_ids), len(zones.host_zone)
    sections = frames.build_sections(link_util=np.linspace(0, 1, n_links), gpu_state=np.arange(n_gpus) % 3,
                                     host_progress=np.arange(n_hosts) % 250,
                                     job_stats=[{"job": 7, "phase": "simulating"}],
                                     gpu_job=np.arange(n_gpus) % 2, server_write=np.ones(5))
    sid = {s.name: s.id for s in live_sections.sections()}
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=9, run_id=3, sections=sections))
    cut = frames.decode(scope.scope_frame(raw, items))
    summary = frames.decode(scope.scope_frame(raw, None))
    # the zone form: per-item sections cut to the zone (same order), the small ones kept, storage left out
    assert cut.scoped and cut.seq == 9 and cut.run_id == 3
    assert np.array_equal(cut.value("gpu_state"), sections[sid["gpu_state"]][items.gpus])
    assert np.array_equal(cut.sections[sid["link_util"]], sections[sid["link_util"]][items.links])
    assert np.array_equal(cut.value("host_progress"), sections[sid["host_progress"]][items.hosts])
    assert cut.value("job_stats")[0]["job"] == 7 and sid["server_write"] not in cut.sections
    # every GPU of the zone is in the zone's racks, every link's lower switch (leaf for a NIC cable) in the zone
    rack_zone = dict(m.Rack.objects.filter(cluster=demo).values_list("id", "zone__name"))
    assert {rack_zone[r] for r in zones.gpu_rack[items.gpus]} == {ZONE}
    assert len(items.gpus) == 128 and len(items.links) < n_links
    # the summary form: the header and the small sections only
    assert summary.scoped and set(summary.sections) == {sid["job_stats"]}


def test_the_overview_sums_the_gpus_of_each_rack(client, demo, monkeypatch):
    zones = scope.cluster_zones(demo)
    n_gpus, n_links = len(zones.gpu_zone), len(zones.link_ids)
    # given a failed GPU and a last frame: every third GPU in the run, utilization rising along the links
    failed = m.GPU.objects.filter(cluster=demo).order_by("index")[5]
    failed.status = "failed"
    failed.save()
    # and a drained leaf: every GPU cabled to it is unusable, as the per-GPU statuses say
    leaf = m.Switch.objects.filter(cluster=demo, tier=0).order_by("id")[3]
    leaf.status = "drained"
    leaf.save()
    state = (np.arange(n_gpus) % 3 == 0).astype(np.uint8)
    util = np.linspace(0, 1, n_links)
    gpu_job = (np.arange(n_gpus) % 4 == 1).astype(np.uint16)                  # a training job on every 4th GPU
    n_hosts = len(grid_hosts := get_json(client, "gpus.json")["hosts"]["rack"])
    progress = np.where(np.arange(n_hosts) % 2 == 0, np.arange(n_hosts) % 251, 255).astype(np.uint8)  # odd: none
    # and a power run's draw per GPU (every 5th GPU not known) and its rack's peak against the budget
    gpu_power = np.where(np.arange(n_gpus) % 5 == 0, 255, np.arange(n_gpus) % 251).astype(np.uint8)
    rack_power = (np.arange(n_gpus) % 200 + 50).astype(np.uint8)
    raw = frames.encode(frames.Frame(type=frames.FRAME_CLUSTER, seq=4, run_id=11, status="running",
                                     sections=frames.build_sections(link_util=util, gpu_state=state, gpu_job=gpu_job,
                                                                    host_progress=progress, gpu_power=gpu_power,
                                                                    rack_power=rack_power)))
    mine = store.cluster_stream(demo.id)
    monkeypatch.setattr(store, "load_last", lambda stream: (4, raw) if stream == mine else None)
    doc = get_json(client, "gpus/zones.json")
    grid = get_json(client, "gpus.json")
    racks = doc["racks"]
    # then each rack's counts are its GPUs' own
    gpu_rack = np.array([grid["hosts"]["rack"][h] for h in grid["gpus"]["host"]])
    names = grid["racks"]["name"]
    by_name = {(doc["zones"]["name"][z], p): k for k, (z, p) in enumerate(zip(racks["zone"], racks["pos"]))}
    for r, name in enumerate(names):
        k = by_name[(grid["zones"]["name"][grid["racks"]["zone"][r]], grid["racks"]["pos"][r])]
        mine = np.flatnonzero(gpu_rack == r)
        assert racks["gpus"][k] == len(mine)
        assert racks["in_run"][k] == int(state[mine].sum())
        blocked = (np.array(grid["status"]) != grid["status_names"].index("active"))
        blocked[grid["unusable"]["gpu"]] = True
        assert racks["not_usable"][k] == int(blocked[mine].sum())
        links = np.array(grid["gpus"]["link"])[mine]
        assert racks["util"][k] == pytest.approx(frames.dequantize_util(frames.quantize_util(util[links])).mean(),
                                                 abs=1e-4)
        # and the capabilities' sections give theirs (Section.rack_figure): the share of the rack's GPUs in a job,
        # the mean checkpoint progress of its hosts in the job (-1: none)
        assert racks["gpu_job"][k] == pytest.approx(float((gpu_job[mine] > 0).mean()), abs=1e-4)
        hosts = np.flatnonzero(np.array(grid_hosts) == r)
        inside = progress[hosts] != 255
        assert racks["host_progress"][k] == (pytest.approx(float((progress[hosts][inside] / 250).mean()), abs=1e-4)
                                             if inside.any() else -1)
        known = gpu_power[mine] != 255
        assert racks["gpu_power"][k] == pytest.approx(float((gpu_power[mine][known] / 250).mean()), abs=1e-4)
        assert racks["rack_power"][k] == pytest.approx(float((rack_power[mine] / 200).mean()), abs=1e-4)
    assert sum(doc["zones"]["gpus"]) == n_gpus and doc["run"]["id"] == 11
    assert sum(racks["not_usable"]) == 1 + 16                     # the failed GPU, the leaf's rack


def test_the_page_views_and_an_unknown_zone(client, demo):
    assert b'data-view="grid"' in client.get("/clusters/demo-256/gpus/").content      # small: the whole grid
    page = client.get("/clusters/demo-256/gpus/?view=zones").content
    assert b'data-view="zones"' in page and b"summary=1" in page
    page = client.get(f"/clusters/demo-256/gpus/?zone={ZONE}").content
    assert b'data-view="zone"' in page and f"zone={ZONE}".encode() in page
    response = client.get("/clusters/demo-256/gpus.json?zone=nowhere")
    assert response.status_code == 404 and "nowhere" in response.json()["zone"][0]
    assert client.get("/clusters/demo-256/gpus/?zone=nowhere").status_code == 404


def test_a_building_is_its_zones(client, tmp_path):
    # given demo-256's design with one zone per building (the spec's layout.zones_per_building)
    spec = Path(__file__).resolve().parents[2] / "sim" / "presets" / "demo-256.toml"
    text = spec.read_text().replace('name = "demo-256"', 'name = "demo-blds"')
    text = text.replace("[layout]\n", "[layout]\nzones_per_building = 1\n")
    (tmp_path / "demo-blds.toml").write_text(text)
    call_command("build_cluster", str(tmp_path / "demo-blds.toml"), "--no-progress", stdout=io.StringIO())
    cluster = m.Cluster.objects.get(name="demo-blds")
    # then building 1's page data is zone z01's, and its stream scope names the same items
    building = json.loads(client.get("/clusters/demo-blds/gpus.json?building=1").content)
    zone = json.loads(client.get("/clusters/demo-blds/gpus.json?zone=demo-blds.z01").content)
    assert building["zone"] == "building 1" and building["gpus"] == zone["gpus"] and building["links"] == zone["links"]
    zones = scope.cluster_zones(cluster)
    assert np.array_equal(zones.place(building=1).links, zones.items("demo-blds.z01").links)
    overview = json.loads(client.get("/clusters/demo-blds/gpus/zones.json").content)
    assert overview["zones"]["building"] == [0, 1]
    # and a building it does not have, or one that is not a number, says which field is wrong
    assert client.get("/clusters/demo-blds/gpus.json?building=2").json() == {
        "building": ["no building 2 in this cluster (it has 2)"]}
    assert client.get("/clusters/demo-blds/fabric.json?building=x").status_code == 404
    assert client.get("/api/live/clusters/demo-blds/snapshot/?building=x").status_code == 400
