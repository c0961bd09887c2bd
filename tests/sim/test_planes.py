"""Planes and multi-port NICs (``planes``, ``ports_per_nic`` / ``dual_tor`` on the backend; the alibaba-hpn and
multiplane-4 presets): the spec and its refusals, every port of a NIC in its own plane, routing in one plane per
flow with every routing mode, a failed ToR moving a NIC's traffic to its other port, a ToR-pair job off the spines,
and a dual-plane fabric's bisection the sum of its planes'."""
import copy
import tomllib

import numpy as np
import pytest

from sim.fabric.achievable import Efficiencies
from sim.core.errors import SpecError
from sim.core.maxmin import max_min_rates
from sim.failures.prepare import NET_SWITCH, prepare
from sim.failures.timeline import simulate
from sim.fabric.layout import (FABRIC_BACKEND, LINK_LEAF_SPINE, LINK_NIC_LEAF, STATUS_FAILED, TIER_LEAF,
                               backend_leaf_ports, expand)
from sim.fabric.netsim import run_collective
from sim.fabric.paths import NoPathError
from sim.fabric.placement import place
from sim.fabric.routing import ROUTINGS, route
from sim.fabric.spec import PRESETS_DIR, load_spec, parse_spec
from sim.fabric.topology import topology_from_layout

HPN, MP4 = "alibaba-hpn", "multiplane-4"


def preset_dict(name):
    with open(PRESETS_DIR / f"{name}.toml", "rb") as f:
        return tomllib.load(f)


def small_hpn():
    """Two HPN segments of 128 hosts (a pod cut to 2 of its 15 segments)."""
    data = preset_dict(HPN)
    data["layout"]["racks_per_zone"] = 64
    return data


def small_mp4():
    data = preset_dict(MP4)
    data["layout"]["racks_per_zone"] = 64            # 256 hosts: two rail groups of 128 per plane
    return data


def build(data, fail=None):
    lay = expand(parse_spec(data))
    if fail is not None:
        fail(lay)
    return topology_from_layout(lay)


@pytest.fixture(scope="module")
def hpn():
    return build(small_hpn())


@pytest.fixture(scope="module")
def mp4():
    return build(small_mp4())


def gpu(host, slot):
    return host * 8 + slot


def refused(data) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return info.value


def check_paths(topo, src, dst, ptr, links):
    """Every path runs from its source NIC to its destination NIC, link to link, within one plane."""
    n_sw = topo.n_switches
    first, last = links[ptr[:-1]], links[ptr[1:] - 1]
    assert (topo.link_tail[first] == n_sw + src).all() and (topo.link_head[last] == n_sw + dst).all()
    for k in range(1, int(np.diff(ptr).max())):
        has = np.flatnonzero(np.diff(ptr) > k)
        assert (topo.link_head[links[ptr[has] + k - 1]] == topo.link_tail[links[ptr[has] + k]]).all()
    lay = topo.layout
    plane = _switch_plane(topo)
    heads = topo.link_head[links]
    sw_plane = np.where(heads < n_sw, plane[np.minimum(heads, n_sw - 1)], -1)
    flow = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    per_flow = np.full(ptr.size - 1, -1)
    np.maximum.at(per_flow, flow, sw_plane)
    assert (sw_plane[sw_plane >= 0] == per_flow[flow][sw_plane >= 0]).all(), "a flow crossed planes"
    assert lay is not None


def _switch_plane(topo):
    be = topo.layout.spec.backend
    L = topo.layout.spec.layout.hosts_per_zone // be.leaf.hosts_per_switch * be.rails
    per = np.where(topo.switch_tier == TIER_LEAF, L, be.spine.per_zone)
    return topo.switch_group // per


# ----------------------------------------------------------------------------------------------- spec and layout
def test_the_presets_parse_with_their_planes_and_ports():
    hpn, mp4 = load_spec(HPN), load_spec(MP4)
    assert (hpn.backend.planes, hpn.backend.ports_per_nic, hpn.backend.port_speed_gbps) == (2, 2, 200)
    assert (mp4.backend.planes, mp4.backend.ports_per_nic, mp4.backend.port_speed_gbps) == (4, 4, 100)
    counts = expand(hpn).counts()
    assert counts["gpus"] == 15 * 1024
    assert counts["links.nic-tor"] == 2 * counts["gpus"]            # two ports per NIC, each its own cable
    assert counts["switches.tor"] == 15 * 8 * 2                     # 8 rails x 2 planes per segment


def test_every_port_of_a_nic_is_in_its_own_plane_on_its_rail_leaf():
    spec = parse_spec(small_mp4())
    ports = backend_leaf_ports(spec)                                 # (plane, zone, leaf, downlink)
    Q, n = spec.backend.ports_per_nic, spec.backend.nics_per_host
    nic, q = ports // Q, ports % Q
    for p in range(spec.backend.planes):
        assert (q[p] == p).all()
        assert (nic[p] % n == np.arange(ports.shape[2])[None, :, None] % spec.backend.rails).all()
    assert np.unique(ports).size == ports.size == spec.layout.gpus * Q


def test_single_port_fabrics_keep_their_shape():
    spec = load_spec("meta-roce-24k")
    assert (spec.backend.planes, spec.backend.ports_per_nic) == (1, 1)
    topo = topology_from_layout(expand(spec))
    assert topo.port_views == () and topo.gpu_port_uplink.shape == (topo.n_gpus, 1)


@pytest.mark.parametrize("mutate, field, words", [
    (lambda d: d["backend"].update(planes=3), "backend.planes", "does not divide the 2 ports"),
    (lambda d: d["backend"].update(ports_per_nic=4), "backend.ports_per_nic", "must be 2 with dual_tor"),
    (lambda d: (d["backend"].pop("dual_tor"), d["backend"].update(ports_per_nic=4)), "backend.ports_per_nic",
     "more than the 2 ports of NIC model"),
    (lambda d: d["backend"].update(dual_tor="yes"), "backend.dual_tor", "true or false"),
    (lambda d: (d["backend"].update(planes=1), d["backend"]["leaf"].update(rails=1)), "backend.leaf.rails",
     "cannot be shared by the 2 ports"),
    (lambda d: (d["backend"].update(planes=1), d["backend"]["leaf"].pop("rails")), "backend.leaf.rails",
     "is required"),
    (lambda d: d["frontend"].update(planes=2), "frontend.planes", "backend fabric only"),
    (lambda d: d["backend"]["leaf"].update(uplinks=120), "backend.leaf.uplinks", "= 184 ports"),
])
def test_bad_plane_specs_are_refused_naming_the_field(mutate, field, words):
    data = small_hpn()
    mutate(data)
    err = refused(data)
    assert err.field == field and words in str(err), str(err)


def test_dual_tor_in_one_plane_puts_the_two_ports_on_two_leaves():
    data = small_hpn()
    data["backend"]["planes"] = 1
    data["backend"]["leaf"]["rails"] = 16                            # 8 rails x a ToR pair, one plane
    data["backend"]["spine"]["per_zone"] = 60
    topo = build(data)
    leaf = topo.gpu_port_leaf
    assert (leaf[:, 0] != leaf[:, 1]).all()
    src, dst = np.full(16, gpu(0, 0)), np.full(16, gpu(1, 0))
    for routing in ROUTINGS:
        ptr, links = route(topo, src, dst, qp=np.arange(16), routing=routing, seed=2)
        assert (np.diff(ptr) == 2).all(), routing               # rail-local: each port's own ToR, no spine
        check_paths(topo, src, dst, ptr, links)
    # a destination's first ToR failed: in one plane both source ports still reach its other port (over a spine)
    dst = np.full(16, gpu(200, 0))                                   # the other segment
    tor = int(topo.switch_layout_id[topo.gpu_port_leaf[gpu(200, 0), 0]])
    failed = build(data, lambda lay: _fail_switch(lay, tor))
    for routing in ROUTINGS:
        ptr, links = route(failed, src, dst, qp=np.arange(16), routing=routing, seed=2)
        assert (np.diff(ptr) == 4).all(), routing
        check_paths(failed, src, dst, ptr, links)
        first = links[ptr[:-1]]
        assert all((first == failed.gpu_port_uplink[gpu(0, 0), q]).sum() == 8 for q in (0, 1)), routing
        assert (links[ptr[1:] - 1] == failed.gpu_port_uplink[gpu(200, 0), 1] + failed.n_cables).all(), routing


# ----------------------------------------------------------------------------------------------- routing
def test_a_tor_pair_job_never_touches_a_spine(hpn):
    # GPU k of host 0 to GPU k of every other host of its segment: one ToR hop in either plane, every routing
    src = np.repeat([gpu(0, k) for k in range(8)], 127 * 4)
    dst = np.repeat([gpu(h, k) for k in range(8) for h in range(1, 128)], 4)
    qp = np.tile(np.arange(4), 8 * 127)
    for routing in ROUTINGS:
        ptr, links = route(hpn, src, dst, qp=qp, routing=routing, seed=5)
        assert (np.diff(ptr) == 2).all(), routing
        assert not (hpn.link_tier[links] == LINK_LEAF_SPINE).any()
        check_paths(hpn, src, dst, ptr, links)
        ports = np.flatnonzero(np.isin(hpn.gpu_port_uplink[gpu(0, 0)], links))
        assert ports.size == 2, routing                            # both ports of the NIC carry some QPs


@pytest.mark.parametrize("name", [HPN, MP4])
def test_every_routing_mode_stripes_a_connections_qps_over_the_ports(name, hpn, mp4):
    topo = hpn if name == HPN else mp4
    Q = topo.ports_per_nic
    # host 0 GPU 0 -> host 200 GPU 3: another rail group, cross-rail: up to a spine in each plane
    src, dst = np.full(16, gpu(0, 0)), np.full(16, gpu(200, 3))
    for routing in ROUTINGS:
        ptr, links = route(topo, src, dst, qp=np.arange(16), routing=routing, seed=1)
        assert (np.diff(ptr) == 4).all(), routing
        check_paths(topo, src, dst, ptr, links)
        first = links[ptr[:-1]]
        per_port = [(first == topo.gpu_port_uplink[gpu(0, 0), q]).sum() for q in range(Q)]
        assert per_port == [16 // Q] * Q, (routing, per_port)


def test_padded_and_repeated_routing_agree_with_per_flow(mp4):
    rng = np.random.default_rng(0)
    src = rng.integers(0, mp4.n_gpus, 300)
    dst = (src + rng.integers(8, mp4.n_gpus - 8, 300)) % mp4.n_gpus
    qp = np.tile(np.arange(4), 300)
    for routing in ("ecmp", "dmodk"):
        ptr, links = route(mp4, np.repeat(src, 4), np.repeat(dst, 4), qp=qp, routing=routing, seed=4)
        table = route(mp4, src, dst, qp=qp, routing=routing, seed=4, padded=True, repeat=4)
        used = table >= 0
        assert (used.sum(axis=1) == np.diff(ptr)).all() and (table[used] == links).all()


def _fail_switch(lay, switch):
    lay.switch_status[switch] = STATUS_FAILED


def test_a_failed_tor_moves_the_nics_traffic_to_its_other_port_at_half_the_bandwidth(hpn):
    # GPU 0 of host 0 to GPU 0 of host 1, 16 QPs: both ports, 400G; with host 0's plane-0 ToR failed, port 1 only
    src, dst = np.full(16, gpu(0, 0)), np.full(16, gpu(1, 0))
    tor = int(hpn.switch_layout_id[hpn.gpu_port_leaf[gpu(0, 0), 0]])
    failed = build(small_hpn(), lambda lay: _fail_switch(lay, tor))
    assert failed.gpu_usable[gpu(0, 0)] and not failed.gpu_port_alive[gpu(0, 0), 0]
    for routing in ROUTINGS:
        rates = {}
        for name, topo in (("healthy", hpn), ("failed", failed)):
            ptr, links = route(topo, src, dst, qp=np.arange(16), routing=routing, seed=0)
            check_paths(topo, src, dst, ptr, links)
            heads = topo.link_head[links]
            assert not (heads == hpn.gpu_port_leaf[gpu(0, 0), 0]).any() or name == "healthy"
            rates[name] = max_min_rates(ptr, links, topo.link_capacity).sum()
        nic = hpn.nic_bandwidth
        assert rates["healthy"] == pytest.approx(nic) and rates["failed"] == pytest.approx(nic / 2), routing


def test_no_live_port_pair_in_one_plane_is_refused(hpn):
    # host 0's plane-0 ToR and host 1's plane-1 ToR of rail 0 failed: their rail-0 NICs share no plane
    t0 = int(hpn.switch_layout_id[hpn.gpu_port_leaf[gpu(0, 0), 0]])
    t1 = int(hpn.switch_layout_id[hpn.gpu_port_leaf[gpu(1, 0), 1]])
    topo = build(small_hpn(), lambda lay: (_fail_switch(lay, t0), _fail_switch(lay, t1)))
    with pytest.raises(NoPathError, match="in one plane"):
        route(topo, [gpu(0, 0)], [gpu(1, 0)], routing="ecmp")


def test_a_dual_plane_fabrics_bisection_is_the_sum_of_its_planes(hpn):
    # every GPU of segment 0 sends to the GPU of its slot in segment 1 (16 QPs, TE): the segment's ToR uplinks
    # (8 ToRs x 60 x 400G per plane, below the NICs' 128 x 8 x 400G) bound it, in both planes together
    src = np.repeat(np.arange(128 * 8), 16)
    dst = src + 128 * 8
    qp = np.tile(np.arange(16), 128 * 8)
    ptr, links = route(hpn, src, dst, qp=qp, routing="te", seed=0)
    check_paths(hpn, src, dst, ptr, links)
    total = max_min_rates(ptr, links, hpn.link_capacity).sum()
    lay = hpn.layout
    plane = _switch_plane(hpn)
    up = (hpn.link_tier == LINK_LEAF_SPINE) & hpn.link_is_up
    tail = hpn.link_tail
    seg0 = up & (hpn.switch_zone[np.minimum(tail, hpn.n_switches - 1)] == 0) & (tail < hpn.n_switches)
    seg0 &= (hpn.switch_tier[np.minimum(tail, hpn.n_switches - 1)] == TIER_LEAF)
    leaf_rank = hpn.switch_group[np.minimum(tail, hpn.n_switches - 1)] % (2 * 8)
    seg0 &= leaf_rank < 8                                      # the first segment's 8 ToRs of each plane
    per_plane = [hpn.link_capacity[seg0 & (plane[np.minimum(tail, hpn.n_switches - 1)] == p)].sum() for p in (0, 1)]
    assert per_plane[0] == per_plane[1] == 8 * 60 * 50e9
    assert total == pytest.approx(sum(per_plane), rel=1e-9)
    assert lay.link_fabric[hpn.link_cable[links]].max() == FABRIC_BACKEND


def test_flows_are_conserved_on_every_routing_mode(mp4):
    rng = np.random.default_rng(1)
    src = rng.integers(0, mp4.n_gpus, 2000)
    dst = (src + rng.integers(8, mp4.n_gpus - 8, 2000)) % mp4.n_gpus
    qp = rng.integers(0, 16, 2000)
    for routing in ROUTINGS:
        ptr, links = route(mp4, src, dst, qp=qp, routing=routing, seed=7)
        check_paths(mp4, src, dst, ptr, links)
        assert (mp4.link_tier[links[ptr[:-1]]] == LINK_NIC_LEAF).all()


def test_the_collective_runs_on_both_presets_with_every_routing():
    for data in (small_hpn(), small_mp4()):
        topo = build(copy.deepcopy(data))
        gpus = place(topo, 256, "topology", seed=0)
        for routing in ROUTINGS:
            res = run_collective(topo, gpus, "allgather", [1 << 30], routing=routing, qps=16,
                                 efficiencies=Efficiencies.line_rate())
            assert res.to_dict()["limit_norm_busbw"] == pytest.approx(1.0), routing   # one segment / rail group


def test_a_failed_tor_of_a_dual_tor_job_degrades_it_instead_of_crashing_it(hpn):
    # a job on HPN hosts: its NICs' cables and ToRs are re-routed items (the other port), not single points of failure
    values = {"model": "llama3-8b", "gpus": 128, "pp": 1, "store": "off", "checkpoint_background_speed": 1.0,
              "rates": "planned=0", "rate_scale": 0.0, "days": 0.25, "repair_h": "network=2", "qps": 16,
              "fabric_states": "exact"}
    ctx = prepare(hpn, values)
    assert not ctx.net_crash.any()
    tors = set(hpn.switch_layout_id[np.unique(hpn.gpu_port_leaf[ctx.gpus])].tolist())
    tor_items = [int(i) for i in ctx.net_id[ctx.net_kind == NET_SWITCH] if int(i) in tors]
    assert len(tor_items) == len(tors) and len(tors) % 2 == 0      # both ToRs of each pair the job uses
    name = ctx.names()["switch"][tor_items[0]]
    r = simulate(hpn, {**values, "inject": f"switch:{name}@1h"})
    assert [e["consequence"] for e in r["events"]] == ["degrade"] and r["interruptions"] == 0
    assert max(e["slowdown"] for e in r["events"]) > 1.0            # its NICs on one port: half their bandwidth


def test_planes_over_three_tiers_route_through_their_own_cores():
    # two DGX SuperPOD SUs (rails, spines, cores), every NIC split into 2 x 200G over two planes: a flow to the other
    # SU climbs to a core of its own plane, in every routing mode, and each plane's cores serve only that plane
    data = preset_dict("dgx-h100-superpod")
    data["layout"]["zones"] = 2
    data["backend"].update(nic="cx7-2x200g", planes=2, ports_per_nic=2)
    topo = build(data)
    assert len(topo.port_views) == 2
    cores = [set(v.cores.tolist()) for v in topo.port_views]
    assert cores[0] and not cores[0] & cores[1]
    src = np.repeat([gpu(0, k) for k in range(8)], 16)
    dst = np.repeat([gpu(40, (k + 3) % 8) for k in range(8)], 16)       # another SU, another rail
    qp = np.tile(np.arange(16), 8)
    plane = _switch_plane(topo)
    for routing in ROUTINGS:
        ptr, links = route(topo, src, dst, qp=qp, routing=routing, seed=3)
        assert (np.diff(ptr) == 6).all(), routing
        check_paths(topo, src, dst, ptr, links)
        core = topo.link_head[links[ptr[:-1] + 2]]
        leaf = topo.link_head[links[ptr[:-1]]]
        assert (plane[core] == plane[leaf]).all() and set(plane[core].tolist()) == {0, 1}, routing
