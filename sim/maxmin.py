"""Exact max-min fair bandwidth sharing over a sparse flow x link incidence.

Model
-----
``F`` flows share ``L`` links. Flow ``f`` crosses the links ``flow_links[flow_ptr[f]:flow_ptr[f+1]]`` (the incidence
in CSR form) and gets one rate (bytes/s) on all of them. Link ``l`` carries at most ``capacity[l]`` bytes/s in total.
A flow may have its own upper bound ``rate_cap[f]`` (a NIC or application limit, bytes/s; ``np.inf`` = none), which
the solver treats as a private virtual link of that capacity.

The max-min fair allocation is the unique feasible allocation in which no rate can grow without shrinking a rate
that is already smaller or equal. Equivalently: every flow is at its cap or crosses a *bottleneck* link, one that is
saturated and on which no other flow has a higher rate (Bertsekas & Gallager, *Data Networks*, 2nd ed., 1992,
section 6.5.2, "max-min fairness").

Conventions
-----------
- A flow crossing no link is limited by its cap only: its rate is ``rate_cap[f]``, or ``np.inf`` without a cap.
  Likewise a flow whose links all have infinite capacity and which has no cap gets ``np.inf``.
- A link of capacity 0 gives rate 0 to every flow crossing it.
- A link listed twice for one flow is counted twice (the flow loads it twice); paths should list distinct links.

The flow-level network simulator (DESIGN.md, "Network simulation") calls :func:`max_min_rates` for every collective
step; the same solver serves storage traffic. Rates are bytes/s throughout, loads are bytes/s, capacities bytes/s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

IDX = np.intp
DEFAULT_RTOL = 1e-12   # relative tolerance under which two fair shares count as equal (ties freeze together)


@dataclass(frozen=True)
class MaxMinSolution:
    """The result of :func:`solve_max_min`: ``rates`` (F,) in bytes/s and the number of freezing ``rounds``."""

    rates: np.ndarray
    rounds: int


def csr_from_lists(link_lists) -> tuple[np.ndarray, np.ndarray]:
    """The CSR arrays ``(flow_ptr, flow_links)`` of a list of per-flow link lists.

    >>> ptr, links = csr_from_lists([[0, 1], [], [2]])
    >>> ptr.tolist(), links.tolist()
    ([0, 2, 2, 3], [0, 1, 2])
    """
    lengths = np.fromiter((len(ls) for ls in link_lists), dtype=IDX, count=len(link_lists))
    flow_ptr = np.zeros(len(lengths) + 1, dtype=IDX)
    np.cumsum(lengths, out=flow_ptr[1:])
    flow_links = np.fromiter((l for ls in link_lists for l in ls), dtype=IDX, count=int(flow_ptr[-1]))
    return flow_ptr, flow_links


def link_loads(flow_ptr, flow_links, rates, n_links: int) -> np.ndarray:
    """Total rate (bytes/s) that the flows put on each of ``n_links`` links, as a float64 array (n_links,).

    >>> link_loads([0, 2, 3], [0, 1, 1], [1.0, 2.0], 3).tolist()
    [1.0, 3.0, 0.0]
    """
    ptr, links = _csr(flow_ptr, flow_links)
    rates = np.asarray(rates, dtype=np.float64)
    return np.bincount(links, weights=np.repeat(rates, np.diff(ptr)), minlength=n_links)


def bottleneck_links(flow_ptr, flow_links, capacity, rates, rtol: float = 1e-9) -> np.ndarray:
    """For each flow, a bottleneck link: saturated, and no flow on it has a higher rate (within ``rtol``).

    Returns an int array (F,): the lowest-numbered such link of each flow, ``-1`` where the flow has none (it is
    limited by its cap, or crosses no link). Cost O(F + L + nnz).

    >>> bottleneck_links([0, 1, 3], [0, 0, 1], [2.0, 10.0], [1.0, 1.0]).tolist()
    [0, 0]
    """
    ptr, links = _csr(flow_ptr, flow_links)
    capacity = np.asarray(capacity, dtype=np.float64)
    rates = np.asarray(rates, dtype=np.float64)
    n_links = len(capacity)
    deg = np.diff(ptr)
    entry_rate = np.repeat(rates, deg)
    load = np.bincount(links, weights=entry_rate, minlength=n_links)
    saturated = load >= capacity * (1 - rtol)
    top = np.zeros(n_links)
    np.maximum.at(top, links, entry_rate)
    is_bottleneck = saturated[links] & (entry_rate >= top[links] * (1 - rtol))
    candidate = np.where(is_bottleneck, links, n_links)
    result = np.full(len(deg), -1, dtype=IDX)
    nonempty = np.flatnonzero(deg)
    if nonempty.size:
        first = np.minimum.reduceat(candidate, ptr[nonempty])
        result[nonempty] = np.where(first < n_links, first, -1)
    return result


def max_min_rates(flow_ptr, flow_links, capacity, rate_cap=None, *, rtol: float = DEFAULT_RTOL) -> np.ndarray:
    """The max-min fair rates (F,) in bytes/s; see :func:`solve_max_min` for the algorithm.

    One link of 12 bytes/s shared by three flows, the third also crossing a 2 bytes/s link:

    >>> max_min_rates([0, 1, 2, 4], [0, 0, 0, 1], [12.0, 2.0]).tolist()
    [5.0, 5.0, 2.0]
    """
    return solve_max_min(flow_ptr, flow_links, capacity, rate_cap, rtol=rtol).rates


def solve_max_min(flow_ptr, flow_links, capacity, rate_cap=None, *, rtol: float = DEFAULT_RTOL) -> MaxMinSolution:
    """Exact max-min fair rates by water-filling that freezes every locally minimal link in one round.

    Parameters
    ----------
    flow_ptr : int array (F+1,), non-decreasing; flow ``f`` crosses ``flow_links[flow_ptr[f]:flow_ptr[f+1]]``.
    flow_links : int array of link ids in ``0..L-1``.
    capacity : float array (L,), bytes/s, >= 0 (``np.inf`` allowed).
    rate_cap : optional float array (F,), bytes/s, >= 0, ``np.inf`` = no cap.
    rtol : fair shares within this relative distance count as equal, so ties freeze in the same round. Rates are
        exact up to about ``rtol`` relative (a frozen link may stay under capacity by that much, never over).

    Algorithm
    ---------
    Each round, with ``R_l`` the capacity left on link ``l`` by frozen flows and ``n_l`` its unfrozen flows, every link
    offers the fair share ``s_l = R_l / n_l`` and every unfrozen flow sees ``m_f = min_{l in f} s_l``; a cap is a
    private virtual link of one flow, with share ``cap_f``. A link is *locally minimal* when ``s_l <= m_f`` for every
    unfrozen flow crossing it: its share is the smallest among all links its flows cross. All unfrozen flows on
    locally minimal links freeze at ``m_f`` (the share of the minimal links they cross), those links saturate, and the
    frozen rates leave the other links. A link that loses ``k`` flows at rate ``s <= s_l`` keeps a share
    ``(R_l - k s) / (n_l - k) >= s_l``, so shares never fall: every frozen flow is the largest flow on a saturated link,
    and the result is the max-min fair allocation (Bertsekas & Gallager, *Data Networks*, 2nd ed., section 6.5.2).
    The link with the globally smallest share is always locally minimal, so each round freezes at least one flow, and
    all independent bottleneck levels freeze together. :func:`reference_max_min` is the textbook one-level-per-round
    version.

    Rounds are incremental, so their cost follows what changed rather than the whole incidence: the solver keeps
    ``m_f`` per flow and, per link, the number of unfrozen flows that see a smaller share elsewhere (``blocked``; a
    link is locally minimal when it has unfrozen flows and ``blocked == 0``). After a round only the links the frozen
    flows crossed change share; only the flows for which such a link gave the minimum change ``m_f``; only those
    links, and the links of those flows, change ``blocked``. All of it is vectorized over the flow-major (CSR) and
    link-major (its transpose) incidence with gathers, ``np.minimum.reduceat`` and ``np.bincount``.

    Complexity: O(nnz log nnz) to build the transpose, then per round O(L) plus the incidence entries of the links
    that changed and of the flows whose ``m_f`` changed; at most F rounds. Memory O(F + L + nnz), no dense F x L
    matrix. Measured (bench/bench_maxmin.py): 400k flows over 100k links with tens of thousands of bottleneck levels.

    >>> sol = solve_max_min([0, 3, 4, 5, 6], [0, 1, 2, 0, 1, 2], [1.0, 2.0, 3.0])   # parking lot
    >>> sol.rates.tolist(), sol.rounds
    ([0.5, 0.5, 1.5, 2.5], 2)
    """
    ptr, links = _csr(flow_ptr, flow_links)
    capacity = _nonnegative(capacity, "capacity")
    n_flows = len(ptr) - 1
    if links.size and (links.min() < 0 or links.max() >= len(capacity)):
        raise ValueError(f"flow_links: link ids must lie in 0..{len(capacity) - 1}")
    caps = None if rate_cap is None else _nonnegative(rate_cap, "rate_cap")
    if caps is not None and caps.shape != (n_flows,):
        raise ValueError(f"rate_cap: shape {caps.shape} does not match {n_flows} flows")
    if caps is not None:
        ptr, links, capacity = _with_cap_links(ptr, links, capacity, caps)
    n_links = len(capacity)
    deg = np.diff(ptr)
    link_ptr, link_flow, link_of = _transpose(ptr, links, n_links)
    grow = 1.0 + rtol

    rates = np.full(n_flows, np.inf)           # flows on no link and with no cap stay at inf
    frozen = deg == 0
    remaining = capacity.copy()                # R_l, bytes/s
    count = np.bincount(links, minlength=n_links)   # n_l
    share = _fair_share(remaining, count)
    flow_min = np.full(n_flows, np.inf)        # m_f
    crossing = np.flatnonzero(deg)
    if crossing.size:
        flow_min[crossing] = np.minimum.reduceat(share[links], ptr[crossing])
    blocked = np.bincount(links[np.repeat(flow_min, deg) * grow < share[links]], minlength=n_links)
    in_changed = np.zeros(n_links, dtype=bool)
    mark = np.zeros(n_flows, dtype=bool)         # scratch for _distinct
    stale = 0                                  # link-major entries of frozen flows, dropped when they are many
    rounds = 0
    while True:
        minimal = np.flatnonzero((blocked == 0) & (count > 0))
        if not minimal.size:
            break
        rounds += 1
        # Freeze every unfrozen flow on a locally minimal link at its m_f.
        on_minimal = link_flow[_segments(link_ptr, minimal)]
        freeze = _distinct(on_minimal[~frozen[on_minimal]], mark)
        rates[freeze] = flow_min[freeze]
        frozen[freeze] = True
        entries = _segments(ptr, freeze)
        touched = links[entries]
        load = np.repeat(flow_min[freeze], deg[freeze])
        load[np.isinf(load)] = 0.0             # a link of infinite capacity stays infinite
        remaining -= np.bincount(touched, weights=load, minlength=n_links)
        lost = np.bincount(touched, minlength=n_links)
        count -= lost
        changed = np.flatnonzero(lost)
        stale += touched.size

        # Flows for which a changed link gave the minimum (under its old share) get a new m_f.
        scan = _segments(link_ptr, changed)
        scan = scan[~frozen[link_flow[scan]]]
        scan_flow, scan_link = link_flow[scan], link_of[scan]
        tight = flow_min[scan_flow] * grow >= share[scan_link]
        share[changed] = _fair_share(remaining[changed], count[changed])
        renew = _distinct(scan_flow[tight], mark)
        old_min = flow_min[renew]
        renew_entries = _segments(ptr, renew)
        if renew.size:
            starts = np.cumsum(deg[renew]) - deg[renew]
            flow_min[renew] = np.minimum.reduceat(share[links[renew_entries]], starts)

        # Recount blocked flows: in full on the changed links, by difference on the other links of renewed flows.
        blocked[changed] = 0
        blocked += np.bincount(scan_link[flow_min[scan_flow] * grow < share[scan_link]], minlength=n_links)
        in_changed[changed] = True
        other = links[renew_entries]
        was = np.repeat(old_min, deg[renew]) * grow < share[other]
        now = np.repeat(flow_min[renew], deg[renew]) * grow < share[other]
        blocked -= np.bincount(other[was & ~now & ~in_changed[other]], minlength=n_links)
        in_changed[changed] = False

        if 2 * stale > link_flow.size:
            link_ptr, link_flow, link_of = _drop_frozen(link_flow, link_of, frozen, n_links)
            stale = 0
    return MaxMinSolution(rates=rates, rounds=rounds)


def reference_max_min(flow_ptr, flow_links, capacity, rate_cap=None) -> np.ndarray:
    """Textbook water-filling, written plainly for testing (Bertsekas & Gallager, section 6.5.2).

    All unfrozen flows rise together by the smallest increment that saturates a link or brings a flow to its cap;
    the flows on the saturated links and the capped flows freeze; repeat. One bottleneck level per iteration, each
    iteration O(F + nnz) Python work: O(F * nnz) in all. Same inputs, conventions and units as :func:`max_min_rates`.
    """
    ptr, links = _csr(flow_ptr, flow_links)
    capacity = _nonnegative(capacity, "capacity").tolist()
    n_flows, n_links = len(ptr) - 1, len(capacity)
    caps = [np.inf] * n_flows if rate_cap is None else _nonnegative(rate_cap, "rate_cap").tolist()
    links_of = [links[ptr[f]:ptr[f + 1]].tolist() for f in range(n_flows)]
    flows_on = [[] for _ in range(n_links)]
    for f, path in enumerate(links_of):
        for l in path:
            flows_on[l].append(f)

    rate = [0.0] * n_flows
    frozen = [False] * n_flows
    for f in range(n_flows):
        if not links_of[f]:
            rate[f], frozen[f] = caps[f], True
    while not all(frozen):
        link_step = {}
        for l in range(n_links):
            unfrozen = sum(1 for f in flows_on[l] if not frozen[f])
            if unfrozen:
                room = capacity[l] - sum(rate[f] for f in flows_on[l])
                link_step[l] = max(room, 0.0) / unfrozen
        cap_step = {f: caps[f] - rate[f] for f in range(n_flows) if not frozen[f]}
        step = min(min(link_step.values()), min(cap_step.values()))
        if step == np.inf:
            for f in cap_step:
                rate[f], frozen[f] = np.inf, True
            break
        for f in cap_step:
            rate[f] += step
        for f, room in cap_step.items():
            if room <= step:
                rate[f], frozen[f] = caps[f], True
        for l, room in link_step.items():
            if room <= step:
                for f in flows_on[l]:
                    frozen[f] = True
    return np.array(rate, dtype=np.float64)


def _csr(flow_ptr, flow_links) -> tuple[np.ndarray, np.ndarray]:
    """Validated CSR arrays as intp: ``flow_ptr`` rebased to 0 and the links it actually covers."""
    ptr = np.asarray(flow_ptr, dtype=IDX)
    links = np.asarray(flow_links, dtype=IDX)
    if ptr.ndim != 1 or ptr.size == 0:
        raise ValueError("flow_ptr: must be a 1-D array of F+1 offsets")
    if np.any(np.diff(ptr) < 0) or ptr[0] < 0 or ptr[-1] > links.size:
        raise ValueError(f"flow_ptr: offsets must be non-decreasing within 0..{links.size}")
    return ptr - ptr[0], links[ptr[0]:ptr[-1]]


def _nonnegative(values, name: str) -> np.ndarray:
    """``values`` as a float64 1-D array, refusing NaN and negative entries (bytes/s cannot be negative)."""
    array = np.array(values, dtype=np.float64, ndmin=1)
    if array.ndim != 1 or np.isnan(array).any() or (array < 0).any():
        raise ValueError(f"{name}: must be a 1-D array of non-negative bytes/s (np.inf allowed), no NaN")
    return array


def _fair_share(remaining, count) -> np.ndarray:
    """Remaining capacity over unfrozen flows (bytes/s per flow); inf on links without unfrozen flows."""
    share = np.full(len(count), np.inf)
    np.divide(np.maximum(remaining, 0.0), count, out=share, where=count > 0)
    return share


def _distinct(ids, mark) -> np.ndarray:
    """The distinct values of ``ids``, sorted, using the all-False scratch array ``mark`` (left all-False)."""
    mark[ids] = True
    distinct = np.flatnonzero(mark)
    mark[distinct] = False
    return distinct


def _segments(ptr, ids) -> np.ndarray:
    """Concatenated index ranges ``ptr[i]:ptr[i+1]`` for ``i`` in ``ids``, in that order."""
    starts = ptr[ids]
    lengths = ptr[ids + 1] - starts
    ends = np.cumsum(lengths)
    if not ends.size:
        return np.zeros(0, dtype=IDX)
    return np.arange(ends[-1], dtype=IDX) + np.repeat(starts - (ends - lengths), lengths)


def _with_cap_links(ptr, links, capacity, caps):
    """Append one private virtual link per flow with a finite cap (capacity = the cap), at the end of its links."""
    capped = np.isfinite(caps)
    n_links = len(capacity)
    deg = np.diff(ptr)
    new_ptr = np.zeros_like(ptr)
    np.cumsum(deg + capped, out=new_ptr[1:])
    new_links = np.empty(new_ptr[-1], dtype=IDX)
    new_links[np.arange(links.size) + np.repeat(new_ptr[:-1] - ptr[:-1], deg)] = links
    new_links[new_ptr[1:][capped] - 1] = n_links + np.arange(capped.sum())
    return new_ptr, new_links, np.concatenate([capacity, caps[capped]])


def _transpose(ptr, links, n_links):
    """The link-major incidence: ``link_ptr`` (L+1,), the flow of each entry, and its link."""
    deg = np.diff(ptr)
    flow_of = np.repeat(np.arange(len(deg), dtype=IDX), deg)
    # One sort of a packed (link, flow) key keeps flows in order within each link and is faster than argsort.
    key = np.sort(links * max(len(deg), 1) + flow_of)
    link_of, link_flow = np.divmod(key, max(len(deg), 1))
    link_ptr = np.zeros(n_links + 1, dtype=IDX)
    np.cumsum(np.bincount(links, minlength=n_links), out=link_ptr[1:])
    return link_ptr, link_flow, link_of


def _drop_frozen(link_flow, link_of, frozen, n_links):
    """The link-major incidence without the entries of frozen flows."""
    keep = ~frozen[link_flow]
    link_flow, link_of = link_flow[keep], link_of[keep]
    link_ptr = np.zeros(n_links + 1, dtype=IDX)
    np.cumsum(np.bincount(link_of, minlength=n_links), out=link_ptr[1:])
    return link_ptr, link_flow, link_of
