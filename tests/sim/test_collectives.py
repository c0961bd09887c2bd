"""Collectives as transfers (sim/fabric/collectives.py): NCCL's rings over rails, the double binary tree, the data each
rank must send and receive, nccl-tests' bus bandwidth factors, and clear refusals.

Sizes are in bytes per byte of message size (``share``): a phase moves ``steps x share x S`` bytes per transfer.
"""
import doctest

import numpy as np
import pytest

import sim.fabric.collectives
from sim.fabric.collectives import (COLLECTIVES, CollectiveError, btree_parents, busbw_factor, canonical, dtree_parents,
                             element_count, host_groups, plan_collective, tree_depth)
from sim.fabric.latency import critical_path


def packed(n, per_host=8):
    """A placement of ``n`` ranks on whole hosts: rank r on GPU r, GPU g on host g // per_host."""
    return np.arange(n), np.arange(max(n, per_host) * 2) // per_host


def sent_received(plan, n_gpus):
    """Bytes (per byte of S) each GPU sends and receives over the whole collective, and over the network."""
    out, inn = np.zeros(n_gpus), np.zeros(n_gpus)
    for ph in plan.phases:
        np.add.at(out, ph.src, ph.steps * ph.share)
        np.add.at(inn, ph.dst, ph.steps * ph.share)
    return out, inn


def test_doctests():
    assert doctest.testmod(sim.fabric.collectives).failed == 0


# ------------------------------------------------------------------------------------------------ conventions
@pytest.mark.parametrize("name, n, factor", [
    ("allreduce", 8, 2 * 7 / 8), ("allgather", 8, 7 / 8), ("reducescatter", 16, 15 / 16), ("alltoall", 4, 3 / 4),
    ("broadcast", 64, 1.0), ("reduce", 64, 1.0), ("all_reduce", 2, 1.0), ("all-gather", 2, 0.5),
])
def test_busbw_factors_follow_nccl_tests(name, n, factor):
    # nccl-tests doc/PERFORMANCE.md: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AlltoAll (n-1)/n; else 1.
    assert busbw_factor(name, n) == pytest.approx(factor)


def test_count_column_is_per_rank_for_gather_scatter_and_alltoall():
    assert element_count("allgather", 1 << 20, 8) == (1 << 20) // (4 * 8)
    assert element_count("allreduce", 1 << 20, 8) == (1 << 20) // 4
    assert element_count("broadcast", 1 << 20, 8, "half") == (1 << 20) // 2


def test_unknown_names_are_refused_with_the_choices():
    with pytest.raises(CollectiveError, match="unknown collective 'allscatter'.*allgather"):
        canonical("allscatter")
    with pytest.raises(CollectiveError, match="unknown algorithm"):
        plan_collective("allreduce", *packed(16), algorithm="butterfly")
    with pytest.raises(CollectiveError, match="tree algorithm is modelled for allreduce only"):
        plan_collective("allgather", *packed(16), algorithm="tree")
    with pytest.raises(CollectiveError, match="one GPU to two ranks"):
        plan_collective("allgather", np.array([0, 1, 1]), np.zeros(4, int))


# ------------------------------------------------------------------------------------------------ rings
def test_hosts_are_ordered_by_their_lowest_rank_and_gpus_by_index():
    # Given ranks 0-3 on host 5 (reversed GPU order), ranks 4-7 on host 2
    gpu_host = np.repeat(np.arange(8), 4)
    gpus = np.array([23, 22, 21, 20, 8, 9, 10, 11])
    g = host_groups(gpus, gpu_host)
    assert g.host.tolist() == [5, 2]
    assert g.ordered.tolist() == [20, 21, 22, 23, 8, 9, 10, 11]


@pytest.mark.parametrize("n", [16, 64, 24])
def test_each_ring_channel_is_one_cycle_through_every_rank(n):
    gpus, host = packed(n)
    plan = plan_collective("allgather", gpus, host)
    ph, = plan.phases
    assert plan.channels == 16 and ph.steps == n - 1                 # NCCL's 2 channels per NIC (sim.fabric.nccl)
    for c in range(plan.channels):
        sel = ph.channel == c
        nxt = dict(zip(ph.src[sel].tolist(), ph.dst[sel].tolist()))
        assert sorted(nxt) == sorted(nxt.values()) == list(range(n))
        seen, g = [], 0
        for _ in range(n):
            seen.append(g)
            g = nxt[g]
        assert g == 0 and sorted(seen) == list(range(n))          # a single cycle, not several


@pytest.mark.parametrize("channels, per_nic", [(None, 2), (8, 1)])
def test_every_nic_rail_carries_the_same_channels_each_way(channels, per_nic):
    # Given 8 full hosts: the channel rotation makes each GPU's NIC send and receive C / 8 times per step (NCCL's
    # default 16 channels: twice, channels c and c + 8 running the same ring).
    gpus, host = packed(64)
    ph, = plan_collective("allgather", gpus, host, channels=channels).phases
    inter = host[ph.src] != host[ph.dst]
    assert inter.sum() == 8 * 8 * per_nic                         # 8 hosts x C channels
    assert np.bincount(ph.src[inter], minlength=64).tolist() == [per_nic] * 64
    assert np.bincount(ph.dst[inter], minlength=64).tolist() == [per_nic] * 64


def test_partial_hosts_rotate_over_the_gpus_they_have():
    # Given 3 GPUs on host 0 and 8 on host 1: 16 channels (8 NICs on the fullest host); host 0's 3 NICs carry
    # 6, 5 and 5 of them
    gpu_host = np.repeat(np.arange(4), 8)
    gpus = np.r_[0, 1, 2, 8:16]
    ph, = plan_collective("allgather", gpus, gpu_host).phases
    inter = gpu_host[ph.src] != gpu_host[ph.dst]
    out_of_host0 = np.bincount(ph.src[inter & (gpu_host[ph.src] == 0)], minlength=3)
    assert sorted(out_of_host0.tolist()) == [5, 5, 6]


@pytest.mark.parametrize("collective, algorithm, n, each_sends, each_receives", [
    ("allgather", "ring", 32, 31 / 32, 31 / 32),          # every rank receives the N-1 chunks it lacks
    ("reducescatter", "ring", 32, 31 / 32, 31 / 32),
    ("allreduce", "ring", 32, 2 * 31 / 32, 2 * 31 / 32),   # reduce-scatter then all-gather
    ("alltoall", "ring", 24, 23 / 24, 23 / 24),            # S/N to each other rank
])
def test_every_rank_moves_exactly_the_data_the_algorithm_needs(collective, algorithm, n, each_sends, each_receives):
    gpus, host = packed(n)
    plan = plan_collective(collective, gpus, host, algorithm)
    out, inn = sent_received(plan, len(host))
    assert out[:n] == pytest.approx(np.full(n, each_sends))
    assert inn[:n] == pytest.approx(np.full(n, each_receives))


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
@pytest.mark.parametrize("root", [0, 13])
def test_broadcast_reaches_every_rank_once_and_reduce_collects_at_the_root(collective, root):
    gpus, host = packed(32)
    plan = plan_collective(collective, gpus, host, root=root)
    out, inn = sent_received(plan, len(host))
    others = np.arange(32) != root
    if collective == "broadcast":
        assert inn[:32][others] == pytest.approx(1.0) and inn[root] == 0   # S arrives once at every other rank
    else:
        assert out[:32][others] == pytest.approx(1.0) and out[root] == 0   # every other rank sends S once
        assert inn[root] == pytest.approx(1.0)


def test_alltoall_refuses_more_pairs_than_its_budget():
    gpus, host = packed(64)
    with pytest.raises(CollectiveError, match=r"4,032 GPU-pair transfers.*budget of 1,000.*at most 32 ranks"):
        plan_collective("alltoall", gpus, host, max_flows=1000)


def test_alltoall_weights_scale_pair_sizes():
    gpus, host = packed(4, per_host=2)
    w = np.ones((4, 4))
    w[0, 3] = 5.0
    ph, = plan_collective("alltoall", gpus, host, weights=w).phases
    assert ph.mode == "event"
    assert ph.share[(ph.src == 0) & (ph.dst == 3)] == pytest.approx([5 / 4])
    assert ph.share[(ph.src == 1) & (ph.dst == 3)] == pytest.approx([1 / 4])


# ------------------------------------------------------------------------------------------------ trees
def test_btree_matches_nccl_for_five_nodes():
    # ncclGetBtree(5): 0 is the root with child 4; 4 has child 2; 2 has children 1 and 3.
    assert btree_parents(5).tolist() == [-1, 2, 4, 2, 0]


@pytest.mark.parametrize("n", list(range(2, 40)) + [64, 100, 3072])
def test_double_binary_tree_spans_all_hosts_and_balances_children(n):
    for parent in dtree_parents(n):
        assert (parent < 0).sum() == 1                            # one root
        assert tree_depth(parent) <= int(np.ceil(np.log2(n))) + 1   # every node reaches it, in log depth
    t0, t1 = dtree_parents(n)
    kids0 = np.bincount(t0[t0 >= 0], minlength=n)
    kids1 = np.bincount(t1[t1 >= 0], minlength=n)
    # No host has more than 2 children over both trees, so no NIC carries more than a ring's bytes; with an even
    # count every host is a leaf in one of the trees (with an odd one, host 0 has one child in each).
    assert (kids0 + kids1).max() <= 2
    if n % 2 == 0:
        assert not ((kids0 > 0) & (kids1 > 0)).any()


def test_tree_allreduce_loads_each_nic_like_a_ring():
    # Given 16 full hosts: per NIC, both trees together send at most 4 streams of S/(2C) = 2 S / C, as a ring does.
    gpus, host = packed(128)
    ph, = plan_collective("allreduce", gpus, host, "tree").phases
    inter = host[ph.src] != host[ph.dst]
    nic_out = np.bincount(ph.src[inter], weights=ph.share[inter], minlength=128)
    assert nic_out.max() == pytest.approx(2 / 8)
    # Its latency path: up the deepest tree's chain and hosts to the root, then down (7 NVLink hops per host chain).
    sec, net_hops, nvl_hops = critical_path(ph, np.where(inter, 10.0, 1.0), inter)
    depth = max(tree_depth(t) for t in dtree_parents(16))
    assert ph.steps == 1 and (net_hops, nvl_hops) == (2 * depth, 2 * 7) and sec == 2 * (10 * depth + 7)


def test_tree_reduces_every_rank_once_up_and_broadcasts_once_down():
    gpus, host = packed(40)
    plan = plan_collective("allreduce", gpus, host, "tree")
    out, inn = sent_received(plan, len(host))
    # In each of the 2 C sub-trees every non-root rank sends its partial up once and receives the result once;
    # a root sends and receives one stream fewer.
    assert out[:40].min() >= 1 - 1 / 8 - 1e-12 and inn[:40].min() >= 1 - 1 / 8 - 1e-12
    assert sorted(COLLECTIVES) == sorted(set(COLLECTIVES))
