"""Per-hop latency and NCCL's protocols (sim/fabric/netsim.py latency, sim/fabric/nccl_tuning.py).

Hand-computed cases: each network hop of a ring costs its own path's one-way latency (host part + 1 us per switch
it enters), NVLink hops and protocol costs are NCCL's constants; the protocol NCCL picks follows NCCL's own formula,
whose crossovers the tests compute from the constants.
"""
import doctest
import math

import numpy as np
import pytest

import sim.fabric.nccl_tuning as nt
from sim.fabric.collectives import plan_collective, ring_next
from sim.fabric.nccl import ring_channels
from sim.fabric.latency import BASE_RTT, RTT_SWITCHES, LatencyModel, chain_sums
from sim.fabric.achievable import Efficiencies
from sim.fabric.netsim import run_collective as _run_collective
from sim.fabric.topology import DEFAULT_HOP_LATENCY
from tests.sim.test_netsim import host_gpus, spec_data, topo_of


def run_collective(*args, **kw):
    """The engine at line rates: these tests check the flow core's own physics against line-rate arithmetic
    (achievable rates and the host floor: tests/sim/test_algorithms.py)."""
    kw.setdefault("efficiencies", Efficiencies.line_rate())
    return _run_collective(*args, **kw)


GIB = 1 << 30
HOP = DEFAULT_HOP_LATENCY
HOST = BASE_RTT["roce"] / 2 - RTT_SWITCHES["roce"] * HOP       # one-way NIC/host part on RoCE


@pytest.fixture(scope="module")
def two_zones():
    # 2 zones x 2 racks x 2 hosts (one leaf per rack), a core tier: hops can stay on a leaf (1 switch), stay in the
    # zone (leaf, spine, leaf: 3) or cross zones (leaf, spine, core, spine, leaf: 5).
    return topo_of(spec_data(zones=2, racks=2, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=4, spines=2,
                             spine={"uplinks": 4}, cores=2))


def switches_between(topo, a: int, b: int) -> int:
    """Switches on the shortest valley-free path between GPUs a and b of different hosts."""
    la, lb = topo.gpu_leaf[a], topo.gpu_leaf[b]
    if la == lb:
        return 1
    return 3 if topo.switch_zone[la] == topo.switch_zone[lb] else 5


def test_the_mixed_ring_has_the_three_kinds_of_hop(two_zones):
    topo = two_zones
    hosts = [0, 1, 2, 4]                     # 0->1 same leaf, 1->2 same zone, 2->4 and 4->0 across zones
    gpus = host_gpus(hosts)
    kinds = [switches_between(topo, gpus[8 * i], gpus[8 * ((i + 1) % 4)]) for i in range(4)]
    assert kinds == [1, 3, 5, 5]


@pytest.mark.parametrize("proto", nt.PROTOCOLS)
def test_ring_allgather_latency_is_the_sum_of_each_hops_own_latency(two_zones, proto):
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    r = run_collective(topo, gpus, "allgather", [1 << 20], routing="pinned", protocol=proto)
    ph = r.phases[0]
    # Each transfer between hosts costs the host part + its own switches (never the phase's longest path).
    net = ph.hop_network
    k = np.array([switches_between(topo, s, d) for s, d in zip(ph.phase.src[net], ph.phase.dst[net])])
    assert ph.hop_latency[net] == pytest.approx(HOST + k * HOP)
    assert sorted(set(np.round((ph.hop_latency[net] - HOST) / HOP).astype(int))) == [1, 3, 5]
    # By hand: every channel's ring has 4 host hops (1, 3, 5, 5 switches) and 28 NVLink hops; a chunk crosses
    # 31 consecutive hops, so it skips one NVLink hop; the ring pays NCCL's base latency once.
    extra, nvl = nt.sim_hop("ring", proto, 32, 4)
    by_hand = (nt.base_latency("ring", proto) + sum(HOST + s * HOP + extra for s in (1, 3, 5, 5)) + 27 * nvl)
    assert r.latencies[proto] == pytest.approx(by_hand, rel=1e-12)
    assert r.critical_hops[proto] == (4, 27)
    assert r.rows[0].protocol == proto and r.rows[0].time >= r.latencies[proto]


def test_ring_allreduce_skips_the_two_cheapest_adjacent_hops(two_zones):
    # AllReduce: a chunk crosses 2 (N - 1) consecutive hops (ReduceScatter then AllGather): twice round the ring but
    # two adjacent hops.
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    r = run_collective(topo, gpus, "allreduce", [1 << 20], routing="pinned", protocol="Simple")
    ph = r.phases[0]
    extra, nvl = nt.sim_hop("ring", "Simple", 32, 4)
    hop = np.where(ph.hop_network, ph.hop_latency + extra, nvl).reshape(r.plan.channels, 32)
    pairs = hop + np.roll(hop, -1, axis=1)
    by_hand = (2 * hop.sum(axis=1) - pairs.min(axis=1)).max()
    assert r.latencies["Simple"] == pytest.approx(nt.base_latency("ring", "Simple") + by_hand, rel=1e-12)
    assert r.critical_hops["Simple"] == (8, 54)


def test_broadcast_pays_the_whole_chain_and_alltoall_its_slowest_pair(two_zones):
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    r = run_collective(topo, gpus, "broadcast", [1 << 20], routing="pinned", protocol="LL")
    ph = r.phases[0]
    extra, nvl = nt.sim_hop("ring", "LL", 32, 4)
    hop = np.where(ph.hop_network, ph.hop_latency + extra, nvl)
    chains = np.bincount(ph.phase.channel, weights=hop)            # each channel: the ring opened at the root
    assert r.latencies["LL"] == pytest.approx(nt.base_latency("ring", "LL") + chains.max(), rel=1e-12)
    a2a = run_collective(topo, host_gpus([0, 4]), "alltoall", [1 << 20], routing="pinned", protocol="Simple")
    extra, _ = nt.sim_hop("direct", "Simple", 16, 2)
    assert a2a.latencies["Simple"] == pytest.approx(nt.base_latency("direct", "Simple") + HOST + 5 * HOP + extra)


def test_one_way_latency_comes_from_the_base_rtt():
    # Half the RTT over the reference path, its switches taken out: RoCE 22 / 2 - 5 x 1 = 6 us of host part.
    assert LatencyModel().host("roce", 1e-6) == pytest.approx(6e-6)
    assert LatencyModel(base_rtt=30e-6, rtt_switches=3).host("roce", 1e-6) == pytest.approx(12e-6)
    assert LatencyModel(base_rtt=0.0).host("roce", 1e-6) == 0.0             # never negative
    assert LatencyModel().host("infiniband", 1e-6) == pytest.approx(BASE_RTT["infiniband"] / 2 - 1e-6)


def test_chain_sums_match_walking_the_chains():
    rng = np.random.default_rng(3)
    P = 200
    nxt = np.where(rng.random(P) < 0.1, -1, rng.integers(0, P, P))
    vals = rng.random((P, 2))
    for span in (0, 1, 2, 7, 64):
        got = chain_sums(nxt, vals, span)
        want = np.zeros((P, 2))
        for t in range(P):
            pos, n = t, 0
            while pos >= 0 and (span <= 0 and n < 10 * P or n < span):
                want[t] += vals[pos]
                pos, n = nxt[pos], n + 1
            if span <= 0 and pos >= 0:                     # a cycle: "to its end" is undefined, skip
                want[t] = got[t]
        assert got == pytest.approx(want)
    assert ring_next(1, 4).tolist() == [1, 2, 3, 0]


# ------------------------------------------------------------------------------------------------ NCCL's choice
def ring_allgather_times(size, n, nodes, channels, busbw):
    """NCCL's ring AllGather prediction re-derived here from tuning.cc's formula (more than 2 nodes, Intel CPU,
    Hopper): latency base + (n - 1 - (nodes - 1)) intra + (nodes - 1) inter; bandwidth busBw x N / (N - 1)."""
    inter_steps = nodes - 1
    intra_steps = n - 1 - inter_steps
    out = {}
    for i, p in enumerate(nt.PROTOCOLS):
        intra = max(nt.HW_LATENCY["nvlink"]["ring"][i], nt.NET_OVERHEAD["intel"] * (3 if p == "Simple" else 1))
        lat = (nt.BASE_LATENCY["ring"][i] + intra_steps * intra + inter_steps * nt.HW_LATENCY["net"]["ring"][i]) * 1e-6
        bw = {"LL": min(nt.LL_MAX_BW["intel"][2] * 1e9, busbw * 0.5),
              "LL128": min(busbw * 0.92, channels * nt.PER_CH_MAX_RING_LL128_BW[2] * 1e9),
              "Simple": busbw}[p] * n / (n - 1)
        out[p] = (lat, bw)
    return out


def test_nccl_picks_ll_for_small_sizes_then_the_crossovers_of_its_own_formula(two_zones):
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    channels = ring_channels(8, 4, nic_gbps=topo.nic_bandwidth / 1e9)   # NCCL's count (tests/sim/test_nccl.py)
    model = ring_allgather_times(1, 32, 4, channels, 400e9)
    # Crossover of protocols a and b: lat_a + S / bw_a = lat_b + S / bw_b.
    cross = {(a, b): (model[b][0] - model[a][0]) / (1 / model[a][1] - 1 / model[b][1])
             for a, b in (("LL", "LL128"), ("LL128", "Simple"), ("LL", "Simple"))}
    assert 0 < cross[("LL", "LL128")] < cross[("LL128", "Simple")]     # LL, then LL128, then Simple
    sizes = [1, 1024]
    for a, b in (("LL", "LL128"), ("LL128", "Simple")):
        sizes += [int(cross[(a, b)] * 0.99), int(cross[(a, b)] * 1.01) + 1]
    sizes.append(16 * GIB)
    r = run_collective(topo, gpus, "allgather", sorted(sizes), routing="pinned")
    assert r.roofline == pytest.approx(400e9)
    assert [x.protocol for x in r.rows] == ["LL", "LL", "LL", "LL128", "LL128", "Simple", "Simple"]
    for row in r.rows:                                               # NCCL's own prediction, as re-derived here
        lat, bw = model[row.protocol]
        assert row.predicted == pytest.approx(lat + row.size / bw, rel=1e-9)


def test_forced_protocol_and_its_bandwidth_factor(two_zones):
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    sizes = [1 << 10, 1 << 20, GIB]
    auto = run_collective(topo, gpus, "allgather", sizes, routing="pinned")
    for proto in nt.PROTOCOLS:
        r = run_collective(topo, gpus, "allgather", sizes, routing="pinned", protocol=proto)
        assert all(x.protocol == proto for x in r.rows)
        limit = auto.limit_busbw
        bw = {"LL": min(0.5 * limit, nt.LL_MAX_BW["intel"][2] * 1e9),
              "LL128": min(0.92 * limit, 8 * nt.PER_CH_MAX_RING_LL128_BW[2] * 1e9), "Simple": limit}[proto]
        for x in r.rows:
            assert x.time == pytest.approx(r.latencies[proto] + x.size * r.plan.busbw_factor / bw, rel=1e-12)
        assert r.limit_norm == auto.limit_norm                       # the bandwidth term is the fabric's
    # LL at 1 GiB is capped at NCCL's llMaxBw: far slower than what NCCL picks.
    ll = run_collective(topo, gpus, "allgather", [GIB], routing="pinned", protocol="LL")
    assert ll.rows[0].time > 5 * auto.rows[-1].time
    with pytest.raises(ValueError, match="protocol"):
        run_collective(topo, gpus, "allgather", [GIB], protocol="ll")


@pytest.mark.parametrize("collective,algorithm", [("allgather", "ring"), ("allreduce", "ring"),
                                                  ("allreduce", "tree"), ("broadcast", "ring"),
                                                  ("alltoall", "ring")])
def test_latency_is_positive_and_each_protocols_time_grows_with_size(two_zones, collective, algorithm):
    topo = two_zones
    gpus = host_gpus([0, 1, 2, 4])
    sizes = np.unique(np.geomspace(1, 1 << 34, 60).astype(np.int64))
    r = run_collective(topo, gpus, collective, sizes, algorithm=algorithm, routing="ecmp")
    for p, lat in r.latencies.items():
        assert lat > 0
        t = [r.time(int(s), p) for s in sizes]
        assert np.all(np.diff(t) >= 0) and t[0] >= lat
    assert all(x.time > 0 and x.algbw >= 0 for x in r.rows)


def test_tree_and_broadcast_predictions_follow_nccls_formulas():
    # Tree AllReduce over 16 nodes of 8 GPUs: base + 2 ((8 - 1) intra + log2(16) inter), Simple.
    lat = nt.nccl_latency("allreduce", "tree", "Simple", 128, 16)
    assert lat == pytest.approx((8.4 + 2 * (7 * 4.0 + 4 * 14.0)) * 1e-6)
    # Broadcast: one hop latency per rank (NCCL's Simple uses the tree's network latency there).
    assert nt.nccl_latency("broadcast", "ring", "Simple", 128, 16) == pytest.approx((8.4 + 128 * 14.0) * 1e-6)
    # One GPU per node: rings take the tree's network latency.
    assert nt.nccl_latency("allgather", "ring", "LL", 4, 4) == pytest.approx((6.6 + 3 * 5.0) * 1e-6)
    assert math.isnan(nt.predict("alltoall", "direct", "LL", 1, 4, 4, 1, 1e9))
    assert nt.choose("alltoall", "direct", 4 * nt.P2P_LL_THRESHOLD, 4, 4, 1, 1e9) == "LL"
    assert nt.choose("alltoall", "direct", 4 * nt.P2P_LL_THRESHOLD + 4, 4, 4, 1, 1e9) == "Simple"


def test_doctests():
    import sim.fabric.latency
    assert doctest.testmod(sim.fabric.latency).failed == 0
    assert doctest.testmod(nt).failed == 0


def test_latency_pipelines_follow_the_data():
    # Each transfer's successor on a ring or chain starts where it ends.
    gpus, host = np.arange(32), np.arange(32) // 8
    for coll in ("allgather", "broadcast"):
        ph, = plan_collective(coll, gpus, host).phases
        t = np.flatnonzero(ph.lat_next >= 0)
        assert t.size and np.array_equal(ph.dst[t], ph.src[ph.lat_next[t]])
