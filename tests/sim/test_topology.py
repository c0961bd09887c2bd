"""The backend fabric as arrays (sim/fabric/topology.py): link counts and capacities from the spec, inactive items left out.

Capacities are bytes/s (a 400 Gb/s link carries 50e9 bytes/s each way); latencies seconds.
"""
import copy

import numpy as np
import pytest

from sim.fabric.layout import (FABRIC_BACKEND, LINK_LEAF_SPINE, LINK_NIC_LEAF, LINK_SPINE_CORE, STATUS_DRAINED,
                        STATUS_FAILED, STATUS_MAINTENANCE, TIER_CORE, TIER_LEAF, TIER_SPINE, expand)
from sim.fabric.spec import load_spec, parse_spec
from sim.fabric.topology import DEFAULT_HOP_LATENCY, topology_from_layout

GB = 1e9


def demo_spec_dict():
    return copy.deepcopy(load_spec("demo-256").source)


@pytest.fixture
def layout():
    return expand(load_spec("demo-256"))


def backend_cables(layout, tier=None):
    mask = layout.link_fabric == FABRIC_BACKEND
    if tier is not None:
        mask &= layout.link_tier == tier
    return np.flatnonzero(mask)


def cables_of_switch(layout, switch):
    ends = np.stack([layout.port_switch[layout.link_a], layout.port_switch[layout.link_b]])
    return np.flatnonzero((ends == switch).any(axis=0))


def test_two_directed_links_per_active_backend_cable(layout):
    # given every item active, when the topology is built
    topo = topology_from_layout(layout)
    # then each backend cable (256 NIC + 256 leaf-spine + 64 spine-core on demo-256) gives an up and a down link
    n = len(backend_cables(layout))
    assert n == 256 + 256 + 64
    assert topo.n_links == 2 * n == len(topo.link_capacity) == len(topo.link_cable)
    assert np.array_equal(np.sort(topo.link_cable[topo.link_is_up]), backend_cables(layout))
    assert np.array_equal(np.sort(topo.link_cable[~topo.link_is_up]), backend_cables(layout))
    # the frontend fabric is not part of it
    assert (layout.link_fabric[topo.link_cable] == FABRIC_BACKEND).all()


def test_up_links_climb_and_down_links_descend(layout):
    topo = topology_from_layout(layout)
    tier = np.r_[topo.switch_tier, np.full(topo.n_gpus, -1)]      # a NIC sits below the leaves
    up, down = topo.link_is_up, ~topo.link_is_up
    assert (tier[topo.link_head[up]] == tier[topo.link_tail[up]] + 1).all()
    assert (tier[topo.link_head[down]] == tier[topo.link_tail[down]] - 1).all()
    # the down link of a cable is the reverse of its up link
    C = topo.n_cables
    assert np.array_equal(topo.link_tail[:C], topo.link_head[C:])
    assert np.array_equal(topo.link_cable[:C], topo.link_cable[C:])


def test_capacities_come_from_link_speeds():
    # given a fabric at 200G while the NICs run at 400G
    data = demo_spec_dict()
    data["backend"]["speed_gbps"] = 200
    layout = expand(parse_spec(data))
    topo = topology_from_layout(layout)
    nic = topo.link_tier == LINK_NIC_LEAF
    assert np.allclose(topo.link_capacity[nic], 400 * GB / 8)
    assert np.allclose(topo.link_capacity[~nic], 200 * GB / 8)
    assert topo.nic_bandwidth == pytest.approx(50 * GB)
    assert topo.nvlink_bandwidth == pytest.approx(900 * GB)        # H100: 7,200 Gb/s = 900 GB/s per GPU
    assert topo.kind == "roce"


def test_latency_counts_the_switches_a_link_enters(layout):
    topo = topology_from_layout(layout, hop_latency=2e-6)
    into_switch = topo.link_head < topo.n_switches
    assert np.allclose(topo.link_latency[into_switch], 2e-6)
    assert np.allclose(topo.link_latency[~into_switch], 0.0)
    assert ((~into_switch) == ((topo.link_tier == LINK_NIC_LEAF) & ~topo.link_is_up)).all()
    assert topology_from_layout(layout).link_latency.max() == DEFAULT_HOP_LATENCY


def test_gpu_nics_leaves_and_hosts(layout):
    topo = topology_from_layout(layout)
    assert topo.n_gpus == 256 and topo.gpu_usable.all()
    assert np.array_equal(topo.gpu_host, np.repeat(np.arange(32), 8))
    assert np.array_equal(layout.nic_gpu[topo.gpu_nic], np.arange(256))
    # each GPU's uplink leaves its NIC node and enters its leaf; 16 GPUs (2 hosts) per leaf
    assert np.array_equal(topo.link_tail[topo.gpu_uplink], topo.n_switches + np.arange(256))
    assert np.array_equal(topo.link_head[topo.gpu_uplink], topo.gpu_leaf)
    assert (topo.switch_tier[topo.gpu_leaf] == TIER_LEAF).all()
    assert (np.bincount(topo.gpu_leaf) [topo.leaves] == 16).all()
    assert np.array_equal(np.sort(topo.gpu_leaf_port.reshape(16, 16), axis=1), np.tile(np.arange(16), (16, 1)))


def test_a_failed_cable_carries_nothing(layout):
    # given one leaf-spine cable failed and one spine-core cable in maintenance
    ls, sc = backend_cables(layout, LINK_LEAF_SPINE)[5], backend_cables(layout, LINK_SPINE_CORE)[9]
    layout.link_status[ls] = STATUS_FAILED
    layout.link_status[sc] = STATUS_MAINTENANCE
    topo = topology_from_layout(layout)
    # then both are gone in both directions, and nothing else
    assert topo.n_links == 2 * (len(backend_cables(layout)) - 2)
    assert ls not in topo.link_cable and sc not in topo.link_cable
    assert (topo.leaf_up < 0).sum() == 1 and (topo.spine_up < 0).sum() == 1
    assert topo.gpu_usable.all()
    # the switch tables keep every other cable at its place (static routing indexes them by position)
    before = topology_from_layout(expand(load_spec("demo-256")))
    for name in ("leaf_up", "spine_up"):
        old, new = getattr(before, name), getattr(topo, name)
        alive = new >= 0
        assert np.array_equal(before.link_cable[old[alive]], topo.link_cable[new[alive]])
        assert set(before.link_cable[old[~alive]].tolist()) <= {ls, sc}


def test_a_failed_port_takes_its_cable_down(layout):
    cable = backend_cables(layout, LINK_LEAF_SPINE)[0]
    layout.port_status[layout.link_b[cable]] = STATUS_FAILED
    topo = topology_from_layout(layout)
    assert cable not in topo.link_cable and topo.n_links == 2 * (len(backend_cables(layout)) - 1)


def test_a_drained_switch_removes_all_its_cables(layout):
    # given spine 0 of zone 0 drained and one core failed
    topo0 = topology_from_layout(layout)
    spine = int(topo0.switch_layout_id[topo0.spines[0]])
    core = int(topo0.switch_layout_id[topo0.cores[3]])
    layout.switch_status[spine] = STATUS_DRAINED
    layout.switch_status[core] = STATUS_FAILED
    topo = topology_from_layout(layout)
    gone = np.union1d(cables_of_switch(layout, spine), cables_of_switch(layout, core))
    # spine 0 of zone 0: 8 leaves x 4 cables down, 2 cores x 4 up; the core: 2 zones x 4 cables, one shared with it
    assert len(gone) == 32 + 8 + 8 - (4 if layout.switch_group[core] == 0 else 0)
    assert topo.n_links == 2 * (len(backend_cables(layout)) - len(gone))
    assert not np.isin(topo.link_cable, gone).any()
    nodes = np.r_[topo.link_tail, topo.link_head]
    assert topo0.spines[0] not in nodes and topo0.cores[3] not in nodes
    assert not topo.switch_active[topo0.spines[0]] and topo.gpu_usable.all()


def test_gpu_usable_reflects_failed_nic_gpu_and_leaf(layout):
    # given GPU 3's NIC failed, GPU 20 failed, the leaf of GPUs 32-47 drained
    nic3 = np.flatnonzero((layout.nic_gpu == 3) & (layout.nic_fabric == FABRIC_BACKEND))[0]
    layout.nic_status[nic3] = STATUS_FAILED
    layout.gpu_status[20] = STATUS_FAILED
    topo0 = topology_from_layout(layout)
    layout.switch_status[topo0.switch_layout_id[topo0.gpu_leaf[32]]] = STATUS_DRAINED
    topo = topology_from_layout(layout)
    unusable = set(np.flatnonzero(~topo.gpu_usable).tolist())
    assert unusable == {3, 20} | set(range(32, 48))
    # the failed NIC's cable is gone; the failed GPU's NIC cable stays (the network is intact)
    assert topo.gpu_uplink[3] == -1 and topo.gpu_downlink[3] == -1
    assert topo.gpu_uplink[20] >= 0


def test_link_names_are_readable(layout):
    topo = topology_from_layout(layout)
    names = topo.link_names([topo.gpu_uplink[12], topo.leaf_up[3, 2, 1], topo.spine_up[5, 1, 3] + topo.n_cables])
    assert names[0] == "nic h00001.r4 -> rtsw z00.000 #0"
    assert names[1] == "rtsw z00.003 -> ctsw z00.s02 #1"
    assert names[2] == "atsw p01.c1 -> ctsw z01.s01 #3"
    assert len(set(topo.link_names(np.arange(topo.n_links)))) == topo.n_links


def test_switch_tables_match_the_spec(layout):
    topo = topology_from_layout(layout)
    # demo-256: 16 leaves x 4 planes x 4 parallel cables; 8 spines x 2 cores x 4 parallel cables
    assert topo.leaf_up.shape == (16, 4, 4) and topo.spine_up.shape == (8, 2, 4)
    assert topo.spine_at.shape == (2, 4) and topo.core_at.shape == (4, 2)
    heads = topo.link_head[topo.leaf_up]
    assert np.array_equal(topo.switch_group[heads], np.broadcast_to(np.arange(4)[None, :, None], heads.shape))
    assert (topo.switch_tier[topo.link_head[topo.spine_up]] == TIER_CORE).all()
    assert (topo.switch_tier[topo.spines] == TIER_SPINE).all()
    assert topo.leaf_downlinks == 16


@pytest.mark.parametrize("preset,cables", [("meta-roce-24k", 24576 + 1536 * 18 + 144 * 28),
                                           ("meta-ib-24k", 3 * 24576)])
def test_presets(preset, cables):
    topo = topology_from_layout(expand(load_spec(preset)))
    assert topo.n_links == 2 * cables and topo.n_gpus == 24576
    assert topo.kind == ("infiniband" if "ib" in preset else "roce")
