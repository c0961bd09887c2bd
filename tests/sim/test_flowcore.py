"""sim/core/flowcore.py: the one event-driven flow core (group waits, background flows, the interval hook) and that
netsim uses it unchanged."""
import doctest

import numpy as np
import pytest

import sim.core.flowcore
import sim.fabric.netsim
from sim.core.flowcore import simulate_flows


def test_doctests():
    assert doctest.testmod(sim.core.flowcore).failed == 0


def test_netsim_uses_the_same_core():
    assert sim.fabric.netsim.simulate_flows is simulate_flows


def test_a_flow_waiting_for_a_group_starts_when_the_group_ends():
    # flows 0, 1 (group 0) on link 0 (1 B/s): 2 and 4 bytes -> 0 ends at 4 s, 1 at 6 s. Flow 2 (link 1, 3 B/s,
    # 6 bytes) waits for group 0: starts at 6, ends at 8. Flow 3 waits too but may not start before 10: ends 12.
    r = simulate_flows([0, 1, 2, 3, 4], [0, 0, 1, 1], [1.0, 3.0], [2.0, 4.0, 6.0, 6.0], start=[0, 0, 0, 10.0],
                       group=[0, 0, -1, -1], after=[-1, -1, 0, 0])
    assert r.finish.tolist() == pytest.approx([4.0, 6.0, 8.0, 12.0])
    assert r.start.tolist() == pytest.approx([0.0, 0.0, 6.0, 10.0])


def test_waiting_for_a_group_that_never_ends_never_starts():
    r = simulate_flows([0, 1, 2], [0, 1], [0.0, 1.0], [1.0, 1.0], group=[0, -1], after=[-1, 0])
    assert np.isinf(r.finish).all()


def test_a_flow_cannot_wait_for_its_own_group():
    with pytest.raises(ValueError, match="own group"):
        simulate_flows([0, 1], [0], [1.0], [1.0], group=[0], after=[0])


def test_background_flows_share_until_the_others_end_and_are_cut_there():
    # A persistent flow capped at 0.25 B/s beside a 3-byte flow on a 1 B/s link: the other gets 0.75, ends at 4 s.
    r = simulate_flows([0, 1, 2], [0, 0], [1.0], [3.0, 0.0], rate_cap=[np.inf, 0.25], persistent=[False, True])
    assert r.finish.tolist() == pytest.approx([4.0, 4.0])
    assert r.delivered.tolist() == pytest.approx([3.0, 1.0])


def test_the_interval_hook_sees_every_byte_move():
    rng = np.random.default_rng(3)
    F, L = 40, 6
    links = rng.integers(0, L, size=(F, 2))
    ptr = np.arange(0, 2 * F + 1, 2)
    size = rng.uniform(1, 10, F)
    start = rng.uniform(0, 5, F)
    moved = np.zeros(F)

    def hook(t, dt, act, rates):
        assert dt >= 0
        moved[act] += rates * dt
    r = simulate_flows(ptr, links.ravel(), rng.uniform(1, 3, L), size, start=start, on_interval=hook)
    assert moved == pytest.approx(size)                     # conservation: every byte is carried exactly once
    assert r.delivered == pytest.approx(size)
    assert (r.finish >= start + size / 3.0 - 1e-9).all()    # no flow beats its fastest link


def test_usage_scales_what_a_flow_costs_a_resource():
    # 4 bytes through a CPU of 1 core at 0.5 core-seconds per byte: 2 bytes/s, done at 2 s.
    r = simulate_flows([0, 1], [0], [1.0], [4.0], usage=[0.5])
    assert r.finish.tolist() == pytest.approx([2.0])
