"""Flow-level network simulation: collectives (and any set of flows) over a :class:`sim.topology.Topology`.

Model
-----
Links. The fabric's ``E`` directed links (NIC-leaf, leaf-spine, spine-core, each direction at the cable's speed)
plus, per GPU, two virtual NVLink links appended after them: egress ``E + g`` and ingress ``E + G + g``, each of
``topo.nvlink_bandwidth / 2`` bytes/s (NVIDIA gives H100 NVLink as 900 GB/s per GPU, both directions together). A
transfer between two GPUs of one host crosses ``[E + src, E + G + dst]``; a transfer between hosts crosses the
routed path (:func:`sim.routing.route`), which starts at the sender's NIC uplink and ends at the receiver's NIC
downlink, so the NIC's 400 Gb/s is the first and last link. One solver handles both.

Queue pairs. An inter-host transfer is split round-robin over ``qps`` queue pairs: ``qps`` flows with
``qp = 0..qps-1`` of ``bytes / qps`` each. Whether they take different paths is the routing's business (5-tuple ECMP
hashes them alike, E-ECMP apart). NVLink transfers are one flow.

Rates. Max-min fair (:func:`sim.maxmin.max_min_rates`, exact) over the CSR flow x link incidence, solved once per
phase: every step of a ring has the same flows, so a ring of ``N - 1`` steps costs one solve.

Time. A synchronous step ends when its slowest flow ends: ``max_f bytes_f / rate_f`` (its bandwidth term). A phase
of ``steps`` identical steps takes ``steps x`` that. A flow that would finish early does not speed the others up:
in NCCL's pipelined ring a hop cannot run ahead of the data its predecessor delivers, and the queue pairs of one
transfer carry equal bytes, so the slowest sets the pace (the steady state of the pipeline). Phases of uneven flows
(AllToAll) are solved event-driven by :func:`simulate_flows`: when flows finish they leave, the rest are re-solved.
Latency follows NCCL's own model (``src/graph/tuning.cc``): one hop latency per hop of the critical path, ``alpha``
for a network hop (base RTT of the fabric + the per-switch latency of the longest routed path of the phase), the
NVLink latency for a hop inside a host. Total time for message size ``S``::

    T(S) = sum over phases of (latency_p + S x unit_p)

where ``unit_p`` (seconds per byte of ``S``) comes from the rates. Rates do not depend on ``S``, so every message
size costs nothing more once the phases are solved.

Outputs (nccl-tests conventions): algbw = S / T, busbw = algbw x factor (:func:`sim.collectives.busbw_factor`),
normalized busbw = busbw / roofline, where the *roofline* is the busbw of the same algorithm on the same number of
GPUs packed on whole hosts when only the endpoints limit it (NIC and NVLink bandwidth; the switch fabric ideal) and
latency is zero: :func:`roofline_busbw`. For a ring over 8-GPU hosts that is 8 x the NIC bandwidth (each of the 8
rails carries one channel), 400 GB/s on 400G NICs, what nccl-tests reports for multi-node rings on such hosts; for
AllToAll it is about one NIC's bandwidth. Per-link utilization = bytes carried / (capacity x T), the hottest links
with the flows that cross them, and every flow's rate.

Assumptions (configurable in :class:`LatencyModel`): base RTT 22 us on RoCE (Meta's measured base RTT: Gangidi et
al., SIGCOMM 2024, in docs/sources.md [S2]); 5 us on InfiniBand (assumption: NDR switch hops of ~0.1-0.2 us,
NIC-to-NIC RDMA latency of a few us); 1 us per NVLink hop (assumption, the order of NCCL's own NVLink latency
constants).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.collectives import (DTYPES, MAX_ALLTOALL_TRANSFERS, CollectiveError, CollectivePlan, Phase, element_count,
                             plan_collective)
from sim.maxmin import link_loads, max_min_rates
from sim.progress import silent, span, weighted

IDX = np.int64
NVLINK_DIRECTIONS = 2          # nvlink_bandwidth counts both directions
BASE_RTT = {"roce": 22e-6, "infiniband": 5e-6}   # seconds (RoCE: docs/sources.md [S2]; InfiniBand: assumption)
NVLINK_HOP_LATENCY = 1e-6      # seconds per NVLink hop (assumption)
GB = 1e9                       # nccl-tests' GB/s
EVENT_MERGE = 1e-2             # event-driven phases merge completions within 1 % of the makespan's lower bound


@dataclass(frozen=True)
class LatencyModel:
    """Per-hop latencies in seconds. ``base_rtt=None`` takes :data:`BASE_RTT` of the fabric kind."""

    base_rtt: float | None = None
    nvlink: float = NVLINK_HOP_LATENCY

    def network(self, kind: str) -> float:
        return BASE_RTT.get(kind, BASE_RTT["roce"]) if self.base_rtt is None else float(self.base_rtt)


# ---------------------------------------------------------------------------------------------- flows
@dataclass
class FlowSet:
    """Flows of one phase: per flow its GPUs, QP, channel, the transfer it belongs to, its bytes per byte of
    message size (``share``) and its links (CSR ``ptr``, ``links``; NVLink links are ``>= n_fabric``)."""

    src: np.ndarray
    dst: np.ndarray
    qp: np.ndarray
    channel: np.ndarray
    transfer: np.ndarray
    share: np.ndarray
    ptr: np.ndarray
    links: np.ndarray
    n_fabric: int
    n_gpus: int

    @property
    def n_flows(self) -> int:
        return len(self.src)

    @property
    def network(self) -> np.ndarray:
        """(F,) bool: the flow crosses the switch fabric (not NVLink)."""
        return self._net

    def __post_init__(self):
        # A flow is a network flow when its first link is a fabric link (NVLink flows cross only virtual links).
        first = np.full(len(self.src), self.n_fabric, dtype=IDX)
        has = np.diff(self.ptr) > 0
        first[has] = self.links[self.ptr[:-1][has]]
        self._net = first < self.n_fabric


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


def build_flows(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0, router=None) -> FlowSet:
    """The flows of ``phase``: inter-host transfers split over ``qps`` QPs and routed, NVLink transfers as one
    flow over the two GPUs' virtual NVLink links. Flows are ordered: network flows (transfer-major, QP-minor), then
    NVLink flows."""
    if router is None:
        from sim.routing import route as router
    qps = int(qps)
    if qps < 1:
        raise ValueError(f"qps must be at least 1, got {qps}")
    E, G = topo.n_links, topo.n_gpus
    src, dst = np.asarray(phase.src, dtype=IDX), np.asarray(phase.dst, dtype=IDX)
    inter = np.asarray(topo.gpu_host)[src] != np.asarray(topo.gpu_host)[dst]
    net_t = np.flatnonzero(inter)
    nvl_t = np.flatnonzero(~inter)
    t_net = np.repeat(net_t, qps)
    qp_net = np.tile(np.arange(qps, dtype=IDX), net_t.size)
    if t_net.size:
        ptr_net, links_net = router(topo, src[t_net], dst[t_net], qp_net, routing, seed)
        ptr_net = np.asarray(ptr_net, dtype=IDX)
        links_net = np.asarray(links_net, dtype=IDX)
        if np.any(np.diff(ptr_net) == 0):
            raise ValueError("the router gave an empty path to a transfer between hosts")
    else:
        ptr_net, links_net = np.zeros(1, dtype=IDX), np.zeros(0, dtype=IDX)
    nvl_links = np.stack([E + src[nvl_t], E + G + dst[nvl_t]], axis=1).ravel()
    ptr = np.concatenate([ptr_net, ptr_net[-1] + 2 * np.arange(1, nvl_t.size + 1, dtype=IDX)])
    transfer = np.concatenate([t_net, nvl_t])
    share = np.asarray(phase.share, dtype=np.float64)
    return FlowSet(src=src[transfer], dst=dst[transfer], qp=np.concatenate([qp_net, np.zeros(nvl_t.size, IDX)]),
                   channel=np.asarray(phase.channel, dtype=IDX)[transfer], transfer=transfer,
                   share=np.concatenate([share[t_net] / qps, share[nvl_t]]), ptr=ptr,
                   links=np.concatenate([links_net, nvl_links]), n_fabric=E, n_gpus=G)


# ---------------------------------------------------------------------------------------------- event-driven
@dataclass
class FlowSimResult:
    """Result of :func:`simulate_flows`. Times in seconds, rates in bytes/s, bytes in bytes.

    ``finish`` (F,): completion time of each flow (``inf`` if it can never finish: a zero-capacity link);
    ``first_rate`` (F,): its rate when it started; ``delivered`` (F,): bytes it carried (its size when finished);
    ``events``: how many times the rates were solved.
    """

    start: np.ndarray
    finish: np.ndarray
    first_rate: np.ndarray
    delivered: np.ndarray
    events: int

    @property
    def makespan(self) -> float:
        return float(self.finish.max() - self.start.min()) if len(self.finish) else 0.0

    @property
    def mean_rate(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.delivered / (self.finish - self.start)


def _sub_csr(ptr: np.ndarray, links: np.ndarray, flows: np.ndarray):
    deg = np.diff(ptr)
    mask = np.zeros(len(deg), dtype=bool)
    mask[flows] = True
    sub_links = links[np.repeat(mask, deg)]
    sub_ptr = np.zeros(flows.size + 1, dtype=IDX)
    np.cumsum(deg[flows], out=sub_ptr[1:])
    return sub_ptr, sub_links


def simulate_flows(flow_ptr, flow_links, capacity, size, rate_cap=None, start=None, *, rtol: float = 1e-9,
                   merge: float = 0.0, max_events: int = 1_000_000, progress=None) -> FlowSimResult:
    """Event-driven completion of flows of uneven sizes sharing links, with max-min fair rates between events.

    Flow ``f`` (links ``flow_links[flow_ptr[f]:flow_ptr[f+1]]``, bytes ``size[f]``, optional rate cap bytes/s
    ``rate_cap[f]``, optional release time ``start[f]`` seconds) is active from its start until its bytes are
    delivered. Between two events (a flow finishes, a flow starts) the active flows run at their max-min fair rates
    (:func:`sim.maxmin.max_min_rates`); at each event the rates are solved again. Exact for piecewise-constant
    rates (fluid model). Cost: one solve per event; events are at most the number of distinct finishing and
    starting times.

    Flows finishing within ``rtol`` (relative) of the earliest finish, or within ``merge`` seconds of it, leave
    together at the last of their finish times. Merging keeps the physics: every byte is delivered, no link carries
    more than its capacity (merged flows just leave their bandwidth unused a little longer) and no flow is recorded
    as finished before its bytes could arrive at its rate; an event ends at most ``merge`` seconds late. The
    defaults are exact up to rounding; a ``merge`` of 1 % of the expected makespan cuts the events of a congested
    AllToAll (hundreds of distinct rates) by an order of magnitude (tests/sim/test_netsim.py compares the two).

    Two flows of 1 and 3 bytes on one link of 1 byte/s: each gets 0.5; the small one ends at 2 s, the big one then
    runs at 1 byte/s and ends at 2 + 2 = 4 s.

    ``progress``: optional :mod:`sim.progress` callback, told after every event the share of the flows finished.

    >>> r = simulate_flows([0, 1, 2], [0, 0], [1.0], [1.0, 3.0])
    >>> r.finish.tolist(), r.first_rate.tolist(), r.events
    ([2.0, 4.0], [0.5, 0.5], 2)
    """
    ptr, links, capacity, size, caps, start = _flow_inputs(flow_ptr, flow_links, capacity, size, rate_cap, start)
    F = len(size)
    remaining = size.copy()
    delivered = np.zeros(F)
    finish = np.full(F, np.nan)
    first_rate = np.full(F, np.nan)
    done = remaining <= 0
    finish[done] = start[done]
    n_done = int(done.sum())
    t = float(start.min()) if F else 0.0
    events = 0
    while not done.all():
        act = np.flatnonzero(~done & (start <= t))
        pending = np.flatnonzero(~done & (start > t))
        next_start = float(start[pending].min()) - t if pending.size else np.inf
        if act.size == 0:
            t += next_start
            continue
        if events >= max_events:
            raise RuntimeError(f"simulate_flows: more than {max_events} events")
        sub_ptr, sub_links = _sub_csr(ptr, links, act)
        rates = max_min_rates(sub_ptr, sub_links, capacity, None if caps is None else caps[act])
        events += 1
        fresh = np.isnan(first_rate[act])
        first_rate[act[fresh]] = rates[fresh]
        step = _next_event(rates, remaining[act], next_start, rtol, merge)
        if step is None:
            finish[act] = np.inf                                # stuck on zero-capacity links forever
            done[act] = True
            break
        dt, ending = step
        moved = np.where(np.isfinite(rates), rates * dt, remaining[act])
        moved = np.minimum(moved, remaining[act])
        moved[ending] = remaining[act][ending]
        remaining[act] -= moved
        delivered[act] += moved
        t += dt
        finish[act[ending]] = t
        done[act[ending]] = True
        n_done += int(ending.sum())
        if progress is not None:
            progress(n_done / F)
    return FlowSimResult(start=start, finish=finish, first_rate=first_rate, delivered=delivered, events=events)


def _flow_inputs(flow_ptr, flow_links, capacity, size, rate_cap, start):
    """The inputs of :func:`simulate_flows` as arrays, refusing sizes and release times it cannot simulate."""
    ptr = np.asarray(flow_ptr, dtype=IDX)
    links = np.asarray(flow_links, dtype=IDX)
    capacity = np.asarray(capacity, dtype=np.float64)
    size = np.asarray(size, dtype=np.float64)
    F = len(ptr) - 1
    if size.shape != (F,) or (size < 0).any() or not np.isfinite(size).all():
        raise ValueError(f"size must be {F} finite non-negative byte counts")
    caps = None if rate_cap is None else np.broadcast_to(np.asarray(rate_cap, dtype=np.float64), (F,))
    start = np.zeros(F) if start is None else np.asarray(start, dtype=np.float64).copy()
    if start.shape != (F,) or not np.isfinite(start).all():
        raise ValueError(f"start must be {F} finite release times")
    return ptr, links, capacity, size, caps, start


def _next_event(rates, remaining, next_start: float, rtol: float, merge: float):
    """``(dt, ending)``: the time to the next event and which active flows (bool mask) finish at it; ``None`` when
    no active flow can ever finish and none is waiting to start (zero-capacity links).

    Flows finishing within ``rtol`` (relative) or ``merge`` seconds of the first leave together, at the last of
    their finish times: each sends its remaining bytes at (at most) its rate, the others advance at theirs. A
    release (``next_start`` seconds away) before the first finish is the event, and one inside the window ends it.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ttf = np.where(rates > 0, remaining / rates, np.inf)
    dt_finish = float(ttf.min())
    if not np.isfinite(dt_finish) and not np.isfinite(next_start):
        return None
    if next_start < dt_finish:
        return next_start, np.zeros(rates.size, dtype=bool)
    ending = ttf <= max(dt_finish * (1 + rtol), dt_finish + merge)
    if ttf[ending].max() > next_start:
        ending &= ttf <= next_start
    return float(ttf[ending].max()), ending


# ---------------------------------------------------------------------------------------------- collectives
@dataclass
class PhaseResult:
    """A solved phase. ``rates`` (F,) bytes/s of its flows at the start of a step; ``unit_time``: seconds per byte
    of message size for the whole phase (all steps); ``latency``: seconds; ``alpha``: seconds per network hop;
    ``finish_unit`` (F,): for event-driven phases, each flow's finish time per byte of message size."""

    phase: Phase
    flows: FlowSet
    rates: np.ndarray
    unit_time: float
    latency: float
    alpha: float
    finish_unit: np.ndarray | None = None
    solve_seconds: float = 0.0


@dataclass
class SizeResult:
    """One row of the nccl-tests table. ``size`` bytes, ``time`` seconds, bandwidths bytes/s, ``norm`` in 0..1."""

    size: int
    count: int
    time: float
    algbw: float
    busbw: float
    norm: float


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

    @property
    def latency(self) -> float:
        return sum(p.latency for p in self.phases)

    @property
    def unit_time(self) -> float:
        return sum(p.unit_time for p in self.phases)

    @property
    def n_flows(self) -> int:
        return sum(p.flows.n_flows for p in self.phases)

    def time(self, size: float) -> float:
        return self.latency + size * self.unit_time

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
            "channels": p.channels, "fabric": self.kind, "routing": self.routing, "qps": self.qps, "seed": self.seed,
            "type": self.dtype, "busbw_factor": p.busbw_factor, "roofline_GBps": self.roofline / GB,
            "latency_us": self.latency * 1e6, "limit_busbw_GBps": self.limit_busbw / GB,
            "limit_norm_busbw": self.limit_norm,
            "rows": [{"size": r.size, "count": r.count, "type": self.dtype, "time_us": r.time * 1e6,
                      "algbw_GBps": r.algbw / GB, "busbw_GBps": r.busbw / GB, "norm_busbw": r.norm}
                     for r in self.rows],
            "phases": [{"name": ph.phase.name, "steps": ph.phase.steps, "mode": ph.phase.mode,
                        "flows": ph.flows.n_flows, "network_flows": int(ph.flows.network.sum()),
                        "unit_time_s_per_byte": ph.unit_time, "latency_us": ph.latency * 1e6,
                        "alpha_us": ph.alpha * 1e6} for ph in self.phases],
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
                 "channel": int(fl.channel[i]), "rate_GBps": float(ph.rates[i]) / GB,
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
                   n_gpus=sets[0].n_gpus)


def solve_phase(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0,
                latency: LatencyModel | None = None, router=None, capacity=None,
                background: list[Phase] | None = None, progress=None) -> PhaseResult:
    """Build, route and solve one phase (see the module docstring for the model).

    ``background``: phases of other jobs that run at the same time (same routing and QPs; with ``routing="te"`` and
    no ``router`` the controller routes them together with this phase's flows); their flows share the
    links in the same max-min solve (and, for an event-driven phase, the same event simulation), but only this
    phase's flows set its time and appear in the result. ``progress``: a :mod:`sim.progress` callback; each flow
    is one unit of work when it is routed and one when its rate is fixed (solver rounds, or events finishing it).
    """
    latency = latency or LatencyModel()
    say = progress or silent
    t0 = time.perf_counter()
    if routing == "te" and router is None:
        # The TE controller sees the whole traffic matrix: this phase's and the background jobs' flows are routed
        # in one decision, weighted by their bytes (sim/te.py).
        from sim.te import route_together
        flows, *others = route_together(topo, [phase] + list(background or []),
                                        lambda ph, r: build_flows(topo, ph, qps, routing, seed, r), seed)
    else:
        flows = build_flows(topo, phase, qps, routing, seed, router)
        others = [build_flows(topo, b, qps, routing, seed, router) for b in (background or [])]
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
        rates = max_min_rates(everything.ptr, everything.links, capacity, progress=solving)[:mine]
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(rates > 0, flows.share / rates, np.inf)
        unit = phase.steps * float(per.max()) if per.size else 0.0
    # alpha: base RTT + the switch latency of the longest routed path of the phase.
    lat = np.concatenate([np.asarray(topo.link_latency, dtype=np.float64), np.zeros(2 * topo.n_gpus)])
    path_lat = np.add.reduceat(lat[flows.links], flows.ptr[:-1]) if flows.links.size else np.zeros(0)
    path_lat = np.where(np.diff(flows.ptr) > 0, path_lat, 0.0)
    alpha = latency.network(topo.kind) + (float(path_lat[flows.network].max()) if flows.network.any() else 0.0)
    phase_latency = phase.net_hops * alpha + phase.nvl_hops * latency.nvlink
    say(1.0, f"phase {phase.name}: {everything.n_flows:,} flows routed ({routing}, {qps} QP) and solved in "
        f"{time.perf_counter() - t0:.2f} s")
    return PhaseResult(phase=phase, flows=flows, rates=rates, unit_time=unit, latency=phase_latency, alpha=alpha,
                       finish_unit=finish_unit, solve_seconds=time.perf_counter() - t0)


def roofline_busbw(collective: str, n: int, gpus_per_host: int, nic_bandwidth: float, nvlink_bandwidth: float,
                   algorithm: str = "ring", channels: int | None = None) -> float:
    """The busbw (bytes/s) the collective reaches on ``n`` GPUs packed on whole hosts when only the endpoints
    limit it: each GPU's NIC (``nic_bandwidth`` each way) and NVLink (``nvlink_bandwidth`` both ways together),
    the switch fabric ideal, latency zero. Computed from the same plan the simulation uses: per phase, the most
    loaded endpoint link sets the time.

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
    plan = plan_collective(collective, gpus, host, algorithm, channels=channels,
                           max_flows=max(n * (n - 1), 1))
    nvl = nvlink_bandwidth / NVLINK_DIRECTIONS
    unit = 0.0
    for ph in plan.phases:
        inter = host[ph.src] != host[ph.dst]
        loads = [np.bincount(ph.src[inter], ph.share[inter], minlength=n) / nic_bandwidth,
                 np.bincount(ph.dst[inter], ph.share[inter], minlength=n) / nic_bandwidth,
                 np.bincount(ph.src[~inter], ph.share[~inter], minlength=n) / nvl,
                 np.bincount(ph.dst[~inter], ph.share[~inter], minlength=n) / nvl]
        unit += ph.steps * max(float(x.max()) for x in loads)
    return plan.busbw_factor / unit


def run_collective(topo, gpus, collective: str, sizes, *, algorithm: str = "ring", routing: str | None = None,
                   qps: int = 1, seed: int = 0, dtype: str = "float", latency: LatencyModel | None = None,
                   channels: int | None = None, root: int = 0, weights=None, max_flows: int | None = None,
                   hottest: int = 10, flows_per_link: int = 5, background=None, progress=None,
                   router=None) -> CollectiveResult:
    """Simulate ``collective`` over the ranks ``gpus`` (rank -> GPU) of ``topo`` for each message size in
    ``sizes`` (bytes); see the module docstring for the model and :class:`CollectiveResult` for the outputs.

    ``routing``: one of :data:`sim.routing.ROUTINGS` (default: the fabric's, :func:`sim.routing.default_routing`);
    ``qps``: queue pairs per GPU pair; ``seed``: the routing hash seed; ``progress``: a :mod:`sim.progress` callback
    ``(fraction, message)``: each phase's share is its flows (background jobs' included), within it routing them
    then fixing their rates (:func:`solve_phase`), so the fraction grows with the work done and ends at 1.0.
    ``background``: placements (rank -> GPU arrays) of other jobs running the same collective at the same time on
    the same fabric (disjoint GPUs); their traffic shares the links (their phase ``i`` runs beside this job's phase
    ``i``) but only this job is timed and reported. Raises CollectiveError for impossible requests and
    :class:`sim.routing.NoPathError` when a flow has no active path.
    """
    from sim.routing import default_routing
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
    plan = plan_collective(collective, gpus, topo.gpu_host, algorithm, channels=channels, root=root,
                           weights=weights, max_flows=max_flows or MAX_ALLTOALL_TRANSFERS)
    say(0.0, f"planned {plan.collective} ({plan.algorithm}) over {plan.n_ranks} ranks on {plan.n_hosts} hosts, "
        f"{plan.channels} channels, {plan.n_transfers:,} transfers")
    capacity = link_capacity(topo)
    others = []
    for bg in background or []:
        bg = np.asarray(bg, dtype=IDX)
        if bg.size >= 2:
            others.append(plan_collective(collective, bg, topo.gpu_host, algorithm, channels=channels,
                                          max_flows=max_flows or MAX_ALLTOALL_TRANSFERS).phases)
    if others:
        taken = np.concatenate([gpus] + [np.asarray(b, dtype=IDX) for b in background])
        if np.unique(taken).size != taken.size:
            raise CollectiveError("background jobs must not share GPUs with the job or with each other")
        say(0.0, f"background: {len(others)} other jobs, {sum(len(b) for b in background):,} GPUs")
    phases = []
    with_bg = [[ph] + [o[i] for o in others if i < len(o)] for i, ph in enumerate(plan.phases)]
    shares = weighted(progress, [sum(flow_count(topo, p, qps) for p in group) for group in with_bg])
    for i, (ph, *bg_phases) in enumerate(with_bg):
        phases.append(solve_phase(topo, ph, qps, routing, seed, latency, router, capacity, bg_phases, shares[i]))
    link_bytes = np.zeros(capacity.size)
    for res in phases:
        link_bytes += link_loads(res.flows.ptr, res.flows.links, res.flows.share * res.phase.steps, capacity.size)
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    roof = roofline_busbw(plan.collective, plan.n_ranks, gph, topo.nic_bandwidth, topo.nvlink_bandwidth,
                          plan.algorithm, channels)
    factor = plan.busbw_factor
    lat, unit = sum(p.latency for p in phases), sum(p.unit_time for p in phases)
    rows = []
    for s in sizes:
        t = lat + s * unit
        algbw = s / t if t > 0 else 0.0
        rows.append(SizeResult(size=s, count=element_count(plan.collective, s, plan.n_ranks, dtype), time=t,
                               algbw=algbw, busbw=algbw * factor, norm=algbw * factor / roof))
    result = CollectiveResult(plan=plan, kind=topo.kind, routing=routing, qps=qps, seed=seed, dtype=dtype,
                              roofline=roof, rows=rows, phases=phases, link_unit_bytes=link_bytes,
                              link_capacity=capacity, n_fabric=topo.n_links)
    result.hottest = hottest_links(topo, result, hottest, flows_per_link)
    result.seconds = {"total": time.perf_counter() - t_start,
                      "phases": [round(p.solve_seconds, 4) for p in phases]}
    return result


def hottest_links(topo, result: CollectiveResult, k: int = 10, flows_per_link: int = 5) -> list[HotLink]:
    """The ``k`` links with the highest utilization at the largest message size (more flows first on ties), with
    up to ``flows_per_link`` of the flows that cross them, slowest first."""
    if k <= 0:
        return []
    util = result._utilization()
    n_on = np.zeros(util.size, dtype=IDX)
    for ph in result.phases:
        n_on += np.bincount(ph.flows.links, minlength=util.size)
    order = np.lexsort((-n_on, -np.round(util, 9)))
    top = order[:k]
    top = top[util[top] > 0]
    rank_of = np.full(topo.n_gpus, -1, dtype=IDX)
    rank_of[result.plan.gpus] = np.arange(result.plan.n_ranks)
    names = link_names(topo, top)
    hot = []
    for link, name in zip(top.tolist(), names):
        sample = []
        for pi, ph in enumerate(result.phases):
            fl = ph.flows
            entries = np.flatnonzero(fl.links == link)
            if not entries.size:
                continue
            f = np.searchsorted(fl.ptr, entries, side="right") - 1
            f = f[np.argsort(ph.rates[f], kind="stable")][:flows_per_link - len(sample)]
            for i in f.tolist():
                sample.append({"phase": ph.phase.name, "src_rank": int(rank_of[fl.src[i]]),
                               "dst_rank": int(rank_of[fl.dst[i]]), "src_gpu": int(fl.src[i]),
                               "dst_gpu": int(fl.dst[i]), "qp": int(fl.qp[i]), "channel": int(fl.channel[i]),
                               "rate_GBps": float(ph.rates[i]) / GB})
            if len(sample) >= flows_per_link:
                break
        hot.append(HotLink(link=link, name=name, capacity=float(result.link_capacity[link]),
                           utilization=float(util[link]), n_flows=int(n_on[link]), flows=sample))
    return hot
