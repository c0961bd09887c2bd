"""Up/down routing of flows over a :class:`sim.fabric.topology.Topology`: ECMP, E-ECMP, static path pinning, D-mod-k.

Model
-----
Paths are valley-free (up, then down) and shortest in the folded Clos of :mod:`sim.fabric.layout`:

- same host: no network link (NVLink; the caller models it), an empty path;
- same leaf: ``NIC -> leaf -> NIC`` (2 links);
- same zone: ``NIC -> leaf -> spine -> leaf -> NIC`` (4 links), turning at a spine of the zone;
- other zone: ``NIC -> leaf -> spine p -> core of plane p -> spine p of the destination zone -> leaf -> NIC``
  (6 links): spine ``p`` of every zone is cabled only to the cores of plane ``p``.

Every parallel cable between two switches is a separate equal-cost choice. At each switch the choices are the
switch's *valid* next hops towards the destination leaf, computed once per topology (:func:`sim.fabric.paths.routing_tables`,
cached in ``topo.cache``): an uplink is valid when its cable is active and the switch it reaches still has an active
path *down* to the destination leaf (a spine whose downlinks to the leaf failed, a core cut off from the destination
zone's spine are never chosen); a downlink is valid when its cable is active. When a flow has no valid choice left
:class:`sim.fabric.paths.NoPathError` is raised; paths that would need to go down and up again are not modelled.

How each switch picks among its ``n`` valid choices (``W`` = all of them when nothing failed):

- ``"ecmp"``: RoCE 5-tuple ECMP. Each switch hashes a flow's header, source and destination IP (the NICs'), IP
  protocol and UDP ports, with its own seed (:mod:`sim.fabric.hashing`: ``hash="uniform"`` an ideal random hash,
  ``"crc32"``/``"crc16"`` the CRCs switch ASICs use), and takes the ``hash mod n``-th valid next hop. Choices at
  different switches are independent, as with per-switch hash seeds. Whether the QPs of a GPU pair hash alike is
  the UDP source port's business: one fixed port (the default of :func:`route`) gives them one path ("low
  entropy"); the port the Linux stack derives per QP (:mod:`sim.fabric.nccl`, what :mod:`sim.fabric.netsim` passes by default)
  spreads them.
- ``"eecmp"``: Enhanced ECMP: the hashed header also covers the destination QP number of the transport header, so
  QP scaling spreads the QPs of one GPU pair over the equal-cost paths whatever their UDP ports.
- ``"dmodk"``: InfiniBand's static destination-based routing as a subnet manager computes it (ftree / D-mod-k,
  Zahavi et al.): with ``d`` the destination's global index (leaf-major, ``leaf * D + leaf port``), the leaf takes
  uplink ``d mod W1`` and the spine uplink ``(d div W1) mod W2``; going down each switch takes the parallel link
  that mirrors the one the destination's own uplinks would use, so every destination has a single root and
  contiguous jobs (shifts, rings) load every uplink equally. After failures the subnet manager recomputes: the
  ``digit mod n``-th *valid* next hop, which re-spreads the destinations over the remaining ports.
- ``"te"``: centralized traffic engineering (:mod:`sim.fabric.te`): a controller that sees all flows at once assigns each
  flow (each QP) a path balancing the load on every tier; :func:`route` gives every flow equal weight,
  :func:`sim.fabric.netsim.solve_phase` routes a phase's flows and its background jobs' together with their bytes.
- ``"pinned"``: Meta's static path pinning on RoCE: the source leaf pins a flow to uplink ``slice mod W1``, where
  the slice is the destination NIC's downlink index on its own leaf; the upper tiers use the same destination digit
  as D-mod-k. It differs from ``"dmodk"`` in two ways: (1) it keys on the slice, not the global index, so with more
  uplinks than downlinks (Meta's 18 uplinks for 16 NICs) the spare uplinks idle until a failure; (2) it does not
  recompute on failures: a flow whose pinned port is down (or cannot reach the destination) falls back to the switch's
  5-tuple ECMP over the valid ports, landing on top of other pinned flows. Both are balanced for contiguous jobs and
  degrade with fragmented placement (many sources pinned onto the same destination slices) or failed links, the
  behaviour Meta reports (more than 30 % lower; Gangidi et al., SIGCOMM 2024, docs/sources.md [S2]).

Complexity: the tables cost O(spines x leaves + planes x cores x leaves) once (0.01-0.3 s at 131k GPUs); routing F
flows is O(F) vectorized numpy work per hop, no per-flow Python loop. A (switch, destination) whose next hops are all
valid takes ``selector mod W`` directly; only flows meeting a failure build an (F', W) validity mask. Measured
(bench/bench_routing.py, 2 cores): 0.05-0.15 s for the 393k flows of a 24k-GPU ring with 16 QPs, 0.2-0.6 s for
the 2.1M flows of a 131k-GPU ring, 0.3-1.5 s with 1 % of the fabric cables failed.
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.hashing import HASHES
from sim.fabric.nccl import FIXED_UDP_SPORT
from sim.fabric.paths import Hops, csr, flow_arrays, max_path_links, nic_links, routing_tables
from sim.fabric.ports import route_planes
from sim.fabric.te import te_route
from sim.fabric.topology import Topology

ROUTINGS = ("ecmp", "eecmp", "pinned", "dmodk", "te")


def default_routing(kind: str) -> str:
    """The routing a fabric runs out of the box: 5-tuple ECMP on RoCE, subnet-manager D-mod-k on InfiniBand."""
    if kind == "infiniband":
        return "dmodk"
    if kind == "roce":
        return "ecmp"
    raise ValueError(f"fabric kind {kind!r} is not one of roce, infiniband")


def resolve_routing(routing: str | None, kind: str) -> str:
    """The routing a run uses: ``routing`` when given, else fabric ``kind``'s default (:func:`default_routing`).
    The one place a null routing is resolved (CLI, twin, jobs, figures)."""
    return routing or default_routing(kind)


def static_routing(kind: str) -> str:
    """The static, destination-keyed routing of fabric ``kind``: Meta's path pinning on RoCE, the subnet manager's
    D-mod-k on InfiniBand (and any other kind)."""
    return "pinned" if kind == "roce" else "dmodk"


# --------------------------------------------------------------------------------------------------- hashing
# The hash functions and header fields live in sim.fabric.hashing; splitmix64 stays importable from here.
# --------------------------------------------------------------------------------------------------- tables


# --------------------------------------------------------------------------------------------------- choosing


def route(topo: Topology, src_gpu, dst_gpu, qp=None, routing: str = "ecmp", seed: int = 0, *,
          hash: str = "uniform", sport=None, dqpn=None, padded: bool = False, between_hosts: bool = False,
          repeat: int = 1, choices: bool = False):
    """Route flows; return CSR ``(flow_ptr (F+1,), flow_links)`` of the directed link ids each flow crosses.

    Links are in path order: the source NIC's uplink first, the destination NIC's downlink last. Flows between two
    GPUs of one host get an empty path (NVLink; the caller models it). ``src_gpu``, ``dst_gpu``, ``qp``: int arrays
    (F,) (``qp=None`` means QP 0 for all). The hashed routings hash each flow's header (:mod:`sim.fabric.hashing`) with the
    switch hash ``hash``: the NICs' IP addresses, the UDP source port ``sport`` (F,) (default: one fixed port,
    :data:`sim.fabric.nccl.FIXED_UDP_SPORT`, for every flow) and, for E-ECMP, the destination QP number ``dqpn`` (F,)
    (default: ``qp``). Deterministic for a given ``seed``; raises :class:`sim.fabric.paths.NoPathError` when a flow has no active
    path and ``ValueError`` for an unknown routing or hash or GPU ids out of range.

    ``padded=True`` returns the table the router builds instead of the CSR: (F, :func:`sim.fabric.paths.max_path_links`) link ids
    in path order, ``-1`` past the end of each path (int32 when the link ids fit), the table
    :func:`sim.core.maxmin.identical_rows` groups. Not for ``routing="te"``, whose controller gives CSR paths.
    ``between_hosts=True``: the caller has made sure no flow joins two GPUs of one host (the check is skipped).
    ``repeat=k``: ``src_gpu`` and ``dst_gpu`` are given once per ``k`` consecutive flows (a connection's QPs; flow
    ``i`` joins ``src_gpu[i // k]`` and ``dst_gpu[i // k]``, ``qp``, ``sport``, ``dqpn`` are per flow): the first
    and last hops are looked up once per connection, not once per QP.

    ``choices=True`` (with ``padded``): return ``(paths, code, dense, total)``, where ``code`` (F,) packs the
    equal-cost choices the switches made for each flow: 0 within one leaf; ``u + W1 j`` within a zone (``u`` the
    source leaf's uplink column of ``W1``, ``j`` the spine's parallel cable down of ``m``); ``W1 m + u + W1 (v + W2
    (j2 + m2 j1))`` across zones (``v`` the spine's uplink column of ``W2``, ``j2``, ``j1`` the parallel cables down
    from the core and the spine). Each choice is a distinct cable given the switches before it, and the first and last
    links fix the leaves and zones, so two flows with the same first and last link cross the same links exactly when
    their codes are equal (:func:`sim.core.flowset.keyed_classes` groups identical flows by it, no sort of the rows).
    Codes lie in ``0..total-1``, those below ``dense = W1 m`` being the flows that stay in their zone. On a fabric of
    multi-port NICs (planes) ``code`` is None.
    """
    if routing == "te":                      # centralized traffic engineering: sim/fabric/te.py (all flows at once)
        if padded or repeat != 1:
            raise ValueError("te routing takes per-flow GPUs and gives CSR paths, not a padded table")
        return te_route(topo, src_gpu, dst_gpu, qp, seed=seed)
    repeat = int(repeat)
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    per_flow_qp = qp
    if routing not in ROUTINGS:
        raise ValueError(f"routing {routing!r} is not one of {', '.join(ROUTINGS)}")
    src, dst, qp = flow_arrays(topo, src_gpu, dst_gpu, qp if repeat == 1 else None)
    if hash not in HASHES:
        raise ValueError(f"hash {hash!r} is not one of {', '.join(HASHES)}")
    F = src.size * repeat
    if repeat > 1:
        qp = np.zeros(F, dtype=IDX) if per_flow_qp is None else \
            np.broadcast_to(np.asarray(per_flow_qp, dtype=IDX), (F,)).ravel()
    sport = np.full(F, FIXED_UDP_SPORT, np.uint64) if sport is None else np.broadcast_to(_unsigned(sport), (F,))
    dqpn = qp.astype(np.uint64) if dqpn is None else np.broadcast_to(_unsigned(dqpn), (F,))
    if topo.port_views:                      # multi-port NICs, planes: each flow routed in its port's plane
        if repeat > 1:
            src, dst = np.repeat(src, repeat), np.repeat(dst, repeat)

        def in_plane(view, rows, s, d):
            return route(view, s, d, qp[rows], routing, seed, hash=hash, sport=sport[rows], dqpn=dqpn[rows],
                         padded=padded, between_hosts=True)
        out = route_planes(topo, src, dst, qp, routing, seed, in_plane, padded=padded,
                           width=max_path_links(topo))
        return (out, None, 0, 0) if choices and padded else out
    narrow = np.int32 if topo.n_links < np.iinfo(np.int32).max else IDX     # half the memory of the path table
    paths = np.full((F, max_path_links(topo)), -1, dtype=narrow)
    hops = nic_links(topo, src, dst, paths, between_hosts, repeat)
    code, dense, total = None, 1, 1
    if hops is not None:
        t = routing_tables(topo)
        W1, W2 = t.leaf_up.shape[1], t.spine_up.shape[1]
        dense, total = W1 * t.m, W1 * t.m + W1 * W2 * t.m2 * t.m
        hops.start(t, routing, seed, hash, sport, dqpn)
        plane, spine, u = _up_to_spine(hops, paths)
        j = _down_in_zone(hops, paths, plane, spine)
        cross = _over_the_core(hops, paths, plane, spine)
        if choices and padded:
            small = np.int32 if total < np.iinfo(np.int32).max else IDX
            code = np.zeros(F, dtype=small)
            sz, xz = j[0], cross[0]
            code[hops.fl] = u
            if t.m > 1 and sz.size:
                code[hops.fl[sz]] += W1 * j[1]
            if xz.size:
                v, j2, j1 = cross[1:]
                code[hops.fl[xz]] += dense + W1 * (v + W2 * (j2 + t.m2 * j1))
    if choices and padded:
        return paths, (np.zeros(F, dtype=np.int32) if code is None else code), dense, total
    return paths if padded else csr(paths)


def _unsigned(x) -> np.ndarray:
    """A header field as unsigned integers: an unsigned array as it is (16-bit ports and 24-bit QP numbers kept
    narrow: the hash widens only the flows it hashes), anything else as uint64."""
    return x if isinstance(x, np.ndarray) and x.dtype.kind == "u" else np.asarray(x, dtype=np.uint64)


def _up_to_spine(h: Hops, paths):
    """Hop 1, leaf -> spine: the uplink each flow takes; returns each flow's plane and the spine (rank) it reaches."""
    topo, t = h.topo, h.t
    a, b, za = h.a, h.b, h.za
    W1 = t.leaf_up.shape[1]
    k = h.repeat                          # a, b, za are per flow, equal over each connection's k QPs
    full = t.leaf_full[a[::k]] & t.leaf_dst_full[za[::k], b[::k]]
    full = np.repeat(full, k) if k > 1 else full

    def leaf_valid(rows):
        ids = t.leaf_up[a[rows]]
        planes = np.arange(W1) // t.m
        sp = topo.spine_at[za[rows][:, None], planes[None, :]]
        return (ids >= 0) & (sp >= 0) & t.spine_reach[np.maximum(sp, 0), b[rows][:, None]]

    u, dead = h.choose(full, slice(None), lambda: h.per_flow(topo.leaves, a), h.dig1, W1, leaf_valid)   # every flow
    if dead.size:
        h.no_path(dead, "no uplink of the source leaf reaches the destination leaf")
    paths[h.fl, 1] = t.leaf_up[a, u]
    plane = u if t.m == 1 else u // t.m
    return plane, topo.spine_at[za, plane], u


def _down_in_zone(h: Hops, paths, plane, spine) -> None:
    """Flows within one zone turn at the spine: spine -> destination leaf over the parallel cables of its plane.
    Returns those flows (rows of ``h``) and the parallel cable each takes."""
    topo, t = h.topo, h.t
    sz = np.flatnonzero(h.za == h.zb)
    if not sz.size:
        return sz, sz
    if t.m == 1:                          # one cable from the spine down to the leaf: nothing to choose
        link = topo.leaf_up[h.b[sz], plane[sz], 0]
        assert (link >= 0).all(), "spine_reach promised a downlink"
        j = np.zeros(sz.size, dtype=IDX)
    else:
        b = h.b[sz]
        cand = topo.leaf_up[b, plane[sz]]                                   # (k, m)
        j, dead = h.choose(t.leaf_plane_full[b, plane[sz]], sz, lambda: topo.spines[spine[sz]], h.dig1, t.m,
                           lambda r: cand[r] >= 0)
        assert dead.size == 0, "spine_reach promised a downlink"
        link = cand[np.arange(sz.size), j]
        del b, cand
    link += topo.n_cables                 # (in place: the temporaries of this hop are the route's peak memory)
    rows = h.fl[sz]
    paths[rows, 2] = link
    del link
    paths[rows, 3] = h.down0[sz]
    return sz, j


def _over_the_core(h: Hops, paths, plane, spine) -> None:
    """Flows to another zone: spine -> core of its plane -> spine of that plane in the destination zone -> leaf.
    Returns those flows (rows of ``h``) and their choices: the spine's uplink column, the core's and the spine's
    parallel cable down."""
    topo, t = h.topo, h.t
    C = topo.n_cables
    xz = np.flatnonzero(h.za != h.zb)
    if not xz.size:
        return xz, xz, xz, xz
    s1, pl, bx = spine[xz], plane[xz], h.b[xz]
    W2 = t.spine_up.shape[1]
    full = t.spine_full[s1] & t.spine_dst_full[pl, bx]

    def spine_valid(rows):
        ids = t.spine_up[s1[rows]]
        members = np.arange(W2) // t.m2
        return (ids >= 0) & t.core_reach[pl[rows][:, None], members[None, :], bx[rows][:, None]]

    v, dead = h.choose(full, xz, lambda: topo.spines[s1], h.dig2, W2, spine_valid)
    assert dead.size == 0, "spine_reach promised an uplink"
    member = v // t.m2
    paths[h.fl[xz], 2] = t.spine_up[s1, v]
    core_rank = topo.core_at[pl, member]
    s2 = topo.spine_at[h.zb[xz], pl]
    cand = topo.spine_up[s2, member]                                        # (k, m2) cables spine' - core
    j2, dead = h.choose(t.spine_core_full[s2, member], xz, lambda: topo.cores[core_rank], h.dig2, t.m2,
                        lambda r: cand[r] >= 0)
    assert dead.size == 0, "core_reach promised a downlink"
    paths[h.fl[xz], 3] = cand[np.arange(xz.size), j2] + C
    cand = topo.leaf_up[bx, pl]                                              # (k, m) cables leaf b - spine'
    j1, dead = h.choose(t.leaf_plane_full[bx, pl], xz, lambda: topo.spines[s2], h.dig1, t.m, lambda r: cand[r] >= 0)
    assert dead.size == 0, "core_reach promised a leaf downlink"
    paths[h.fl[xz], 4] = cand[np.arange(xz.size), j1] + C
    paths[h.fl[xz], 5] = h.down0[xz]
    return xz, v, j2, j1


