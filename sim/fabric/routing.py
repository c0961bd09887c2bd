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
switch's *valid* next hops towards the destination leaf, computed once per topology (:func:`routing_tables`,
cached in ``topo.cache``): an uplink is valid when its cable is active and the switch it reaches still has an active
path *down* to the destination leaf (a spine whose downlinks to the leaf failed, a core cut off from the destination
zone's spine are never chosen); a downlink is valid when its cable is active. When a flow has no valid choice left
:class:`NoPathError` is raised; paths that would need to go down and up again are not modelled.

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

from dataclasses import dataclass

import numpy as np

from sim.fabric.hashing import HASHES, SwitchHash, nic_ips, splitmix64  # noqa: F401  (splitmix64 re-exported)
from sim.fabric.nccl import FIXED_UDP_SPORT
from sim.core.units import IDX
from sim.fabric.topology import Topology

ROUTINGS = ("ecmp", "eecmp", "pinned", "dmodk", "te")


class NoPathError(ValueError):
    """Some flows have no active path between their GPUs (failed or drained links, switches or NICs)."""


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


# --------------------------------------------------------------------------------------------------- hashing
# The hash functions and header fields live in sim.fabric.hashing; splitmix64 stays importable from here.
# --------------------------------------------------------------------------------------------------- tables
@dataclass
class RoutingTables:
    """Next-hop validity per switch and destination leaf, computed once per topology (all boolean unless noted).

    Ranks index the topology's ``leaves`` / ``spines`` / ``cores`` arrays. ``W1 = P*m`` uplinks per leaf
    (P planes x m parallel cables), ``W2 = M*m2`` uplinks per spine (M core members x m2 parallel cables).
    """

    leaf_up: np.ndarray          # (nL, W1) up link ids, -1 inactive
    spine_up: np.ndarray         # (nS, W2) up link ids, -1 inactive
    m: int
    m2: int
    leaf_zone: np.ndarray        # (nL,)
    spine_zone: np.ndarray       # (nS,)
    spine_plane: np.ndarray      # (nS,)
    spine_reach: np.ndarray      # (nS, nL): the spine has an active valley-free path down to the leaf
    core_reach: np.ndarray       # (P, M, nL): core (plane, member) has an active path down to the leaf
    leaf_full: np.ndarray        # (nL,): all leaf uplinks active
    leaf_dst_full: np.ndarray    # (Z, nL): every spine of zone z reaches the leaf
    spine_full: np.ndarray       # (nS,): all spine uplinks active
    spine_dst_full: np.ndarray   # (P, nL): every core of plane p reaches the leaf
    leaf_plane_full: np.ndarray  # (nL, P): all m cables of leaf - spine p active
    spine_core_full: np.ndarray  # (nS, M): all m2 cables of spine - core member active


def routing_tables(topo: Topology) -> RoutingTables:
    """The :class:`RoutingTables` of ``topo``, built on first use and cached in ``topo.cache``."""
    cached = topo.cache.get("routing_tables")
    if cached is not None:
        return cached
    nL, P, m = topo.leaf_up.shape
    nS, M, m2 = topo.spine_up.shape
    leaf_zone = topo.switch_zone[topo.leaves]
    spine_zone = topo.switch_zone[topo.spines]
    spine_plane = topo.switch_group[topo.spines]
    leaf_cab_ok = topo.leaf_up >= 0
    spine_cab_ok = topo.spine_up >= 0
    leaf_plane_ok = leaf_cab_ok.any(axis=2)                   # (nL, P)
    spine_core_ok = spine_cab_ok.any(axis=2)                  # (nS, M)
    spine_at = topo.spine_at                                   # (Z, P)

    # Core (p, c) reaches leaf b through spine (zone(b), p), if that spine has a cable to it and one down to b.
    if len(topo.cores) and nS:
        dst_spine = spine_at[leaf_zone].T                      # (P, nL) spine rank serving leaf b in plane p
        has = dst_spine >= 0
        core_reach = (spine_core_ok[np.maximum(dst_spine, 0)].transpose(0, 2, 1)   # (P, M, nL)
                      & (has & leaf_plane_ok.T)[:, None, :])
        # Spine s (plane p) reaches leaf b of another zone through any core of p it is cabled to: computed once
        # per distinct set of cores a spine of p is cabled to (one set per plane when no cable failed), then each
        # spine's row copied whole from that table (row 0: no plane, reaches nothing) in one gather.
        reach_rows, row_of = [np.zeros((1, nL), dtype=bool)], np.zeros(nS, dtype=IDX)
        for p in range(P):
            rows = np.flatnonzero(spine_plane == p)
            sets, which = np.unique(spine_core_ok[rows], axis=0, return_inverse=True)
            row_of[rows] = sum(len(r) for r in reach_rows) + which.ravel()
            reach_rows.append((sets.astype(np.float32) @ core_reach[p].astype(np.float32)) > 0)
        spine_reach = np.take(np.concatenate(reach_rows), row_of, axis=0)
    else:
        core_reach = np.zeros((P, max(M, 1), nL), dtype=bool)
        spine_reach = np.zeros((nS, nL), dtype=bool)
    # Within its own zone a spine reaches the leaves its plane's cables go down to.
    for z in np.unique(spine_zone):
        rows, cols = np.flatnonzero(spine_zone == z), np.flatnonzero(leaf_zone == z)
        spine_reach[np.ix_(rows, cols)] = leaf_plane_ok[np.ix_(cols, spine_plane[rows])].T
    Z = spine_at.shape[0]
    leaf_dst_full = np.ones((Z, nL), dtype=bool)
    for z in range(Z):
        ss = spine_at[z]
        leaf_dst_full[z] = spine_reach[ss].all(axis=0) if (ss >= 0).all() else False
    tables = RoutingTables(
        leaf_up=topo.leaf_up.reshape(nL, P * m), spine_up=topo.spine_up.reshape(nS, M * m2), m=m, m2=m2,
        leaf_zone=leaf_zone, spine_zone=spine_zone, spine_plane=spine_plane, spine_reach=spine_reach,
        core_reach=core_reach, leaf_full=leaf_cab_ok.all(axis=(1, 2)), leaf_dst_full=leaf_dst_full,
        spine_full=spine_cab_ok.all(axis=(1, 2)), spine_dst_full=core_reach.all(axis=1),
        leaf_plane_full=leaf_cab_ok.all(axis=2), spine_core_full=spine_cab_ok.all(axis=2),
    )
    topo.cache["routing_tables"] = tables
    return tables


# --------------------------------------------------------------------------------------------------- choosing
def _pick(full: np.ndarray, sel: np.ndarray, width: int, valid, fallback: np.ndarray | None = None):
    """The column each flow takes among ``width`` next hops, and the flows with no valid one.

    ``full[f]``: every column is valid, so the column is ``sel mod width``. Otherwise ``valid(flows)`` gives the
    (n, width) validity and the flow takes the ``sel mod n_valid``-th valid column, or, when ``fallback`` is given
    (pinning), its preferred column ``sel mod width`` if valid and else the ``fallback mod n_valid``-th valid one.
    """
    col = (sel % np.uint64(width)).astype(IDX)
    slow = np.flatnonzero(~full)
    dead = np.zeros(0, dtype=IDX)
    if slow.size:
        mask = valid(slow)
        cnt = mask.sum(axis=1)
        alive = cnt > 0
        dead = slow[~alive]
        cnt_u = np.maximum(cnt, 1).astype(np.uint64)
        k = ((sel[slow] if fallback is None else fallback[slow]) % cnt_u).astype(IDX)
        kth = np.argmax(np.cumsum(mask, axis=1) > k[:, None], axis=1)
        if fallback is None:
            col[slow] = kth
        else:
            pref = col[slow]
            col[slow] = np.where(mask[np.arange(slow.size), pref], pref, kth)
    return col, dead


def _no_path(topo: Topology, src, dst, bad: np.ndarray, n_flows: int, reason: str, repeat: int = 1):
    """Raise NoPathError for the flows ``bad``; flow ``f`` joins ``src[f // repeat]`` and ``dst[f // repeat]``."""
    f = int(bad[0]) // repeat
    s, d = int(src[f]), int(dst[f])
    pairs = len(np.unique(src[bad // repeat] * topo.n_gpus + dst[bad // repeat]))
    raise NoPathError(f"{bad.size} of {n_flows} flows ({pairs} GPU pairs) have no active path; first: "
                      f"GPU {s} (host {int(topo.gpu_host[s])}) -> GPU {d} (host {int(topo.gpu_host[d])}): {reason}")


def route(topo: Topology, src_gpu, dst_gpu, qp=None, routing: str = "ecmp", seed: int = 0, *,
          hash: str = "uniform", sport=None, dqpn=None, padded: bool = False, between_hosts: bool = False,
          repeat: int = 1):
    """Route flows; return CSR ``(flow_ptr (F+1,), flow_links)`` of the directed link ids each flow crosses.

    Links are in path order: the source NIC's uplink first, the destination NIC's downlink last. Flows between two
    GPUs of one host get an empty path (NVLink; the caller models it). ``src_gpu``, ``dst_gpu``, ``qp``: int arrays
    (F,) (``qp=None`` means QP 0 for all). The hashed routings hash each flow's header (:mod:`sim.fabric.hashing`) with the
    switch hash ``hash``: the NICs' IP addresses, the UDP source port ``sport`` (F,) (default: one fixed port,
    :data:`sim.fabric.nccl.FIXED_UDP_SPORT`, for every flow) and, for E-ECMP, the destination QP number ``dqpn`` (F,)
    (default: ``qp``). Deterministic for a given ``seed``; raises :class:`NoPathError` when a flow has no active
    path and ``ValueError`` for an unknown routing or hash or GPU ids out of range.

    ``padded=True`` returns the table the router builds instead of the CSR: (F, :func:`max_path_links`) link ids
    in path order, ``-1`` past the end of each path (int32 when the link ids fit), the table
    :func:`sim.core.maxmin.identical_rows` groups. Not for ``routing="te"``, whose controller gives CSR paths.
    ``between_hosts=True``: the caller has made sure no flow joins two GPUs of one host (the check is skipped).
    ``repeat=k``: ``src_gpu`` and ``dst_gpu`` are given once per ``k`` consecutive flows (a connection's QPs; flow
    ``i`` joins ``src_gpu[i // k]`` and ``dst_gpu[i // k]``, ``qp``, ``sport``, ``dqpn`` are per flow): the first
    and last hops are looked up once per connection, not once per QP.
    """
    if routing == "te":                      # centralized traffic engineering: sim/fabric/te.py (all flows at once)
        if padded or repeat != 1:
            raise ValueError("te routing takes per-flow GPUs and gives CSR paths, not a padded table")
        from sim.fabric.te import te_route
        return te_route(topo, src_gpu, dst_gpu, qp, seed=seed)
    repeat = int(repeat)
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    per_flow_qp = qp
    src, dst, qp = _flow_arrays(topo, src_gpu, dst_gpu, qp if repeat == 1 else None, routing)
    if hash not in HASHES:
        raise ValueError(f"hash {hash!r} is not one of {', '.join(HASHES)}")
    F = src.size * repeat
    if repeat > 1:
        qp = np.zeros(F, dtype=IDX) if per_flow_qp is None else \
            np.broadcast_to(np.asarray(per_flow_qp, dtype=IDX), (F,)).ravel()
    sport = np.full(F, FIXED_UDP_SPORT, np.uint64) if sport is None else np.broadcast_to(
        np.asarray(sport, dtype=np.uint64), (F,))
    dqpn = qp.astype(np.uint64) if dqpn is None else np.broadcast_to(np.asarray(dqpn, dtype=np.uint64), (F,))
    narrow = np.int32 if topo.n_links < np.iinfo(np.int32).max else IDX     # half the memory of the path table
    paths = np.full((F, max_path_links(topo)), -1, dtype=narrow)
    hops = _nic_links(topo, src, dst, paths, between_hosts, repeat)
    if hops is not None:
        hops.start(routing_tables(topo), routing, seed, hash, sport, dqpn)
        plane, spine = _up_to_spine(hops, paths)
        _down_in_zone(hops, paths, plane, spine)
        _over_the_core(hops, paths, plane, spine)
    return paths if padded else _csr(paths)


def max_path_links(topo: Topology) -> int:
    """The most links a valley-free path crosses: up and down through each switch tier the fabric has (a 3-tier
    fabric: NIC -> leaf -> spine -> core -> spine -> leaf -> NIC, 6 links)."""
    tiers = sum(len(x) > 0 for x in (topo.leaves, topo.spines, topo.cores))
    return 2 * max(tiers, 1)


def _flow_arrays(topo: Topology, src_gpu, dst_gpu, qp, routing: str):
    """``src``, ``dst``, ``qp`` as flat int arrays of one length, refusing an unknown routing and GPU ids out of
    range."""
    if routing not in ROUTINGS:
        raise ValueError(f"routing {routing!r} is not one of {', '.join(ROUTINGS)}")
    src = np.asarray(src_gpu, dtype=IDX).ravel()
    dst = np.asarray(dst_gpu, dtype=IDX).ravel()
    F = src.size
    qp = np.zeros(F, dtype=IDX) if qp is None else np.broadcast_to(np.asarray(qp, dtype=IDX), (F,)).ravel()
    if dst.size != F:
        raise ValueError(f"src_gpu has {F} flows but dst_gpu has {dst.size}")
    G = topo.n_gpus
    for name, arr in (("src_gpu", src), ("dst_gpu", dst)):
        if F and (arr.min() < 0 or arr.max() >= G):
            raise ValueError(f"{name}: GPU ids must lie in 0..{G - 1}")
    return src, dst, qp


@dataclass
class _Hops:
    """The flows that leave their leaf, and how each switch on their way picks among its equal-cost next hops.

    ``fl``: their rows in the flow arrays; ``a``/``b``: ranks of their source and destination leaves, ``za``/``zb``
    those leaves' zones; ``s``/``d``: their GPUs (once per group of ``repeat`` flows); ``down0``: the destination
    NIC's downlink. :meth:`start` adds the routing: the per-flow hash key (hashed routings) and the destination
    digits (static routings).
    """

    topo: Topology
    src: np.ndarray              # all flows' GPUs (per group of ``repeat`` flows), for error messages
    dst: np.ndarray
    fl: np.ndarray
    a: np.ndarray
    b: np.ndarray
    s: np.ndarray
    d: np.ndarray
    down0: np.ndarray
    t: RoutingTables | None = None
    za: np.ndarray | None = None
    zb: np.ndarray | None = None
    routing: str = "ecmp"
    hashed: bool = True
    hash: SwitchHash | None = None
    dig1: np.ndarray | None = None
    dig2: np.ndarray | None = None
    repeat: int = 1              # src and dst are per group of this many consecutive flows (route's repeat)

    def start(self, t: RoutingTables, routing: str, seed: int, hash: str, sport: np.ndarray,
              dqpn: np.ndarray) -> None:
        topo = self.topo
        self.t, self.routing = t, routing
        self.za, self.zb = t.leaf_zone[self.a], t.leaf_zone[self.b]
        self.hashed = routing in ("ecmp", "eecmp", "pinned")
        if self.hashed:
            self.hash = SwitchHash(hash, seed, nic_ips(topo, self.s), nic_ips(topo, self.d), sport[self.fl],
                                   dqpn[self.fl] if routing == "eecmp" else None, repeat=self.repeat)
        if routing in ("dmodk", "pinned"):
            W1, D = t.leaf_up.shape[1], max(topo.leaf_downlinks, 1)
            port = np.repeat(topo.gpu_leaf_port[self.d], self.repeat)
            dglob = (self.b * D + port).astype(np.uint64)
            self.dig1 = dglob if routing == "dmodk" else port.astype(np.uint64)
            self.dig2 = dglob // np.uint64(W1)

    def choose(self, full, rows, nodes, digit, width, valid):
        """One hop's pick among ``width`` equal-cost choices: the switch's hash (ECMP, E-ECMP), or the
        destination digit (static routing; pinning falls back to the hash where its pinned choice is dead).
        ``nodes()`` gives the switches' node ids. With one choice (a single cable) nothing is hashed: any selector
        picks it, or finds it dead."""
        if width == 1:
            return _pick(full, np.zeros(len(rows), dtype=np.uint64), 1, valid)
        h = self.hash.at(rows, nodes()) if self.hashed else None
        if self.routing in ("ecmp", "eecmp"):
            return _pick(full, h, width, valid)
        return _pick(full, digit[rows], width, valid, h if self.routing == "pinned" else None)

    def no_path(self, rows, reason: str):
        _no_path(self.topo, self.src, self.dst, self.fl[rows], self.src.size * self.repeat, reason, self.repeat)


def _nic_links(topo: Topology, src, dst, paths, between_hosts: bool = False, repeat: int = 1) -> _Hops | None:
    """Fill in the first and last link of every flow between hosts (its NICs' cables) and the whole path of flows
    within one leaf; return the flows that leave their leaf (``None`` if none do). ``src``, ``dst``: per group of
    ``repeat`` consecutive flows (:func:`route`); the lookups are per group, written to its flows by broadcasting."""
    g = _gpu_ends(topo)
    k = repeat
    net = np.arange(src.size) if between_hosts else np.flatnonzero(topo.gpu_host[src] != topo.gpu_host[dst])
    every = net.size == src.size                                          # every flow uses the network
    s, d = (src, dst) if every else (src[net], dst[net])
    bad = ~(g.sends[s] & g.receives[d])
    if bad.any():
        rows = (net[bad][:, None] * k + np.arange(k)).ravel()
        _no_path(topo, src, dst, rows, src.size * k, "a NIC, its cable or its leaf is not active", k)
    down0 = topo.gpu_downlink[d]
    groups = paths.reshape(src.size, k, paths.shape[1])                  # (groups, repeat, width): a view
    if every:
        groups[:, :, 0] = topo.gpu_uplink[s][:, None]
    else:
        groups[net, :, 0] = topo.gpu_uplink[s][:, None]
    a, b = g.leaf[s], g.leaf[d]
    same_leaf = a == b
    stay = np.flatnonzero(same_leaf)
    groups[stay if every else net[stay], :, 1] = down0[stay][:, None]
    leave = np.flatnonzero(~same_leaf)
    if leave.size == 0:
        return None
    rows = leave if every else net[leave]
    if k > 1:
        rows = (rows[:, None] * k + np.arange(k)).ravel()
    per_flow = (lambda x: np.repeat(x[leave], k)) if k > 1 else (lambda x: x[leave])  # noqa: E731
    return _Hops(topo, src, dst, rows, per_flow(a), per_flow(b), s[leave], d[leave], per_flow(down0), repeat=k)


@dataclass
class _GpuEnds:
    """Per GPU, what the first and last hop of a flow need: its leaf's rank, whether it can send (NIC uplink and
    leaf active) and receive (NIC downlink and leaf active). Cached in ``topo.cache``: two gathers per flow, not six."""

    leaf: np.ndarray
    sends: np.ndarray
    receives: np.ndarray


def _gpu_ends(topo: Topology) -> _GpuEnds:
    cached = topo.cache.get("gpu_ends")
    if cached is None:
        leaf_ok = topo.switch_active[topo.gpu_leaf]
        cached = _GpuEnds(leaf=topo.switch_rank[topo.gpu_leaf], sends=(topo.gpu_uplink >= 0) & leaf_ok,
                          receives=(topo.gpu_downlink >= 0) & leaf_ok)
        topo.cache["gpu_ends"] = cached
    return cached


def _up_to_spine(h: _Hops, paths):
    """Hop 1, leaf -> spine: the uplink each flow takes; returns each flow's plane and the spine (rank) it reaches."""
    topo, t = h.topo, h.t
    a, b, za = h.a, h.b, h.za
    W1 = t.leaf_up.shape[1]
    full = t.leaf_full[a] & t.leaf_dst_full[za, b]

    def leaf_valid(rows):
        ids = t.leaf_up[a[rows]]
        planes = np.arange(W1) // t.m
        sp = topo.spine_at[za[rows][:, None], planes[None, :]]
        return (ids >= 0) & (sp >= 0) & t.spine_reach[np.maximum(sp, 0), b[rows][:, None]]

    u, dead = h.choose(full, np.arange(h.fl.size), lambda: topo.leaves[a], h.dig1, W1, leaf_valid)
    if dead.size:
        h.no_path(dead, "no uplink of the source leaf reaches the destination leaf")
    paths[h.fl, 1] = t.leaf_up[a, u]
    plane = u // t.m
    return plane, topo.spine_at[za, plane]


def _down_in_zone(h: _Hops, paths, plane, spine) -> None:
    """Flows within one zone turn at the spine: spine -> destination leaf over the parallel cables of its plane."""
    topo, t = h.topo, h.t
    sz = np.flatnonzero(h.za == h.zb)
    if not sz.size:
        return
    b = h.b
    cand = topo.leaf_up[b[sz], plane[sz]]                                   # (k, m)
    j, dead = h.choose(t.leaf_plane_full[b[sz], plane[sz]], sz, lambda: topo.spines[spine[sz]], h.dig1, t.m,
                       lambda r: cand[r] >= 0)
    assert dead.size == 0, "spine_reach promised a downlink"
    paths[h.fl[sz], 2] = cand[np.arange(sz.size), j] + topo.n_cables
    paths[h.fl[sz], 3] = h.down0[sz]


def _over_the_core(h: _Hops, paths, plane, spine) -> None:
    """Flows to another zone: spine -> core of its plane -> spine of that plane in the destination zone -> leaf."""
    topo, t = h.topo, h.t
    C = topo.n_cables
    xz = np.flatnonzero(h.za != h.zb)
    if not xz.size:
        return
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


def path_lengths(used: np.ndarray) -> np.ndarray:
    """(F,) uint8: the links of each row of a padded path table, given its mask ``used = paths >= 0`` (F, w).
    Summed column by column as bytes: numpy's ``sum(axis=1)`` over a short row costs 6x more (9.4M rows of 6)."""
    cols = used.view(np.uint8)
    n = cols[:, 0].copy()
    for i in range(1, cols.shape[1]):
        n += cols[:, i]
    return n


def _csr(paths: np.ndarray):
    """The CSR ``(ptr, links)`` (both IDX) of a path table padded with -1."""
    used = paths >= 0
    ptr = np.zeros(len(paths) + 1, dtype=IDX)
    np.cumsum(path_lengths(used), out=ptr[1:], dtype=IDX)
    return ptr, paths[used].astype(IDX, copy=False)
