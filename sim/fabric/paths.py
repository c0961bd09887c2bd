"""Path tables: what every router of the valley-free fabric builds on. Per topology, which next hops still reach each
destination leaf (:func:`routing_tables`); per flow, its GPUs checked (:func:`flow_arrays`), its first and last link
(the NICs' cables, :func:`nic_links`) and how a switch picks among its valid next hops (:class:`Hops`); paths as a
padded table or CSR. The hash and static routings (:mod:`sim.fabric.routing`) and the traffic-engineering controller
(:mod:`sim.fabric.te`) share them, so they live below both.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.units import IDX
from sim.fabric.hashing import SwitchHash, nic_ips
from sim.fabric.topology import Topology


class NoPathError(ValueError):
    """Some flows have no active path between their GPUs (failed or drained links, switches or NICs)."""


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
    for z in np.flatnonzero(np.bincount(spine_zone)):    # the zones with spines (np.unique imports numpy.ma)
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


def pick(full: np.ndarray, sel: np.ndarray, width: int, valid, fallback: np.ndarray | None = None):
    """The column each flow takes among ``width`` next hops, and the flows with no valid one.

    ``full[f]``: every column is valid, so the column is ``sel mod width``. Otherwise ``valid(flows)`` gives the
    (n, width) validity and the flow takes the ``sel mod n_valid``-th valid column, or, when ``fallback`` is given
    (pinning), its preferred column ``sel mod width`` if valid and else the ``fallback mod n_valid``-th valid one.
    """
    # one choice: every selector takes column 0 (no modulo over the flows)
    col = np.zeros(sel.size, dtype=IDX) if width == 1 else (sel % np.uint64(width)).astype(IDX)
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


def no_path(topo: Topology, src, dst, bad: np.ndarray, n_flows: int, reason: str, repeat: int = 1):
    """Raise NoPathError for the flows ``bad``; flow ``f`` joins ``src[f // repeat]`` and ``dst[f // repeat]``."""
    f = int(bad[0]) // repeat
    s, d = int(src[f]), int(dst[f])
    pairs = len(np.unique(src[bad // repeat] * topo.n_gpus + dst[bad // repeat]))
    raise NoPathError(f"{bad.size} of {n_flows} flows ({pairs} GPU pairs) have no active path; first: "
                      f"GPU {s} (host {int(topo.gpu_host[s])}) -> GPU {d} (host {int(topo.gpu_host[d])}): {reason}")


def max_path_links(topo: Topology) -> int:
    """The most links a valley-free path crosses: up and down through each switch tier the fabric has (a 3-tier
    fabric: NIC -> leaf -> spine -> core -> spine -> leaf -> NIC, 6 links)."""
    tiers = sum(len(x) > 0 for x in (topo.leaves, topo.spines, topo.cores))
    return 2 * max(tiers, 1)


def flow_arrays(topo: Topology, src_gpu, dst_gpu, qp):
    """``src``, ``dst``, ``qp`` as flat int arrays of one length, refusing GPU ids out of range."""
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
class Hops:
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
        self.za, self.zb = self.per_flow(t.leaf_zone, self.a), self.per_flow(t.leaf_zone, self.b)
        self.hashed = routing in ("ecmp", "eecmp", "pinned")
        if self.hashed:
            self.hash = SwitchHash(hash, seed, nic_ips(topo, self.s), nic_ips(topo, self.d), self.rows_of(sport),
                                   self.rows_of(dqpn) if routing == "eecmp" else None, repeat=self.repeat,
                                   n_nodes=topo.n_nodes)
        if routing in ("dmodk", "pinned"):
            W1, D = t.leaf_up.shape[1], max(topo.leaf_downlinks, 1)
            port = np.repeat(topo.gpu_leaf_port[self.d], self.repeat)
            dglob = (self.b * D + port).astype(np.uint64)
            self.dig1 = dglob if routing == "dmodk" else port.astype(np.uint64)
            self.dig2 = dglob // np.uint64(W1)

    def per_flow(self, table: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``table[x]`` for ``x`` given per flow but equal over each group of ``repeat`` flows (a connection's
        QPs): looked up once per group and repeated (a gather 16x smaller at 16 QPs)."""
        k = self.repeat
        return table[x] if k == 1 else np.repeat(table[x[::k]], k)

    def rows_of(self, values: np.ndarray) -> np.ndarray:
        """``values[self.fl]`` of a per-flow array (all flows of the route): whole groups of ``repeat`` flows are
        copied as rows of a (groups, repeat) view, not gathered flow by flow."""
        k = self.repeat
        if k == 1:
            return values[self.fl]
        return values.reshape(-1, k)[self.fl[::k] // k].reshape(-1)

    def choose(self, full, rows, nodes, digit, width, valid):
        """One hop's pick among ``width`` equal-cost choices: the switch's hash (ECMP, E-ECMP), or the
        destination digit (static routing; pinning falls back to the hash where its pinned choice is dead).
        ``nodes()`` gives the switches' node ids; ``rows``: the flows (rows of this object, or ``slice(None)``
        for all, ``full`` one entry per row). With one choice (a single cable) nothing is hashed: any selector
        picks it, or finds it dead."""
        if width == 1:
            return pick(full, np.zeros(full.size, dtype=np.uint64), 1, valid)
        h = self.hash.at(rows, nodes()) if self.hashed else None
        if self.routing in ("ecmp", "eecmp"):
            return pick(full, h, width, valid)
        return pick(full, digit[rows], width, valid, h if self.routing == "pinned" else None)

    def no_path(self, rows, reason: str):
        no_path(self.topo, self.src, self.dst, self.fl[rows], self.src.size * self.repeat, reason, self.repeat)


def nic_links(topo: Topology, src, dst, paths, between_hosts: bool = False, repeat: int = 1) -> Hops | None:
    """Fill in the first and last link of every flow between hosts (its NICs' cables) and the whole path of flows
    within one leaf; return the flows that leave their leaf (``None`` if none do). ``src``, ``dst``: per group of
    ``repeat`` consecutive flows (:func:`route`); the lookups are per group, written to its flows by broadcasting."""
    g = gpu_ends(topo)
    k = repeat
    net = np.arange(src.size) if between_hosts else np.flatnonzero(topo.gpu_host[src] != topo.gpu_host[dst])
    every = net.size == src.size                                          # every flow uses the network
    s, d = (src, dst) if every else (src[net], dst[net])
    bad = ~(g.sends[s] & g.receives[d])
    if bad.any():
        rows = (net[bad][:, None] * k + np.arange(k)).ravel()
        no_path(topo, src, dst, rows, src.size * k, "a NIC, its cable or its leaf is not active", k)
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
    return Hops(topo, src, dst, rows, per_flow(a), per_flow(b), s[leave], d[leave], per_flow(down0), repeat=k)


@dataclass
class GpuEnds:
    """Per GPU, what the first and last hop of a flow need: its leaf's rank, whether it can send (NIC uplink and
    leaf active) and receive (NIC downlink and leaf active). Cached in ``topo.cache``: two gathers per flow, not six."""

    leaf: np.ndarray
    sends: np.ndarray
    receives: np.ndarray


def gpu_ends(topo: Topology) -> GpuEnds:
    cached = topo.cache.get("gpu_ends")
    if cached is None:
        leaf_ok = topo.switch_active[topo.gpu_leaf]
        cached = GpuEnds(leaf=topo.switch_rank[topo.gpu_leaf], sends=(topo.gpu_uplink >= 0) & leaf_ok,
                          receives=(topo.gpu_downlink >= 0) & leaf_ok)
        topo.cache["gpu_ends"] = cached
    return cached


def path_lengths(used: np.ndarray) -> np.ndarray:
    """(F,) uint8: the links of each row of a padded path table, given its mask ``used = paths >= 0`` (F, w).
    Summed column by column as bytes: numpy's ``sum(axis=1)`` over a short row costs 6x more (9.4M rows of 6)."""
    cols = used.view(np.uint8)
    n = cols[:, 0].copy()
    for i in range(1, cols.shape[1]):
        n += cols[:, i]
    return n


def csr(paths: np.ndarray):
    """The CSR ``(ptr, links)`` (both IDX) of a path table padded with -1."""
    used = paths >= 0
    ptr = np.zeros(len(paths) + 1, dtype=IDX)
    np.cumsum(path_lengths(used), out=ptr[1:], dtype=IDX)
    return ptr, paths[used].astype(IDX, copy=False)
