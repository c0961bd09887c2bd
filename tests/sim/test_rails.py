"""Rail-optimized fabrics (``rails`` on the backend leaf tier; the dgx-h100-superpod preset): the spec and its
refusals, NIC k of every host of a rail group on leaf k, rail-local traffic on one leaf, cross-rail traffic over a
spine, D-mod-k's even load, failures routed around, and NCCL's rings kept on their rails (PXN)."""
import copy
import tomllib

import numpy as np
import pytest

from sim.core.errors import SpecError
from sim.fabric.collectives import plan_collective
from sim.fabric.flows import build_flows
from sim.fabric.layout import (FABRIC_BACKEND, LINK_LEAF_SPINE, STATUS_FAILED, TIER_LEAF, TIER_SPINE,
                               backend_leaf_nics, expand)
from sim.fabric.achievable import Efficiencies
from sim.fabric.netsim import run_collective as _run_collective
from sim.fabric.paths import NoPathError
from sim.fabric.placement import place
from sim.fabric.routing import ROUTINGS, route
from sim.fabric.spec import PRESETS_DIR, load_spec, parse_spec
from sim.fabric.topology import topology_from_layout


def run_collective(*args, **kw):
    """The engine at line rates: these tests check the flow core's own physics against line-rate arithmetic
    (achievable rates and the host floor: tests/sim/test_algorithms.py)."""
    kw.setdefault("efficiencies", Efficiencies.line_rate())
    return _run_collective(*args, **kw)


PRESET = "dgx-h100-superpod"


def preset_dict():
    with open(PRESETS_DIR / f"{PRESET}.toml", "rb") as f:
        return tomllib.load(f)


def small_dict(zones=2):
    """The preset cut to ``zones`` scalable units (a core tier still joins them)."""
    data = preset_dict()
    data["layout"]["zones"] = zones
    return data


@pytest.fixture(scope="module")
def spec():
    return load_spec(PRESET)


@pytest.fixture(scope="module")
def topo():
    return topology_from_layout(expand(parse_spec(small_dict())))


def refused(mutate) -> SpecError:
    data = small_dict()
    mutate(data)
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return info.value


# ----------------------------------------------------------------------------------------------- spec and layout
def test_the_preset_is_rail_optimized_and_its_tiers_follow_from_the_spec(spec):
    be, lay = spec.backend, spec.layout
    assert be.rails == be.nics_per_host == lay.gpus_per_host
    assert be.leaf_downlinks == be.leaf.hosts_per_switch
    counts = expand(spec).counts()
    leaves = lay.zones * lay.hosts_per_zone // be.leaf.hosts_per_switch * be.rails
    assert counts["switches.leaf"] == leaves
    assert counts["switches.spine"] == lay.zones * be.spine.per_zone
    assert counts["switches.core"] == be.spine.per_zone * be.core.per_plane
    assert counts["links.nic-leaf"] == lay.gpus
    assert counts["links.leaf-spine"] == leaves * be.leaf.uplinks
    assert counts["links.spine-core"] == counts["switches.spine"] * be.spine.uplinks


def test_nic_k_of_every_host_of_a_rail_group_goes_to_leaf_k(spec):
    nics = backend_leaf_nics(spec)                 # (zone, leaf, downlink) -> NIC
    n = spec.backend.nics_per_host
    hosts, rails = nics // n, nics % n
    assert (rails == np.arange(spec.backend.rails)[None, :, None] % spec.backend.rails).all()
    # each leaf's downlinks are its group's hosts in order, one NIC each
    hps = spec.backend.leaf.hosts_per_switch
    assert (np.diff(hosts, axis=2) == 1).all() and (hosts[:, :, 0] % hps == 0).all()


def test_a_rails_spec_without_rails_is_the_old_shape():
    # rails = 1 (the default) cables every NIC of a host to one leaf, host-major: the expansion of every preset
    spec = load_spec("demo-256")
    nics = backend_leaf_nics(spec)
    assert spec.backend.rails == 1
    assert (nics.ravel() == np.arange(spec.layout.gpus)).all()


def test_leaf_oversubscription_derives_the_uplinks():
    data = small_dict()
    leaf = data["backend"]["leaf"]
    del leaf["uplinks"]
    leaf["oversubscription"] = 2
    data["backend"]["spine"]["uplinks"] = 16
    spec = parse_spec(data)
    assert spec.backend.leaf.uplinks == spec.backend.leaf_downlinks // 2


@pytest.mark.parametrize("mutate, field, words", [
    (lambda d: d["backend"]["leaf"].update(rails=3), "backend.leaf.rails", "does not divide the 8 backend NICs"),
    (lambda d: d["backend"]["leaf"].update(rails=0), "backend.leaf.rails", "at least 1"),
    (lambda d: d["backend"]["leaf"].update(rails="8"), "backend.leaf.rails", "whole number"),
    (lambda d: d["frontend"]["leaf"].update(rails=2), "frontend.leaf.rails", "backend fabric only"),
    (lambda d: d["backend"]["leaf"].update(hosts_per_switch=48), "backend.leaf.hosts_per_switch", "does not divide"),
    (lambda d: d["backend"]["leaf"].update(uplinks=40), "backend.leaf.uplinks", "= 72 ports"),
    (lambda d: d["backend"]["leaf"].update(oversubscription=2), "backend.leaf.oversubscription", "together"),
    (lambda d: (d["backend"]["leaf"].pop("uplinks"), d["backend"]["leaf"].update(oversubscription=5)),
     "backend.leaf.oversubscription", "does not divide the 32 downlinks"),
    (lambda d: d["backend"]["leaf"].update(uplinks=28), "backend.leaf.uplinks", "spread evenly"),
])
def test_bad_rail_specs_are_refused_naming_the_field(mutate, field, words):
    err = refused(mutate)
    assert err.field == field and words in str(err)


# ----------------------------------------------------------------------------------------------- routing
def gpu(topo, host, slot):
    return host * 8 + slot


def test_rail_local_traffic_takes_one_leaf_hop(topo):
    # GPU k of host 0 to GPU k of every other host of its SU: NIC -> leaf k -> NIC, for every routing
    src = np.repeat([gpu(topo, 0, k) for k in range(8)], 31)
    dst = np.array([gpu(topo, h, k) for k in range(8) for h in range(1, 32)])
    for routing in ROUTINGS:
        ptr, links = route(topo, src, dst, routing=routing, seed=3)
        assert (np.diff(ptr) == 2).all(), routing
        leaf = topo.link_head[links[ptr[:-1]]]
        assert (leaf == topo.gpu_leaf[src]).all() and (topo.switch_tier[leaf] == TIER_LEAF).all()


def test_cross_rail_traffic_crosses_a_spine(topo):
    # GPU 0 of host 0 to GPU 1 of host 1 (same SU, different rails): up to a spine and down, 4 links
    src, dst = np.full(8, gpu(topo, 0, 0)), np.full(8, gpu(topo, 1, 1))
    for routing in ROUTINGS:
        ptr, links = route(topo, src, dst, qp=np.arange(8), routing=routing, seed=1)
        assert (np.diff(ptr) == 4).all(), routing
        turn = topo.link_head[links[ptr[:-1] + 1]]
        assert (topo.switch_tier[turn] == TIER_SPINE).all()
    # to another SU: over a core, 6 links
    ptr, _ = route(topo, [gpu(topo, 0, 0)], [gpu(topo, 40, 1)], routing="dmodk")
    assert int(np.diff(ptr)[0]) == 6


def leaf_uplink_load(topo, ptr, links):
    load = np.bincount(links, minlength=topo.n_links)
    up = topo.link_is_up & (topo.link_tier == LINK_LEAF_SPINE)
    return {int(leaf): load[up & (topo.link_tail == leaf)] for leaf in topo.leaves}


def test_dmodk_loads_every_uplink_of_a_rail_leaf_equally_under_an_all_to_all(topo):
    gpus = np.arange(topo.n_gpus)
    s, d = np.repeat(gpus, gpus.size), np.tile(gpus, gpus.size)
    keep = topo.gpu_host[s] != topo.gpu_host[d]
    ptr, links = route(topo, s[keep], d[keep], routing="dmodk")
    loads = leaf_uplink_load(topo, ptr, links)
    for leaf, load in loads.items():
        assert load.size == topo.leaf_up.shape[1] * topo.leaf_up.shape[2]
        assert load.min() == load.max() > 0, leaf


@pytest.mark.parametrize("routing", ROUTINGS)
def test_a_failed_leaf_spine_cable_is_routed_around(routing):
    layout = expand(parse_spec(small_dict()))
    cab = np.flatnonzero((layout.link_fabric == FABRIC_BACKEND) & (layout.link_tier == LINK_LEAF_SPINE))
    dead = cab[[0, 5, 37]]
    layout.link_status[dead] = STATUS_FAILED
    topo = topology_from_layout(layout)
    assert not np.isin(dead, topo.link_cable).any()
    # GPU 0 of every host of SU 0 to every GPU of both SUs: each flow still takes a shortest up/down path
    src = np.repeat(np.arange(32) * 8, topo.n_gpus)
    dst = np.tile(np.arange(topo.n_gpus), 32)
    keep = topo.gpu_host[src] != topo.gpu_host[dst]
    src, dst = src[keep], dst[keep]
    ptr, links = route(topo, src, dst, np.arange(src.size) % 8, routing, seed=2)
    zone = topo.switch_zone[topo.gpu_leaf]
    want = np.where(topo.gpu_leaf[src] == topo.gpu_leaf[dst], 2, np.where(zone[src] == zone[dst], 4, 6))
    assert (np.diff(ptr) == want).all()
    tails = topo.link_tail[links[ptr[:-1] + 1][want > 2]]
    assert (tails == topo.gpu_leaf[src][want > 2]).all()


def test_a_leaf_whose_uplinks_all_failed_cuts_its_rail_off():
    layout = expand(parse_spec(small_dict()))
    topo0 = topology_from_layout(layout)
    leaf = int(topo0.leaves[0])
    up = topo0.link_is_up & (topo0.link_tier == LINK_LEAF_SPINE) & (topo0.link_tail == leaf)
    layout.link_status[topo0.link_cable[up]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    with pytest.raises(NoPathError):
        route(topo, [gpu(topo, 0, 0)], [gpu(topo, 1, 1)], routing="dmodk")
    ptr, _ = route(topo, [gpu(topo, 0, 0)], [gpu(topo, 1, 0)], routing="dmodk")     # still on its own leaf
    assert int(np.diff(ptr)[0]) == 2


# ----------------------------------------------------------------------------------------------- NCCL over rails
def test_topology_placement_keeps_hosts_whole_and_fills_a_rail_group_first(topo):
    gpus = place(topo, 64, "topology")
    assert (np.bincount(topo.gpu_host[gpus]) % 8 == 0).all()
    assert np.unique(topo.gpu_leaf_group[gpus]).size == 1


def test_a_ring_stays_on_its_rails_through_pxn(topo):
    gpus = place(topo, 32, "topology")                        # 4 hosts of one SU
    plan = plan_collective("allgather", gpus, topo.gpu_host)
    flows = build_flows(topo, plan.phases[0], qps=2, routing="dmodk")
    n = flows.header.n_network
    fabric = flows.links[(flows.links < topo.n_links)]
    assert (topo.switch_tier[topo.link_head[fabric][topo.link_head[fabric] < topo.n_switches]] == TIER_LEAF).all()
    # the inter-host hop GPU c-1 -> next host's GPU c leaves through NIC c: an NVLink hop first, then 2 fabric links
    lengths = np.diff(flows.ptr[:n + 1])
    assert set(lengths.tolist()) == {4}
    first = flows.links[flows.ptr[:n]]
    assert (first >= topo.n_links).all()
    res = run_collective(topo, gpus, "allgather", [1 << 30], qps=2, routing="dmodk")
    assert res.limit_norm == pytest.approx(1.0)


@pytest.mark.parametrize("routing", ROUTINGS)
def test_every_routing_runs_a_fragmented_job_on_the_rails(topo, routing):
    gpus = place(topo, 128, "random", seed=4)
    res = run_collective(topo, gpus, "allgather", [1 << 30], qps=4, routing=routing, seed=4)
    assert 0 < res.limit_norm <= 1.0 + 1e-9


def test_without_the_rank_next_to_the_nic_the_hop_crosses_rails(topo):
    # one GPU per host: no GPU on the receiver's rail is in the job, so NCCL cannot use PXN and crosses a spine
    gpus = np.array([gpu(topo, h, h % 8) for h in range(8)])
    plan = plan_collective("allgather", gpus, topo.gpu_host)
    flows = build_flows(topo, plan.phases[0], qps=1, routing="dmodk")
    n = flows.header.n_network
    assert set(np.diff(flows.ptr[:n + 1]).tolist()) == {4}
    assert (flows.links[flows.ptr[:n]] < topo.n_links).all()       # no NVLink hop in front: the GPU's own NIC


def test_a_copy_of_the_dict_is_not_mutated():
    data = preset_dict()
    before = copy.deepcopy(data)
    parse_spec(data)
    assert data == before
