"""Flow-level engine (sim/fabric/netsim.py): analytic cases on small fabrics built from specs, conservation, latency,
event-driven completion, background traffic.

Units: bytes, seconds, bytes/s. A 400G NIC or cable carries 50e9 bytes/s each way.
"""
import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sim.fabric.roofline
from sim.fabric.catalog import load_catalog, parse_catalog
from sim.fabric.collectives import CollectiveError
from sim.fabric.layout import STATUS_FAILED, expand
from sim.core.maxmin import csr_from_lists, link_loads
from sim.fabric.nccl_tuning import base_latency, sim_hop
from sim.core.flowcore import simulate_flows
from sim.fabric.flows import link_capacity
from sim.fabric.latency import LatencyModel
from sim.fabric.achievable import Efficiencies
from sim.fabric.netsim import run_collective as _run_collective
from sim.fabric.roofline import roofline_busbw
from sim.fabric.placement import place
from sim.fabric.paths import NoPathError
from sim.fabric.spec import parse_spec
from sim.fabric.topology import topology_from_layout


def run_collective(*args, **kw):
    """The engine at line rates: these tests check the flow core's own physics against line-rate arithmetic
    (achievable rates and the host floor: tests/sim/test_algorithms.py)."""
    kw.setdefault("efficiencies", Efficiencies.line_rate())
    return _run_collective(*args, **kw)


LINK = 50e9          # bytes/s of a 400G link, one direction
GIB = 1 << 30


def spec_data(name="t", zones=1, racks=2, hosts_per_rack=1, hosts_per_leaf=1, leaf_uplinks=1, spines=1,
              spine=None, cores=None, kind="roce", leaf_model="minipack2"):
    """A cluster spec as a dict. ``spine``: extra [backend.spine] fields (uplinks / oversubscription);
    ``cores``: per_plane of a core tier (None: no core tier)."""
    backend = {
        "kind": kind, "nic": "cx7-400g", "speed_gbps": 400,
        "leaf": {"name": "rtsw", "model": leaf_model, "hosts_per_switch": hosts_per_leaf, "uplinks": leaf_uplinks,
                 "cable": "dac-400g"},
        "spine": {"name": "ctsw", "model": "arista-7800r3", "per_zone": spines, "cable": "aoc-400g", **(spine or {})},
    }
    if cores:
        backend["core"] = {"name": "atsw", "model": "arista-7800r3", "per_plane": cores, "cable": "smf-400g-fr4"}
    frontend = {"nic": "ocp3-400g", "speed_gbps": 400,
                "leaf": {"name": "frtsw", "model": "wedge400", "hosts_per_switch": 1, "uplinks": 1,
                         "cable": "dac-400g"},
                "spine": {"name": "fcsw", "model": "arista-7800r3", "per_zone": 1, "cable": "aoc-400g"}}
    if zones > 1:
        frontend["spine"]["uplinks"] = 1
        frontend["core"] = {"name": "fatsw", "model": "arista-7800r3", "per_plane": 1, "cable": "smf-400g-fr4"}
    return {"name": name, "layout": {"zones": zones, "racks_per_zone": racks, "hosts_per_rack": hosts_per_rack,
                                     "host_platform": "grand-teton", "gpu": "h100-sxm-80gb"},
            "backend": backend, "frontend": frontend}


def topo_of(data, catalog=None):
    return topology_from_layout(expand(parse_spec(data, catalog)))


def host_gpus(hosts):
    """Ranks host by host: the 8 GPUs of each host in the given order."""
    return (np.asarray(hosts)[:, None] * 8 + np.arange(8)).ravel()


def network_rates(result, phase=0):
    ph = result.phases[phase]
    return ph.rates[ph.flows.network]


def test_doctests():
    assert doctest.testmod(sim.fabric.roofline).failed == 0


# ------------------------------------------------------------------------------------------------ analytic cases
@pytest.mark.parametrize("qps", [1, 2, 16])
def test_one_shared_link_is_split_evenly_between_its_flows(qps):
    # Given two hosts in two racks whose leaves have a single uplink: the ring's 16 channels (NCCL's default on
    # 8-NIC hosts) x qps QPs each way cross that one cable.
    topo = topo_of(spec_data(racks=2, leaf_uplinks=1))
    r = run_collective(topo, host_gpus([0, 1]), "allgather", [GIB], routing="eecmp", qps=qps)
    rates = network_rates(r)
    assert r.plan.channels == 16 and rates.size == 2 * 16 * qps
    assert rates == pytest.approx(np.full(rates.size, LINK / (16 * qps)), rel=1e-9)
    assert r.limit_norm == pytest.approx(1 / 8, rel=1e-9)          # the roofline is 8 rails of LINK


@pytest.mark.parametrize("routing", ["pinned", "dmodk"])
def test_ring_forced_across_a_1_to_7_layer_gets_one_seventh(routing):
    # Given 2 zones of 7 one-host racks, 8 spines per zone with 7 leaf links down and 1 core link up (1:7),
    # and a ring whose ranks alternate between the zones: every ring hop crosses the oversubscribed layer.
    topo = topo_of(spec_data(zones=2, racks=7, leaf_uplinks=8, spines=8, spine={"oversubscription": 7}, cores=1))
    alternate = np.ravel(np.column_stack([np.arange(7), 7 + np.arange(7)]))
    r = run_collective(topo, host_gpus(alternate), "allgather", [GIB], routing=routing)
    # Then per plane 7 x 2 flows (two channels per host of the zone) share each spine's single uplink: 1/7 of the
    # roofline.
    assert r.plan.channels == 16
    assert network_rates(r) == pytest.approx(LINK / 14, rel=1e-9)
    assert r.limit_norm == pytest.approx(1 / 7, rel=1e-9)
    hot = r.hottest[0]
    assert hot.name.startswith("ctsw") and "atsw" in hot.name and hot.n_flows == 14
    # And the same ranks packed zone by zone cross the layer only twice per channel: full speed.
    packed = run_collective(topo, host_gpus(np.arange(14)), "allgather", [GIB], routing=routing)
    assert packed.limit_norm == pytest.approx(1.0, rel=1e-9)


def test_ecmp_cannot_beat_the_oversubscribed_layer():
    topo = topo_of(spec_data(zones=2, racks=7, leaf_uplinks=8, spines=8, spine={"oversubscription": 7}, cores=1))
    alternate = np.ravel(np.column_stack([np.arange(7), 7 + np.arange(7)]))
    for seed in range(3):
        r = run_collective(topo, host_gpus(alternate), "allgather", [GIB], routing="ecmp", seed=seed)
        assert r.limit_norm <= 1 / 7 + 1e-9


@pytest.mark.parametrize("kind, routing", [("roce", "pinned"), ("roce", "dmodk"), ("infiniband", "dmodk")])
@pytest.mark.parametrize("collective", ["allgather", "reducescatter", "allreduce", "broadcast"])
def test_non_blocking_fabric_with_packed_placement_reaches_the_roofline(kind, routing, collective):
    # Given a non-blocking two-tier fabric (16 NICs and 16 uplinks per leaf, 4 cables to each of 4 spines)
    topo = topo_of(spec_data(racks=4, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=16, spines=4, kind=kind))
    r = run_collective(topo, place(topo, 64, "topology"), collective, [GIB, 16 * GIB], routing=routing)
    assert r.limit_norm == pytest.approx(1.0, rel=1e-9)
    assert r.rows[-1].norm > 0.95                                   # large messages: latency amortized
    assert r.rows[0].norm < r.rows[-1].norm


@pytest.mark.parametrize("collective, algorithm", [("allreduce", "tree"), ("alltoall", "ring"),
                                                   ("allgather", "ring")])
def test_hosts_under_one_switch_reach_the_roofline(collective, algorithm):
    topo = topo_of(spec_data(racks=1, hosts_per_rack=4, hosts_per_leaf=4, leaf_uplinks=1))
    r = run_collective(topo, place(topo, 32, "topology"), collective, [GIB], algorithm=algorithm)
    assert r.limit_norm == pytest.approx(1.0, rel=1e-9)


def test_roofline_is_eight_rails_for_rings_one_nic_for_alltoall_nvlink_inside_a_host():
    assert roofline_busbw("allgather", 4096, 8, LINK, 900e9) == pytest.approx(8 * LINK)
    assert roofline_busbw("allreduce", 4096, 8, LINK, 900e9, "tree") == pytest.approx(8 * LINK, rel=1e-3)
    # AllToAll over 32 hosts: each GPU sends (N - 8) / N of S through its own NIC; busbw counts (N - 1) / N.
    assert roofline_busbw("alltoall", 256, 8, LINK, 900e9) == pytest.approx(LINK * 255 / 248)
    assert roofline_busbw("allgather", 8, 8, LINK, 900e9) == pytest.approx(450e9)


@pytest.mark.parametrize("collective,algorithm,placement", [
    ("allgather", "ring", "topology"), ("allreduce", "tree", "topology"), ("alltoall", "ring", "topology"),
    ("broadcast", "ring", "topology"), ("allgather", "ring", "random"), ("allreduce", "ring", "fragmented")])
def test_a_run_reuses_its_plan_for_the_roofline_only_when_it_is_the_packed_one(collective, algorithm, placement):
    # The run's roofline must be the one planned afresh on packed hosts, whether its plan was reused or not.
    topo = topo_of(spec_data(racks=4, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=2, spines=2))
    gpus = place(topo, 48, placement, seed=3)
    r = run_collective(topo, gpus, collective, [GIB], algorithm=algorithm)
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    assert sim.fabric.roofline.packed_in_order(np.asarray(gpus), topo.gpu_host, gph) == (placement == "topology")
    assert r.roofline == roofline_busbw(r.plan.collective, r.plan.n_ranks, gph, topo.nic_bandwidth,
                                        topo.nvlink_bandwidth, r.plan.algorithm, r.plan.channels)


def test_a_single_host_runs_over_nvlink_at_nvlink_speed():
    topo = topo_of(spec_data(racks=2))
    r = run_collective(topo, np.arange(8), "allreduce", [GIB])
    assert not r.phases[0].flows.network.any()
    assert r.limit_busbw == pytest.approx(450e9) and r.limit_norm == pytest.approx(1.0)
    assert r.link_utilization().max() == 0                          # no fabric link used


# ------------------------------------------------------------------------------------------------ conservation
@pytest.mark.parametrize("collective, algorithm", [("allgather", "ring"), ("allreduce", "tree"),
                                                   ("broadcast", "ring"), ("alltoall", "ring")])
def test_no_link_over_capacity_and_qps_conserve_bytes(collective, algorithm):
    topo = topo_of(spec_data(zones=2, racks=4, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=4, spines=2,
                             spine={"uplinks": 4}, cores=2))
    gpus = place(topo, 64, "random", seed=3)
    r = run_collective(topo, gpus, collective, [GIB], algorithm=algorithm, routing="eecmp", qps=4, seed=1)
    cap = link_capacity(topo, Efficiencies.line_rate())
    for ph in r.phases:
        fl = ph.flows
        assert (link_loads(fl.ptr, fl.links, ph.rates, cap.size) <= cap * (1 + 1e-9)).all()
        # the QPs of a transfer carry exactly its bytes
        per_transfer = np.bincount(fl.transfer, weights=fl.share, minlength=len(ph.phase.share))
        assert per_transfer == pytest.approx(ph.phase.share, rel=1e-12)
        assert set(np.unique(fl.qp[fl.network])) <= set(range(4))
    util = r.link_utilization()
    assert util.shape == (topo.n_links,) and util.max() <= 1 + 1e-9


def test_time_is_latency_plus_bytes_over_the_bottleneck_rate():
    # Given 2 hosts in 2 racks on one non-blocking leaf-spine: a 16-rank ring AllGather with NCCL's Simple protocol.
    topo = topo_of(spec_data(racks=2, leaf_uplinks=8, spines=8))
    r = run_collective(topo, host_gpus([0, 1]), "allgather", [0, GIB], routing="pinned", protocol="Simple")
    # Latency: a chunk crosses N - 1 = 15 hops, 2 of them between hosts, each one way over 3 switches (leaf, spine,
    # leaf): host part (22 us / 2 - 5 switches x 1 us) + 3 x 1 us, plus Simple's network cost over LL's; 13 NVLink
    # hops at Simple's NVLink latency in a multi-node ring; NCCL's Simple base latency once.
    extra, nvl = sim_hop("ring", "Simple", 16, 2)
    one_way = (22e-6 / 2 - 5e-6) + 3e-6
    assert r.latency == pytest.approx(base_latency("ring", "Simple") + 2 * (one_way + extra) + 13 * nvl)
    assert r.rows[0].time == pytest.approx(r.latency)
    # Bandwidth: 15 steps, each moving S / (16 x 8) per NIC at 50e9 bytes/s.
    assert r.rows[1].time == pytest.approx(r.latency + 15 * GIB / (16 * 8) / LINK)
    assert r.rows[1].busbw == pytest.approx(r.rows[1].algbw * 15 / 16)
    slow = LatencyModel(base_rtt=100e-6)
    r2 = run_collective(topo, host_gpus([0, 1]), "allgather", [GIB], routing="pinned", latency=slow,
                        protocol="Simple")
    assert r2.latency - r.latency == pytest.approx(2 * (100e-6 - 22e-6) / 2)


def test_background_jobs_share_the_links_but_only_the_job_is_timed():
    # Given 2 racks of 2 hosts with a single uplink each; the job uses one host per rack
    topo = topo_of(spec_data(racks=2, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=1))
    alone = run_collective(topo, host_gpus([0, 2]), "allgather", [GIB])
    busy = run_collective(topo, host_gpus([0, 2]), "allgather", [GIB], background=[host_gpus([1, 3])])
    assert alone.limit_norm == pytest.approx(1 / 8)
    assert busy.limit_norm == pytest.approx(1 / 16)                  # 16 flows now share each direction
    assert busy.n_flows == alone.n_flows
    with pytest.raises(CollectiveError, match="must not share GPUs"):
        run_collective(topo, host_gpus([0, 2]), "allgather", [GIB], background=[host_gpus([2, 3])])


def test_a_failed_cable_is_routed_around_and_a_cut_off_host_raises_no_path():
    data = spec_data(racks=2, leaf_uplinks=2, spines=2)
    layout = expand(parse_spec(data))
    leaf_spine = np.flatnonzero(layout.link_tier == 1)[:1]        # one uplink of the first leaf
    layout.link_status[leaf_spine] = STATUS_FAILED
    topo = topology_from_layout(layout)
    r = run_collective(topo, host_gpus([0, 1]), "allgather", [GIB], routing="ecmp")
    assert r.limit_norm == pytest.approx(1 / 8)                     # all 8 channels on the remaining uplink
    layout.link_status[np.flatnonzero(layout.link_tier == 1)[:2]] = STATUS_FAILED
    with pytest.raises(NoPathError):
        run_collective(topology_from_layout(layout), host_gpus([0, 1]), "allgather", [GIB])


def test_refusals_are_clear():
    topo = topo_of(spec_data(racks=2))
    with pytest.raises(CollectiveError, match="at least 2 GPUs"):
        run_collective(topo, [3], "allgather", [GIB])
    with pytest.raises(CollectiveError, match="unknown collective"):
        run_collective(topo, host_gpus([0, 1]), "gossip", [GIB])
    with pytest.raises(CollectiveError, match="GPU ids must lie in 0..15"):
        run_collective(topo, [0, 99], "allgather", [GIB])


# ------------------------------------------------------------------------------------------------ event-driven
def test_two_flows_of_different_sizes_small_one_ends_then_big_one_speeds_up():
    # Given one link of capacity C and flows of a and b > a bytes
    C, a, b = 50e9, 1e9, 4e9
    r = simulate_flows([0, 1, 2], [0, 0], [C], [a, b])
    assert r.first_rate.tolist() == [C / 2, C / 2]
    assert r.finish[0] == pytest.approx(2 * a / C)                  # both at C/2 until the small one is done
    assert r.finish[1] == pytest.approx(2 * a / C + (b - a) / C)    # then the big one alone at C
    assert r.delivered == pytest.approx([a, b])
    assert r.events == 2


def test_a_late_flow_slows_an_early_one_from_its_release_on():
    C = 10.0
    r = simulate_flows([0, 1, 2], [0, 0], [C], [30.0, 10.0], start=[0.0, 1.0])
    # flow 0 alone for 1 s (10 bytes), then both at 5/s: flow 1 ends at 1 + 2 = 3, flow 0 has 10 left at 3 s
    assert r.finish.tolist() == pytest.approx([4.0, 3.0])


def test_uneven_alltoall_is_event_driven():
    # Given 2 hosts on one switch and an AllToAll where GPU 0 sends 8x more to GPU 8 than to anyone else
    topo = topo_of(spec_data(racks=1, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=1))
    w = np.ones((16, 16))
    w[0, 8] = 8.0
    even = run_collective(topo, np.arange(16), "alltoall", [GIB])
    uneven = run_collective(topo, np.arange(16), "alltoall", [GIB], weights=w)
    assert uneven.time(GIB) > even.time(GIB)
    ph = uneven.phases[0]
    big = np.flatnonzero((ph.flows.src == 0) & (ph.flows.dst == 8))
    assert ph.finish_unit[big].max() == pytest.approx(ph.finish_unit.max())   # the big transfer ends last
    # GPU 0's NIC carries 8 equal transfers + one 8x: 15/16 S... its last byte leaves at 15 x S/16 / LINK
    assert ph.unit_time == pytest.approx(15 / 16 / LINK, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_event_driven_flows_deliver_their_bytes_and_respect_link_capacity(data):
    n_links = data.draw(st.integers(1, 5))
    n_flows = data.draw(st.integers(1, 8))
    paths = [data.draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=3, unique=True))
             for _ in range(n_flows)]
    cap = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=n_links, max_size=n_links)))
    size = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 3.0, 7.0]), min_size=n_flows,
                                       max_size=n_flows)))
    ptr, links = csr_from_lists(paths)
    r = simulate_flows(ptr, links, cap, size)
    assert r.delivered == pytest.approx(size)                               # every byte delivered
    load = np.bincount(links, weights=np.repeat(size, np.diff(ptr)), minlength=n_links)
    assert r.makespan >= (load / cap).max() * (1 - 1e-9)                    # no link faster than its capacity
    slowest_link = np.array([cap[p].min() for p in paths])
    assert (r.finish >= size / slowest_link * (1 - 1e-9)).all()             # no flow faster than its path
    assert (r.first_rate <= slowest_link * (1 + 1e-9)).all()


def test_one_switch_of_4096_gpus_via_a_custom_catalog():
    # The budget's comparison case, small: a custom switch model big enough for every NIC under one leaf.
    cat_data = {k: {s: {"vendor": m.vendor, "name": m.name, **m.specs} for s, m in v.items()}
                for k, v in load_catalog().models.items()}
    cat_data["switch"]["big"] = {"vendor": "test", "name": "big", "ports": 4200, "speed_gbps": 400}
    catalog = parse_catalog(cat_data)
    topo = topo_of(spec_data(racks=1, hosts_per_rack=64, hosts_per_leaf=64, leaf_uplinks=1, leaf_model="big"),
                   catalog)
    r = run_collective(topo, np.arange(512), "allreduce", [64 << 20])
    assert r.limit_norm == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_merged_events_still_deliver_every_byte_within_capacity(data):
    n_links = data.draw(st.integers(1, 4))
    n_flows = data.draw(st.integers(2, 10))
    paths = [data.draw(st.lists(st.integers(0, n_links - 1), min_size=1, max_size=3, unique=True))
             for _ in range(n_flows)]
    size = np.array(data.draw(st.lists(st.floats(0.1, 10.0), min_size=n_flows, max_size=n_flows)))
    ptr, links = csr_from_lists(paths)
    cap = np.full(n_links, 2.0)
    merged = simulate_flows(ptr, links, cap, size, merge=0.5)
    assert merged.delivered == pytest.approx(size)
    load = np.bincount(links, weights=np.repeat(size, np.diff(ptr)), minlength=n_links)
    assert merged.makespan >= (load / cap).max() * (1 - 1e-9)
    assert (merged.finish >= size / 2.0 * (1 - 1e-9)).all()


def test_merged_alltoall_matches_the_exact_event_simulation():
    # Given a 64-rank AllToAll over an oversubscribed fabric with 5-tuple ECMP (about 90 distinct finish times)
    from sim.fabric.topology import load_topology
    from sim.fabric.collectives import plan_collective
    from sim.fabric.flows import build_flows
    _, topo = load_topology("demo-256")
    plan = plan_collective("alltoall", place(topo, 64, "random", seed=1), topo.gpu_host)
    fl = build_flows(topo, plan.phases[0], 1, "ecmp", 0)
    cap = link_capacity(topo, Efficiencies.line_rate())
    exact = simulate_flows(fl.ptr, fl.links, cap, fl.share)
    merged = simulate_flows(fl.ptr, fl.links, cap, fl.share, merge=0.01 * exact.makespan)
    assert merged.events < exact.events / 4
    assert merged.makespan == pytest.approx(exact.makespan, rel=0.01)


def test_a_phase_solved_by_classes_of_identical_flows_has_the_rates_of_every_flow_solved_alone():
    """demo-256, 16 QPs per GPU pair over E-ECMP: many QPs share a path and the NVLink transfers of all channels
    share their two links; the merged solve must give each flow the rate the plain solve gives it."""
    from sim.core.maxmin import identical_flows, max_min_rates
    from sim.fabric.flows import build_flows
    from sim.fabric.netsim import merged_rates
    from sim.fabric.spec import load_spec
    from sim.fabric.collectives import plan_collective
    topo = topology_from_layout(expand(load_spec("demo-256")))
    gpus = place(topo, 256, "random", seed=3)
    phase = plan_collective("allgather", gpus, topo.gpu_host, "ring").phases[0]
    flows = build_flows(topo, phase, qps=8, routing="eecmp")
    rep, _ = identical_flows(flows.ptr, flows.links)
    assert rep.size < flows.n_flows                          # some flows do share a path
    capacity = link_capacity(topo, Efficiencies.line_rate())
    plain = max_min_rates(flows.ptr, flows.links, capacity)
    assert np.allclose(merged_rates(flows, capacity, None), plain, rtol=1e-12, atol=0)


def test_a_flow_set_derives_its_listing_and_groups_its_flows_as_the_plain_csr_does():
    """The FlowSet keeps per flow only links, bytes and transfer: the GPUs, channel, QP and header it derives must
    be those of its transfer and connection, a few flows' values the same as the whole arrays', and its classes
    of identical flows (router's table for the network flows, exact GPU pairs for NVLink) the same partition as
    identical_flows over its CSR."""
    from sim.fabric.collectives import plan_collective
    from sim.core.maxmin import identical_flows
    from sim.fabric.nccl import connection_flows
    from sim.fabric.flows import build_flows
    from sim.fabric.spec import load_spec
    topo = topology_from_layout(expand(load_spec("demo-256")))
    phase = plan_collective("allgather", place(topo, 200, "random", seed=5), topo.gpu_host, "ring").phases[0]
    flows = build_flows(topo, phase, qps=4, routing="eecmp", seed=2)
    net = flows.network
    n = int(net.sum())
    assert net[:n].all() and not net[n:].any()                    # network flows first, then NVLink
    assert np.array_equal(flows.src, phase.src[flows.transfer]) and np.array_equal(flows.dst, phase.dst[flows.transfer])
    assert np.array_equal(flows.channel, phase.channel[flows.transfer])
    assert (flows.qp[:n] == np.arange(n) % 4).all() and (flows.qp[n:] == 0).all()
    inter = np.flatnonzero(topo.gpu_host[phase.src] != topo.gpu_host[phase.dst])
    conn = connection_flows(topo.gpu_nic[phase.src[inter]], topo.gpu_nic[phase.dst[inter]], phase.channel[inter], 4,
                            seed=2)
    for name in ("sqpn", "dqpn", "sport"):
        assert np.array_equal(getattr(flows, name)[:n], getattr(conn, name)) and (getattr(flows, name)[n:] == -1).all()
    fresh = build_flows(topo, phase, qps=4, routing="eecmp", seed=2)        # nothing derived yet
    some = np.r_[0, 5, n - 1, n, flows.n_flows - 1]
    for name in ("src", "dst", "qp", "channel", "sqpn", "dqpn", "sport"):
        assert np.array_equal(fresh.values(name, some), getattr(flows, name)[some]), name
    rep, cls = fresh.classes()
    rep0, cls0 = identical_flows(flows.ptr, flows.links)
    assert np.array_equal(rep, rep0) and np.array_equal(cls, cls0)


def test_the_hottest_links_are_the_first_k_of_the_full_sort():
    """top_links sorts only the links that can be in the top k; its answer must be the full sort's first k:
    utilization (rounded) descending, then flows descending, then link id, with many ties."""
    import sim.core.flowset
    from sim.fabric.results import top_links
    assert doctest.testmod(sim.core.flowset).failed == 0
    rng = np.random.default_rng(1)
    for _ in range(2000):
        n, k = int(rng.integers(1, 60)), int(rng.integers(1, 15))
        util, n_on = np.round(rng.integers(0, 4, n) / 3, 9), rng.integers(0, 3, n)
        assert np.array_equal(top_links(util, n_on, k), np.lexsort((-n_on, -util))[:k])


def test_keyed_classes_are_the_classes_of_equal_pair_and_code():
    """keyed_classes: flows of equal (pair of their connection, code) are one class, numbered by the lowest flow,
    whether its dense table or its sort finds them (few pairs and codes, or many), codes below and above ``dense``."""
    from sim.core.flowset import keyed_classes
    rng = np.random.default_rng(7)
    for _ in range(300):
        repeat, conns = int(rng.integers(1, 5)), int(rng.integers(1, 40))
        n_pairs, dense = int(rng.integers(1, 8)) * int(rng.choice([1, 50])), int(rng.integers(1, 6))
        total = dense + int(rng.integers(0, 5))
        pair = rng.integers(0, n_pairs, conns)
        code = rng.integers(0, total, conns * repeat)
        rep, cls = keyed_classes(pair, repeat, code, n_pairs, dense, total)
        key = [(int(pair[f // repeat]), int(code[f])) for f in range(code.size)]
        first = {}
        for f, k in enumerate(key):
            first.setdefault(k, f)
        lowest = [first[k] for k in key]
        want_rep = sorted(set(lowest))
        assert rep.tolist() == want_rep
        assert cls.tolist() == [want_rep.index(x) for x in lowest]
