"""Max-min fair rates (sim/core/maxmin.py): analytic cases, the physics on random instances, and the textbook reference.

Rates and capacities are bytes/s; the small instances use round numbers for readability.
"""
import doctest

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim.core.maxmin
from sim.core.maxmin import (bottleneck_links, csr_from_lists, link_loads, max_min_rates, reference_max_min,
                        solve_max_min)

RTOL = 1e-9
INF = np.inf


def solve(paths, capacity, rate_cap=None, **kwargs):
    """Rates of flows given as lists of link ids."""
    ptr, links = csr_from_lists(paths)
    return max_min_rates(ptr, links, np.asarray(capacity, dtype=float), rate_cap, **kwargs)


def fairness_violations(paths, capacity, rate_cap, rates, rtol=RTOL):
    """What keeps ``rates`` from being the max-min fair allocation, in words (empty when it is one).

    Written plainly, one flow and one link at a time, independent of the solver: no link over capacity, and every
    flow at its cap or crossing a saturated link on which no flow has a higher rate.
    """
    capacity = [float(c) for c in capacity]
    caps = [INF] * len(paths) if rate_cap is None else [float(c) for c in rate_cap]
    scale = max([c for c in capacity + caps if np.isfinite(c)], default=1.0)
    atol = rtol * scale
    load = [0.0] * len(capacity)
    top = [0.0] * len(capacity)
    for path, rate in zip(paths, rates):
        for link in path:
            load[link] += rate
            top[link] = max(top[link], rate)
    problems = []
    for link, (used, cap) in enumerate(zip(load, capacity)):
        if used > cap * (1 + rtol) + atol:
            problems.append(f"link {link} carries {used} > capacity {cap}")
    for flow, (path, rate, cap) in enumerate(zip(paths, rates, caps)):
        if rate < 0 or rate > cap * (1 + rtol) + atol:
            problems.append(f"flow {flow} rate {rate} outside [0, cap {cap}]")
        if rate >= cap * (1 - rtol) - atol:
            continue                                    # at its cap (inf for a free flow on no finite link)
        if not any(load[l] >= capacity[l] * (1 - rtol) - atol and rate >= top[l] * (1 - rtol) - atol for l in path):
            problems.append(f"flow {flow} at {rate} has no bottleneck link and is below its cap {cap}")
    return problems


# ----------------------------------------------------------------------------------------------- analytic cases

def test_one_link_is_split_evenly():
    # given one link of 12 bytes/s shared by n flows
    for n in (1, 2, 3, 7):
        # when solved, then each flow gets capacity / n
        np.testing.assert_allclose(solve([[0]] * n, [12.0]), [12.0 / n] * n, rtol=RTOL)


def test_parking_lot():
    # given three links in a row (1, 2, 3 bytes/s), a long flow across all of them and one short flow per link
    paths = [[0, 1, 2], [0], [1], [2]]
    # when solved
    sol = solve_max_min(*csr_from_lists(paths), [1.0, 2.0, 3.0])
    # then the long flow and the first short flow split link 0; the other short flows take what is left
    np.testing.assert_allclose(sol.rates, [0.5, 0.5, 1.5, 2.5], rtol=RTOL)


def test_equal_parking_lot_is_one_level():
    # given the classic parking lot: n links of equal capacity, one long flow and one short flow per link
    n = 5
    paths = [list(range(n))] + [[l] for l in range(n)]
    # then everybody gets half a link
    np.testing.assert_allclose(solve(paths, [1.0] * n), [0.5] * (n + 1), rtol=RTOL)


def test_two_bottleneck_levels():
    # given link A (10 bytes/s) with flows 0 and 1, link B (100 bytes/s) with flow 1 and three others
    paths = [[0], [0, 1], [1], [1], [1]]
    for band in (None, 1, 2):
        # when solved (in big or small bands)
        rates = solve(paths, [10.0, 100.0], band=band)
        # then A splits 5/5, and B gives the rest to its other three flows
        np.testing.assert_allclose(rates, [5, 5, 95 / 3, 95 / 3, 95 / 3], rtol=RTOL)


def test_caps_release_capacity_to_the_others():
    # given one 10 bytes/s link with three flows, one capped at 1 and one at 100
    rates = solve([[0], [0], [0]], [10.0], rate_cap=[1.0, 100.0, INF])
    # then the capped flow gets its cap and the others share the rest
    np.testing.assert_allclose(rates, [1.0, 4.5, 4.5], rtol=RTOL)


def test_cap_above_the_fair_share_does_not_bind():
    rates = solve([[0], [0]], [10.0], rate_cap=[6.0, INF])
    np.testing.assert_allclose(rates, [5.0, 5.0], rtol=RTOL)


def test_zero_capacity_link_stops_its_flows_only():
    # given a dead link 0 and a live link 1 (8 bytes/s); flow 0 crosses both, flows 1 and 2 only the live one
    rates = solve([[0, 1], [1], [1]], [0.0, 8.0])
    # then the flow over the dead link gets 0 and leaves the live link to the others
    np.testing.assert_allclose(rates, [0.0, 4.0, 4.0], rtol=RTOL)


def test_flows_on_no_link_get_their_cap_or_inf():
    # given a flow on no link with a cap, one on no link without cap, and a flow on a link
    rates = solve([[], [], [0]], [3.0], rate_cap=[2.0, INF, INF])
    assert rates.tolist() == [2.0, INF, 3.0]
    assert solve([[]], [1.0]).tolist() == [INF]


def test_infinite_capacity():
    # given an unlimited link 0 carrying a free flow, a capped flow and a flow that also crosses a 4 bytes/s link
    rates = solve([[0], [0], [0, 1]], [INF, 4.0], rate_cap=[INF, 3.0, INF])
    assert rates.tolist() == [INF, 3.0, 4.0]


def test_an_unlimited_flow_leaves_an_infinite_link_infinite():
    # given an unlimited link 0 with a free flow (rate inf, frozen first) and flow 1 that also crosses link 1,
    # shared with flow 2, which a 1 bytes/s link 2 holds back
    rates = solve([[0], [0, 1], [1, 2]], [INF, 4.0, 1.0])
    # then flow 1 still sees link 0 as unlimited and takes what flow 2 leaves on link 1
    assert rates.tolist() == [INF, 3.0, 1.0]


def test_a_link_listed_twice_is_loaded_twice():
    # given flow 0 listing link 0 twice (the documented convention: it loads the link twice) and flow 1 once
    rates = solve([[0, 0], [0]], [3.0])
    # then both get 1 and the link carries 2 * 1 + 1 = 3
    np.testing.assert_allclose(rates, [1.0, 1.0], rtol=RTOL)


def test_no_flows_and_no_links():
    assert solve([], [1.0]).shape == (0,)
    assert solve([[]], []).tolist() == [INF]
    assert solve_max_min([0], [], []).rounds == 0


def test_independent_levels_freeze_in_one_round():
    # given 300 separate links of different capacities, each with its own flows: 300 bottleneck levels
    rng = np.random.default_rng(1)
    capacity = rng.uniform(1, 100, 300)
    paths = [[l] for l in range(300) for _ in range(1 + l % 3)]
    # when solved with every flow examined each round
    sol = solve_max_min(*csr_from_lists(paths), capacity, band=len(paths))
    # then all levels freeze in the same round, at the right rates
    assert sol.rounds == 1
    np.testing.assert_allclose(sol.rates, [capacity[l] / (1 + l % 3) for [l] in paths], rtol=RTOL)


def test_input_is_checked():
    ptr, links = csr_from_lists([[0], [1]])
    with pytest.raises(ValueError, match="capacity"):
        max_min_rates(ptr, links, [1.0, -1.0])
    with pytest.raises(ValueError, match="capacity"):
        max_min_rates(ptr, links, [1.0, np.nan])
    with pytest.raises(ValueError, match="flow_links"):
        max_min_rates(ptr, links, [1.0])
    with pytest.raises(ValueError, match="flow_ptr"):
        max_min_rates([0, 2, 1], links, [1.0, 1.0])
    with pytest.raises(ValueError, match="rate_cap"):
        max_min_rates(ptr, links, [1.0, 1.0], rate_cap=[1.0])
    with pytest.raises(ValueError, match="band"):
        max_min_rates(ptr, links, [1.0, 1.0], band=0)


def test_csr_offsets_may_start_anywhere():
    # given CSR arrays whose offsets start at 2 (a slice of a larger incidence): flow 0 on link 0, flow 1 on 0 and 1
    rates = max_min_rates([2, 3, 5], [9, 9, 0, 0, 1], [4.0, 1.0])
    # then flow 1 is held to 1 by link 1 and flow 0 takes the rest of link 0 (the entries before 2 are ignored)
    np.testing.assert_allclose(rates, [3.0, 1.0], rtol=RTOL)


def test_helpers():
    ptr, links = csr_from_lists([[0, 1], [], [1]])
    assert ptr.tolist() == [0, 2, 2, 3] and links.tolist() == [0, 1, 1]
    assert link_loads(ptr, links, [1.0, 5.0, 2.0], 3).tolist() == [1.0, 3.0, 0.0]
    # flow 0 is bottlenecked on link 0 (saturated, it is the largest there); flow 2 on link 1; flow 1 on nothing
    rates = max_min_rates(ptr, links, [1.0, 10.0])
    assert bottleneck_links(ptr, links, [1.0, 10.0], rates).tolist() == [0, -1, 1]


def test_the_doctests_hold():
    assert doctest.testmod(sim.core.maxmin).failed == 0


def test_the_checker_rejects_unfair_or_infeasible_rates():
    # the physics check below must be able to fail: an even split that ignores a bottleneck, and an overload
    paths, capacity = [[0], [0, 1], [1], [1], [1]], [10.0, 100.0]
    assert fairness_violations(paths, capacity, None, [5, 5, 95 / 3, 95 / 3, 95 / 3]) == []
    assert fairness_violations(paths, capacity, None, [5, 5, 30, 30, 30])          # link B not saturated
    assert fairness_violations(paths, capacity, None, [6, 5, 95 / 3, 95 / 3, 95 / 3])  # link A overloaded
    assert fairness_violations(paths, capacity, None, [2, 8, 92 / 3, 92 / 3, 92 / 3])  # flow 0 starved


# ------------------------------------------------------------------------------------------- random instances

CAPACITIES = st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0, 6.0, 10.0, INF]), st.floats(0.25, 100.0))
CAPS = st.one_of(st.just(INF), st.sampled_from([0.5, 1.0, 2.0, 5.0]), st.floats(0.1, 50.0))


@st.composite
def instances(draw, max_links=7, max_flows=12):
    """Random flows (distinct links each, possibly none) over links with equal and unequal capacities."""
    n_links = draw(st.integers(1, max_links))
    capacity = draw(st.lists(CAPACITIES, min_size=n_links, max_size=n_links))
    path = st.lists(st.integers(0, n_links - 1), unique=True, max_size=min(4, n_links))
    paths = draw(st.lists(path, max_size=max_flows))
    rate_cap = draw(st.none() | st.lists(CAPS, min_size=len(paths), max_size=len(paths)))
    band = draw(st.sampled_from([None, 1, 2, 3, 5]))
    return paths, capacity, rate_cap, band


def finite_scale(values):
    """The largest finite value (1 if none): the scale of the absolute tolerance."""
    return max([v for v in values if np.isfinite(v)], default=1.0)


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(instances())
def test_random_rates_are_max_min_fair(instance):
    paths, capacity, rate_cap, band = instance
    rates = solve(paths, capacity, rate_cap, band=band)
    assert fairness_violations(paths, capacity, rate_cap, rates) == []


@FAST
@given(instances())
def test_random_rates_match_the_textbook_water_filling(instance):
    paths, capacity, rate_cap, band = instance
    ptr, links = csr_from_lists(paths)
    expected = reference_max_min(ptr, links, capacity, rate_cap)
    assert fairness_violations(paths, capacity, rate_cap, expected) == []       # the reference is right, too
    np.testing.assert_allclose(solve(paths, capacity, rate_cap, band=band), expected, rtol=RTOL,
                               atol=RTOL * finite_scale(capacity))


@settings(max_examples=60, deadline=None)
@given(instances(), st.sampled_from([0.5, 3.0, 1e9]), st.randoms(use_true_random=False))
def test_random_rates_scale_with_capacity_and_ignore_flow_order(instance, factor, random):
    paths, capacity, rate_cap, band = instance
    rates = solve(paths, capacity, rate_cap, band=band)
    # scaling every capacity and cap scales every rate
    scaled_caps = None if rate_cap is None else [c * factor for c in rate_cap]
    np.testing.assert_allclose(solve(paths, [c * factor for c in capacity], scaled_caps, band=band), rates * factor,
                               rtol=RTOL, atol=RTOL * factor * finite_scale(capacity))
    # listing the flows in another order permutes the rates
    order = list(range(len(paths)))
    random.shuffle(order)
    shuffled_caps = None if rate_cap is None else [rate_cap[i] for i in order]
    np.testing.assert_allclose(solve([paths[i] for i in order], capacity, shuffled_caps, band=band), rates[order],
                               rtol=RTOL, atol=RTOL * finite_scale(capacity))


def test_a_larger_instance_in_small_bands_matches_the_reference():
    # given 400 flows over 60 links with skewed link popularity, ties (capacities from a short list) and some caps
    rng = np.random.default_rng(7)
    n_links = 60
    capacity = rng.choice([10.0, 25.0, 40.0, 100.0], n_links)
    popularity = 1.0 / np.arange(1, n_links + 1)
    paths = [list(rng.choice(n_links, size=rng.integers(1, 5), replace=False, p=popularity / popularity.sum()))
             for _ in range(400)]
    rate_cap = np.where(rng.random(400) < 0.1, rng.uniform(0.5, 5.0, 400), INF)
    ptr, links = csr_from_lists(paths)
    expected = reference_max_min(ptr, links, capacity, rate_cap)
    for band in (None, 7, 50):
        # when solved in bands of various sizes, then the rates are the reference's and the physics holds
        sol = solve_max_min(ptr, links, capacity, rate_cap, band=band)
        np.testing.assert_allclose(sol.rates, expected, rtol=RTOL)
        assert fairness_violations(paths, capacity, rate_cap, sol.rates) == []
        assert np.all(bottleneck_links(ptr, links, capacity, sol.rates)[sol.rates < rate_cap * (1 - RTOL)] >= 0)


def test_identical_flows_group_only_equal_paths_and_the_weighted_solve_equals_the_unmerged_one():
    from sim.core.maxmin import identical_flows
    rng = np.random.default_rng(7)
    paths = [rng.choice(12, size=rng.integers(1, 5), replace=False).tolist() for _ in range(40)]
    flows = [paths[i] for i in rng.integers(0, len(paths), size=400)]      # many flows share a path
    ptr, links = csr_from_lists(flows)
    rep, cls = identical_flows(ptr, links)
    assert len({tuple(flows[r]) for r in rep}) == len(rep) == len({tuple(f) for f in flows})
    assert all(flows[i] == flows[rep[c]] for i, c in enumerate(cls.tolist()))
    capacity = rng.uniform(1.0, 10.0, size=12)
    merged_ptr, merged_links = csr_from_lists([flows[r] for r in rep])
    weighted = max_min_rates(merged_ptr, merged_links, capacity, weight=np.bincount(cls))[cls]
    assert np.allclose(weighted, max_min_rates(ptr, links, capacity), rtol=1e-12)


def test_identical_rows_of_a_padded_table_are_the_classes_of_its_csr():
    """The router's padded path table (-1 past a path's end) grouped whole-row, runs of equal rows first, gives the
    classes identical_flows finds on the same paths as CSR, numbered by their lowest flow."""
    from sim.core.maxmin import identical_flows, identical_rows
    rng = np.random.default_rng(11)
    paths = [rng.choice(2**31 - 1, size=rng.integers(1, 7), replace=False).tolist() for _ in range(30)]
    pick = np.repeat(rng.integers(0, len(paths), size=300), rng.integers(1, 4, size=300))   # runs of equal rows
    table = np.full((pick.size, 6), -1, dtype=np.int32)
    for i, p in enumerate(pick.tolist()):
        table[i, :len(paths[p])] = paths[p]
    ptr, links = csr_from_lists([paths[p] for p in pick.tolist()])
    rep, cls = identical_rows(table)
    rep0, cls0 = identical_flows(ptr, links)
    assert np.array_equal(rep, rep0) and np.array_equal(cls, cls0)
    assert rep.tolist() == sorted(rep.tolist()) and len(rep) == len(set(pick.tolist()))


def test_usage_costs_a_link_per_unit_of_rate():
    # One link of 12: a flow costing 2 per unit and one costing 1 share it at the same rate, 4 each (8 + 4 = 12).
    rates = max_min_rates([0, 1, 2], [0, 0], [12.0], usage=[2.0, 1.0])
    assert rates.tolist() == pytest.approx([4.0, 4.0])
    # Alone, a flow costing 0.25 per byte on a CPU of 2 cores runs at 8 bytes/s.
    assert max_min_rates([0, 1], [0], [2.0], usage=[0.25]).tolist() == pytest.approx([8.0])


def test_usage_of_one_is_the_plain_problem_and_no_link_is_overloaded():
    rng = np.random.default_rng(3)
    lists = [rng.choice(40, size=rng.integers(1, 5), replace=False).tolist() for _ in range(300)]
    ptr, links = csr_from_lists(lists)
    cap = rng.uniform(1, 10, 40)
    plain = max_min_rates(ptr, links, cap)
    assert max_min_rates(ptr, links, cap, usage=np.ones(links.size)) == pytest.approx(plain)
    use = rng.uniform(0.2, 3.0, links.size)
    rates = max_min_rates(ptr, links, cap, usage=use)
    load = link_loads(ptr, links, rates, 40, usage=use)
    assert (load <= cap * (1 + 1e-9)).all()
    # Max-min: every flow crosses a saturated link on which no flow runs faster.
    entry_rate = np.repeat(rates, np.diff(ptr))
    top = np.zeros(40)
    np.maximum.at(top, links, entry_rate)
    ok = (load[links] >= cap[links] * (1 - 1e-9)) & (entry_rate >= top[links] * (1 - 1e-9))
    assert np.logical_or.reduceat(ok, ptr[:-1]).all()


def test_usage_is_refused_when_not_positive():
    with pytest.raises(ValueError, match="usage"):
        max_min_rates([0, 1], [0], [1.0], usage=[0.0])
