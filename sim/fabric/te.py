"""Centralized traffic engineering (routing mode ``"te"``): a controller that sees every flow of the traffic matrix
and assigns each flow (each QP) one of its equal-cost paths so that the load on every tier is balanced.

Model
-----
Meta ran a centralized traffic-engineering controller in some zones of its RoCE clusters, recomputing the paths
about every 30 s from the current traffic matrix and topology (Gangidi et al., SIGCOMM 2024, docs/sources.md [S2]).
Here the traffic matrix is one phase of a collective (the job's flows and, with background jobs, theirs:
:func:`sim.fabric.netsim.solve_phase` routes them together) and the topology is the current fabric (failed or drained
links are not in it; :func:`sim.fabric.paths.routing_tables` says which next hops still reach the destination). Each
flow carries ``weight`` bytes (its ``share``); the controller minimizes the most loaded link's utilization
``max over links of (bytes on the link / capacity)`` (MLU, the usual TE objective, e.g. Hedera's global placement
of large flows in a Clos, Al-Fares et al., NSDI 2010, docs/sources.md [S20]).

The paths are those of :mod:`sim.fabric.routing` (valley-free, shortest): a flow between two leaves picks a plane ``p``
(the spine it turns at or leaves the zone through) and a parallel cable up; in-zone, a cable down from that spine;
across zones, a core member ``c`` of plane ``p`` and a cable up to it, a cable down from it to the destination
zone's spine ``p``, and a cable down to the leaf. The choices couple only in two places, so the controller decides
them in three stages:

1. **Plane** (``P`` choices). Each flow is an edge between its source leaf's uplink group ``(a, p)`` and its
   destination leaf's downlink group ``(b, p)``; a flow leaving its zone also loads the spine uplinks of
   ``(za, p)`` and the core downlinks into ``(zb, p)``. With equal flows this is bipartite edge colouring: by
   König's theorem a bipartite multigraph of maximum degree ``D`` has a proper ``D``-edge-colouring, so (splitting a
   leaf of degree ``d`` into ``ceil(d / P)`` copies of degree at most ``P``) every leaf gets each plane at most
   ``ceil(d / P)`` times, which is the lower bound (docs/sources.md [S19]). :func:`sim.fabric.colouring.colour` builds it: whole rounds
   of ``P`` flows of one (source, destination) block get every plane once (vectorized); the remainder, at most
   ``P - 1`` flows per block, is coloured round-robin at the source and its conflicts at the destination are
   repaired by alternating-path (Kempe chain) swaps, the constructive proof of König's theorem.
2. **Core member** (``M`` choices, flows leaving their zone): the same colouring between the source spine's
   uplink groups ``(s1, c)`` and the destination spine's core-downlink groups ``(s2, c)``.
3. **Cables**: within one group of parallel cables (leaf ``(a, p)`` up, spine ``(b, p)`` down, spine ``(s1, c)``
   up, core ``(s2, c)`` down) the choice touches no other group: the group's flows, heaviest first, are dealt in
   rounds to its active cables, least loaded first (longest processing time first, Graham 1969, docs/sources.md
   [S19]); exact for equal flows: ``ceil(n / m)`` per cable, and by ``ceil(ceil(d/P)/m) = ceil(d/(P m))`` stages 1
   and 3 together reach the per-leaf bound.

After stages 1 and 2 a local search (:func:`improve`) works on the weighted loads of every group a choice touches
(including the spine groups of stage 1): in rounds, each flow on the most utilized group moves to the choice that
lowers its own bottleneck most; movers into one group are admitted heaviest-bottleneck first only while the group
stays below the bottleneck they leave, so the maximum never rises. It stops at the lower bound, when no flow on the
maximum can move, or after :data:`MAX_ROUNDS` rounds. Flows with failed choices skip the colouring and start on
their first valid choice; a choice that is down is never taken, and a flow with no valid choice raises
:class:`sim.fabric.paths.NoPathError`.

Guarantees: with equal flows and no failures, the leaf tiers (uplinks and downlinks) are exactly at their lower
bound ``max over leaves of ceil(flows / (P m))`` flows per link, and the stage-2 tiers at theirs given the planes;
never worse than any hash on the same flows at the leaf tiers. With unequal flows, failures or flows crossing the
zone layer, the result is a local optimum of the MLU (not a proof of optimality: the exact problem is an integer
multicommodity flow).

Complexity: O(F log F) vectorized numpy for the block rounds, sorting, cables and each local-search round (O(F_hot x
K x 4) for ``F_hot`` flows on the hottest groups); the Kempe repair is a Python loop over the remainder edges that
conflict (at most ``K - 1`` per block, typically a few percent of the flows), each swap walking one alternating
path; above :data:`sim.fabric.colouring.KEMPE_LIMIT` conflicting edges the repair is left to the local search.

Limitations: the controller in the paper recomputes about every 30 s; the twin has no time axis inside a
collective, so every solve (each phase's traffic matrix) recomputes from scratch, as if the controller had
converged on this traffic. :func:`te_route` is a plain function so a job-level simulation can call it once per
period with the traffic of that period. Same-host flows use NVLink and same-leaf flows have one path; neither is
routed here.
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.colouring import colour, rank_in_groups
from sim.fabric.paths import csr, flow_arrays, max_path_links, nic_links, no_path, routing_tables
from sim.fabric.ports import route_planes
from sim.fabric.topology import Topology

MAX_ROUNDS = 64          # local-search rounds per stage
CHUNK = 1 << 15          # flows per block when scoring alternatives (bounds memory to ~CHUNK x K x 4 floats)
_REL = 1e-9              # relative tolerance of load comparisons


# ---------------------------------------------------------------------------------------------- local search
def improve(choice, weight, base, cap, k: int, valid=None, lower_bound: float = 0.0, rounds: int = MAX_ROUNDS):
    """Lower the most utilized resource by moving flows between their ``K`` choices; return the new choices.

    Flow ``f`` on choice ``k`` loads the resources ``base[f, i] + k`` (``i < R``) by ``weight[f]``; resource ``r``
    has capacity ``cap[r]`` (``inf`` for padding). ``valid`` (F, K): choices that may be taken. Each round the flows
    whose bottleneck (most utilized resource) is the maximum try the choice with the lowest new bottleneck; movers
    into a resource are admitted, highest old bottleneck first, while the resource stays below the bottleneck of the
    mover, so no round raises the maximum. Stops at ``lower_bound``, when nothing moves or after ``rounds``.
    """
    choice = np.asarray(choice, dtype=IDX).copy()
    F, R = base.shape
    K = int(k)
    inv = _inverse(cap)
    wide = np.repeat(weight, R)
    for _ in range(rounds):
        res = base + choice[:, None]
        load = np.bincount(res.ravel(), wide, minlength=inv.size)
        cost = (load * inv)[res].max(axis=1)
        top = float(cost.max()) if F else 0.0
        if top <= lower_bound * (1 + _REL) or top == 0.0:
            break
        hot = np.flatnonzero(cost >= top * (1 - _REL))
        best, new = _best_moves(hot, choice, weight, base, load, inv, valid, K)
        mv = new < cost[hot] * (1 - _REL)
        movers, to = hot[mv], best[mv]
        if movers.size == 0:
            break
        old = cost[movers]
        tgt = base[movers] + to[:, None]                   # (m, R)
        ent_r = tgt.ravel()
        ent_f = np.repeat(np.arange(movers.size), R)
        order = np.lexsort((ent_f, -old[ent_f], ent_r))
        r_s, f_s = ent_r[order], ent_f[order]
        w_s = weight[movers][f_s]
        cum = np.cumsum(w_s)
        start = np.flatnonzero(np.r_[True, r_s[1:] != r_s[:-1]])
        before = np.repeat(np.r_[0.0, cum][start], np.diff(np.r_[start, r_s.size]))
        after = (load[r_s] + cum - before) * inv[r_s]
        bad = after >= old[f_s] * (1 - _REL)
        refused = np.zeros(movers.size, dtype=bool)
        refused[f_s[bad]] = True
        if refused.all():
            break
        choice[movers[~refused]] = to[~refused]
    return choice


def _inverse(cap):
    """1 / capacity: 0 for padding (``inf``), a huge finite number for a dead group (0), so that a flow there
    costs more than anywhere alive and an empty dead group costs nothing."""
    cap = np.asarray(cap, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(cap > 0, 1.0 / cap, 1e300)


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isinf(b), 0.0, a / b)


def _best_moves(hot, choice, weight, base, load, inv, valid, K):
    """For the flows ``hot``: the alternative choice with the lowest bottleneck after the move, and that bottleneck
    (``inv``: 1 / capacity of each resource)."""
    best = np.empty(hot.size, dtype=IDX)
    new = np.empty(hot.size)
    ks = np.arange(K)
    for lo in range(0, hot.size, CHUNK):
        f = hot[lo:lo + CHUNK]
        alt = base[f][:, :, None] + ks[None, None, :]      # (h, R, K)
        c = ((load[alt] + weight[f][:, None, None]) * inv[alt]).max(axis=1)
        c[np.arange(f.size), choice[f]] = np.inf
        if valid is not None:
            c[~valid[f]] = np.inf
        b = np.argmin(c, axis=1)
        best[lo:lo + f.size], new[lo:lo + f.size] = b, c[np.arange(f.size), b]
    return best, new


def _lower_bound(node, weight, gcap) -> float:
    """A lower bound of the most utilized group of one family (``gcap`` (nodes, K): each node's groups'
    capacities): each node's flows over its groups' total capacity; with equal flows and every group of equal
    capacity (no failures), in whole flows: ``ceil(count / K) x weight / group capacity``."""
    if node.size == 0:
        return 0.0
    tot = np.bincount(node, weight, minlength=gcap.shape[0])
    bound = float(np.max(_div(tot, gcap.sum(axis=1))))
    g0 = gcap.flat[0]
    if np.all(weight == weight[0]) and g0 > 0 and np.all(gcap == g0):
        cnt = np.bincount(node, minlength=gcap.shape[0])
        bound = max(bound, float(np.ceil(cnt.max() / gcap.shape[1])) * float(weight[0]) / g0)
    return bound


# ---------------------------------------------------------------------------------------------- the controller
def te_route(topo: Topology, src_gpu, dst_gpu, qp=None, weight=None, seed: int = 0):
    """Route flows by centralized traffic engineering; return CSR ``(flow_ptr (F+1,), flow_links)`` as
    :func:`sim.fabric.routing.route` does (same path order and conventions).

    ``weight`` (F,): bytes of each flow (default 1 each; only ratios matter). ``qp`` is accepted for the router
    signature; the controller assigns every flow (every QP) its own path whatever its QP number. ``seed`` rotates
    where the round-robin starts (ties only). Deterministic. Raises :class:`sim.fabric.paths.NoPathError` when a flow has
    no active path.
    """
    src, dst, qp = flow_arrays(topo, src_gpu, dst_gpu, qp)
    F = src.size
    w_all = np.ones(F) if weight is None else np.broadcast_to(np.asarray(weight, dtype=np.float64), (F,))
    if F and (not np.isfinite(w_all).all() or (w_all < 0).any()):
        raise ValueError("weight must be finite and non-negative")
    if topo.port_views:                      # multi-port NICs, planes: one controller decision per plane
        return route_planes(topo, src, dst, qp, "te", seed,
                            lambda view, rows, s, d: te_route(view, s, d, None, w_all[rows], seed))
    paths = np.full((F, max_path_links(topo)), -1, dtype=IDX)
    h = nic_links(topo, src, dst, paths)
    if h is None:
        return csr(paths)
    if not len(topo.spines):
        no_path(topo, src, dst, h.fl, F, "the fabric has no spine tier to leave the leaf")
    t = routing_tables(topo)
    h.t, h.za, h.zb = t, t.leaf_zone[h.a], t.leaf_zone[h.b]
    w = np.asarray(w_all[h.fl], dtype=np.float64)
    cap = np.asarray(topo.link_capacity, dtype=np.float64)
    plane = _planes(topo, t, h, w, cap, seed)
    spine = topo.spine_at[h.za, plane]
    xz = np.flatnonzero(h.za != h.zb)
    member = _members(topo, t, h, w, cap, plane, spine, xz, seed) if xz.size else None
    _cables(topo, h, w, plane, spine, xz, member, paths, seed)
    return csr(paths)


def _group_capacity(link_ids, cap, offset: int = 0):
    """Sum of the capacities of the active links ``link_ids + offset`` (-1 inactive) over the last axis."""
    ok = link_ids >= 0
    return np.where(ok, cap[np.maximum(link_ids, 0) + offset], 0.0).sum(axis=-1)


def _planes(topo, t, h, w, cap, seed):
    """Stage 1: each flow's plane (the spine of its zone it goes through)."""
    a, b, za, zb = h.a, h.b, h.za, h.zb
    nL, P, _ = topo.leaf_up.shape
    Z = topo.spine_at.shape[0]
    C = topo.n_cables
    n = a.size
    # resources: leaf uplinks (a, p), spine->leaf downlinks (b, p), spine uplinks (z, p), core->spine downlinks (z, p)
    sp_z = topo.spine_at                                                  # (Z, P)
    spine_ids = topo.spine_up[np.maximum(sp_z, 0)].reshape(Z, P, -1)      # (Z, P, M*m2)
    spine_ids = np.where((sp_z >= 0)[:, :, None], spine_ids, -1)
    caps = np.concatenate([
        _group_capacity(topo.leaf_up, cap).ravel(), _group_capacity(topo.leaf_up, cap, C).ravel(),
        _group_capacity(spine_ids, cap).ravel(), _group_capacity(spine_ids, cap, C).ravel(), np.full(P, np.inf)])
    pad = caps.size - P
    cross = za != zb
    base = np.stack([a * P, (nL + b) * P, np.where(cross, 2 * nL * P + za * P, pad),
                     np.where(cross, (2 * nL + Z) * P + zb * P, pad)], axis=1)
    full = t.leaf_full[a] & t.leaf_dst_full[za, b]
    valid = None
    if not full.all():
        valid = np.ones((n, P), dtype=bool)
        rows = np.flatnonzero(~full)
        sp = topo.spine_at[za[rows]]                                       # (k, P)
        valid[rows] = ((topo.leaf_up[a[rows]] >= 0).any(axis=2) & (sp >= 0)
                       & t.spine_reach[np.maximum(sp, 0), b[rows][:, None]])
        dead = rows[~valid[rows].any(axis=1)]
        if dead.size:
            h.no_path(dead, "no uplink of the source leaf reaches the destination leaf")
    choice = _initial(a, b, full, valid, P, seed)
    bound = max(_lower_bound(a, w, caps[:nL * P].reshape(nL, P)),
                _lower_bound(b, w, caps[nL * P:2 * nL * P].reshape(nL, P)))
    return improve(choice, w, base, caps, P, valid, bound)


def _members(topo, t, h, w, cap, plane, spine, xz, seed):
    """Stage 2: the core member each flow leaving its zone goes through (in its plane)."""
    nS, M, _ = topo.spine_up.shape
    C = topo.n_cables
    s1, p, bx = spine[xz], plane[xz], h.b[xz]
    s2 = topo.spine_at[h.zb[xz], p]
    caps = np.concatenate([_group_capacity(topo.spine_up, cap).ravel(),
                           _group_capacity(topo.spine_up, cap, C).ravel(), np.full(M, np.inf)])
    base = np.stack([s1 * M, (nS + s2) * M], axis=1)
    full = t.spine_full[s1] & t.spine_dst_full[p, bx] & t.spine_full[s2]
    valid = None
    if not full.all():
        valid = np.ones((xz.size, M), dtype=bool)
        rows = np.flatnonzero(~full)
        valid[rows] = ((topo.spine_up[s1[rows]] >= 0).any(axis=2) & t.core_reach[p[rows], :, bx[rows]]
                       & (topo.spine_up[s2[rows]] >= 0).any(axis=2))
        assert valid[rows].any(axis=1).all(), "spine_reach promised a core"
    wx = w[xz]
    choice = _initial(s1, s2, full, valid, M, seed)
    bound = max(_lower_bound(s1, wx, caps[:nS * M].reshape(nS, M)),
                _lower_bound(s2, wx, caps[nS * M:2 * nS * M].reshape(nS, M)))
    return improve(choice, wx, base, caps, M, valid, bound)


def _initial(left, right, full, valid, k, seed):
    """The starting choice: the König colouring for flows whose choices are all valid, the first valid choice
    (rotated per flow) for the others."""
    choice = np.zeros(left.size, dtype=IDX)
    ok = np.flatnonzero(full)
    if ok.size:
        choice[ok] = colour(left[ok], right[ok], k, seed)
    rows = np.flatnonzero(~full)
    if rows.size:
        v = valid[rows]
        cnt = v.sum(axis=1)
        kth = (np.arange(rows.size) + seed) % np.maximum(cnt, 1)
        choice[rows] = np.argmax(np.cumsum(v, axis=1) > kth[:, None], axis=1)
    return choice


def _spread(group, cand, w, seed):
    """Stage 3: spread each group's flows over the group's active links ``cand`` (n, m) (-1 inactive; the same row
    for every flow of a group) by longest-processing-time rounds: the group's flows, heaviest first, are dealt
    ``v`` at a time (``v`` active links) to its links in increasing order of the load they already carry (ties
    rotated by ``seed`` and the group). Equal flows: ``ceil(n / v)`` per link, the least possible. Returns the link
    of each flow."""
    n, m = cand.shape
    if m == 1 or n == 0:
        return cand[:, 0]
    ug, g = np.unique(group, return_inverse=True)
    first = np.zeros(ug.size, dtype=IDX)
    first[g[::-1]] = np.arange(n)[::-1]
    gok = cand[first] >= 0                                           # (G, m)
    nv = np.maximum(gok.sum(axis=1), 1)
    load = np.where(gok, 0.0, np.inf)
    tie = (np.arange(m)[None, :] - (seed + ug)[:, None]) % m        # rotated tie-break per group
    order = np.lexsort((np.arange(n), -w, g))
    rank, _ = rank_in_groups(g[order])
    pos = rank % nv[g[order]]
    if np.all(w == w[0]):                   # equal flows: the rounds are plain round-robin over the active links
        kth = (pos + seed + ug[g[order]]) % nv[g[order]]
        col = np.argmax(np.cumsum(gok[g[order]], axis=1) > kth[:, None], axis=1)
        out = np.empty(n, dtype=IDX)
        out[order] = cand[order, col]
        return out
    rnd = rank // nv[g[order]]
    by_round = np.argsort(rnd, kind="stable")
    bounds = np.searchsorted(rnd[by_round], np.arange(int(rnd.max()) + 2))
    out = np.empty(n, dtype=IDX)
    for r in range(bounds.size - 1):
        sel = by_round[bounds[r]:bounds[r + 1]]                      # positions in `order`
        f, gs, ps = order[sel], g[order][sel], pos[sel]
        touched = np.unique(gs)
        rank_links = np.lexsort((tie[touched], load[touched]), axis=1)    # (T, m) links, least loaded first
        row = np.searchsorted(touched, gs)
        col = rank_links[row, ps]
        out[f] = cand[f, col]
        np.add.at(load, (gs, col), w[f])
    return out


def _cables(topo, h, w, plane, spine, xz, member, paths, seed):
    """Stage 3 for every tier; fills the path rows of the flows that leave their leaf."""
    nL, P, m = topo.leaf_up.shape
    C = topo.n_cables
    a, b = h.a, h.b
    up = _spread(a * P + plane, topo.leaf_up[a, plane], w, seed)
    down = _spread(b * P + plane, topo.leaf_up[b, plane], w, seed)
    assert (up >= 0).all() and (down >= 0).all(), "a valid plane has an active cable each way"
    paths[h.fl, 1] = up
    sz = np.flatnonzero(h.za == h.zb)
    paths[h.fl[sz], 2] = down[sz] + C
    paths[h.fl[sz], 3] = h.down0[sz]
    if xz.size:
        nS, M, m2 = topo.spine_up.shape
        s1 = spine[xz]
        s2 = topo.spine_at[h.zb[xz], plane[xz]]
        wx = w[xz]
        up2 = _spread(s1 * M + member, topo.spine_up[s1, member], wx, seed)
        down2 = _spread(s2 * M + member, topo.spine_up[s2, member], wx, seed)
        assert (up2 >= 0).all() and (down2 >= 0).all(), "a valid member has an active cable each way"
        paths[h.fl[xz], 2] = up2
        paths[h.fl[xz], 3] = down2 + C
        paths[h.fl[xz], 4] = down[xz] + C
        paths[h.fl[xz], 5] = h.down0[xz]


# ---------------------------------------------------------------------------------------------- whole traffic matrix
def route_together(topo: Topology, phases, build, seed: int = 0) -> list:
    """Route the flows of several phases that run at once (a job's phase and its background jobs') with one
    controller decision over all of them, each flow weighted by its bytes (``share``); return their FlowSets.

    ``build(phase, router)`` makes a phase's FlowSet with a given router (:func:`sim.fabric.flows.build_flows`). Two
    passes: the first records which flows each phase hands its router (their bytes are the first shares of the
    FlowSet: build_flows puts the routed flows first, in the order routed); :func:`te_route` then routes all of them
    at once, and the second pass gives each phase its slice of the result.
    """
    calls = []

    def record(_topo, src, dst, qp=None, *args, **kwargs):
        src = np.asarray(src, dtype=IDX).ravel()
        calls.append((src, np.asarray(dst, dtype=IDX).ravel(),
                      np.zeros(src.size, IDX) if qp is None else np.asarray(qp, dtype=IDX).ravel()))
        return np.arange(src.size + 1, dtype=IDX), np.zeros(src.size, dtype=IDX)      # placeholder paths

    sets, routed = [], []
    for ph in phases:
        before = len(calls)
        fs = build(ph, record)
        assert len(calls) - before <= 1, "one router call per phase"
        if len(calls) > before:
            n = calls[-1][0].size
            # (the destinations: on a rail fabric a flow may be sent by another GPU's NIC, sim.fabric.flows.pxn_via)
            assert np.array_equal(fs.dst[:n], calls[-1][1]), "build_flows puts the routed flows first"
            routed.append((len(sets), *calls[-1], fs.share[:n]))
        sets.append(fs)
    if not routed:
        return sets
    src = np.concatenate([r[1] for r in routed])
    dst = np.concatenate([r[2] for r in routed])
    qp = np.concatenate([r[3] for r in routed])
    ptr, links = te_route(topo, src, dst, qp, np.concatenate([r[4] for r in routed]), seed)
    lo = 0
    for i, s, *_ in routed:
        hi = lo + s.size
        p = ptr[lo:hi + 1]
        sub = (p - p[0], links[p[0]:p[-1]])

        def replay(_topo, src_, *args, sub=sub, s=s, **kwargs):
            assert np.array_equal(np.asarray(src_, dtype=IDX).ravel(), s), "the same flows as recorded"
            return sub

        sets[i] = build(phases[i], replay)
        lo = hi
    return sets
