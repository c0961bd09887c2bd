"""Routing (sim/fabric/routing.py): valley-free shortest paths, the equal-cost choices, hashing, pinning, failures.

demo-256: 2 zones x 8 leaves x 16 GPUs; each leaf has 4 cables to each of the 4 spines of its zone, each spine
4 cables to each of the 2 cores of its plane. Equal-cost paths: 16 across a zone (16 leaf uplinks x 4 spine
downlinks to the destination leaf = 64 link sequences), 16 x 8 x 4 x 4 = 2,048 between zones.
"""
import copy

import networkx as nx
import numpy as np
import pytest

from sim.fabric.layout import STATUS_DRAINED, STATUS_FAILED, expand
from sim.fabric.hashing import splitmix64
from sim.fabric.paths import NoPathError, max_path_links, routing_tables
from sim.fabric.routing import ROUTINGS, default_routing, route
from sim.fabric.spec import load_spec, parse_spec
from sim.fabric.topology import topology_from_layout


@pytest.fixture(scope="module")
def demo():
    return topology_from_layout(expand(load_spec("demo-256")))


def all_pairs(topo):
    g = np.arange(topo.n_gpus)
    src, dst = np.repeat(g, topo.n_gpus), np.tile(g, topo.n_gpus)
    keep = src != dst
    return src[keep], dst[keep]


def check_paths(topo, src, dst, ptr, links):
    """Every path is contiguous from the source NIC to the destination NIC, goes up then down, and is shortest."""
    S = topo.n_switches
    n = np.diff(ptr)
    same_host = topo.gpu_host[src] == topo.gpu_host[dst]
    zone = topo.switch_zone[topo.gpu_leaf]
    expect = np.where(same_host, 0, np.where(topo.gpu_leaf[src] == topo.gpu_leaf[dst], 2,
                                             np.where(zone[src] == zone[dst], 4, 6)))
    assert np.array_equal(n, expect)
    net = n > 0
    first, last = ptr[:-1][net], ptr[1:][net] - 1
    assert np.array_equal(topo.link_tail[links[first]], S + src[net])
    assert np.array_equal(topo.link_head[links[last]], S + dst[net])
    # contiguity: inside each path, the head of a link is the tail of the next
    inner = np.ones(len(links), dtype=bool)
    inner[ptr[1:][net] - 1] = False
    k = np.flatnonzero(inner)
    assert np.array_equal(topo.link_head[links[k]], topo.link_tail[links[k + 1]])
    # up then down: the first half climbs, the second descends
    pos = np.arange(len(links)) - np.repeat(ptr[:-1], n)
    assert np.array_equal(topo.link_is_up[links], pos < np.repeat(n // 2, n))
    # no link twice in a path
    assert len(np.unique(np.repeat(np.arange(len(n)), n) * topo.n_links + links)) == len(links)


@pytest.mark.parametrize("routing", ROUTINGS)
def test_every_path_is_a_shortest_up_down_path(demo, routing):
    src, dst = all_pairs(demo)
    ptr, links = route(demo, src, dst, np.arange(len(src)) % 7, routing, seed=3)
    check_paths(demo, src, dst, ptr, links)


def link_graph(topo):
    """A directed graph with a node per directed link between its two ends, so shortest paths are link sequences."""
    g = nx.DiGraph()
    for e, (t, h) in enumerate(zip(topo.link_tail.tolist(), topo.link_head.tolist())):
        g.add_edge(("n", t), ("e", e))
        g.add_edge(("e", e), ("n", h))
    return g


def shortest_link_paths(topo, graph, s, d):
    S = topo.n_switches
    paths = nx.all_shortest_paths(graph, ("n", S + s), ("n", S + d))
    return {tuple(x[1] for x in p if x[0] == "e") for p in paths}


@pytest.mark.parametrize("routing", ROUTINGS)
def test_a_two_tier_single_zone_fabric(routing):
    # given one zone and no core tier (the small cluster of the published figure)
    data = copy.deepcopy(load_spec("demo-256").source)
    data["layout"]["zones"] = 1
    del data["backend"]["core"]
    del data["backend"]["spine"]["oversubscription"]
    topo = topology_from_layout(expand(parse_spec(data)))
    assert topo.n_gpus == 128 and len(topo.cores) == 0
    src, dst = all_pairs(topo)
    ptr, links = route(topo, src, dst, np.arange(len(src)) % 3, routing)
    check_paths(topo, src, dst, ptr, links)
    # and the longest path follows the tiers: 4 links on two tiers, 6 on three
    assert max_path_links(topo) == np.diff(ptr).max() == 4


def test_the_longest_path_follows_the_fabric_tiers(demo):
    src, dst = all_pairs(demo)
    ptr, _ = route(demo, src, dst)
    assert max_path_links(demo) == np.diff(ptr).max() == 6


@pytest.mark.parametrize("s,d,count", [(0, 200, 2048), (3, 100, 64), (0, 9, 1)])
def test_eecmp_choices_are_exactly_the_shortest_paths(demo, s, d, count):
    # given one GPU pair and many QPs, when routed with E-ECMP (the hash covers the QP)
    graph = link_graph(demo)
    expected = shortest_link_paths(demo, graph, s, d)
    assert len(expected) == count
    n = 40 * count
    ptr, links = route(demo, np.full(n, s), np.full(n, d), np.arange(n), "eecmp", seed=1)
    got = {tuple(p) for p in np.split(links, ptr[1:-1])}
    # then the paths taken are all the shortest paths, and nothing else
    assert got == expected


def test_paths_are_networkx_shortest_paths(demo):
    graph = link_graph(demo)
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 256, 300), rng.integers(0, 256, 300)
    dst = np.where(demo.gpu_host[src] == demo.gpu_host[dst], (dst + 64) % 256, dst)
    for routing in ROUTINGS:
        ptr, links = route(demo, src, dst, None, routing, seed=5)
        for f in range(0, 300, 10):
            path = tuple(links[ptr[f]:ptr[f + 1]])
            assert path in shortest_link_paths(demo, graph, src[f], dst[f])


def test_ecmp_gives_all_qps_of_a_pair_one_path_eecmp_spreads_them(demo):
    # given 64 QPs between GPU 0 (leaf 0) and GPU 40 (leaf 2)
    q = np.arange(64)
    src, dst = np.zeros(64, int), np.full(64, 40)
    ptr, links = route(demo, src, dst, q, "ecmp")
    paths = np.array(np.split(links, ptr[1:-1]))
    assert (paths == paths[0]).all()
    ptr, links = route(demo, src, dst, q, "eecmp")
    uplinks = links[ptr[:-1] + 1]
    # then over many QPs every one of the leaf's 16 equal-cost uplinks is used
    assert set(uplinks.tolist()) == set(demo.leaf_up[0].ravel().tolist())


@pytest.mark.parametrize("routing", ["ecmp", "eecmp", "pinned"])
def test_a_seed_repeats_exactly_and_another_seed_chooses_differently(demo, routing):
    src, dst = all_pairs(demo)
    qp = np.arange(len(src)) % 4
    a = route(demo, src, dst, qp, routing, seed=11)
    b = route(demo, src, dst, qp, routing, seed=11)
    c = route(demo, src, dst, qp, routing, seed=12)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert np.array_equal(a[0], c[0])                  # same lengths
    differ = np.mean(a[1] != c[1])
    if routing == "pinned":
        assert differ == 0                             # no failures: pinning does not hash at all
    else:
        assert differ > 0.2


def test_choices_at_different_switches_are_independent(demo):
    # the spine-up choice is not a function of the leaf-up choice (per-switch hashing)
    src, dst = np.zeros(4000, int), np.full(4000, 200)
    ptr, links = route(demo, src, dst, np.arange(4000), "eecmp")
    up1, up2 = links[ptr[:-1] + 1], links[ptr[:-1] + 2]
    joint = len(set(zip(up1.tolist(), up2.tolist())))
    assert joint == 16 * 8


def test_same_host_flows_get_an_empty_path(demo):
    ptr, links = route(demo, [0, 8, 0], [7, 15, 8], [0, 0, 0], "ecmp")
    assert ptr.tolist() == [0, 0, 0, 2]


def demo_layout():
    return expand(load_spec("demo-256"))


def cables_between(layout, topo, lower_node, upper_node):
    C = topo.n_cables
    up = np.flatnonzero((topo.link_tail[:C] == lower_node) & (topo.link_head[:C] == upper_node))
    return topo.link_cable[up]


@pytest.mark.parametrize("routing", ROUTINGS)
def test_failed_links_and_switches_never_carry_flows(routing):
    # given: a spine drained, a core failed, spine 1 of zone 0 cut from leaf 2, 3 uplinks of leaf 5 failed,
    # and core 0 of plane 3 cut from the spine of zone 1
    layout = demo_layout()
    topo0 = topology_from_layout(layout)
    drained_spine = topo0.spines[2]                       # zone 0, plane 2
    failed_core = topo0.cores[1]                          # plane 0, member 1
    layout.switch_status[topo0.switch_layout_id[[drained_spine, failed_core]]] = [STATUS_DRAINED, STATUS_FAILED]
    cut_spine, cut_leaf = topo0.spines[1], topo0.leaves[2]
    layout.link_status[cables_between(layout, topo0, cut_leaf, cut_spine)] = STATUS_FAILED
    layout.link_status[topo0.link_cable[topo0.leaf_up[5, 0, :3]]] = STATUS_FAILED
    cut_core, zone1_spine = topo0.cores[3 * 2 + 0], topo0.spines[4 + 3]
    layout.link_status[cables_between(layout, topo0, zone1_spine, cut_core)] = STATUS_FAILED
    topo = topology_from_layout(layout)
    # when every pair is routed
    src, dst = all_pairs(topo)
    ptr, links = route(topo, src, dst, np.arange(len(src)) % 16, routing, seed=2)
    # then paths are still shortest, contiguous, up/down, and avoid the dead items
    check_paths(topo, src, dst, ptr, links)
    nodes = np.r_[topo.link_tail[links], topo.link_head[links]]
    assert drained_spine not in nodes and failed_core not in nodes
    flow = np.repeat(np.arange(len(src)), np.diff(ptr))
    to_leaf2 = topo.gpu_leaf[dst[flow]] == cut_leaf
    # spine 1 of zone 0 cannot reach leaf 2: no flow to leaf 2 visits it, not even from another leaf of zone 0
    assert cut_spine not in topo.link_head[links[to_leaf2]]
    # and plane 1 is useless for flows from zone 1 into leaf 2 (its only way down is that spine)
    zone_of = topo.switch_zone[topo.gpu_leaf]
    f = np.flatnonzero((zone_of[src] == 1) & (topo.gpu_leaf[dst] == cut_leaf))
    first_spine = topo.link_head[links[ptr[f] + 1]]
    assert f.size and not (topo.switch_group[first_spine] == 1).any()
    # core (plane 3, member 0) cannot reach zone 1: flows from zone 0 into zone 1 never climb to it
    to_zone1 = topo.switch_zone[topo.gpu_leaf[dst[flow]]] == 1
    assert cut_core not in topo.link_head[links[to_zone1]]


def test_no_path_error_when_a_leaf_loses_all_uplinks():
    layout = demo_layout()
    topo0 = topology_from_layout(layout)
    layout.link_status[topo0.link_cable[topo0.leaf_up[1].ravel()]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    # traffic inside the leaf (GPUs 16-31) still flows
    ptr, _ = route(topo, [16], [24], [0], "ecmp")
    assert ptr[-1] == 2
    for routing in ROUTINGS:
        with pytest.raises(NoPathError, match=r"2 of 3 flows .* no active path.*GPU 16"):
            route(topo, [16, 16, 0], [0, 24, 17], [0, 0, 0], routing)


def test_no_path_error_for_a_failed_nic():
    layout = demo_layout()
    nic = np.flatnonzero(layout.nic_gpu == 5)[0]
    layout.nic_status[nic] = STATUS_FAILED
    topo = topology_from_layout(layout)
    with pytest.raises(NoPathError, match="GPU 100 .* GPU 5"):
        route(topo, [100], [5], [0], "eecmp")
    assert route(topo, [4], [5], [0], "eecmp")[0][-1] == 0           # NVLink inside the host still works


def test_bad_arguments():
    topo = topology_from_layout(demo_layout())
    with pytest.raises(ValueError, match="routing 'rip' is not one of"):
        route(topo, [0], [9], [0], "rip")
    with pytest.raises(ValueError, match="GPU ids must lie in 0..255"):
        route(topo, [0], [256], [0], "ecmp")
    assert default_routing("roce") == "ecmp" and default_routing("infiniband") == "dmodk"


def leaf_uplink_load(topo, ptr, links):
    """Flows per leaf uplink (leaf -> spine links), over all of them."""
    ups = topo.leaf_up.ravel()
    return np.bincount(links, minlength=topo.n_links)[ups]


def shift(topo, k):
    g = np.arange(topo.n_gpus)
    return g, (g + k) % topo.n_gpus


@pytest.mark.parametrize("routing", ["pinned", "dmodk"])
def test_static_routing_balances_a_contiguous_shift(demo, routing):
    # given every GPU sending to the GPU one leaf further (16 flows out of every leaf, 16 uplinks per leaf)
    src, dst = shift(demo, 16)
    ptr, links = route(demo, src, dst, None, routing)
    load = leaf_uplink_load(demo, ptr, links)
    # then every leaf uplink carries exactly one flow, also down into each leaf and on the way between zones
    assert load.max() / load.mean() == 1.0
    down = np.bincount(links, minlength=demo.n_links)[demo.leaf_up.ravel() + demo.n_cables]
    assert (down == 1).all()


def test_ecmp_with_one_qp_collides_on_the_same_shift(demo):
    src, dst = shift(demo, 16)
    for seed in range(5):
        load = leaf_uplink_load(demo, *route(demo, src, dst, None, "ecmp", seed=seed))
        assert load.max() / load.mean() > 1.0


def test_eecmp_with_many_qps_evens_out_the_load(demo):
    src, dst = shift(demo, 16)
    one = leaf_uplink_load(demo, *route(demo, src, dst, None, "ecmp"))
    qps = 64
    many = leaf_uplink_load(demo, *route(demo, np.repeat(src, qps), np.repeat(dst, qps),
                                         np.tile(np.arange(qps), len(src)), "eecmp"))
    assert many.max() / many.mean() < one.max() / one.mean()
    assert many.max() / many.mean() < 1.5


def test_rail_ring_uses_distinct_uplinks_with_static_routing(demo):
    # NCCL-like rail rings with contiguous placement: GPU of rail r in host h sends to rail r of host h+1.
    src, dst = shift(demo, 8)
    for routing in ("pinned", "dmodk"):
        ptr, links = route(demo, src, dst, None, routing)
        load = leaf_uplink_load(demo, ptr, links)
        assert load.max() == 1 and load.sum() == 16 * 8      # 8 flows leave each leaf, never two on one uplink


def spare_uplink_spec():
    """demo-256 with 20 uplinks per leaf (5 per spine) for 16 NICs: room for the pinning spares."""
    data = copy.deepcopy(load_spec("demo-256").source)
    data["backend"]["leaf"]["uplinks"] = 20
    data["backend"]["spine"]["oversubscription"] = 5
    return parse_spec(data)


def test_failures_break_pinning_balance_but_dmodk_recomputes():
    # given leaf 0 with 20 uplinks (5 to each spine), the first cable to spines 0, 1, 2 failed (uplinks 0, 5, 10,
    # used by pinning for slices 0, 5, 10), and every GPU of leaf 0 sending to its peer on leaf 1
    layout = expand(spare_uplink_spec())
    topo0 = topology_from_layout(layout)
    layout.link_status[topo0.link_cable[topo0.leaf_up[0, [0, 1, 2], 0]]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    src, dst = np.arange(16), np.arange(16) + 16
    worst = {}
    for routing in ("pinned", "dmodk"):
        worst[routing] = [leaf_uplink_load(topo, *route(topo, src, dst, None, routing, seed=s)).max()
                          for s in range(10)]
    # then D-mod-k re-spreads the 16 destinations over the 17 live uplinks, one each,
    assert max(worst["dmodk"]) == 1
    # while pinned flows fall back to ECMP and land on top of other pinned flows
    assert np.mean(worst["pinned"]) > 1.5
    # and with nothing failed both use 16 distinct uplinks (pinned leaves the 4 spares idle)
    topo_ok = topology_from_layout(expand(spare_uplink_spec()))
    for routing in ("pinned", "dmodk"):
        load = leaf_uplink_load(topo_ok, *route(topo_ok, src, dst, None, routing))
        assert load.max() == 1
    pinned_load = leaf_uplink_load(topo_ok, *route(topo_ok, src, dst, None, "pinned"))[:20]
    assert (pinned_load[16:] == 0).all()
    # pinning does not recompute: only the flows pinned to the failed uplinks (slices 0, 5, 10) move
    before = topo_ok.link_cable[route(topo_ok, src, dst, None, "pinned")[1]].reshape(16, 4)
    after = topo.link_cable[route(topo, src, dst, None, "pinned")[1]].reshape(16, 4)
    moved = np.flatnonzero((before != after).any(axis=1))
    assert moved.tolist() == [0, 5, 10]


def test_infiniband_dmodk_gives_every_destination_one_root():
    # On the non-blocking IB fat tree, D-mod-k routes all traffic to one destination through one core.
    topo = topology_from_layout(expand(load_spec("meta-ib-24k")))
    rng = np.random.default_rng(1)
    src = rng.integers(0, topo.n_gpus, 5000)
    src = src[topo.switch_zone[topo.gpu_leaf[src]] != topo.switch_zone[topo.gpu_leaf[12345]]]
    dst = np.full(len(src), 12345)
    ptr, links = route(topo, src, dst, None, "dmodk")
    cores = topo.link_head[links[ptr[:-1] + 2]]
    assert len(np.unique(cores)) == 1
    assert len(np.unique(links[ptr[:-1] + 3])) == 1 and len(np.unique(links[ptr[:-1] + 4])) == 1


def test_infiniband_dmodk_routes_a_shift_permutation_without_contention():
    # given the non-blocking IB fat tree and every GPU sending to the GPU half the cluster away (all across zones)
    topo = topology_from_layout(expand(load_spec("meta-ib-24k")))
    src, dst = shift(topo, topo.n_gpus // 2)
    ptr, links = route(topo, src, dst, None, "dmodk")
    assert (np.diff(ptr) == 6).all()
    # then D-mod-k gives every link at most one flow (each destination leaf has its own root per plane)
    assert np.bincount(links, minlength=topo.n_links).max() == 1
    # while 5-tuple ECMP piles flows up
    ptr, links = route(topo, src, dst, None, "ecmp")
    assert np.bincount(links, minlength=topo.n_links).max() >= 4


def test_tables_are_built_once(demo):
    assert routing_tables(demo) is routing_tables(demo)


def test_splitmix64_is_a_good_mix():
    h = splitmix64(np.arange(100_000, dtype=np.uint64))
    assert len(np.unique(h)) == 100_000
    buckets = np.bincount((h % np.uint64(16)).astype(int), minlength=16)
    assert buckets.min() > 0.9 * buckets.mean()


@pytest.mark.parametrize("routing,hash", [("ecmp", "uniform"), ("eecmp", "uniform"), ("pinned", "uniform"),
                                          ("dmodk", "uniform"), ("eecmp", "crc32"), ("ecmp", "crc16")])
@pytest.mark.parametrize("between_hosts", [False, True])
def test_gpus_given_once_per_connection_route_as_the_same_gpus_per_flow(demo, routing, hash, between_hosts):
    # route(repeat=k) takes a connection's GPUs once for its k QPs; every flow's path must be the one it gets
    # when the GPUs are given per flow (QP numbers and ports per flow, so the QPs of a connection differ).
    rng, G = np.random.default_rng(5), demo.n_gpus
    src = rng.integers(0, G, 300)
    dst = (src + rng.integers(8, G - 8, 300)) % G                         # another host: 8 GPUs per host
    if not between_hosts:
        dst[::7] = src[::7] ^ 1                                           # same host: empty path
    k = 4
    qp = np.tile(np.arange(k), src.size)
    sport = rng.integers(0xC000, 0x10000, src.size * k)
    dqpn = rng.integers(0, 1 << 24, src.size * k)
    if between_hosts:
        keep = np.asarray(demo.gpu_host)[src] != np.asarray(demo.gpu_host)[dst]
        assert keep.all()
    want = route(demo, np.repeat(src, k), np.repeat(dst, k), qp, routing, 3, hash=hash, sport=sport, dqpn=dqpn,
                 padded=True, between_hosts=between_hosts)
    got = route(demo, src, dst, qp, routing, 3, hash=hash, sport=sport, dqpn=dqpn, padded=True,
                between_hosts=between_hosts, repeat=k)
    assert np.array_equal(got, want)
    if not between_hosts:
        assert (got[::7 * k, 0] == -1).all()


def test_no_path_error_names_the_same_flows_with_gpus_per_connection():
    layout = demo_layout()
    topo0 = topology_from_layout(layout)
    layout.link_status[topo0.link_cable[topo0.leaf_up[1].ravel()]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    with pytest.raises(NoPathError, match=r"4 of 6 flows \(2 GPU pairs\) .* no active path.*GPU 16"):
        route(topo, [16, 16, 0], [0, 24, 17], None, "eecmp", repeat=2)


@pytest.mark.parametrize("routing", ["ecmp", "eecmp", "pinned", "dmodk"])
@pytest.mark.parametrize("failed", [False, True])
def test_choice_codes_group_flows_exactly_as_their_paths(demo, routing, failed):
    """route(..., choices=True): two flows of the same first and last link cross the same links exactly when their
    choice codes are equal, so keyed_classes (no sort of the rows) gives identical_rows' classes, numbered alike:
    flows within a leaf, a zone (4 parallel cables spine -> leaf: the code holds that choice too) and across zones,
    4 QPs per connection, with failed cables (choices among the valid next hops) or none."""
    from sim.core.flowset import keyed_classes
    from sim.core.maxmin import identical_rows
    from sim.fabric.flows import link_pairs
    from sim.fabric.paths import path_lengths
    topo = demo
    if failed:
        layout = copy.deepcopy(demo.layout)
        layout.link_status[demo.link_cable[demo.leaf_up[5, 0, :3]]] = STATUS_FAILED
        layout.link_status[demo.link_cable[demo.leaf_up[1, 2, :2]]] = STATUS_FAILED
        topo = topology_from_layout(layout)
    rng = np.random.default_rng(3)
    g = rng.permutation(topo.n_gpus)
    src, dst = np.repeat(g, 3), np.concatenate([np.roll(g, 1), np.roll(g, 17), np.roll(g, 40)])
    keep = topo.gpu_host[src] != topo.gpu_host[dst]
    src, dst, qps = src[keep], dst[keep], 4
    qp = np.tile(np.arange(qps), src.size)
    paths, code, dense, total = route(topo, src, dst, qp, routing, seed=5, padded=True, between_hosts=True,
                                      repeat=qps, choices=True)
    assert code.shape == (src.size * qps,) and (code >= 0).all() and (code < total).all()
    ends = paths[::qps]
    last = path_lengths(ends >= 0).astype(np.int64) - 1
    pair, n_pairs = link_pairs(ends[:, 0], ends[np.arange(ends.shape[0]), last])
    rep, cls = keyed_classes(pair, qps, code, n_pairs, dense, total)
    rep0, cls0 = identical_rows(paths)
    assert np.array_equal(rep, rep0) and np.array_equal(cls, cls0)
    assert rep.size < paths.shape[0] and (code >= dense).any() and (code[code < dense] > 0).any()
