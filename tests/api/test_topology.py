"""Topology endpoints on demo-256 (2 zones x 8 racks; each RTSW has 4 links to each of its zone's 4 CTSWs; each
CTSW has 4 links to each of the 2 ATSWs of its plane), with counts worked out by hand."""
import io
import json

import numpy as np
import pytest
from django.core.management import call_command

from sim.fabric.layout import STATUS_DRAINED, STATUS_FAILED, expand
from sim.fabric.names import host_names
from sim.fabric.spec import parse_spec
from twin.api.models import ApiToken
from twin.inventory.adapter import layout_from_db
from twin.inventory.models import GPU, Host, Link, Switch

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def gpu(index):
    return GPU.objects.get(cluster__name="demo-256", index=index)


def paths(client, src, dst, **params):
    return client.get("/api/topology/paths/", {"src_gpu": gpu(src).id, "dst_gpu": gpu(dst).id, **params})


def test_paths_under_one_leaf_same_zone_and_across_zones(anon, demo):
    # GPU 0 (rack 0), 9 (rack 0, other host), 16 (rack 1), 200 (zone 1)
    same_leaf, same_zone, cross = paths(anon, 0, 9).data, paths(anon, 0, 16).data, paths(anon, 0, 200).data
    assert (same_leaf["count"], same_leaf["hops"]) == (1, 2)
    assert (same_zone["count"], same_zone["hops"]) == (4 * 4 * 4, 4)      # 4 CTSWs x 4 links up x 4 links down
    assert (cross["count"], cross["hops"]) == (8 * 16 * 16, 6)          # 8 ATSWs x 16 chains up x 16 chains down
    assert len({tuple(map(tuple, p)) for p in cross["paths"]}) == cross["count"]


def test_paths_are_contiguous_port_by_port(anon, demo):
    data = paths(anon, 0, 200).data
    for path in data["paths"][:50]:
        assert data["ports"][path[0][1]]["device"]["name"] == gpu(0).nic.name
        assert data["ports"][path[-1][2]]["device"]["name"] == gpu(200).nic.name
        for (_, _, arrive), (_, leave, _) in zip(path, path[1:]):
            assert data["ports"][arrive]["device"] == data["ports"][leave]["device"]  # leaves where it arrived


def test_a_failed_link_is_left_out_and_counted(writer, anon, demo):
    uplink = Link.objects.filter(a_port__switch__name="demo-256.be.rtsw.z00.000").order_by("id").first()
    assert writer.patch(f"/api/inventory/links/{uplink.id}/", {"status": "failed"}, format="json").status_code == 200
    data = paths(anon, 0, 200).data
    # the plane of that CTSW now has 3 x 4 chains up to each of its 2 ATSWs instead of 16
    assert data["count"] == 6 * 16 * 16 + 2 * 12 * 16
    assert all(hop[0] != uplink.id for path in data["paths"] for hop in path)


def test_a_drained_spine_is_left_out(writer, anon, demo):
    spine = Switch.objects.get(name="demo-256.be.ctsw.z00.s00")
    writer.patch(f"/api/inventory/switches/{spine.id}/", {"status": "drained"}, format="json")
    assert paths(anon, 0, 16).data["count"] == 3 * 16


def test_unreachable_and_bad_requests_name_the_field(anon, writer, demo):
    writer.patch(f"/api/inventory/gpus/{gpu(0).id}/", {"status": "failed"}, format="json")
    response = paths(anon, 0, 200)
    assert response.status_code == 400 and "failed" in str(response.data["src_gpu"])
    assert anon.get("/api/topology/paths/", {"src_gpu": 10**9, "dst_gpu": 1}).status_code == 400
    assert "dst_gpu" in anon.get("/api/topology/paths/", {"src_gpu": 1}).data
    # an id past what the database compares with is refused, not an overflow (a 500)
    response = anon.get("/api/topology/paths/", {"src_gpu": 2**64 - 1, "dst_gpu": 1})
    assert response.status_code == 400 and "src_gpu" in response.data


def test_max_paths_truncates_the_list_not_the_count(anon, demo):
    data = paths(anon, 0, 200, max_paths=10).data
    assert data["count"] == 2048 and len(data["paths"]) == 10 and data["truncated"]


def test_neighbours_of_a_rack_switch(anon, demo):
    rtsw = Switch.objects.get(name="demo-256.be.rtsw.z00.000")
    data = anon.get(f"/api/inventory/switches/{rtsw.id}/neighbors/").data["neighbors"]
    assert len(data) == 16 + 16
    assert {n["remote_device"]["type"] for n in data if n["link"]["direction"] == "down"} == {"nic"}
    assert {n["remote_device"]["name"].split(".")[2] for n in data if n["link"]["direction"] == "up"} == {"ctsw"}


def test_neighbours_of_a_host_are_its_nics_switches(anon, demo):
    host = gpu(0).host
    data = anon.get(f"/api/inventory/hosts/{host.id}/neighbors/").data["neighbors"]
    assert len(data) == 8 + 2 and {n["remote_device"]["type"] for n in data} == {"switch"}


def test_summary_bandwidth_oversubscription_and_bisection(anon, writer, demo):
    backend = anon.get(f"/api/inventory/clusters/{demo.id}/summary/").data["fabrics"][0]
    assert [(t["tier"], t["links"], t["active_capacity_gbps"]) for t in backend["tiers"]] == \
        [("nic-rtsw", 256, 102400), ("rtsw-ctsw", 256, 102400), ("ctsw-atsw", 64, 25600)]
    assert [o["ratio"] for o in backend["oversubscription"]] == [1.0, 4.0]
    assert backend["bisection_gbps"] == 25600 / 2
    core_link = Link.objects.filter(fabric__role=0, tier=2).first()
    writer.patch(f"/api/inventory/links/{core_link.id}/", {"status": "failed"}, format="json")
    assert anon.get(f"/api/inventory/clusters/{demo.id}/summary/").data["fabrics"][0]["bisection_gbps"] == 25200 / 2


def test_fabric_graph_json_and_dot(anon, demo):
    fabric = demo.fabrics.get(role=0)
    graph = json.loads(b"".join(anon.get(f"/api/inventory/fabrics/{fabric.id}/graph/")))
    assert len(graph["nodes"]) == 32 + 256 and len(graph["edges"]) == 256 + 256 + 64
    node_ids = {n["id"] for n in graph["nodes"]}
    assert all(e["source"] in node_ids and e["target"] in node_ids for e in graph["edges"])
    response = anon.get(f"/api/inventory/fabrics/{fabric.id}/dot/")
    dot = b"".join(response.streaming_content).decode()
    assert response["Content-Type"] == "text/vnd.graphviz" and dot.startswith('graph "demo-256.be"')
    assert dot.count(" -- ") == 576


def test_adapter_reads_the_database_as_the_spec_expands(demo):
    from_db, from_spec = layout_from_db(demo), expand(parse_spec(demo.spec))
    for key, value in vars(from_spec).items():
        if isinstance(value, np.ndarray) and key != "switch_model":
            assert np.array_equal(value, getattr(from_db, key)), key
    slugs = lambda layout: [layout.switch_models[i] for i in layout.switch_model]  # noqa: E731
    assert slugs(from_db) == slugs(from_spec)
    assert host_names(from_db) == host_names(from_spec) == list(Host.objects.filter(cluster=demo).order_by("id")
                                                                .values_list("name", flat=True))


def test_a_status_change_through_the_api_is_what_the_next_simulation_reads(writer, demo):
    link = Link.objects.filter(fabric__role=0, tier=1).order_by("id")[3]
    spine = Switch.objects.get(name="demo-256.be.ctsw.z01.s02")
    writer.patch(f"/api/inventory/links/{link.id}/", {"status": "failed"}, format="json")
    writer.patch(f"/api/inventory/switches/{spine.id}/", {"status": "drained"}, format="json")
    layout = layout_from_db(demo)
    link_index = list(Link.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True)).index(link.id)
    switch_index = list(Switch.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True)).index(spine.id)
    assert layout.link_status[link_index] == STATUS_FAILED and int((layout.link_status != 0).sum()) == 1
    assert layout.switch_status[switch_index] == STATUS_DRAINED


def test_create_api_token_command(db):
    out = io.StringIO()
    call_command("create_api_token", "script", "--create", "--write", stdout=out)
    key = out.getvalue().strip()
    again = io.StringIO()
    call_command("create_api_token", "script", stdout=again)
    # each call makes a new token (only hashes are kept: an old token cannot be printed again); both work
    from django.contrib.auth.models import User
    user = User.objects.get(username="script")
    assert key.startswith("twin_") and again.getvalue().strip() != key
    assert ApiToken.user_for(key) == user == ApiToken.user_for(again.getvalue().strip())
    assert user.has_perm("inventory.change_link") and user.has_perm("runs.add_simulationrun")
    # --reset revokes the others
    last = io.StringIO()
    call_command("create_api_token", "script", "--reset", stdout=last)
    assert ApiToken.user_for(key) is None and ApiToken.user_for(last.getvalue().strip()) == user


def test_schema_and_docs_are_served(anon, db):
    assert anon.get("/api/schema/").status_code == 200
    assert anon.get("/api/docs/").status_code == 200


def test_reads_can_be_closed_to_anonymous_users(anon, reader, demo, settings):
    settings.TWIN_API_ANONYMOUS_READ = False
    assert anon.get("/api/inventory/gpus/").status_code == 401
    assert reader.get("/api/inventory/gpus/").status_code == 200


def test_a_link_failed_through_the_api_leaves_the_simulated_fabric(writer, demo):
    from sim.fabric.routing import route
    from sim.fabric.topology import topology_from_layout
    before = topology_from_layout(layout_from_db(demo))
    uplink = Link.objects.filter(a_switch__name="demo-256.be.rtsw.z00.000").order_by("id").first()
    writer.patch(f"/api/inventory/links/{uplink.id}/", {"status": "failed"}, format="json")
    after = topology_from_layout(layout_from_db(demo))
    assert after.n_links == before.n_links - 2  # both directions of the cable
    cable = list(Link.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True)).index(uplink.id)
    assert cable in set(before.link_cable.tolist()) and cable not in set(after.link_cable.tolist())
    # every one of 16 QPs from GPU 0 to a GPU in the other zone avoids it
    ptr, links = route(after, np.zeros(16, int), np.full(16, 200), np.arange(16), "eecmp")
    assert cable not in set(after.link_cable[links].tolist())


def test_the_schema_validates_without_warnings():
    # written as JSON to /dev/null: the YAML writer's second and more add nothing to the check
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", "/dev/null")
