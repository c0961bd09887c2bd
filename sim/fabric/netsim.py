"""Flow-level network simulation: collectives (and any set of flows) over a :class:`sim.fabric.topology.Topology`.

Model
-----
Links. The fabric's ``E`` directed links (NIC-leaf, leaf-spine, spine-core, each direction at the cable's speed)
plus, per GPU, two virtual NVLink links appended after them: egress ``E + g`` and ingress ``E + G + g``, each of
``topo.nvlink_bandwidth / 2`` bytes/s (NVIDIA gives H100 NVLink as 900 GB/s per GPU, both directions together). A
transfer between two GPUs of one host crosses ``[E + src, E + G + dst]``; a transfer between hosts crosses the
routed path (:func:`sim.fabric.routing.route`), which starts at the sender's NIC uplink and ends at the receiver's NIC
downlink, so the NIC's 400 Gb/s is the first and last link. One solver handles both.

Queue pairs. An inter-host transfer is split round-robin over ``qps`` queue pairs: ``qps`` flows with
``qp = 0..qps-1`` of ``bytes / qps`` each. Whether they take different paths is the routing's business (5-tuple ECMP
hashes them alike, E-ECMP apart). NVLink transfers are one flow.

Rates. Max-min fair (:func:`sim.core.maxmin.max_min_rates`, exact) over the CSR flow x link incidence, solved once per
phase: every step of a ring has the same flows, so a ring of ``N - 1`` steps costs one solve. Flows on the same
links (QPs hashed onto one path, NVLink channels between one GPU pair) are solved once, as one weighted flow.

Time. A synchronous step ends when its slowest flow ends: ``max_f bytes_f / rate_f`` (its bandwidth term). A phase
of ``steps`` identical steps takes ``steps x`` that. A flow that would finish early does not speed the others up:
in NCCL's pipelined ring a hop cannot run ahead of the data its predecessor delivers, and the queue pairs of one
transfer carry equal bytes, so the slowest sets the pace (the steady state of the pipeline). Phases of uneven flows
(AllToAll) are solved event-driven by :func:`simulate_flows`: when flows finish they leave, the rest are re-solved.
Latency (per hop, by each hop's own path; NCCL's protocols: :mod:`sim.fabric.nccl_tuning`). A transfer between hosts
costs its one-way latency: the host/NIC part (half the base RTT less the switches of the path the RTT was measured
on, :class:`LatencyModel`) plus the latency of every switch on *its* routed path (``topo.link_latency``; the slowest
of its QPs). A phase's critical path follows its pipelines (:class:`sim.fabric.collectives.Phase`): a ring chunk crosses
``N - 1`` consecutive hops of its channel's ring, each at its own latency; channels run side by side, the slowest
sets the time. For protocol ``p`` every network hop adds NCCL's per-hop cost of ``p`` and every NVLink hop costs
NCCL's NVLink latency of ``p``; the collective adds NCCL's base latency of ``p`` once. Total time for message size
``S`` with protocol ``p``::

    T_p(S) = latency_p + S x factor / busbw_p,   busbw_p = min(limit_busbw x f_p, cap_p)

where ``limit_busbw`` (the bandwidth term) comes from the rates, ``factor`` is nccl-tests' busbw factor and
``f_p``, ``cap_p`` are NCCL's protocol bandwidth factor and cap (Simple: 1, none). The protocol is NCCL's choice for
``S`` from NCCL's own prediction (:func:`sim.fabric.nccl_tuning.choose`), or forced (``protocol``, as ``NCCL_PROTO``).
Rates do not depend on ``S`` or the protocol, so every message size costs nothing more once the phases are solved.

Outputs (nccl-tests conventions): algbw = S / T, busbw = algbw x factor (:func:`sim.fabric.collectives.busbw_factor`),
normalized busbw = busbw / roofline, where the *roofline* is the busbw of the same algorithm on the same number of
GPUs packed on whole hosts when only the endpoints limit it (NIC and NVLink bandwidth; the switch fabric ideal) and
latency is zero: :func:`roofline_busbw`. For a ring over 8-GPU hosts that is 8 x the NIC bandwidth (each of the 8
rails carries one channel), 400 GB/s on 400G NICs, what nccl-tests reports for multi-node rings on such hosts; for
AllToAll it is about one NIC's bandwidth. Per-link utilization = bytes carried / (capacity x T), the hottest links
with the flows that cross them, and every flow's rate.

Assumptions (configurable in :class:`LatencyModel`): base RTT 22 us on RoCE (Meta's measured base RTT: Gangidi et
al., SIGCOMM 2024, in docs/sources.md [S2]), taken as measured over the fabric's longest path (5 switches one way);
5 us on InfiniBand (assumption: NIC-to-NIC RDMA through one switch); the switches' latency is the topology's
(``sim.fabric.topology.DEFAULT_HOP_LATENCY``, 1 us per switch, assumption). NVLink and protocol costs are NCCL's
(docs/sources.md [S6]).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.fabric.collectives import (DTYPES, MAX_ALLTOALL_TRANSFERS, CollectiveError, CollectivePlan, Phase, element_count,
                             plan_collective)
from sim.core.flowcore import FlowSimResult, simulate_flows  # noqa: F401  (the event-driven core; re-exported)
from sim.core.flowset import FlowHeader, FlowSet
from sim.core.maxmin import link_loads, max_min_rates
from sim.fabric.nccl_tuning import PROTOCOL_CHOICES, PROTOCOLS, SIMPLE, base_latency, choose, predict, sim_busbw, sim_hop
from sim.fabric.nccl import DEFAULT_UDP_SPORT, connection_flows
from sim.core.progress import silent, span, weighted
from sim.core.units import IDX, GB

NVLINK_DIRECTIONS = 2          # nvlink_bandwidth counts both directions
BASE_RTT = {"roce": 22e-6, "infiniband": 5e-6}   # seconds (RoCE: docs/sources.md [S2]; InfiniBand: assumption)
RTT_SWITCHES = {"roce": 5, "infiniband": 1}      # switches one way on the path the base RTT is for (assumption:
                                                 # RoCE, the fabric's longest, RTSW-CTSW-ATSW-CTSW-RTSW; IB: one leaf)
CSR_CHUNK = 1 << 20            # flows (rows of the router's table) taken at a time where a temporary is bounded
EVENT_MERGE = 1e-2             # event-driven phases merge completions within 1 % of the makespan's lower bound


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
    from sim.fabric.collectives import ring_next
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


# ---------------------------------------------------------------------------------------------- flows
def link_capacity(topo) -> np.ndarray:
    """(E + 2G,) bytes/s: the fabric's links, then each GPU's NVLink egress, then its NVLink ingress."""
    nvl = np.full(topo.n_gpus, topo.nvlink_bandwidth / NVLINK_DIRECTIONS)
    return np.concatenate([np.asarray(topo.link_capacity, dtype=np.float64), nvl, nvl])


def nvlink_link_names(topo, ids) -> list[str]:
    E, G = topo.n_links, topo.n_gpus
    out = []
    for i in np.atleast_1d(ids).tolist():
        g = (i - E) % G
        way = "egress" if i - E < G else "ingress"
        slot = int(topo.layout.gpu_slot[g]) if topo.layout is not None else g
        out.append(f"nvlink {way} h{int(topo.gpu_host[g]):05d}.g{slot}")
    return out


def link_names(topo, ids) -> list[str]:
    """Names of fabric links (``topo.link_names``) and of the virtual NVLink links."""
    ids = np.atleast_1d(np.asarray(ids, dtype=IDX))
    fabric = ids < topo.n_links
    names = np.empty(ids.size, dtype=object)
    if fabric.any():
        names[fabric] = topo.link_names(ids[fabric])
    if (~fabric).any():
        names[~fabric] = nvlink_link_names(topo, ids[~fabric])
    return names.tolist()


def build_flows(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0, router=None, *,
                hash: str = "uniform", udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None) -> FlowSet:
    """The flows of ``phase``: each transfer between hosts is one NCCL connection of ``qps`` QPs
    (:func:`sim.fabric.nccl.connection_flows`: QP numbers, UDP source port by ``udp_sport``), each QP a flow of
    ``bytes / qps`` routed with switch hash ``hash``; NVLink transfers are one flow over the two GPUs' virtual
    NVLink links. Flows are ordered: network flows (transfer-major, QP-minor), then NVLink flows. ``router``: a
    replacement for :func:`sim.fabric.routing.route` called as ``router(topo, src, dst, qp, routing, seed)``."""
    qps = int(qps)
    if qps < 1:
        raise ValueError(f"qps must be at least 1, got {qps}")
    E, G = topo.n_links, topo.n_gpus
    src, dst = np.asarray(phase.src, dtype=IDX), np.asarray(phase.dst, dtype=IDX)
    chan = np.asarray(phase.channel, dtype=IDX)
    inter = np.asarray(topo.gpu_host)[src] != np.asarray(topo.gpu_host)[dst]
    net_t = np.flatnonzero(inter)
    nvl_t = np.flatnonzero(~inter)
    nic = np.asarray(topo.gpu_nic)
    conn = connection_flows(nic[src[net_t]], nic[dst[net_t]], chan[net_t], qps, udp_sport, seed, qpn_base)
    qp, sqpn, dqpn, sport = conn.qp, conn.sqpn, conn.dqpn, conn.sport
    del conn                                              # its per-flow transfer is not kept
    n_net, n_nvl = net_t.size * qps, nvl_t.size
    # Each flow's transfer, network flows first (net_t[conn.transfer]: transfer-major, QP-minor), written in place
    # in the narrowest integer that holds the phase's transfer ids (int32 below 2^31: 71 MB, not 142, at 600k).
    transfer = np.empty(n_net + n_nvl, dtype=np.int32 if src.size < np.iinfo(np.int32).max else IDX)
    transfer[:n_net].reshape(-1, qps)[:] = net_t[:, None]
    transfer[n_net:] = nvl_t
    t_net = transfer[:n_net]
    ptr = np.empty(n_net + n_nvl + 1, dtype=IDX)          # the CSR is written in place: network flows, then NVLink
    ptr[0] = 0
    paths = None                             # the router's padded path table, kept for grouping identical flows
    if n_net and router is None and routing != "te":
        from sim.fabric.routing import path_lengths, route
        paths = route(topo, src[net_t], dst[net_t], qp, routing, seed, hash=hash, sport=sport, dqpn=dqpn,
                      padded=True, between_hosts=True, repeat=qps)      # GPUs per connection, the rest per QP
        del qp
        used = paths >= 0
        np.cumsum(path_lengths(used), out=ptr[1:n_net + 1], dtype=IDX)
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        for lo in range(0, n_net, CSR_CHUNK):             # in slices: no full-size temporary
            hi = min(lo + CSR_CHUNK, n_net)
            links[ptr[lo]:ptr[hi]] = paths[lo:hi][used[lo:hi]]
        del used
    elif n_net:
        from sim.fabric.routing import route
        ptr_net, links_net = route(topo, src[t_net], dst[t_net], qp, routing, seed) if router is None \
            else router(topo, src[t_net], dst[t_net], qp, routing, seed)
        ptr[:n_net + 1] = ptr_net
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        links[:ptr[n_net]] = links_net
    else:
        links = np.empty(2 * n_nvl, dtype=IDX)
    if n_net and (ptr[1:n_net + 1] == ptr[:n_net]).any():
        raise ValueError("the router gave an empty path to a transfer between hosts")
    cut = int(ptr[n_net])
    np.add(src[nvl_t], E, out=links[cut::2])              # NVLink: [E + src, E + G + dst]
    np.add(dst[nvl_t], E + G, out=links[cut + 1::2])
    np.add(2 * np.arange(1, n_nvl + 1, dtype=IDX), cut, out=ptr[n_net + 1:])
    share = np.asarray(phase.share, dtype=np.float64)
    # Kept per network flow in their own widths (24-bit QP numbers, 16-bit ports): 94 MB, not 226, at 600k.
    header = FlowHeader(src=src, dst=dst, channel=chan, n_network=n_net, qps=qps, sqpn=sqpn.astype(np.uint32),
                        dqpn=dqpn.astype(np.uint32), sport=sport.astype(np.uint16), paths=paths)
    del sqpn, dqpn, sport
    return FlowSet(transfer=transfer, share=np.concatenate([share[t_net] / qps, share[nvl_t]]),
                   ptr=ptr, links=links, n_fabric=E, n_gpus=G, header=header)


# ---------------------------------------------------------------------------------------------- collectives
@dataclass
class PhaseResult:
    """A solved phase. ``rates`` (F,) bytes/s of its flows at the start of a step; ``unit_time``: seconds per byte
    of message size for the whole phase (all steps); ``hop_latency`` (P,): one-way latency of each transfer between
    hosts (0 on NVLink), ``hop_network`` (P,): which transfers cross the network (:func:`transfer_latency`);
    ``latency``: per protocol, the seconds of the phase's critical path and ``critical_hops`` its (network, NVLink)
    hops (filled by :func:`run_collective`); ``finish_unit`` (F,): for event-driven phases, each flow's finish time
    per byte of message size; ``link_unit_bytes``: for synchronous phases, the bytes the phase puts on each link per
    byte of message size (all steps), and ``link_flows`` how many of its flows cross each link, both summed over the
    classes of identical flows the solve used."""

    phase: Phase
    flows: FlowSet
    rates: np.ndarray
    unit_time: float
    hop_latency: np.ndarray
    hop_network: np.ndarray
    finish_unit: np.ndarray | None = None
    solve_seconds: float = 0.0
    latency: dict = field(default_factory=dict)
    critical_hops: dict = field(default_factory=dict)
    link_unit_bytes: np.ndarray | None = None    # (E + 2G,) the phase's bytes per byte of message size (all steps)
    link_flows: np.ndarray | None = None         # (E + 2G,) how many of its flows cross each link


@dataclass
class SizeResult:
    """One row of the nccl-tests table. ``size`` bytes, ``time`` seconds, bandwidths bytes/s, ``norm`` in 0..1;
    ``protocol``: the NCCL protocol it ran with (NCCL's choice, or forced); ``predicted``: NCCL's own prediction of
    its time with that protocol, seconds (``nan`` where NCCL's tuning model does not apply: AllToAll)."""

    size: int
    count: int
    time: float
    algbw: float
    busbw: float
    norm: float
    protocol: str = "Simple"
    predicted: float = float("nan")


@dataclass
class HotLink:
    """A heavily used link: its id (NVLink virtual links are ``>= E``), name, capacity (bytes/s), utilization
    (bytes carried / (capacity x T) at the largest message size), number of flows, and some of those flows (the
    slowest first) as dicts."""

    link: int
    name: str
    capacity: float
    utilization: float
    n_flows: int
    flows: list[dict]


@dataclass
class CollectiveResult:
    """Everything a collective run gives (units: bytes, seconds, bytes/s)."""

    plan: CollectivePlan
    kind: str
    routing: str
    qps: int
    seed: int
    dtype: str
    roofline: float                    # busbw bytes/s, see roofline_busbw
    rows: list[SizeResult]
    phases: list[PhaseResult]
    link_unit_bytes: np.ndarray        # (E + 2G,) bytes per byte of message size over the whole collective
    link_capacity: np.ndarray          # (E + 2G,)
    n_fabric: int
    hottest: list[HotLink] = field(default_factory=list)
    seconds: dict = field(default_factory=dict)
    protocol: str = "auto"             # "auto" (NCCL's choice per size) or the forced protocol
    latencies: dict = field(default_factory=dict)      # protocol -> seconds (base + critical path)
    critical_hops: dict = field(default_factory=dict)  # protocol -> (network hops, NVLink hops) on it
    hash: str = "uniform"              # the switches' hash function (sim.fabric.hashing)
    udp_sport: str = DEFAULT_UDP_SPORT  # how QPs got their UDP source port (sim.fabric.nccl)

    @property
    def latency(self) -> float:
        """Latency (seconds) of the protocol of the largest size run."""
        return self.latencies[self.rows[-1].protocol if self.rows else SIMPLE]

    @property
    def unit_time(self) -> float:
        return sum(p.unit_time for p in self.phases)

    @property
    def n_flows(self) -> int:
        return sum(p.flows.n_flows for p in self.phases)

    def protocol_for(self, size: float) -> str:
        """The protocol a collective of ``size`` bytes runs with: the forced one, or NCCL's choice by its own
        tuning model (:func:`sim.fabric.nccl_tuning.choose`, NCCL's topology bandwidth taken as the roofline)."""
        if self.protocol != "auto":
            return self.protocol
        p = self.plan
        return choose(p.collective, p.algorithm, int(size), p.n_ranks, p.n_hosts, p.channels, self.roofline)

    def predicted(self, size: float, protocol: str) -> float:
        """NCCL's own predicted time (seconds) of ``size`` bytes with ``protocol``."""
        p = self.plan
        return predict(p.collective, p.algorithm, protocol, int(size), p.n_ranks, p.n_hosts, p.channels,
                       self.roofline)

    def time(self, size: float, protocol: str | None = None) -> float:
        """Simulated seconds for ``size`` bytes with ``protocol`` (default :meth:`protocol_for`): the protocol's
        latency + the bytes over the simulated bandwidth times the protocol's factor and cap."""
        proto = protocol or self.protocol_for(size)
        if size == 0 or self.unit_time <= 0:
            return self.latencies[proto]
        bw = sim_busbw(self.plan.algorithm, proto, self.limit_busbw, self.plan.n_hosts, self.plan.channels)
        return self.latencies[proto] + size * self.plan.busbw_factor / bw

    @property
    def limit_busbw(self) -> float:
        """busbw as the message size grows without bound (latency negligible), bytes/s."""
        return self.plan.busbw_factor / self.unit_time if self.unit_time > 0 else np.inf

    @property
    def limit_norm(self) -> float:
        return self.limit_busbw / self.roofline

    def link_utilization(self, size: float | None = None) -> np.ndarray:
        """(E,) time-averaged utilization of each fabric link during the collective of ``size`` bytes (default
        the largest size run)."""
        return self._utilization(size)[:self.n_fabric]

    def _utilization(self, size=None):
        size = self.rows[-1].size if size is None else size
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.link_unit_bytes * size / (self.link_capacity * self.time(size))
        return np.nan_to_num(u)

    def to_dict(self, links: bool = False, flows: bool = False) -> dict:
        """A JSON-ready summary. ``links=True`` adds the utilization of every fabric link; ``flows=True`` adds every
        flow (phase, ranks, GPUs, QP, channel, rate in GB/s, path as link ids)."""
        p = self.plan
        rates = np.concatenate([ph.rates for ph in self.phases]) if self.phases else np.zeros(0)
        net = np.concatenate([ph.flows.network for ph in self.phases]) if self.phases else np.zeros(0, bool)
        out = {
            "collective": p.collective, "algorithm": p.algorithm, "ranks": p.n_ranks, "hosts": p.n_hosts,
            "channels": p.channels, "fabric": self.kind, "routing": self.routing, "hash": self.hash,
            "udp_sport": self.udp_sport, "qps": self.qps, "seed": self.seed,
            "type": self.dtype, "busbw_factor": p.busbw_factor, "roofline_GBps": self.roofline / GB,
            "latency_us": self.latency * 1e6, "limit_busbw_GBps": self.limit_busbw / GB,
            "limit_norm_busbw": self.limit_norm, "protocol": self.protocol,
            "latency_us_by_protocol": {k: v * 1e6 for k, v in self.latencies.items()},
            "critical_path_hops": {k: {"network": v[0], "nvlink": v[1]} for k, v in self.critical_hops.items()},
            "rows": [{"size": r.size, "count": r.count, "type": self.dtype, "time_us": r.time * 1e6,
                      "algbw_GBps": r.algbw / GB, "busbw_GBps": r.busbw / GB, "norm_busbw": r.norm,
                      "protocol": r.protocol,
                      "nccl_predicted_us": None if np.isnan(r.predicted) else r.predicted * 1e6}
                     for r in self.rows],
            "phases": [{"name": ph.phase.name, "steps": ph.phase.steps, "mode": ph.phase.mode,
                        "flows": ph.flows.n_flows, "network_flows": int(ph.flows.network.sum()),
                        "unit_time_s_per_byte": ph.unit_time,
                        "latency_us": {k: v * 1e6 for k, v in ph.latency.items()},
                        "max_hop_latency_us": float(ph.hop_latency.max()) * 1e6 if ph.hop_latency.size else 0.0}
                       for ph in self.phases],
            "flow_rates_GBps": _stats(rates[net] / GB) if net.any() else None,
            "nvlink_flow_rates_GBps": _stats(rates[~net] / GB) if (~net).any() else None,
            "hottest_links": [{"link": h.link, "name": h.name, "capacity_GBps": h.capacity / GB,
                               "utilization": h.utilization, "flows": h.n_flows, "sample_flows": h.flows}
                              for h in self.hottest],
            "seconds": self.seconds,
        }
        if links:
            out["link_utilization"] = self.link_utilization().round(6).tolist()
        if flows:
            rank_of = {int(g): r for r, g in enumerate(p.gpus.tolist())}
            out["flows"] = [
                {"phase": ph.phase.name, "src_rank": rank_of[int(fl.src[i])], "dst_rank": rank_of[int(fl.dst[i])],
                 "src_gpu": int(fl.src[i]), "dst_gpu": int(fl.dst[i]), "qp": int(fl.qp[i]),
                 "channel": int(fl.channel[i]), "dst_qpn": int(fl.dqpn[i]), "udp_sport": int(fl.sport[i]),
                 "rate_GBps": float(ph.rates[i]) / GB,
                 "links": fl.links[fl.ptr[i]:fl.ptr[i + 1]].tolist()}
                for ph in self.phases for fl in [ph.flows] for i in range(fl.n_flows)]
        return out


def _stats(x: np.ndarray) -> dict:
    return {"n": int(x.size), "min": float(x.min()), "median": float(np.median(x)), "max": float(x.max())}


def flow_count(topo, phase: Phase, qps: int) -> int:
    """How many flows :func:`build_flows` makes of ``phase``: ``qps`` per transfer between hosts, one per NVLink
    transfer (the phase's share of a collective's work, known before routing)."""
    host = np.asarray(topo.gpu_host)
    inter = int(np.count_nonzero(host[phase.src] != host[phase.dst]))
    return inter * int(qps) + (len(phase.src) - inter)


def _concat_flows(sets: list[FlowSet]) -> FlowSet:
    """One FlowSet holding the flows of ``sets`` in order (``transfer`` indexes stay per set)."""
    if len(sets) == 1:
        return sets[0]
    ptrs, base = [np.zeros(1, dtype=IDX)], 0
    for fs in sets:
        ptrs.append(fs.ptr[1:] + base)
        base += int(fs.ptr[-1])
    cat = lambda name: np.concatenate([getattr(fs, name) for fs in sets])  # noqa: E731
    return FlowSet(src=cat("src"), dst=cat("dst"), qp=cat("qp"), channel=cat("channel"), transfer=cat("transfer"),
                   share=cat("share"), ptr=np.concatenate(ptrs), links=cat("links"), n_fabric=sets[0].n_fabric,
                   n_gpus=sets[0].n_gpus, sqpn=cat("sqpn"), dqpn=cat("dqpn"), sport=cat("sport"))


def solve_phase(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0,
                latency: LatencyModel | None = None, router=None, capacity=None,
                background: list[Phase] | None = None, progress=None, *, hash: str = "uniform",
                udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None) -> PhaseResult:
    """Build, route and solve one phase (see the module docstring for the model; ``hash``, ``udp_sport`` and
    ``qpn_base`` as :func:`build_flows` takes them).

    ``background``: phases of other jobs that run at the same time (same routing and QPs; with ``routing="te"`` and
    no ``router`` the controller routes them together with this phase's flows); their flows share the
    links in the same max-min solve (and, for an event-driven phase, the same event simulation), but only this
    phase's flows set its time and appear in the result. ``progress``: a :mod:`sim.core.progress` callback; each flow
    is one unit of work when it is routed and one when its rate is fixed (solver rounds, or events finishing it).
    """
    latency = latency or LatencyModel()
    say = progress or silent
    t0 = time.perf_counter()
    link_unit = link_flows = path = None
    header = {"hash": hash, "udp_sport": udp_sport, "qpn_base": qpn_base}
    if routing == "te" and router is None:
        # The TE controller sees the whole traffic matrix: this phase's and the background jobs' flows are routed
        # in one decision, weighted by their bytes (sim/fabric/te.py).
        from sim.fabric.te import route_together
        flows, *others = route_together(topo, [phase] + list(background or []),
                                        lambda ph, r: build_flows(topo, ph, qps, routing, seed, r, **header), seed)
    else:
        flows = build_flows(topo, phase, qps, routing, seed, router, **header)
        others = [build_flows(topo, b, qps, routing, seed, router, **header) for b in (background or [])]
    everything = _concat_flows([flows] + others)
    mine = flows.n_flows
    say(0.5, f"phase {phase.name}: {everything.n_flows:,} flows routed ({routing}, {qps} QP), solving their rates")
    solving = span(progress, 0.5, 1.0)
    capacity = link_capacity(topo) if capacity is None else capacity
    finish_unit = None
    if phase.mode == "event":
        # Lower bound of the makespan: the most loaded link's bytes over its capacity.
        load = link_loads(everything.ptr, everything.links, everything.share, capacity.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = float(np.nanmax(np.where(capacity > 0, load / capacity, 0.0)))
        sim = simulate_flows(everything.ptr, everything.links, capacity, everything.share,
                             merge=EVENT_MERGE * bound, progress=solving)
        rates, finish_unit = sim.first_rate[:mine], sim.finish[:mine]
        unit = float(finish_unit.max()) if mine else 0.0
    else:
        rates, cls, cptr, clinks, size = _solve_classes(everything, capacity, solving)
        rates, cls = rates[:mine], cls[:mine]
        unit = phase.steps * _slowest(flows.share, rates) if rates.size else 0.0
        # This phase's bytes and flows on each link and each flow's path latency, per class of identical flows
        # (a class's flows cross the same links).
        K = cptr.size - 1
        link_unit = link_loads(cptr, clinks, np.bincount(cls, flows.share, minlength=K) * phase.steps, capacity.size)
        if mine < everything.n_flows:                 # background flows share the classes: count this phase's
            size = np.bincount(cls, minlength=K)
        link_flows = np.rint(link_loads(cptr, clinks, size, capacity.size)).astype(IDX)
        first = flows.n_network_first                 # only network flows have a path latency to keep
        path = path_latency(topo, cptr, clinks)[cls if first is None else cls[:first]]
    hop, network = transfer_latency(topo, phase, flows, latency, path)
    say(1.0, f"phase {phase.name}: {everything.n_flows:,} flows routed ({routing}, {qps} QP) and solved in "
        f"{time.perf_counter() - t0:.2f} s")
    return PhaseResult(phase=phase, flows=flows, rates=rates, unit_time=unit, hop_latency=hop, hop_network=network,
                       finish_unit=finish_unit, solve_seconds=time.perf_counter() - t0, link_unit_bytes=link_unit,
                       link_flows=link_flows)


def _slowest(share: np.ndarray, rates: np.ndarray) -> float:
    """The largest ``share / rate`` over flows (``inf`` for a flow of rate 0): a step's time per byte of message.
    Taken in slices of :data:`CSR_CHUNK` flows, so no per-flow temporary is made (17.7M flows at 600k)."""
    worst = -np.inf
    for lo in range(0, rates.size, CSR_CHUNK):
        r = rates[lo:lo + CSR_CHUNK]
        with np.errstate(divide="ignore", invalid="ignore"):
            worst = np.maximum(worst, np.where(r > 0, share[lo:lo + CSR_CHUNK] / r, np.inf).max())
    return float(worst)


def _merged_rates(flows: FlowSet, capacity: np.ndarray, progress) -> np.ndarray:
    """Max-min rates of ``flows``, solved once per class of flows on the same links (QPs hashed onto one path,
    NVLink transfers of several channels between one GPU pair): identical flows get identical rates, so the
    weighted solve of the classes (:meth:`sim.core.flowset.FlowSet.classes`) gives the rates of every flow."""
    return _solve_classes(flows, capacity, progress)[0]


def _solve_classes(flows: FlowSet, capacity: np.ndarray, progress):
    """``(rates, cls, ptr, links, weight)``: :func:`_merged_rates`, with each flow's class, the classes' CSR paths
    and their sizes (flows per class)."""
    rep, cls = flows.classes()
    starts = flows.ptr[rep]
    deg = flows.ptr[rep + 1] - starts                   # the classes' path lengths (no diff over every flow)
    ptr = np.zeros(rep.size + 1, dtype=IDX)
    np.cumsum(deg, out=ptr[1:])
    links = flows.links[np.arange(ptr[-1], dtype=IDX) + np.repeat(starts - ptr[:-1], deg)]
    weight = np.bincount(cls, minlength=rep.size)
    return max_min_rates(ptr, links, capacity, progress=progress, weight=weight)[cls], cls, ptr, links, weight


def path_latency(topo, ptr: np.ndarray, links: np.ndarray) -> np.ndarray:
    """(F,) seconds: the latency of the switches each flow's links enter (``topo.link_latency``; NVLink links 0)."""
    lat = np.concatenate([np.asarray(topo.link_latency, dtype=np.float64), np.zeros(2 * topo.n_gpus)])
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
        tr = flows.transfer[:n][net_f]
        np.maximum.at(hop, tr, path[net_f])
        network[tr] = True
        hop[network] += latency.host(topo.kind, float(topo.hop_latency))
    return hop, network


def roofline_busbw(collective: str, n: int, gpus_per_host: int, nic_bandwidth: float, nvlink_bandwidth: float,
                   algorithm: str = "ring", channels: int | None = None, plan: CollectivePlan | None = None) -> float:
    """The busbw (bytes/s) the collective reaches on ``n`` GPUs packed on whole hosts when only the endpoints
    limit it: each GPU's NIC (``nic_bandwidth`` each way) and NVLink (``nvlink_bandwidth`` both ways together),
    the switch fabric ideal, latency zero. Computed from the same plan the simulation uses: per phase, the most
    loaded endpoint link sets the time. ``plan``: that plan when the caller already has it (a run whose placement
    is the packed one, :func:`_packed_in_order`), so it is not made twice.

    >>> roofline_busbw("allgather", 64, 8, 50e9, 900e9) / 1e9        # 8 rails x 50 GB/s
    400.0
    >>> round(roofline_busbw("allgather", 8, 8, 50e9, 900e9) / 1e9)  # one host: NVLink, 450 GB/s each way
    450
    """
    n = int(n)
    if n < 2:
        return np.inf
    gpus = np.arange(n, dtype=IDX)
    host = gpus // gpus_per_host
    if plan is None:
        plan = plan_collective(collective, gpus, host, algorithm, channels=channels, max_flows=max(n * (n - 1), 1))
    nvl = nvlink_bandwidth / NVLINK_DIRECTIONS
    unit = 0.0
    for ph in plan.phases:
        inter = host[ph.src] != host[ph.dst]
        # Each endpoint's bytes over the network and over NVLink: the other kind's transfers weigh 0 (adding 0.0
        # leaves a sum as it is, and saves picking 9.4M transfers out by mask at 600k).
        net, nvlink = np.where(inter, ph.share, 0.0), np.where(inter, 0.0, ph.share)
        loads = [np.bincount(ph.src, net, minlength=n) / nic_bandwidth,
                 np.bincount(ph.dst, net, minlength=n) / nic_bandwidth,
                 np.bincount(ph.src, nvlink, minlength=n) / nvl,
                 np.bincount(ph.dst, nvlink, minlength=n) / nvl]
        unit += ph.steps * max(float(x.max()) for x in loads)
    return plan.busbw_factor / unit


def _packed_in_order(gpus: np.ndarray, gpu_host, per_host: int) -> bool:
    """Whether rank ``r`` is on GPU ``r`` and the hosts hold consecutive runs of ``per_host`` ranks (host ids
    consecutive too): the placement :func:`roofline_busbw` plans for, so a run's plan is the roofline's (rings
    and trees follow the hosts' grouping and GPU order, which are then the same)."""
    n = gpus.size
    if int(gpus[0]) != 0 or int(gpus[-1]) != n - 1 or not np.array_equal(gpus, np.arange(n)):
        return False
    hosts = np.asarray(gpu_host)[:n]
    return bool(np.array_equal(hosts - hosts[0], np.arange(n) // per_host))


def run_collective(topo, gpus, collective: str, sizes, *, algorithm: str = "ring", routing: str | None = None,
                   qps: int = 1, seed: int = 0, dtype: str = "float", latency: LatencyModel | None = None,
                   channels: int | None = None, root: int = 0, weights=None, max_flows: int | None = None,
                   hottest: int = 10, flows_per_link: int = 5, background=None, progress=None,
                   router=None, intra_order: str = "gpu", protocol: str = "auto", hash: str = "uniform",
                   udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None, min_channels: int | None = None,
                   max_channels: int | None = None) -> CollectiveResult:
    """Simulate ``collective`` over the ranks ``gpus`` (rank -> GPU) of ``topo`` for each message size in
    ``sizes`` (bytes); see the module docstring for the model and :class:`CollectiveResult` for the outputs.

    ``routing``: one of :data:`sim.fabric.routing.ROUTINGS` (default: the fabric's, :func:`sim.fabric.routing.default_routing`);
    ``qps``: queue pairs per NCCL connection (``NCCL_IB_QPS_PER_CONNECTION``; a channel's hop between hosts is one
    connection); ``channels``: NCCL channels (default: NCCL's own count for the job's hosts,
    :func:`sim.fabric.nccl.ring_channels`, under ``min_channels`` / ``max_channels``, ``NCCL_MIN/MAX_NCHANNELS``);
    ``hash``: the switches' hash (:data:`sim.fabric.hashing.HASHES`); ``udp_sport``: how QPs get their UDP source port
    (:data:`sim.fabric.nccl.UDP_SPORT_MODES`); ``qpn_base``: one first QP number for every NIC (default: per NIC from the
    seed); ``seed``: the routing hash seed; ``protocol``: ``"auto"`` (NCCL's choice per
    size) or one of :data:`sim.fabric.nccl_tuning.PROTOCOLS` (forced, as ``NCCL_PROTO``); ``progress``: a
    :mod:`sim.core.progress` callback
    ``(fraction, message)``: each phase's share is its flows (background jobs' included), within it routing them
    then fixing their rates (:func:`solve_phase`), so the fraction grows with the work done and ends at 1.0.
    ``background``: placements (rank -> GPU arrays) of other jobs running the same collective at the same time on
    the same fabric (disjoint GPUs); their traffic shares the links (their phase ``i`` runs beside this job's phase
    ``i``) but only this job is timed and reported. ``intra_order``: a host's GPUs in the rings in GPU order
    (NCCL's topology search) or in rank order (:func:`sim.fabric.collectives.host_groups`). Raises CollectiveError for impossible requests and
    :class:`sim.fabric.routing.NoPathError` when a flow has no active path.
    """
    from sim.fabric.routing import default_routing
    say = progress or silent
    t_start = time.perf_counter()
    gpus = np.asarray(gpus, dtype=IDX)
    if gpus.size < 2:
        raise CollectiveError(f"a collective needs at least 2 GPUs, got {gpus.size}")
    if gpus.min() < 0 or gpus.max() >= topo.n_gpus:
        raise CollectiveError(f"GPU ids must lie in 0..{topo.n_gpus - 1}")
    if not np.asarray(topo.gpu_usable)[gpus].all():
        bad = gpus[~np.asarray(topo.gpu_usable)[gpus]]
        raise CollectiveError(f"{bad.size} GPUs of the placement are not usable (first: GPU {int(bad[0])})")
    if dtype not in DTYPES:
        raise CollectiveError(f"unknown type {dtype!r}")
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 0:
        raise CollectiveError("message sizes must be non-negative byte counts")
    routing = routing or default_routing(topo.kind)
    latency = latency or LatencyModel()
    if protocol not in PROTOCOL_CHOICES:
        raise CollectiveError(f"unknown protocol {protocol!r}: choose one of {', '.join(PROTOCOL_CHOICES)}")
    nccl = {"min_channels": min_channels, "max_channels": max_channels, "nic_bandwidth": topo.nic_bandwidth}
    plan = plan_collective(collective, gpus, topo.gpu_host, algorithm, channels=channels, root=root,
                           weights=weights, max_flows=max_flows or MAX_ALLTOALL_TRANSFERS, intra_order=intra_order,
                           **nccl)
    say(0.0, f"planned {plan.collective} ({plan.algorithm}) over {plan.n_ranks} ranks on {plan.n_hosts} hosts, "
        f"{plan.channels} channels, {plan.n_transfers:,} transfers")
    capacity = link_capacity(topo)
    others = []
    for bg in background or []:
        bg = np.asarray(bg, dtype=IDX)
        if bg.size >= 2:
            others.append(plan_collective(collective, bg, topo.gpu_host, algorithm, channels=channels,
                                          max_flows=max_flows or MAX_ALLTOALL_TRANSFERS, **nccl).phases)
    if others:
        taken = np.concatenate([gpus] + [np.asarray(b, dtype=IDX) for b in background])
        if np.unique(taken).size != taken.size:
            raise CollectiveError("background jobs must not share GPUs with the job or with each other")
        say(0.0, f"background: {len(others)} other jobs, {sum(len(b) for b in background):,} GPUs")
    phases = []
    with_bg = [[ph] + [o[i] for o in others if i < len(o)] for i, ph in enumerate(plan.phases)]
    shares = weighted(progress, [sum(flow_count(topo, p, qps) for p in group) for group in with_bg]) \
        if progress is not None else [None] * len(with_bg)     # nobody told: no need to count the flows
    for i, (ph, *bg_phases) in enumerate(with_bg):
        phases.append(solve_phase(topo, ph, qps, routing, seed, latency, router, capacity, bg_phases, shares[i],
                                  hash=hash, udp_sport=udp_sport, qpn_base=qpn_base))
    link_bytes = np.zeros(capacity.size)
    for res in phases:
        link_bytes += res.link_unit_bytes if res.link_unit_bytes is not None else \
            link_loads(res.flows.ptr, res.flows.links, res.flows.share * res.phase.steps, capacity.size)
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    packed = weights is None and root == 0 and _packed_in_order(gpus, topo.gpu_host, gph)
    roof = roofline_busbw(plan.collective, plan.n_ranks, gph, topo.nic_bandwidth, topo.nvlink_bandwidth,
                          plan.algorithm, plan.channels, plan if packed else None)
    factor = plan.busbw_factor
    latencies, hops = protocol_latencies(plan, phases, latency)
    result = CollectiveResult(plan=plan, kind=topo.kind, routing=routing, qps=qps, seed=seed, dtype=dtype,
                              roofline=roof, rows=[], phases=phases, link_unit_bytes=link_bytes,
                              link_capacity=capacity, n_fabric=topo.n_links, protocol=protocol,
                              latencies=latencies, critical_hops=hops, hash=hash,
                              udp_sport=udp_sport)
    for s in sizes:
        proto = result.protocol_for(s)
        t = result.time(s, proto)
        algbw = s / t if t > 0 else 0.0
        result.rows.append(SizeResult(size=s, count=element_count(plan.collective, s, plan.n_ranks, dtype), time=t,
                                      algbw=algbw, busbw=algbw * factor, norm=algbw * factor / roof,
                                      protocol=proto, predicted=result.predicted(s, proto)))
    result.hottest = hottest_links(topo, result, hottest, flows_per_link)
    result.seconds = {"total": time.perf_counter() - t_start,
                      "phases": [round(p.solve_seconds, 4) for p in phases]}
    return result


def _top_links(rounded: np.ndarray, n_on: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` links ordered by ``rounded`` utilization, then ``n_on`` flows (both descending), then id;
    the full sort runs only over the links that can be among them (partitions find the k-th values first)."""
    cand = np.arange(rounded.size)
    if rounded.size > k:
        kth = _kth_largest(rounded, k)
        above, tied = np.flatnonzero(rounded > kth), np.flatnonzero(rounded == kth)
        need = k - above.size                             # taken among the ties: most flows, then lowest id
        if tied.size > need:
            flows = n_on[tied]
            cut = _kth_largest(flows, need)
            more = tied[flows > cut]
            tied = np.concatenate([more, tied[flows == cut][:need - more.size]])
        cand = np.concatenate([above, tied])
        cand.sort()
    return cand[np.lexsort((-n_on[cand], -rounded[cand]))][:k]


def _kth_largest(x: np.ndarray, k: int):
    """The ``k``-th largest value of ``x`` (counting repeats), for a small ``k``: at most ``k`` passes over the
    values below the maximum, where a partition degrades on arrays of many equal values (link utilizations)."""
    need = k
    while True:
        top = x.max()
        equal = int(np.count_nonzero(x == top))
        if equal >= need:
            return top
        need -= equal
        x = x[x < top]


def protocol_latencies(plan: CollectivePlan, phases: list[PhaseResult], latency: LatencyModel | None = None):
    """Per protocol: the collective's latency (seconds) = NCCL's base latency + the sum over phases of the critical
    path, each network hop at its one-way latency + the protocol's per-hop cost, each NVLink hop at the protocol's
    NVLink latency (:func:`sim.fabric.nccl_tuning.sim_hop`; ``latency.nvlink`` overrides it); and the (network, NVLink)
    hops on it. Fills each phase's ``latency`` and ``critical_hops``."""
    latency = latency or LatencyModel()
    costs = []
    for proto in PROTOCOLS:
        extra, nvl = sim_hop(plan.algorithm, proto, plan.n_ranks, plan.n_hosts)
        costs.append((extra, nvl if latency.nvlink is None else float(latency.nvlink)))
    out = {p: base_latency(plan.algorithm, p) for p in PROTOCOLS}
    hops = {p: (0, 0) for p in PROTOCOLS}
    for ph in phases:
        for proto, (sec, a, b) in zip(PROTOCOLS, critical_paths(ph.phase, ph.hop_latency, ph.hop_network, costs)):
            ph.latency[proto], ph.critical_hops[proto] = sec, (a, b)
            out[proto] += sec
            hops[proto] = (hops[proto][0] + a, hops[proto][1] + b)
    return out, hops


def hottest_links(topo, result: CollectiveResult, k: int = 10, flows_per_link: int = 5) -> list[HotLink]:
    """The ``k`` links with the highest utilization at the largest message size (more flows first on ties), with
    up to ``flows_per_link`` of the flows that cross them, slowest first."""
    if k <= 0:
        return []
    util = result._utilization()
    n_on = np.zeros(util.size, dtype=IDX)
    for ph in result.phases:
        n_on += ph.link_flows if ph.link_flows is not None else np.bincount(ph.flows.links, minlength=util.size)
    rounded = np.round(util, 9)
    top = _top_links(rounded, n_on, k)
    top = top[util[top] > 0]
    rank_of = np.full(topo.n_gpus, -1, dtype=IDX)
    rank_of[result.plan.gpus] = np.arange(result.plan.n_ranks)
    names = link_names(topo, top)
    hot = []
    mark = np.zeros(util.size, dtype=bool)
    mark[top] = True
    on_top = [np.flatnonzero(mark[ph.flows.links]) for ph in result.phases]   # CSR entries on them, one pass
    for link, name in zip(top.tolist(), names):
        sample = []
        for ph, pos in zip(result.phases, on_top):
            fl = ph.flows
            entries = pos[fl.links[pos] == link]
            if not entries.size:
                continue
            f = np.searchsorted(fl.ptr, entries, side="right") - 1
            f = f[np.argsort(ph.rates[f], kind="stable")][:flows_per_link - len(sample)]
            fields = {key: fl.values(key, f).tolist() for key in ("src", "dst", "qp", "channel")}
            for j, i in enumerate(f.tolist()):
                s, d = fields["src"][j], fields["dst"][j]
                sample.append({"phase": ph.phase.name, "src_rank": int(rank_of[s]), "dst_rank": int(rank_of[d]),
                               "src_gpu": int(s), "dst_gpu": int(d), "qp": int(fields["qp"][j]),
                               "channel": int(fields["channel"][j]), "rate_GBps": float(ph.rates[i]) / GB})
            if len(sample) >= flows_per_link:
                break
        hot.append(HotLink(link=link, name=name, capacity=float(result.link_capacity[link]),
                           utilization=float(util[link]), n_flows=int(n_on[link]), flows=sample))
    return hot
