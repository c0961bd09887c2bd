"""Per-hop latency of a collective: where each hop's seconds come from (:class:`LatencyModel`: the NIC/host part and
the switches of each transfer's own routed path) and the critical path of a phase's pipelines. Its own module because
the latency side of the model (NCCL's protocol costs are :mod:`sim.fabric.nccl_tuning`) is independent of the rates;
:mod:`sim.fabric.netsim` explains the whole model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.flowset import FlowSet
from sim.core.units import IDX
from sim.fabric.collectives import SHARP_UP, Phase, ring_next

BASE_RTT = {"roce": 22e-6, "infiniband": 5e-6}   # seconds (RoCE: docs/sources.md [S2]; InfiniBand: assumption)
RTT_SWITCHES = {"roce": 5, "infiniband": 1}      # switches one way on the path the base RTT is for (assumption:
                                                 # RoCE, the fabric's longest, RTSW-CTSW-ATSW-CTSW-RTSW; IB: one leaf)


@dataclass(frozen=True)
class LatencyModel:
    """Where the per-hop latencies come from (seconds).

    ``base_rtt``: NIC-to-NIC round-trip time over a path crossing ``rtt_switches`` switches each way (``None``: the
    fabric kind's :data:`BASE_RTT` and :data:`RTT_SWITCHES`). The one-way latency of a path of ``k`` switches is
    ``host + k x hop``, where ``hop`` is the topology's per-switch latency and ``host = base_rtt / 2 - rtt_switches x
    hop`` the NIC/host part (floored at 0: a base RTT shorter than its switches leaves no host part). RoCE:
    22 / 2 - 5 x 1 = 6 us, so 7 us to a host on the same leaf, 9 us in the zone, 11 us across zones.
    ``nvlink``: an NVLink hop's latency for every protocol (``None``: NCCL's per protocol)."""

    base_rtt: float | None = None
    rtt_switches: int | None = None
    nvlink: float | None = None

    def network(self, kind: str) -> float:
        """The base RTT of fabric ``kind``, seconds."""
        return BASE_RTT.get(kind, BASE_RTT["roce"]) if self.base_rtt is None else float(self.base_rtt)

    def switches(self, kind: str) -> int:
        return RTT_SWITCHES.get(kind, RTT_SWITCHES["roce"]) if self.rtt_switches is None else int(self.rtt_switches)

    def host(self, kind: str, hop_latency: float) -> float:
        """The one-way NIC/host part of a network hop, seconds."""
        return max(self.network(kind) / 2 - self.switches(kind) * hop_latency, 0.0)


def chain_sums(nxt: np.ndarray, values: np.ndarray, span: int) -> np.ndarray:
    """(P, K) sums of ``values`` (P, K) over the first ``span`` elements of the chain that starts at each element and
    follows ``nxt`` (``-1`` ends a chain; ``span <= 0``: to its end). Binary lifting: about ``log2`` of the chains'
    length in vectorized passes.

    >>> chain_sums(np.array([1, 2, 0]), np.array([[1.0], [2.0], [4.0]]), 2)[:, 0].tolist()
    [3.0, 6.0, 5.0]
    >>> chain_sums(np.array([1, 2, -1]), np.array([[1.0], [2.0], [4.0]]), 0)[:, 0].tolist()
    [7.0, 6.0, 4.0]
    """
    nxt = np.asarray(nxt, dtype=IDX)
    P = nxt.size
    span = (1 << max(P, 1).bit_length()) - 1 if span <= 0 else int(span)   # all bits set: stop at the chain's end
    # (K, P) layout: gathers along the last axis are contiguous per column. A chain end points at the sentinel P,
    # whose sums are 0 and which points at itself, so no pass needs a mask.
    acc = np.zeros((values.shape[1], P + 1))
    acc[:, :P] = np.asarray(values, dtype=np.float64).T             # sums of 2^k elements from each one
    jump = np.where(nxt >= 0, nxt, P).astype(IDX)
    jump = np.append(jump, P)                                       # the element after those 2^k
    out = np.zeros((values.shape[1], P))
    pos = np.arange(P, dtype=IDX)                                   # where each chain's next block starts
    while span:
        if span & 1:
            out += acc[:, pos]
            pos = jump[pos]
            if (pos == P).all():
                break
        span >>= 1
        if not span:
            break
        acc = acc + acc[:, jump]
        jump = jump[jump]
    return out.T

def _ring_shape(phase: Phase):
    """``(C, n)`` when the phase's latency pipelines are ``C`` rings of ``n`` transfers laid out channel-major in ring
    order (:func:`sim.fabric.collectives.ring_next`), else ``None``."""
    nxt, group = phase.lat_next, phase.lat_group
    if nxt is None or group is None or phase.lat_stage is not None or len(nxt) == 0:
        return None
    C = int(np.asarray(group).max()) + 1
    n = len(nxt) // C
    if C * n != len(nxt) or not np.array_equal(group, np.repeat(np.arange(C), n)) \
            or not np.array_equal(nxt, ring_next(C, n)):
        return None
    return C, n


def critical_paths(phase: Phase, one_way: np.ndarray, network: np.ndarray, costs) -> list[tuple[float, int, int]]:
    """The latency of ``phase`` for each ``(extra, nvlink)`` of ``costs``: transfer ``t`` costs ``one_way[t]`` plus
    ``extra`` if it crosses the network (``network[t]``), plus ``nvlink`` if not (seconds); per pipeline group, the
    sum over its stages of the slowest chain (``phase.lat_next``, ``lat_span``), the slowest group. Returns per
    cost ``(seconds, network hops, NVLink hops)`` of that critical path. Rings take a cumulative-sum fast path;
    other pipelines :func:`chain_sums`."""
    P = len(phase.src)
    if P == 0:
        return [(0.0, 0, 0) for _ in costs]
    ring = _ring_shape(phase)
    if ring is not None:
        return _ring_critical_paths(ring, phase.lat_span, [one_way, network], costs)
    vals = np.stack([np.asarray(one_way, dtype=np.float64), network.astype(np.float64),
                     (~network).astype(np.float64)], axis=1)
    nxt = np.full(P, -1, dtype=IDX) if phase.lat_next is None else np.asarray(phase.lat_next, dtype=IDX)
    sums = chain_sums(nxt, vals, phase.lat_span if phase.lat_next is not None else 1)
    group = np.zeros(P, dtype=IDX) if phase.lat_group is None else np.asarray(phase.lat_group, dtype=IDX)
    stage = np.zeros(P, dtype=IDX) if phase.lat_stage is None else np.asarray(phase.lat_stage, dtype=IDX)
    seg = group * (int(stage.max()) + 1) + stage
    order = np.argsort(seg, kind="stable")
    seg_sorted = seg[order]
    starts = np.flatnonzero(np.r_[True, seg_sorted[1:] != seg_sorted[:-1]])
    seg_group = group[order][starts]
    seg_id = np.cumsum(np.r_[True, seg_sorted[1:] != seg_sorted[:-1]]) - 1
    out = []
    for extra, nvl in costs:
        v = (sums[:, 0] + extra * sums[:, 1] + nvl * sums[:, 2])[order]
        best = np.maximum.reduceat(v, starts)
        first = np.minimum.reduceat(np.where(v >= best[seg_id], np.arange(P), P), starts)
        hops = sums[order][first, 1:]
        per_group = np.zeros((int(seg_group.max()) + 1, 3))
        np.add.at(per_group, seg_group, np.column_stack([best, hops]))
        g = int(np.argmax(per_group[:, 0]))
        out.append((float(per_group[g, 0]), int(round(per_group[g, 1])), int(round(per_group[g, 2]))))
    return out


def _ring_critical_paths(ring, lat_span: int, vals, costs) -> list[tuple[float, int, int]]:
    """:func:`critical_paths` of ``C`` rings of ``n`` transfers (channel-major, ring order): per ring the slowest
    window of ``span`` consecutive edges, then the slowest ring. ``vals``: one-way seconds and whether each
    transfer crosses the network (its NVLink hops are the others). The seconds are summed by cumulative sums over
    the ring repeated as often as a window needs; the hop counts are whole numbers, counted exactly from one ring's
    cumulative sum (a window holds ``span // n`` whole rings and a part), the NVLink hops being the window's others."""
    C, n = ring
    span = lat_span if lat_span > 0 else n
    reps = (span + 2 * n - 2) // n                        # the windows starting at 0..n-1 end before span + n - 1
    x = np.asarray(vals[0], dtype=np.float64).reshape(C, n)
    cs = np.zeros((C, reps * n + 1))
    for r in range(reps):                                 # the ring repeated: each block continues the sum
        block = cs[:, 1 + r * n:1 + (r + 1) * n]
        block[:] = x
        block[:, 0] += cs[:, r * n]
        np.cumsum(block, axis=1, out=block)
    seconds = cs[:, span:span + n] - cs[:, :n]
    del cs
    net = np.zeros((C, n + 1), dtype=IDX)
    np.cumsum(vals[1].reshape(C, n).astype(IDX), axis=1, out=net[:, 1:])
    whole, part = divmod(span, n)
    k = min(n, n - part + 1)                              # windows j < k end within one ring (j + part <= n)
    count = np.empty((C, n), dtype=IDX)
    count[:, :k] = net[:, part:part + k] - net[:, :k]
    count[:, k:] = net[:, n:] + net[:, 1:part] - net[:, k:n]
    count += whole * net[:, n:]
    hops = count.astype(np.float64)
    del count, net
    sums = [seconds, hops, span - hops]
    out = []
    for extra, nvl in costs:
        v = sums[0] + extra * sums[1] + nvl * sums[2]
        first = v.argmax(axis=1)                          # each ring's slowest window (the first of equals)
        best = v[np.arange(C), first]
        g = int(np.argmax(best))
        out.append((float(best[g]), int(round(sums[1][g, first[g]])), int(round(sums[2][g, first[g]]))))
    return out


def critical_path(phase: Phase, hop: np.ndarray, network: np.ndarray) -> tuple[float, int, int]:
    """:func:`critical_paths` for one set of per-transfer latencies ``hop`` (seconds, any transfer)."""
    return critical_paths(phase, np.asarray(hop, dtype=np.float64), network, [(0.0, 0.0)])[0]


def path_latency(topo, ptr: np.ndarray, links: np.ndarray) -> np.ndarray:
    """(F,) seconds: the latency of the switches each flow's links enter (``topo.link_latency``; NVLink and
    NVSwitch links 0)."""
    extra = max(int(links.max()) + 1 - len(topo.link_latency), 0) if len(links) else 0   # NVLink, NVSwitch
    lat = np.concatenate([np.asarray(topo.link_latency, dtype=np.float64), np.zeros(extra)])
    deg = np.diff(ptr)
    path = np.zeros(deg.size)
    full = np.flatnonzero(deg > 0)
    if full.size:
        path[full] = np.add.reduceat(lat[links[ptr[0]:ptr[-1]]], ptr[full] - ptr[0])
    return path


def transfer_latency(topo, phase: Phase, flows: FlowSet, latency: LatencyModel | None = None, path=None):
    """``(hop, network)``, both (P,) over the phase's transfers: the one-way latency (seconds) of each transfer
    between hosts, its own routed path's (the host/NIC part of :class:`LatencyModel` + the latency of every switch
    it enters, ``topo.link_latency``; the slowest of its QPs, since a step needs all of them), 0 for NVLink
    transfers (their latency is the protocol's); and whether it crosses the network. ``path``: each flow's
    :func:`path_latency` when the caller has it (per class of identical flows, :func:`solve_phase`)."""
    latency = latency or LatencyModel()
    P = len(phase.src)
    hop = np.zeros(P)
    network = np.zeros(P, dtype=bool)
    first = flows.n_network_first
    if first is None:
        n, net_f = flows.n_flows, flows.network
    else:                                     # build_flows' layout: the first n flows, and only they, cross the fabric
        n, net_f = first, slice(0, first)
    if n and (first is not None or net_f.any()):
        path = path_latency(topo, flows.ptr[:n + 1], flows.links) if path is None else path[:n]
        if first is None:
            tr = flows.transfer[:n][net_f]
            np.maximum.at(hop, tr, path[net_f])
            network[tr] = True
        else:                                 # the slowest QP of each connection (the transfers between hosts)
            q = max(flows.header.qps, 1)
            tr = flows.transfer[:n:q]
            hop[tr] = np.maximum(np.maximum.reduceat(path, np.arange(0, n, q)), 0.0)
            network[tr] = True
        hop[network] += latency.host(topo.kind, float(topo.hop_latency))
    if phase.switch is not None and (np.asarray(phase.switch) == SHARP_UP).any():
        up = np.flatnonzero(np.asarray(phase.switch) == SHARP_UP)
        hop[up] = sharp_round_trip(topo, np.asarray(phase.src)[up], latency)
        network[up] = True
    return hop, network


def sharp_round_trip(topo, heads: np.ndarray, latency: LatencyModel) -> float:
    """One-way seconds of a CollNet head's round trip through the SHARP tree, charged as one network hop (NCCL's
    CollNet latency has one network term, tuning.cc): the host/NIC part of a hop (sender and receiver: the head
    itself) plus the switches up to the tree's root and back down, the root at the lowest tier that spans the
    heads: their leaf if they share one, a spine of their zone if they share a zone, else a core (2, 4 or 6
    switch traversals, each ``topo.hop_latency``)."""
    leaf = np.asarray(topo.gpu_leaf)[heads]
    if np.unique(leaf).size <= 1:
        depth = 1
    elif np.unique(np.asarray(topo.switch_zone)[leaf]).size <= 1:
        depth = 2
    else:
        depth = 3
    return latency.host(topo.kind, float(topo.hop_latency)) + 2 * depth * float(topo.hop_latency)
