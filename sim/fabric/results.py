"""What a collective run gives: per phase, per message size (the nccl-tests table), the hottest links, and the JSON
summary the CLI and the twin print. See :mod:`sim.fabric.netsim` for how the numbers are made.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sim.core.flowset import FlowSet
from sim.core.units import GB, IDX
from sim.fabric.chunking import ChunkConfig, chunk_size, ll_chunk_size
from sim.fabric.collectives import CollectivePlan, Phase
from sim.fabric.flows import link_names
from sim.fabric.nccl import DEFAULT_UDP_SPORT
from sim.fabric.nccl_tuning import SIMPLE, NcclComm, choose, predict, sim_busbw


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
    fill: float = 0.0                            # s per chunk byte a Simple chunk spends filling the pipeline
    chunk_ops: float = 1.0                       # NCCL's chunk streams each transfer carries side by side
    fill_net: float = 0.0                        # s per chunk byte an LL / LL128 step spends at the network hops
    # () -> (link_unit_bytes, link_flows), called on first access: a training step (sim.jobs.job) reads neither,
    # and they cost two passes over the classes' links
    link_source: object = field(default=None, repr=False)

    @cached_property
    def _links(self) -> tuple:
        source, self.link_source = self.link_source, None       # what it holds is not kept past its use
        return source() if source is not None else (None, None)

    @property
    def link_unit_bytes(self) -> np.ndarray | None:
        """(E + 2G,) the phase's bytes per byte of message size (all steps); None for an event-driven phase."""
        return self._links[0]

    @property
    def link_flows(self) -> np.ndarray | None:
        """(E + 2G,) how many of its flows cross each link; None for an event-driven phase."""
        return self._links[1]


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
    algorithm: str = "ring"            # the NCCL algorithm it ran with (NCCL's choice with algorithm auto, or forced)


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
    host_latency: float = 0.0          # seconds: the host-side floor of a call (sim.fabric.achievable)
    nccl_comm: NcclComm | None = None  # what NCCL's tuning model knows of the job (its protocol choice)
    algorithm_choice: str = "ring"     # "auto" (NCCL's choice per size, each row's algorithm) or the forced one
    by_algorithm: dict = field(default_factory=dict)   # auto: each chosen algorithm's large-message busbw
    chunking: ChunkConfig | None = None  # NCCL's chunk sizes (sim.fabric.chunking); None: no pipeline fill

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
        return choose(p.collective, p.algorithm, int(size), p.n_ranks, p.n_hosts, p.channels, self.roofline,
                      comm=self.nccl_comm)

    def predicted(self, size: float, protocol: str) -> float:
        """NCCL's own predicted time (seconds) of ``size`` bytes with ``protocol``."""
        p = self.plan
        return predict(p.collective, p.algorithm, protocol, int(size), p.n_ranks, p.n_hosts, p.channels,
                       self.roofline, comm=self.nccl_comm)

    def time(self, size: float, protocol: str | None = None) -> float:
        """Simulated seconds for ``size`` bytes with ``protocol`` (default :meth:`protocol_for`): the protocol's
        latency + the bytes over the simulated bandwidth times the protocol's factor and cap."""
        proto = protocol or self.protocol_for(size)
        if size == 0 or self.unit_time <= 0:
            return self.host_latency + self.latencies[proto]
        arch = self.nccl_comm.arch if self.nccl_comm is not None else "hopper"
        bw = sim_busbw(self.plan.algorithm, proto, self.limit_busbw, self.plan.n_hosts, self.plan.channels, arch)
        return self.host_latency + self.latencies[proto] + size * self.plan.busbw_factor / bw + self.fill(size, proto)

    def fill(self, size: float, protocol: str) -> float:
        """Seconds the pipeline's fill adds for ``size`` bytes (:mod:`sim.fabric.chunking`): with Simple, NCCL's
        chunk for the size (at most what one of a transfer's chunk streams carries) times each phase's fill per
        chunk byte; with LL and LL128, NCCL's step for the size times each phase's fill over its network hops only
        (the send proxy forwards a step once it is whole; over NVLink they stream)."""
        if self.chunking is None:
            return 0.0
        p = self.plan
        algo = "chain" if p.collective in ("broadcast", "reduce") and p.algorithm == "ring" else p.algorithm
        ppn = max(p.n_ranks // max(p.n_hosts, 1), 1)
        if protocol == SIMPLE:
            chunk = chunk_size(algo, int(size), ppn, self.chunking)
        else:                                     # LL / LL128: a step at each network hop (chunking.ll_chunk_size)
            nccl_channels = 2 * p.channels if algo == "tree" else p.channels   # a tree channel is NCCL's pair
            chunk = ll_chunk_size(algo, protocol, int(size), nccl_channels, p.n_hosts, ppn)
        if chunk <= 0:
            return 0.0
        total = 0.0
        for ph in self.phases:
            per = ph.fill if protocol == SIMPLE else ph.fill_net
            if per > 0:
                total += per * min(chunk, size * float(np.max(ph.phase.share)) / ph.chunk_ops)
        return total

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
            "collective": p.collective, "algorithm": p.algorithm, "algorithm_choice": self.algorithm_choice,
            "host_latency_us": self.host_latency * 1e6,
            "limit_busbw_GBps_by_algorithm": {k: v / GB for k, v in self.by_algorithm.items()} or None,
            "ranks": p.n_ranks, "hosts": p.n_hosts,
            "channels": p.channels, "fabric": self.kind, "routing": self.routing, "hash": self.hash,
            "udp_sport": self.udp_sport, "qps": self.qps, "seed": self.seed,
            "type": self.dtype, "busbw_factor": p.busbw_factor, "roofline_GBps": self.roofline / GB,
            "latency_us": self.latency * 1e6, "limit_busbw_GBps": self.limit_busbw / GB,
            "limit_norm_busbw": self.limit_norm, "protocol": self.protocol,
            "latency_us_by_protocol": {k: v * 1e6 for k, v in self.latencies.items()},
            "critical_path_hops": {k: {"network": v[0], "nvlink": v[1]} for k, v in self.critical_hops.items()},
            "rows": [{"size": r.size, "count": r.count, "type": self.dtype, "time_us": r.time * 1e6,
                      "algbw_GBps": r.algbw / GB, "busbw_GBps": r.busbw / GB, "norm_busbw": r.norm,
                      "protocol": r.protocol, "algorithm": r.algorithm,
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
    top = top_links(rounded, n_on, k)
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


def top_links(rounded: np.ndarray, n_on: np.ndarray, k: int) -> np.ndarray:
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
