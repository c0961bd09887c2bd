"""Placement policies (sim/fabric/placement.py): sizes, only usable GPUs, host-consecutive ranks, packing, errors.

demo-256: 2 zones x 8 leaves x 2 hosts x 8 GPUs; GPU ids are host-major, hosts leaf-major, leaves zone-major.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.fabric.layout import expand
from sim.fabric.placement import PLACEMENTS, place
from sim.fabric.spec import load_spec
from sim.fabric.topology import topology_from_layout


@pytest.fixture(scope="module")
def demo():
    return topology_from_layout(expand(load_spec("demo-256")))


def with_unusable(topo, gpus):
    """A copy of ``topo`` whose ``gpus`` are unusable (as if their NICs had failed)."""
    import dataclasses
    usable = topo.gpu_usable.copy()
    usable[list(gpus)] = False
    return dataclasses.replace(topo, gpu_usable=usable, cache={})


def zone_of(topo, gpus):
    return topo.switch_zone[topo.gpu_leaf[gpus]]


def fewest_units(counts, n):
    """The fewest units (with these usable counts) that hold n GPUs."""
    return int(np.searchsorted(np.cumsum(np.sort(counts)[::-1]), n) + 1)


@pytest.mark.parametrize("policy", PLACEMENTS)
@pytest.mark.parametrize("n", [1, 5, 8, 16, 40, 128, 200, 256])
def test_sizes_uniqueness_and_usable_only(demo, policy, n):
    topo = with_unusable(demo, [3, 77, 130]) if n < 256 else demo
    ranks = place(topo, n, policy, seed=4)
    assert ranks.shape == (n,) and len(np.unique(ranks)) == n
    assert topo.gpu_usable[ranks].all()


@pytest.mark.parametrize("policy", PLACEMENTS)
def test_ranks_of_a_host_are_consecutive(demo, policy):
    ranks = place(demo, 96, policy, seed=7)
    hosts = demo.gpu_host[ranks]
    # 12 whole hosts, each a run of 8 consecutive ranks
    assert len(np.unique(hosts)) == 12
    assert (np.count_nonzero(np.diff(hosts)) == 11)
    assert np.array_equal(np.bincount(hosts)[np.unique(hosts)], np.full(12, 8))


def test_first_fit_takes_the_lowest_usable_ids(demo):
    topo = with_unusable(demo, [2, 20])
    assert place(topo, 20, "first-fit").tolist() == [0, 1] + list(range(3, 20)) + [21]


def test_topology_with_everything_usable_is_the_contiguous_block(demo):
    for n in (1, 8, 16, 100, 128, 129, 256):
        assert place(demo, n, "topology").tolist() == list(range(n))


def test_topology_packs_into_the_fewest_zones_and_leaves(demo):
    # given scattered failures: zone 0 loses 5 GPUs (3 of them on leaf 1), zone 1 loses 2
    topo = with_unusable(demo, [0, 17, 18, 19, 100, 140, 250])
    zone_counts = np.bincount(zone_of(topo, np.flatnonzero(topo.gpu_usable)))
    for n in (10, 16, 17, 40, 126, 127, 128, 200, 249):
        ranks = place(topo, n, "topology")
        zones = np.unique(zone_of(topo, ranks))
        assert len(zones) == fewest_units(zone_counts, n), n
        # within the chosen zones, the fewest leaves that hold the job
        usable = np.flatnonzero(topo.gpu_usable & np.isin(zone_of(topo, np.arange(256)), zones))
        leaf_counts = np.bincount(topo.gpu_leaf[usable])
        leaf_counts = leaf_counts[leaf_counts > 0]
        assert len(np.unique(topo.gpu_leaf[ranks])) == fewest_units(leaf_counts, n), n
        assert np.array_equal(ranks, np.sort(ranks))
    # a job that fits in one zone goes where it fits best (zone 0 has 123 usable GPUs, zone 1 has 126)
    assert zone_counts.tolist() == [123, 126]
    assert set(zone_of(topo, place(topo, 125, "topology")).tolist()) == {1}
    assert set(zone_of(topo, place(topo, 100, "topology")).tolist()) == {0}
    # and a job of one leaf avoids the damaged leaves: 16 GPUs on one full leaf
    ranks = place(topo, 16, "topology")
    assert len(np.unique(topo.gpu_leaf[ranks])) == 1


def test_first_fit_ignores_leaf_boundaries_where_topology_does_not(demo):
    topo = with_unusable(demo, [1])
    assert len(np.unique(topo.gpu_leaf[place(topo, 16, "first-fit")])) == 2
    assert len(np.unique(topo.gpu_leaf[place(topo, 16, "topology")])) == 1


def test_random_and_fragmented_are_deterministic_per_seed_and_scattered(demo):
    for policy in ("random", "fragmented"):
        a, b = place(demo, 64, policy, seed=1), place(demo, 64, policy, seed=1)
        c = place(demo, 64, policy, seed=2)
        assert np.array_equal(a, b) and not np.array_equal(np.sort(a), np.sort(c))
        # whole hosts drawn from the whole cluster: both zones, more leaves than the 4 a packed job needs
        assert len(np.unique(zone_of(demo, a))) == 2
        assert len(np.unique(demo.gpu_leaf[a])) > 4
    frag = place(demo, 64, "fragmented", seed=3)
    assert np.array_equal(frag, np.sort(frag))                     # fragmented: ranks in host order
    rnd = place(demo, 64, "random", seed=3)
    assert not np.array_equal(rnd, np.sort(rnd))                   # random: hosts in draw order


def test_random_prefers_fully_usable_hosts(demo):
    topo = with_unusable(demo, [8 * h for h in range(0, 32, 2)])   # every even host lost one GPU
    ranks = place(topo, 128, "random", seed=5)                     # 16 whole hosts are available
    assert (topo.gpu_host[ranks] % 2 == 1).all()


def test_errors(demo):
    topo = with_unusable(demo, [5, 6])
    with pytest.raises(ValueError, match="asked for 255 GPUs but only 254 of the cluster's 256 are usable"):
        place(topo, 255, "topology")
    with pytest.raises(ValueError, match="placement 'best' is not one of topology, first-fit, random, fragmented"):
        place(demo, 8, "best")
    with pytest.raises(ValueError, match="at least 1 GPU"):
        place(demo, 0, "first-fit")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dead=st.sets(st.integers(0, 255), max_size=40), n=st.integers(1, 216),
       policy=st.sampled_from(PLACEMENTS), seed=st.integers(0, 3))
def test_any_placement_is_valid(demo, dead, n, policy, seed):
    topo = with_unusable(demo, dead)
    ranks = place(topo, n, policy, seed=seed)
    assert len(np.unique(ranks)) == n and topo.gpu_usable[ranks].all()
    hosts = topo.gpu_host[ranks]
    # each host's ranks form one consecutive run
    assert np.count_nonzero(np.diff(hosts)) == len(np.unique(hosts)) - 1
    if policy == "topology":
        zone_counts = np.bincount(zone_of(topo, np.flatnonzero(topo.gpu_usable)))
        assert len(np.unique(zone_of(topo, ranks))) == fewest_units(zone_counts, n)
