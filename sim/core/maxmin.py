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

The flow-level network simulator (:mod:`sim.fabric.netsim`) calls :func:`max_min_rates` once per synchronous phase of a
collective (every step of a ring has the same flows; the flows of other jobs in a busy cluster join the same solve)
and at every event of :func:`sim.core.flowcore.simulate_flows` (AllToAll). That is all it serves today. Rates are bytes/s
throughout, loads are bytes/s, capacities bytes/s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sim.core.units import IDX

DEFAULT_RTOL = 1e-12   # relative tolerance under which two fair shares count as equal (ties freeze together)


@dataclass(frozen=True)
class MaxMinSolution:
    """The result of :func:`solve_max_min`: ``rates`` (F,) in bytes/s and the number of ``rounds`` it took."""

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


def link_loads(flow_ptr, flow_links, rates, n_links: int, usage=None) -> np.ndarray:
    """Total rate (bytes/s) that the flows put on each of ``n_links`` links, as a float64 array (n_links,);
    ``usage`` (one per incidence entry, see :func:`solve_max_min`): what a unit of the flow's rate costs the link.

    >>> link_loads([0, 2, 3], [0, 1, 1], [1.0, 2.0], 3).tolist()
    [1.0, 3.0, 0.0]
    >>> link_loads([0, 2, 3], [0, 1, 1], [1.0, 2.0], 3, usage=[1.0, 0.5, 2.0]).tolist()
    [1.0, 4.5, 0.0]
    """
    ptr, links, deg = _csr(flow_ptr, flow_links, with_deg=True)
    rates = np.asarray(rates, dtype=np.float64)
    entry = np.repeat(rates, deg)
    if usage is not None:
        entry = entry * _usage(usage, flow_ptr, links.size)
    return np.bincount(links, weights=entry, minlength=n_links)


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


def max_min_rates(flow_ptr, flow_links, capacity, rate_cap=None, *, rtol: float = DEFAULT_RTOL,
                  band: int | None = None, progress=None, weight=None, usage=None) -> np.ndarray:
    """The max-min fair rates (F,) in bytes/s; see :func:`solve_max_min` for the algorithm and the arguments.

    One link of 12 bytes/s shared by three flows, the third also crossing a 2 bytes/s link:

    >>> max_min_rates([0, 1, 2, 4], [0, 0, 0, 1], [12.0, 2.0]).tolist()
    [5.0, 5.0, 2.0]
    """
    return solve_max_min(flow_ptr, flow_links, capacity, rate_cap, rtol=rtol, band=band, progress=progress,
                         weight=weight, usage=usage).rates


def solve_max_min(flow_ptr, flow_links, capacity, rate_cap=None, *, rtol: float = DEFAULT_RTOL,
                  band: int | None = None, progress=None, weight=None, usage=None) -> MaxMinSolution:
    """Exact max-min fair rates by water-filling that freezes every locally minimal link in one round.

    Parameters
    ----------
    flow_ptr : int array (F+1,), non-decreasing; flow ``f`` crosses ``flow_links[flow_ptr[f]:flow_ptr[f+1]]``.
    flow_links : int array of link ids in ``0..L-1``.
    capacity : float array (L,), bytes/s, >= 0 (``np.inf`` allowed).
    rate_cap : optional float array (F,), bytes/s, >= 0, ``np.inf`` = no cap.
    rtol : fair shares within this relative distance count as equal, so ties freeze in the same round. Rates are
        exact up to about ``rtol`` relative (a frozen link may stay under capacity by that much, never over).
    band : how many flows a round examines (default ``max(4096, F // 64)``); a speed knob, the rates do not
        depend on it. ``band >= F`` examines every unfrozen flow in every round.
    progress : optional :mod:`sim.core.progress` callback, called after every round with the share of the flows whose
        rate is fixed (frozen), so it never decreases and reaches 1.0 at the end.
    weight : optional whole numbers (F,) >= 1: flow ``f`` stands for ``weight[f]`` identical flows (same links, same
        cap), which max-min fairness gives the same rate; it counts that many times on each of its links. Solving
        one weighted flow per class of identical flows (:func:`identical_flows`) gives the rates of the unmerged
        problem at a fraction of the cost when many flows share a path (QPs hashed onto one path, NVLink channels).
    usage : optional positive finite floats, one per incidence entry (aligned with ``flow_links[flow_ptr[0]:]``):
        what one unit of the flow's rate costs that link (default 1). A flow at rate ``r`` loads link ``l`` with
        ``usage * r``: CPU-seconds per byte on a CPU resource, SSD bytes per byte stored on an amplified SSD. The
        fair share of a link becomes its remaining capacity over the summed usage of its unfrozen flows; the
        algorithm below is otherwise unchanged (a link that loses usage ``u`` at rate ``s <= s_l`` keeps a share
        ``(R_l - u s) / (n_l - u) >= s_l``), so the result is the max-min fair allocation of the weighted problem.

    Algorithm
    ---------
    With ``R_l`` the capacity that frozen flows leave on link ``l`` and ``n_l`` its unfrozen flows, link ``l``
    offers the fair share ``s_l = R_l / n_l`` and an unfrozen flow sees ``m_f = min(cap_f, min_{l in f} s_l)`` (its
    cap is a private virtual link). A link is *locally minimal* when ``s_l <= m_f`` for every unfrozen flow crossing
    it: its share is the smallest among all links its flows cross. A round freezes all unfrozen flows on locally
    minimal links (and flows at their cap) at ``m_f``; those links saturate and the frozen rates leave the other
    links. A link that loses ``k`` flows at rate ``s <= s_l`` keeps a share ``(R_l - k s) / (n_l - k) >= s_l``, so
    shares and ``m_f`` never fall: every frozen flow is the largest flow on a saturated link (or at its cap), which is
    the max-min fair allocation (Bertsekas & Gallager, *Data Networks*, 2nd ed., 1992, section 6.5.2). The link with
    the globally smallest share is always locally minimal, so no round is wasted on one level when independent
    levels can freeze together; :func:`reference_max_min` is the textbook one-level-per-round version.

    Rounds are focused on the low end of the water level, where the freezing happens. Since ``m_f`` never falls, an
    old value is a lower bound. Flows wait in a queue sorted by their first ``m_f``, and in a pool once examined. A
    round picks a level ``T`` (about the ``band``-th smallest bound), examines the waiting flows whose bound is at
    most ``T`` (recomputing their ``m_f``; a flow left out has a bound, so an ``m_f``, of at least ``T``), and
    freezes the locally minimal links with ``s_l <= T``. The test is exact: a flow that could block such a link has
    ``m_f < s_l <= T``, so it was examined. The rest wait with their new bound. Each round either freezes flows or
    lifts the bounds of the flows it examined above ``T``. All of it is vectorized over the CSR incidence
    (``np.minimum.reduceat`` and ``np.logical_or.reduceat`` per flow, fancy indexing and ``np.subtract.at`` onto
    links); no Python loop runs over flows or links.

    Complexity: O(nnz + F log F) to set up, then per round O(L + pool) plus the incidence entries of the examined
    flows (about ``band`` flows). The plain version (``band >= F``) needs as many rounds as the chain of bottlenecks
    (link waits for link) is deep, not as many as there are levels; the banded one somewhat more, each far cheaper,
    and at least F / band. On the benchmark
    (bench/bench_maxmin.py: 400k flows, 100k links, ~46k distinct levels) the plain version needs 111 rounds over
    the whole incidence (seconds); the banded one about 190 rounds of ~6k flows (0.35 s). Memory O(F + L + nnz), no
    dense F x L matrix.

    >>> sol = solve_max_min([0, 3, 4, 5, 6], [0, 1, 2, 0, 1, 2], [1.0, 2.0, 3.0])   # parking lot
    >>> sol.rates.tolist(), sol.rounds
    ([0.5, 0.5, 1.5, 2.5], 2)
    """
    ptr, links, deg = _csr(flow_ptr, flow_links, with_deg=True)
    capacity = _nonnegative(capacity, "capacity")
    n_flows, n_links = len(ptr) - 1, len(capacity)
    if links.size and (links.min() < 0 or links.max() >= n_links):
        raise ValueError(f"flow_links: link ids must lie in 0..{n_links - 1}")
    caps = np.full(n_flows, np.inf) if rate_cap is None else _nonnegative(rate_cap, "rate_cap")
    if caps.shape != (n_flows,):
        raise ValueError(f"rate_cap: shape {caps.shape} does not match {n_flows} flows")
    band = max(4096, n_flows // 64) if band is None else int(band)
    if band < 1:
        raise ValueError(f"band: {band} must be >= 1")
    grow = 1.0 + rtol

    if weight is not None:
        weight = np.asarray(weight, dtype=np.float64)
        if weight.shape != (n_flows,) or (weight < 1).any() or (weight != np.round(weight)).any():
            raise ValueError(f"weight: must be {n_flows} whole numbers >= 1")
    use = None if usage is None else _usage(usage, flow_ptr, links.size)
    rates = caps.copy()                        # flows on no link keep their cap (inf without one)
    remaining = capacity.copy()                # R_l, bytes/s
    if weight is None and use is None:
        count = np.bincount(links, minlength=n_links)
    else:
        entry_w = np.ones(links.size) if weight is None else np.repeat(weight, deg)
        if use is not None:
            entry_w = entry_w * use
        count = np.bincount(links, weights=entry_w, minlength=n_links)   # n_l
        left = np.bincount(links, minlength=n_links)                      # unfrozen entries per link
    share = _fair_share(remaining, count)
    crossing = np.flatnonzero(deg)
    first_min = np.minimum(np.minimum.reduceat(share[links], ptr[crossing]), caps[crossing]) if crossing.size \
        else np.zeros(0)
    order = np.argsort(first_min, kind="stable")
    queue, queue_bound = crossing[order], first_min[order]
    head = 0                                   # queue[head:] has never been examined
    pool, pool_bound = np.zeros(0, dtype=IDX), np.zeros(0)
    link_mark = np.zeros(n_links, dtype=bool)  # scratch, all False between uses
    rounds = 0
    while head < queue.size or pool.size:
        rounds += 1
        level = _threshold(pool_bound, queue_bound[head:], band)
        take = head + np.searchsorted(queue_bound[head:head + band], level, side="right")
        again = pool_bound <= level
        flows = np.concatenate([pool[again], queue[head:take]])
        pool, pool_bound, head = pool[~again], pool_bound[~again], take

        flow_deg = deg[flows]
        ends = np.cumsum(flow_deg)
        starts = ends - flow_deg
        segments = np.arange(ends[-1] if ends.size else 0, dtype=IDX) + np.repeat(ptr[flows] - starts, flow_deg)
        entry_link = links[segments]
        entry_share = share[entry_link]
        flow_min = np.minimum.reduceat(entry_share, starts)
        if rate_cap is not None:
            np.minimum(flow_min, caps[flows], out=flow_min)                 # m_f
        entry_min = np.repeat(flow_min, flow_deg)
        blocked = entry_link[entry_min * grow < entry_share]     # a flow on these links sees a smaller share
        link_mark[blocked] = True
        minimal = (entry_share <= level) & ~link_mark[entry_link]
        link_mark[blocked] = False
        # at its cap (no cap: an infinite one, reached only by an infinite share)
        at_cap = (caps[flows] <= flow_min * grow) if rate_cap is not None else (flow_min * grow == np.inf)
        freeze = np.logical_or.reduceat(minimal, starts) | at_cap
        if not freeze.any() and not (flow_min > level).any():   # impossible unless the input holds NaN-like data
            raise RuntimeError("max-min solver made no progress")

        rates[flows[freeze]] = flow_min[freeze]
        entry_freeze = np.repeat(freeze, flow_deg)
        touched = entry_link[entry_freeze]
        frozen_deg = flow_deg[freeze]
        load = np.repeat(flow_min[freeze], frozen_deg)          # entry_min of the frozen flows' entries
        load[np.isinf(load)] = 0.0             # a link of infinite capacity stays infinite
        if weight is None and use is None:
            np.subtract.at(remaining, touched, load)
            np.subtract.at(count, touched, 1)
        else:
            entry_weight = np.ones(touched.size) if weight is None else np.repeat(weight[flows[freeze]], frozen_deg)
            if use is not None:
                entry_weight = entry_weight * use[segments][entry_freeze]
            np.subtract.at(remaining, touched, load * entry_weight)
            np.subtract.at(count, touched, entry_weight)
            np.subtract.at(left, touched, 1)
        changed = _distinct(touched, link_mark)
        if weight is not None or use is not None:
            count[changed] = np.where(left[changed] > 0, count[changed], 0.0)   # no float residue
        share[changed] = _fair_share(remaining[changed], count[changed])
        pool = np.concatenate([pool, flows[~freeze]])
        pool_bound = np.concatenate([pool_bound, flow_min[~freeze]])
        if progress is not None:
            progress(1.0 - (queue.size - head + pool.size) / n_flows)
    return MaxMinSolution(rates=rates, rounds=rounds)


def identical_flows(flow_ptr, flow_links) -> tuple[np.ndarray, np.ndarray]:
    """``(rep, cls)``: classes of flows crossing the same link sequence. ``rep`` (K,): one flow of each class (its
    lowest); ``cls`` (F,): the class of each flow, so ``rates = class_rates[cls]``. The CSR is laid out as a padded
    table (one row per flow, -1 past the end of its path) and handed to :func:`identical_rows`.

    >>> rep, cls = identical_flows([0, 2, 3, 5, 7], [4, 5, 1, 4, 5, 4, 6])
    >>> rep.tolist(), cls.tolist()
    ([0, 1, 3], [0, 1, 0, 2])
    """
    ptr, links = _csr(flow_ptr, flow_links)
    n_flows = len(ptr) - 1
    if n_flows == 0:
        return np.zeros(0, dtype=IDX), np.zeros(0, dtype=IDX)
    deg = np.diff(ptr)
    small = np.int32 if links.size == 0 or int(links.max()) < np.iinfo(np.int32).max else np.int64
    width = int(deg.max())
    table = np.full((n_flows, max(width + width % 2, 2)), -1, dtype=small)     # even: whole 64-bit words
    index, last = ptr[:-1].copy(), max(links.size - 1, 0)
    for i in range(width):
        col = table[:, i]
        links.take(np.minimum(index, last), out=col, mode="clip")
        col[deg <= i] = -1
        index += 1
    return identical_rows(table)


def identical_rows(table) -> tuple[np.ndarray, np.ndarray]:
    """``(rep, cls)`` of :func:`identical_flows` for flows given as a padded path table (F, w) of link ids, -1 past
    the end of each path (the router's own table, ``sim.fabric.routing.route(..., padded=True)``): rows equal entry for
    entry are one class. Each row is read as whole 64-bit words. Runs of equal consecutive rows (the QPs of one
    connection on one path) are merged first, in one pass; the runs' first rows are then sorted by a hash of their
    words and neighbours compared whole: a hash collision can only split a class (two classes of identical flows
    still solve to the same rates), never merge different paths. Classes are numbered by their lowest flow. Cost:
    one sort of as many 64-bit words as runs (hash bits above, row index below, so the plain sort gives the
    permutation), gathers of the rows whose neighbour in that order has the same hash, and a few O(F) passes.

    >>> rep, cls = identical_rows(np.array([[4, 5], [1, -1], [4, 5], [4, 6]], dtype=np.int32))
    >>> rep.tolist(), cls.tolist()
    ([0, 1, 3], [0, 1, 0, 2])
    >>> rep, cls = identical_rows(np.array([[4, 5], [4, 5], [1, -1], [4, 5]], dtype=np.int32))
    >>> rep.tolist(), cls.tolist()
    ([0, 2], [0, 0, 1, 0])
    """
    t = np.ascontiguousarray(table)
    n_flows = t.shape[0]
    if n_flows == 0:
        return np.zeros(0, dtype=IDX), np.zeros(0, dtype=IDX)
    if t.ndim != 2 or (t.dtype.itemsize * t.shape[1]) % 8:
        t = np.ascontiguousarray(t.reshape(n_flows, -1), dtype=np.int64)
    words = t.view(np.uint64)                              # (F, k): the row's bytes as k 64-bit words
    # Runs of equal consecutive rows are one class, and a class's lowest row heads a run: sort the heads only.
    head = np.empty(n_flows, dtype=bool)
    head[0] = True
    _rows_differ(words[1:], words[:-1], head[1:])
    if not head.all():
        heads = np.flatnonzero(head)
        rep, cls = identical_rows(np.take(t, heads, axis=0))     # take: rows copied whole, not element-wise
        return heads[rep], cls[np.cumsum(head) - 1]
    with np.errstate(over="ignore"):                       # odd multipliers: Weyl steps of the golden ratio
        mult = np.arange(1, words.shape[1] + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
    bits = max(1, (n_flows - 1).bit_length())
    with np.errstate(over="ignore"):
        key = words[:, 0] * mult[0]
        for i in range(1, words.shape[1]):
            key += words[:, i] * mult[i]
        key ^= key << np.uint64(bits)                      # the index bits below must not hide the low hash bits
    key >>= np.uint64(bits)
    key <<= np.uint64(bits)
    key |= np.arange(n_flows, dtype=np.uint64)
    key.sort()
    order = (key & np.uint64((1 << bits) - 1)).astype(IDX)
    key >>= np.uint64(bits)
    same = key[1:] == key[:-1]
    del key
    pair = np.flatnonzero(same)                            # confirm: neighbours of equal hash only, whole rows
    if pair.size:
        same[pair] = ~_rows_differ(np.take(words, order[pair], axis=0), np.take(words, order[pair + 1], axis=0))
    new = np.r_[True, ~same]
    # A run's first is its lowest flow (sorted by (hash, flow)); number the runs by it, in flow order.
    lowest = order[new]
    is_first = np.zeros(n_flows, dtype=bool)
    is_first[lowest] = True
    number = np.cumsum(is_first) - 1
    cls = np.empty(n_flows, dtype=IDX)
    cls[order] = number[lowest][np.cumsum(new) - 1]
    return np.flatnonzero(is_first), cls


def _rows_differ(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(F,) bool: row ``f`` of ``a`` differs from row ``f`` of ``b`` (both (F, k)), compared column by column:
    numpy's ``any(axis=1)`` over rows of a few words costs 3x more and a (F, k) temporary."""
    out = np.empty(a.shape[0], dtype=bool) if out is None else out
    np.not_equal(a[:, 0], b[:, 0], out=out)
    if a.shape[1] > 1:
        col = np.empty_like(out)
        for i in range(1, a.shape[1]):
            out |= np.not_equal(a[:, i], b[:, i], out=col)
    return out


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


def _csr(flow_ptr, flow_links, with_deg: bool = False):
    """Validated CSR arrays as intp: ``flow_ptr`` rebased to 0 (the array itself, not a copy, when it starts at 0:
    callers only read it) and the links it actually covers; ``with_deg``: and each flow's link count (the
    validation's ``diff``, not taken twice)."""
    ptr = np.asarray(flow_ptr, dtype=IDX)
    links = np.asarray(flow_links, dtype=IDX)
    if ptr.ndim != 1 or ptr.size == 0:
        raise ValueError("flow_ptr: must be a 1-D array of F+1 offsets")
    deg = np.diff(ptr)
    if (deg < 0).any() or ptr[0] < 0 or ptr[-1] > links.size:
        raise ValueError(f"flow_ptr: offsets must be non-decreasing within 0..{links.size}")
    out = (ptr - ptr[0] if ptr[0] else ptr), links[ptr[0]:ptr[-1]]
    return (*out, deg) if with_deg else out


def _usage(usage, flow_ptr, n_entries: int) -> np.ndarray:
    """``usage`` as float64, one positive finite value per incidence entry from ``flow_ptr[0]`` on."""
    use = np.asarray(usage, dtype=np.float64)
    first = int(np.asarray(flow_ptr)[0]) if len(flow_ptr) else 0
    if use.ndim != 1 or use.size < first + n_entries:
        raise ValueError(f"usage: must have one value per incidence entry ({first + n_entries})")
    use = use[first:first + n_entries]
    if not np.isfinite(use).all() or (use <= 0).any():
        raise ValueError("usage: must be positive and finite")
    return use


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


def _threshold(pool_bound, queue_bound, band: int) -> float:
    """A level ``T`` with about ``band`` waiting flows at or below it, such that no waiting flow left unexamined
    (pool bound > T, or queue position >= band) has a bound below ``T``; inf when at most ``band`` flows wait.

    ``pool_bound``: bounds of examined flows, any order. ``queue_bound``: the sorted bounds of the flows never
    examined; only its first ``band`` can be examined in this round.
    """
    head = queue_bound[:band]
    if pool_bound.size + queue_bound.size <= band:
        return np.inf
    bounds = np.concatenate([pool_bound, head])
    stride = max(1, bounds.size // 1024)
    sample = bounds[::stride]
    rank = min(sample.size - 1, band // stride)
    level = float(np.partition(sample, rank)[rank])
    if queue_bound.size > band:
        level = min(level, float(queue_bound[band]))
    return level
