"""Centralized traffic engineering (sim/fabric/te.py, routing "te"): exact where a perfect assignment exists, never worse
than the worst-case hash, failures avoided, background flows balanced with the job's, deterministic, and reachable
from the command line and the run parameters.

demo-256: 2 zones x 8 leaves x 16 GPUs; each leaf has 16 uplinks (4 planes x 4 cables), each spine 8 (2 cores x 4
cables). meta-roce-24k: 8 zones x 192 leaves x 16 GPUs; 18 uplinks per leaf (18 planes x 1 cable), 28 per spine.
"""
import json

import numpy as np
import pytest

from sim.fabric.achievable import Efficiencies, framing
from sim.fabric.flows import link_capacity
from sim.cli import main
from sim.fabric.collectives import Phase
from sim.fabric.layout import STATUS_FAILED, expand
from sim.fabric.flows import build_flows
from sim.fabric.netsim import solve_phase
from sim.fabric.params import COLLECTIVE
from sim.fabric.paths import NoPathError
from sim.fabric.routing import ROUTINGS, route
from sim.fabric.spec import load_spec
from sim.fabric.colouring import colour
from sim.fabric.te import te_route
from sim.fabric.topology import load_topology, topology_from_layout
from tests.sim.test_routing import check_paths


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


@pytest.fixture(scope="module")
def roce():
    return load_topology("meta-roce-24k")[1]


def link_count(topo, ptr, links, weight=None):
    """Bytes (or flows) on each fabric link."""
    w = np.ones(len(ptr) - 1) if weight is None else weight
    return np.bincount(links, np.repeat(w, np.diff(ptr)), minlength=topo.n_links)


def leaf_tier_loads(topo, ptr, links):
    """Flows on each leaf -> spine link and on each spine -> leaf link."""
    cnt = link_count(topo, ptr, links)
    up = topo.leaf_up[topo.leaf_up >= 0]
    return cnt[up], cnt[up + topo.n_cables]


def random_leaf_demand(topo, zone, degree, rng):
    """Equal flows between leaves of one zone: every leaf sends ``degree`` flows to random other leaves of the zone
    (from random GPUs to random GPUs)."""
    leaves = np.flatnonzero(topo.switch_zone[topo.leaves] == zone)
    gpus_of = {r: np.flatnonzero(topo.switch_rank[topo.gpu_leaf] == r) for r in leaves.tolist()}
    src, dst = [], []
    for a in leaves.tolist():
        others = leaves[leaves != a]
        b = rng.choice(others, degree)
        src += rng.choice(gpus_of[a], degree).tolist()
        dst += [int(rng.choice(gpus_of[x])) for x in b.tolist()]
    return np.array(src), np.array(dst)


def test_routing_te_is_a_routing_mode():
    assert "te" in ROUTINGS and COLLECTIVE.validate({"routing": "te"})["routing"] == "te"


def test_colouring_meets_the_koenig_bound_on_random_multigraphs():
    # given random bipartite multigraphs (parallel edges included) and a number of colours that divides nothing
    rng = np.random.default_rng(5)
    for k, n, m in ((18, 40, 3000), (4, 9, 500), (7, 30, 61)):
        left, right = rng.integers(0, n, m), rng.integers(0, n // 2 + 1, m)
        c = colour(left, right, k, seed=3)
        # then every vertex of degree d has each colour at most ceil(d / k) times, on both sides
        for side in (left, right):
            deg = np.bincount(side)
            per = np.zeros((deg.size, k), dtype=int)
            np.add.at(per, (side, c), 1)
            assert (per.max(axis=1) <= np.ceil(deg / k)).all()
        assert c.min() >= 0 and c.max() < k


@pytest.mark.parametrize("preset, degree", [("demo-256", 16), ("demo-256", 41), ("meta-roce-24k", 18),
                                            ("meta-roce-24k", 50)])
def test_equal_flows_between_leaves_are_exactly_at_the_lower_bound(preset, degree, demo, roce):
    # given equal flows between the leaves of one zone, every leaf sending `degree` and receiving a random number
    topo = demo if preset == "demo-256" else roce
    rng = np.random.default_rng(degree)
    src, dst = random_leaf_demand(topo, 1, degree, rng)
    # when the controller routes them
    ptr, links = te_route(topo, src, dst, seed=1)
    check_paths(topo, src, dst, ptr, links)
    # then the fullest leaf uplink and spine downlink carry exactly the analytic lower bound (König):
    # ceil(flows of the leaf / its uplinks) for the busiest leaf
    w1 = topo.leaf_up.shape[1] * topo.leaf_up.shape[2]
    leaf = topo.switch_rank[topo.gpu_leaf]
    bound_up = np.ceil(np.bincount(leaf[src]).max() / w1)
    bound_down = np.ceil(np.bincount(leaf[dst]).max() / w1)
    up, down = leaf_tier_loads(topo, ptr, links)
    assert up.max() == bound_up and down.max() == bound_down
    # and a hash does not reach it on the same flows
    e_up, e_down = leaf_tier_loads(topo, *route(topo, src, dst, None, "ecmp", seed=1))
    assert max(e_up.max(), e_down.max()) > max(bound_up, bound_down)


def test_all_to_all_fills_every_zone_exit_link_equally(demo):
    # given every GPU sending one flow to every other GPU of demo-256 (zone exit: 4 spines x 8 uplinks per zone)
    g = np.arange(demo.n_gpus)
    src, dst = np.repeat(g, g.size), np.tile(g, g.size)
    src, dst = src[src != dst], dst[src != dst]
    ptr, links = te_route(demo, src, dst)
    cnt = link_count(demo, ptr, links)
    # then each spine -> core link carries exactly its share: 128 x 128 flows leave a zone over 32 links
    spine_up = demo.spine_up[demo.spine_up >= 0]
    assert (cnt[spine_up] == 128 * 128 // 32).all() and (cnt[spine_up + demo.n_cables] == 512).all()
    # and no leaf uplink carries more than its leaf's flows over 16 uplinks (16 GPUs x 240 other-leaf GPUs)
    up, down = leaf_tier_loads(demo, ptr, links)
    assert up.max() == 240 and down.max() == 240
    # which is also the most loaded link: the lower bound of the whole fabric
    assert cnt.max() == 512


def test_never_worse_than_the_worst_case_hash(demo):
    # given flows that all collide under 5-tuple ECMP: from leaf 0 to every GPU of zone 0 outside it, keep those
    # ECMP sends through the most used uplink of leaf 0
    g = np.arange(demo.n_gpus)
    leaf = demo.switch_rank[demo.gpu_leaf]
    zone = demo.switch_zone[demo.gpu_leaf]
    src = np.repeat(g[leaf == 0], 112)
    dst = np.tile(g[(zone == 0) & (leaf != 0)], 16)
    ptr, links = route(demo, src, dst, None, "ecmp", seed=0)
    first_up = links[ptr[:-1] + 1]
    worst = np.bincount(first_up).argmax()
    pick = np.flatnonzero(first_up == worst)[:16]
    src, dst = src[pick], dst[pick]
    e_up, _ = leaf_tier_loads(demo, *route(demo, src, dst, None, "ecmp", seed=0))
    assert e_up.max() == 16                           # the worst case of any hash: all 16 on one uplink
    # when the controller routes the same flows
    up, down = leaf_tier_loads(demo, *te_route(demo, src, dst))
    # then they spread over the 16 uplinks: one each
    assert up.max() == 1 and down.max() <= e_up.max()


def test_unequal_flows_are_balanced_by_bytes(demo):
    # given 8 flows of 2 bytes and 16 of 1 byte from leaf 0 to leaf 1 (32 bytes over 16 uplinks), in random order
    rng = np.random.default_rng(0)
    src = rng.choice(np.arange(16), 24)
    dst = rng.choice(np.arange(16, 32), 24)
    w = rng.permutation(np.r_[np.full(8, 2.0), np.ones(16)])
    ptr, links = te_route(demo, src, dst, weight=w)
    loads = link_count(demo, ptr, links, w)
    up = demo.leaf_up[0][demo.leaf_up[0] >= 0]
    # then every uplink carries exactly 2 bytes: a heavy flow alone or two light ones
    assert (loads[up] == 2).all()


def demo_layout():
    return expand(load_spec("demo-256"))


def test_failed_links_are_never_chosen_and_the_rest_stay_balanced():
    # given leaf 0 with 7 of its 16 uplinks failed: all 4 cables to the spine of plane 2, 3 of the 4 to plane 1
    layout = demo_layout()
    topo0 = topology_from_layout(layout)
    dead = np.r_[topo0.leaf_up[0, 1, :3], topo0.leaf_up[0, 2, :]]
    layout.link_status[topo0.link_cable[dead]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    # when leaf 0's GPUs send 9 flows to other leaves of its zone
    src, dst = np.arange(9), 16 * np.arange(1, 10) % 128 + 16
    ptr, links = te_route(topo, src, dst)
    check_paths(topo, src, dst, ptr, links)
    # then no flow crosses a missing link and each of the 9 remaining uplinks carries one flow
    cnt = link_count(topo, ptr, links)
    up = topo.leaf_up[0][topo.leaf_up[0] >= 0]
    assert up.size == 9 and (cnt[up] == 1).all()
    assert set(links.tolist()) <= set(range(topo.n_links))


def test_no_path_error_when_a_leaf_loses_all_uplinks():
    layout = demo_layout()
    topo0 = topology_from_layout(layout)
    layout.link_status[topo0.link_cable[topo0.leaf_up[1].ravel()]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    with pytest.raises(NoPathError, match="no uplink"):
        te_route(topo, [16], [0])


def phase(src, dst, share=1.0):
    n = len(src)
    return Phase("p", np.asarray(src), np.asarray(dst), np.full(n, share), np.zeros(n, dtype=int))


def test_background_flows_are_balanced_together_with_the_job(demo):
    # given a job sending 8 flows from host 0 to host 2 (leaf 0 -> leaf 1) and a background job as many from
    # host 1 to host 3: the same leaves, so each alone would take the same 8 of the 16 uplinks
    job = phase(np.arange(8), np.arange(16, 24))
    bg = phase(np.arange(8, 16), np.arange(24, 32))
    alone = [build_flows(demo, ph, 1, "te") for ph in (job, bg)]
    apart = sum(np.bincount(f.links[f.links < demo.n_links], minlength=demo.n_links) for f in alone)
    assert apart.max() == 2                           # routed apart: they collide
    # when the phase is solved with the background job
    res = solve_phase(demo, job, 1, "te", background=[bg], capacity=link_capacity(demo, Efficiencies.line_rate()))
    # then the controller saw both: the uplinks of leaf 0 carry one flow each and the job runs at NIC speed
    assert res.rates.min() == pytest.approx(demo.nic_bandwidth)
    assert res.unit_time == pytest.approx(1.0 / demo.nic_bandwidth)


def test_te_is_deterministic(roce):
    rng = np.random.default_rng(2)
    src, dst = random_leaf_demand(roce, 3, 30, rng)
    a = te_route(roce, src, dst, seed=4)
    b = te_route(roce, src, dst, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_command_line_runs_te(capsys):
    code = main(["collective", "--preset", "demo-256", "--gpus", "64", "--placement", "fragmented", "--routing", "te",
                 "--qps", "4", "--sizes", "1G", "--json", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["routing"] == "te" and doc["qps"] == 4
    assert doc["limit_norm_busbw"] == pytest.approx(framing("roce"))     # the roofline is at line rate
