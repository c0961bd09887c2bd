"""Routing over planes and multi-port NICs: which port of its NIC each flow leaves by (and so which plane it runs in),
and the split of a routing call into one call per plane (:attr:`sim.fabric.topology.Topology.port_views`).

Model
-----
A NIC of ``Q`` ports (``ports_per_nic``; Alibaba HPN's 2 x 200G, a multi-plane NIC's 4) sends each flow (each QP)
out of one port; port ``q`` is in plane ``q % P`` and planes share no cable, so the flow stays in that plane and
enters the destination NIC by its port in the same plane (the same port number; with two ports of a NIC in one
plane, dual-ToR, the other one if that one is down). Which port: the QP's index in its connection plus an offset,
modulo ``Q`` (:func:`choose_ports`), so a connection's QPs are striped round-robin over the ports, as NCCL spreads
the QPs of a merged multi-port NIC over its ports (docs/sources.md [S75]); the offset is a hash of the connection's
two GPUs and the seed for the hashed routings (ECMP, E-ECMP, pinning) and the destination's index for D-mod-k and TE
(deterministic), so that 1-QP connections to different destinations leave by different ports. A port whose cable or leaf is down is skipped:
the flow takes the next port (in port order) whose own and destination's ends are up, so a failed port or ToR moves
its NIC's traffic to the NIC's other ports. Within its plane the flow is routed exactly as on a single-plane fabric
(up/down shortest paths, every routing mode), on the plane's :class:`Topology` view.

Limitations: a leaf that is up but cut off from every spine is not failed over (its flows raise NoPathError as
on a single-plane fabric); ports are chosen per flow, not re-balanced by load (TE balances within each plane).
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.hashing import splitmix64
from sim.fabric.paths import no_path

HASHED = ("ecmp", "eecmp", "pinned")


def choose_ports(topo, src, dst, qp, routing: str, seed: int):
    """``(src_port, dst_port)`` (F,) of each flow: the NIC ports it leaves and enters by (module docstring).
    Raises NoPathError naming the first flow with no pair of live ports in one plane."""
    Q, P = topo.ports_per_nic, topo.planes
    G = topo.n_gpus
    F = src.size
    qp = np.zeros(F, dtype=IDX) if qp is None else np.asarray(qp, dtype=IDX)
    if routing in HASHED:
        key = src.astype(np.uint64) * np.uint64(G) + dst.astype(np.uint64)
        off = splitmix64(key ^ splitmix64(np.array([seed], dtype=np.uint64)))
    else:
        off = dst.astype(np.uint64)
    first = ((off + qp.astype(np.uint64)) % np.uint64(Q)).astype(IDX)
    alive = topo.gpu_port_alive
    s_ok, d_ok = alive[src], alive[dst]                                    # (F, Q)
    # The destination's port in each source port's plane: the same number, else another live one of that plane.
    d_port = np.broadcast_to(np.arange(Q, dtype=IDX), (F, Q)).copy()
    for q in range(Q):
        same_plane = np.arange(q % P, Q, P)
        alt = same_plane[np.argmax(d_ok[:, same_plane], axis=1)]
        d_port[:, q] = np.where(d_ok[:, q], q, alt)
    ok = s_ok & np.take_along_axis(d_ok, d_port, axis=1)
    order = (first[:, None] + np.arange(Q)) % Q                             # ports tried in turn
    tried = np.take_along_axis(ok, order, axis=1)
    k = np.argmax(tried, axis=1)
    bad = ~tried[np.arange(F), k]
    if bad.any():
        no_path(topo, src, dst, np.flatnonzero(bad), F,
                "no port of the source NIC and port of the destination NIC in one plane are both active")
    q = order[np.arange(F), k]
    return q.astype(IDX), d_port[np.arange(F), q]


def split_by_plane(topo, src, dst, qp, routing: str, seed: int):
    """Per plane ``p``: ``(p, rows, src endpoints, dst endpoints)`` of the flows it carries, the endpoints in the
    plane's view (``j * G + gpu`` for the ``j``-th port of the NIC in the plane)."""
    sq, dq = choose_ports(topo, src, dst, qp, routing, seed)
    P, G = topo.planes, topo.n_gpus
    out = []
    for p in range(P):
        rows = np.flatnonzero(sq % P == p)
        if rows.size:
            out.append((p, rows, (sq[rows] // P) * G + src[rows], (dq[rows] // P) * G + dst[rows]))
    return out


def route_planes(topo, src, dst, qp, routing: str, seed: int, route_view, *, padded=False, width=0):
    """Route flows over a multi-port fabric: each plane's flows by ``route_view(view, rows, src, dst)`` (which
    returns a padded table when ``padded``, else a CSR ``(ptr, links)``), put back in flow order."""
    F = src.size
    net = np.flatnonzero(topo.gpu_host[src] != topo.gpu_host[dst])      # same host: NVLink, an empty path
    pick = (lambda x: x) if net.size == F else (lambda x: None if x is None else np.asarray(x)[net])  # noqa: E731
    parts = []
    for p, rows, s, d in split_by_plane(topo, pick(src), pick(dst), pick(qp), routing, seed):
        rows = net[rows]
        parts.append((rows, route_view(topo.port_views[p], rows, s, d)))
    if padded:
        narrow = np.int32 if topo.n_links < np.iinfo(np.int32).max else IDX
        paths = np.full((F, width), -1, dtype=narrow)
        for rows, table in parts:
            paths[rows] = table
        return paths
    lengths = np.zeros(F, dtype=IDX)
    for rows, (ptr, _) in parts:
        lengths[rows] = np.diff(ptr)
    ptr = np.zeros(F + 1, dtype=IDX)
    np.cumsum(lengths, out=ptr[1:])
    links = np.empty(int(ptr[-1]), dtype=IDX)
    for rows, (p_ptr, p_links) in parts:
        n = np.diff(p_ptr)
        pos = np.repeat(ptr[rows] - p_ptr[:-1], n) + np.arange(p_ptr[-1])
        links[pos] = p_links
    return ptr, links
