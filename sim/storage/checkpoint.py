"""Checkpoints and restores of a training job, simulated on the frontend fabric and a storage cluster.

Model (docs/storage.md has the whole of it, with sources)
-----
A job of ``gpus`` ranks (placed as collectives are, :func:`sim.fabric.placement.place`) saves ``rank_bytes[r]`` bytes per
rank (``bytes_per_gpu`` for ranks ``0..writers-1``, 0 for the others: a sharded FSDP state where one replica
writes). Each writing rank writes one file (PyTorch Distributed Checkpoint's one file per rank, docs/sources.md
[S16]). Every transfer is a flow of :mod:`sim.core.flowcore` over the resources of :mod:`sim.storage.topology`, all in
one event-driven max-min simulation:

1. **staging**: each writing GPU copies its state to host memory: ``[PCIe of the GPU, host memory]``;
2. **metadata**: when a host's GPUs are staged, its files are created (:mod:`sim.storage.stores`: operations per file and
   per block) on the store's metadata service; a host's clients run their operations one at a time each (rate cap
   ``files / latency``);
3. **upload**: when the host's metadata is done, its bytes (times the write amplification) go from host memory
   through the host's storage client (its CPU), a frontend NIC of the host, the routed frontend path (ECMP), the
   storage server's NIC, CPU and SSDs, and the store's service rate: ``[host memory, client CPU, host NIC up,
   fabric..., server NIC down, server CPU, store service, server SSD write]``, spread over servers as
   :func:`sim.storage.stores.spread_segments` says. On the CPUs a byte costs CPU-seconds, on the SSDs the chunk
   store's amplification, on the store's service rate its file bytes (``1 / amplification`` per stored byte:
   the published peak counts what clients write), so the servers in use never serve more than their share of
   the store's published aggregate times ``storage_efficiency`` (:mod:`sim.storage.topology`; :func:`sim.storage.stores.costs`: the flows'
   ``usage`` of those resources).

Training is **blocked** until the last GPU is staged in ``async`` mode (PyTorch's ``async_save``: stage to CPU,
upload in the background [S16]) and until the checkpoint is **durable** (every upload done) in ``sync`` mode. A
**restore** runs the read path backwards: metadata lookups, reads ``[server SSD read, store service, server CPU, server NIC up,
fabric..., host NIC down, host memory]`` of the un-amplified bytes, then each GPU's copy host -> GPU over PCIe;
training waits for all of it. **Training-data loading** (``data_loading_gbps`` per job host) is background read
traffic from the same store, capped at its demand, that never ends: it takes its fair share of every resource it
crosses, and the result says how much of its demand it kept while the checkpoint ran.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.core import fitted
from sim.core.errors import ParamError, UsageError
from sim.core.flowcore import simulate_flows
from sim.core.maxmin import link_loads
from sim.core.progress import silent, span
from sim.core.units import GBPS, IDX
from sim.fabric.placement import place
from sim.fabric.topology import topology_from_layout
from sim.storage.flows import FlowBlocks, pairs_csr, route_data, store_of, usable_servers, wrap_links
from sim.storage.published import published
from sim.storage.stores import REDUNDANCY, amplification, costs, metadata_ops, spread_segments
from sim.storage.topology import (RES_LINK, RES_META, RES_NAMES, build_storage, host_names, resource_usage,
                                  server_names, service_capacity)

EVENT_MERGE = 3e-2     # completions within 3 % of the data phase's lower bound leave together (flowcore; measured: docs/storage.md)
CAT_STAGE, CAT_META, CAT_DATA, CAT_LOAD = range(4)
CAT_NAMES = ("staging", "metadata", "data", "data-loading")


@dataclass
class Bottleneck:
    """A resource and how busy it was: ``utilization`` = what it carried / (capacity x the data phase)."""

    tier: str
    name: str
    resource: int
    capacity: float
    utilization: float

    def to_dict(self) -> dict:
        return {"tier": self.tier, "name": self.name, "resource": self.resource, "capacity": self.capacity,
                "utilization": self.utilization}


@dataclass
class CheckpointResult:
    """What a checkpoint or restore did. Seconds, bytes, bytes/s; arrays are numpy (``to_dict`` makes lists).

    ``times`` (T+1,) edges of the time series' samples; ``rate`` (T,) aggregate data rate at the servers (stored
    bytes/s, amplification included) in each sample; ``goodput`` (T,) the same in checkpoint bytes/s;
    ``server_rate`` (T, S) per storage server; ``staging_rate`` (T,) GPU<->host copies; ``loading_rate`` (T,)
    training-data reads; ``host_progress`` (T, H) share of each host's bytes done at each sample's end.
    """

    store: str
    mode: str
    restore: bool
    gpus: int
    writers: int
    hosts: np.ndarray                 # (H,) layout host ids of the job
    host_bytes: np.ndarray            # (H,) checkpoint bytes of each host
    host_blocked: np.ndarray          # (H,) seconds until the host's GPUs may train again
    host_done: np.ndarray             # (H,) seconds until the host's data is durable (restore: loaded)
    servers: np.ndarray               # (S,) layout server ids in use
    server_bytes: np.ndarray          # (S,) bytes each server stored (or served)
    server_ssds: np.ndarray           # (S,) active SSDs of each server
    bytes: float                      # checkpoint bytes (sum over ranks)
    stored_bytes: float               # bytes the servers write (amplified) or read
    amplification: float
    redundancy: str
    blocked_seconds: float
    durable_seconds: float            # restore: when everything is loaded
    peak_rate: float                  # stored bytes/s, highest sample
    mean_rate: float                  # stored bytes / the data phase
    phases: list[dict]
    times: np.ndarray
    rate: np.ndarray
    goodput: np.ndarray
    server_rate: np.ndarray
    staging_rate: np.ndarray
    loading_rate: np.ndarray
    host_progress: np.ndarray
    bottlenecks: list[Bottleneck]
    tiers: list[dict]                 # per tier: the busiest resource's utilization
    link_utilization: np.ndarray      # (E,) frontend links over the data phase
    link_names: list[str] = field(default_factory=list, repr=False)
    data_loading: dict | None = None
    ssd_bytes: float = 0.0            # bytes the servers' SSDs write (stored bytes x the chunk store's amplification)
    costs: dict = field(default_factory=dict)    # the per-byte costs used (CPU-seconds per byte, SSD factor)
    published: list = field(default_factory=list)   # published figures beside the simulated ones
    flows: int = 0
    events: int = 0
    seconds: float = 0.0
    server_names: list[str] = field(default_factory=list, repr=False)
    host_names: list[str] = field(default_factory=list, repr=False)

    def to_dict(self, series: bool = True, links: bool = True) -> dict:
        """JSON-able. ``series``: include the time series; ``links``: the per-link utilization."""
        out = {
            "store": self.store, "mode": self.mode, "restore": self.restore, "gpus": self.gpus,
            "writers": self.writers, "hosts": len(self.hosts), "servers": len(self.servers),
            "bytes": self.bytes, "stored_bytes": self.stored_bytes, "amplification": self.amplification,
            "redundancy": self.redundancy, "blocked_seconds": self.blocked_seconds,
            "durable_seconds": self.durable_seconds, "peak_rate": self.peak_rate, "mean_rate": self.mean_rate,
            "phases": self.phases, "bottlenecks": [b.to_dict() for b in self.bottlenecks], "tiers": self.tiers,
            "data_loading": self.data_loading, "ssd_bytes": self.ssd_bytes, "costs": self.costs,
            "published": self.published, "flows": self.flows, "events": self.events,
            "seconds": self.seconds,
            "per_host": {"host": self.hosts.tolist(), "name": self.host_names, "bytes": self.host_bytes.tolist(),
                         "blocked_seconds": _finite(self.host_blocked), "done_seconds": _finite(self.host_done)},
            "per_server": {"server": self.servers.tolist(), "name": self.server_names,
                           "bytes": self.server_bytes.tolist(), "ssds": self.server_ssds.tolist()},
        }
        if series:
            out["series"] = {"times": self.times.tolist(), "rate": self.rate.tolist(),
                             "goodput": self.goodput.tolist(), "staging_rate": self.staging_rate.tolist(),
                             "loading_rate": self.loading_rate.tolist(),
                             "server_rate": self.server_rate.astype(np.float32).tolist(),
                             "host_progress": np.round(self.host_progress, 4).tolist()}
        if links:
            out["link_utilization"] = np.round(self.link_utilization, 5).tolist()
        return out


def _finite(x: np.ndarray) -> list:
    return [float(v) if np.isfinite(v) else None for v in np.asarray(x, dtype=np.float64)]


VALUE_NAMES = ("gpus", "bytes_per_gpu", "writers", "store", "mode", "restore", "placement", "seed", "data_loading_gbps",
               "redundancy", "block_size", "spread", "servers", "pcie_gbps", "host_memcpy_gbps", "client_cores",
               "client_core_gbs", "encode_core_gbs", "checksum_core_gbs", "server_cores", "server_core_gbs",
               "ssd_write_amp", "metadata_kops", "metadata_latency_us", "storage_efficiency", "samples",
               "hottest")   # CHECKPOINT's


def run_checkpoint(layout, values: dict, *, rank_bytes=None, backend=None, storage=None,
                   progress=None) -> CheckpointResult:
    """Simulate one checkpoint (or, with ``restore``, one restore) of a job; see the module docstring.

    ``values`` are :data:`sim.storage.params.CHECKPOINT`'s, validated (``CHECKPOINT.validate(v)``: every parameter,
    defaults filled in; the defaults live there only) and not re-checked here; ``rank_bytes`` (gpus,) overrides
    ``bytes_per_gpu``/``writers`` with any per-rank sizes; ``backend`` (the backend
    :class:`sim.fabric.topology.Topology`) and ``storage`` (:class:`sim.storage.topology.StorageSystem`) may be passed
    when already built. Raises :class:`ParamError` naming the field for requests the cluster cannot serve (more GPUs
    than usable, more servers than the store has, a store the cluster lacks).
    """
    (gpus, bytes_per_gpu, writers, store, mode, restore, placement, seed, data_loading_gbps, redundancy, block_size,
     spread, servers, pcie_gbps, host_memcpy_gbps, client_cores, client_core_gbs, encode_core_gbs, checksum_core_gbs,
     server_cores, server_core_gbs, ssd_write_amp, metadata_kops, metadata_latency_us, storage_efficiency, samples,
     hottest) = (values[k] for k in VALUE_NAMES)
    efficiency = fitted.value("storage_efficiency") if storage_efficiency is None else float(storage_efficiency)
    t0 = time.perf_counter()
    say = progress or silent
    model = store_of(layout, store)
    own = next(((i, s.redundancy) for i, s in enumerate(layout.spec.storage) if s.kind == store and s.redundancy),
               None)                                     # the storage cluster's own ([[storage]] redundancy)
    given = redundancy
    redundancy = given or (own[1] if own else model.redundancy)   # the run's, the cluster's own, the kind's default
    if redundancy not in REDUNDANCY:
        where = (f" (the cluster's storage[{own[0]}].redundancy; a run's redundancy replaces it)"
                 if not given and own else "")
        raise ParamError("redundancy", f"unknown value {redundancy!r}{where}: choose one of {', '.join(REDUNDANCY)}")
    amp = 1.0 if restore else amplification(redundancy)
    gbs = lambda v: None if v is None else v * 1e9   # noqa: E731  (GB/s per core -> bytes/s)
    cost = costs(model, redundancy, block_size, client_core=gbs(client_core_gbs), encode_core=gbs(encode_core_gbs),
                 checksum_core=gbs(checksum_core_gbs), server_core=gbs(server_core_gbs), ssd_write_amp=ssd_write_amp)
    kops = model.metadata_kops if metadata_kops is None else metadata_kops
    latency = (model.metadata_latency_us if metadata_latency_us is None else metadata_latency_us) * 1e-6

    backend = backend or topology_from_layout(layout)
    usable = int(np.count_nonzero(backend.gpu_usable))
    if gpus > usable:
        raise ParamError("gpus", f"asked for {gpus:,} GPUs but the cluster has only {usable:,} usable "
                                 f"(of {backend.n_gpus:,})")
    ranks = place(backend, gpus, placement, seed)
    if rank_bytes is None:
        w = gpus if writers is None else writers
        if w > gpus:
            raise ParamError("writers", f"must be at most gpus ({gpus:,})")
        rank_bytes = np.where(np.arange(gpus) < w, float(bytes_per_gpu), 0.0)
    rank_bytes = np.asarray(rank_bytes, dtype=np.float64)
    if rank_bytes.shape != (gpus,) or (rank_bytes < 0).any() or not np.isfinite(rank_bytes).all():
        raise ParamError("rank_bytes", f"must be {gpus:,} finite non-negative byte counts")

    k = [s.kind for s in layout.spec.storage].index(store)
    meta_caps = [1.0] * len(layout.spec.storage)
    meta_caps[k] = kops * 1e3
    st = storage or build_storage(layout, pcie=None if pcie_gbps is None else pcie_gbps * GBPS,
                                  host_memcpy=None if host_memcpy_gbps is None else host_memcpy_gbps * GBPS,
                                  client_cores=client_cores, server_cores=server_cores,
                                  metadata_ops=meta_caps)
    srv = usable_servers(layout, st, k, store, servers)
    capacity = service_capacity(st, k, srv, efficiency)     # the store's service: its servers in use, at efficiency
    say(0.05, f"job of {gpus:,} GPUs placed ({placement}); {store}: {srv.size:,} servers")

    # Hosts of the job and what each holds.
    gpu_host = np.asarray(layout.gpu_host)[ranks]
    hosts, host_of_rank = np.unique(gpu_host, return_inverse=True)
    H = hosts.size
    hbytes = np.bincount(host_of_rank, rank_bytes, minlength=H)
    hfiles = np.bincount(host_of_rank, (rank_bytes > 0).astype(np.float64), minlength=H)
    ep = st.host_ep[hosts]
    n_ep = (ep >= 0).sum(axis=1)
    bad = (n_ep == 0) & ((hbytes > 0) | (data_loading_gbps > 0))
    if bad.any():
        raise UsageError(f"{int(bad.sum())} hosts of the job have no active frontend NIC (first: "
                         f"{host_names(layout, hosts[bad][:1])[0]})")
    file_ops, block_ops = metadata_ops(model, rank_bytes, restore, block_size)
    file_ops = np.bincount(host_of_rank, file_ops, minlength=H)
    block_ops = np.bincount(host_of_rank, block_ops, minlength=H)

    fl = FlowBlocks()
    writing = np.flatnonzero(rank_bytes > 0)
    g_rank = ranks[writing]
    h_rank = host_of_rank[writing]
    G_STAGE, G_META, G_DATA = 0, H, 2 * H
    # Metadata: per host, the files' operations (before the data) and the blocks' (beside it), in operations;
    # at most one operation in flight per file (cap files / latency).
    wh = np.flatnonzero(hbytes > 0)
    mcap = np.where(latency > 0, hfiles[wh] / max(latency, 1e-300), np.inf)
    mptr = np.arange(wh.size + 1, dtype=IDX)
    fl.add(mptr, np.full(wh.size, st.metadata[k]), file_ops[wh], CAT_META, wh, group=G_META + wh,
           after=None if restore else G_STAGE + wh, cap=mcap)
    fl.add(mptr, np.full(wh.size, st.metadata[k]), block_ops[wh], CAT_META, wh, group=G_DATA + wh,
           after=G_META + wh, cap=mcap)
    # Data: host <-> servers, spread segments.
    sw, ss, sb = spread_segments(hbytes * amp, srv.size, spread, seed)
    routed = route_data(st, hosts, srv, sw, ss, restore, seed)
    mem = np.stack([st.host_mem[hosts[sw]], st.host_client[hosts[sw]]], 1)
    if restore:
        dptr, dlinks = wrap_links(*routed, np.stack([st.server_ssd_read[srv[ss]], np.full(ss.size, st.service[k]),
                                                     st.server_cpu[srv[ss]]], 1), mem[:, ::-1])
    else:
        dptr, dlinks = wrap_links(*routed, mem, np.stack([st.server_cpu[srv[ss]], np.full(ss.size, st.service[k]),
                                                          st.server_ssd_write[srv[ss]]], 1))
    fl.add(dptr, dlinks, sb, CAT_DATA, sw, server=ss, group=G_DATA + sw, after=G_META + sw)
    # Staging: GPU -> host before (write) or host -> GPU after (restore).
    pcie, hmem = st.gpu_pcie[g_rank], st.host_mem[hosts[h_rank]]
    if restore:
        fl.add(*pairs_csr(hmem, pcie), rank_bytes[writing], CAT_STAGE, h_rank, after=G_DATA + h_rank)
    else:
        fl.add(*pairs_csr(pcie, hmem), rank_bytes[writing], CAT_STAGE, h_rank, group=G_STAGE + h_rank)
    # Training-data loading: persistent reads from the same store, capped at the demand.
    demand = data_loading_gbps * GBPS
    if demand > 0:
        lw, ls, lb = spread_segments(np.where(n_ep > 0, 1.0, 0.0), srv.size, spread, seed + 1)
        lptr, llinks = wrap_links(*route_data(st, hosts, srv, lw, ls, True, seed + 1),
                             np.stack([st.server_ssd_read[srv[ls]], np.full(ls.size, st.service[k]),
                                       st.server_cpu[srv[ls]]], 1),
                             np.stack([st.host_client[hosts[lw]], st.host_mem[hosts[lw]]], 1))
        fl.add(lptr, llinks, np.zeros(lw.size), CAT_LOAD, lw, server=ls, cap=lb * demand, persistent=True)
    F = fl.build()
    F["usage"] = resource_usage(st, F["ptr"], F["links"], (F["cat"] == CAT_LOAD) | ((F["cat"] == CAT_DATA) & restore),
                                cost)
    n_flows = int(F["size"].size)
    say(0.2, f"{n_flows:,} flows built and routed; simulating")

    # Estimate of the data phase: the busiest resource's data bytes over its capacity, less what the training-data
    # reads take at their demand (they share the store's service with the checkpoint from start to end).
    data = F["cat"] == CAT_DATA
    load = link_loads(F["ptr"], F["links"], np.where(data, F["size"], 0.0), capacity.size, usage=F["usage"])
    reads = link_loads(F["ptr"], F["links"], np.where(F["cat"] == CAT_LOAD, F["cap"], 0.0), capacity.size,
                       usage=F["usage"])
    left = np.maximum(capacity - reads, 0.5 * capacity)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = float(np.nanmax(np.where(capacity > 0, load / left, 0.0))) if load.size else 0.0

    rec = _Recorder(F, srv.size, H)
    sim = simulate_flows(F["ptr"], F["links"], capacity, F["size"], rate_cap=F["cap"],
                         merge=EVENT_MERGE * bound, progress=span(progress, 0.2, 0.95), group=F["group"],
                         after=F["after"], persistent=F["persistent"], on_interval=rec, usage=F["usage"])
    say(0.95, f"simulated in {sim.events} events; summarizing")
    result = _summarize(layout, st, F, sim, rec, model=model, store=store, mode=mode, restore=restore, gpus=gpus,
                        hosts=hosts, hbytes=hbytes, srv=srv, amp=amp, redundancy=redundancy, demand=demand,
                        samples=samples, hottest=hottest, writers=int(writing.size), cost=cost, capacity=capacity)
    result.seconds = time.perf_counter() - t0
    say(1.0, f"{'restore' if restore else 'checkpoint'}: blocked {result.blocked_seconds:.2f} s, done "
        f"{result.durable_seconds:.2f} s ({result.seconds:.2f} s wall)")
    return result


class _Recorder:
    """``on_interval`` of the simulation: the intervals and, per interval, the rates summed by category, by server
    (data flows) and by host (bytes moved by data flows)."""

    def __init__(self, F: dict, n_servers: int, n_hosts: int):
        self.cat, self.server, self.host = F["cat"], F["server"], F["host"]
        self.S, self.H = n_servers, n_hosts
        self.t, self.dt, self.by_cat, self.by_server, self.by_host = [], [], [], [], []
        self.in_window = np.zeros(len(self.cat))      # what each flow moved while data flows were moving

    def __call__(self, t, dt, act, rates):
        rates = np.where(np.isfinite(rates), rates, 0.0)
        cat = self.cat[act]
        self.t.append(t)
        self.dt.append(dt)
        self.by_cat.append(np.bincount(cat, rates, minlength=4))
        d = cat == CAT_DATA
        if d.any():
            self.in_window[act] += rates * dt
        self.by_server.append(np.bincount(self.server[act[d]], rates[d], minlength=self.S).astype(np.float32))
        self.by_host.append(np.bincount(self.host[act[d]], rates[d] * dt, minlength=self.H))

    def resample(self, edges: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Mean over each sample ``[edges[i], edges[i+1])`` of the piecewise-constant ``values`` (intervals x ...)."""
        if not self.t:
            return np.zeros((len(edges) - 1,) + values.shape[1:])
        t0 = np.asarray(self.t)
        t1 = t0 + np.asarray(self.dt)
        lo, hi = edges[:-1], edges[1:]
        overlap = np.clip(np.minimum(hi[:, None], t1[None, :]) - np.maximum(lo[:, None], t0[None, :]), 0, None)
        width = np.maximum(hi - lo, 1e-300)
        return (overlap / width[:, None]) @ values.reshape(len(t0), -1)


def _summarize(layout, st, F, sim, rec: _Recorder, *, model, store, mode, restore, gpus, hosts, hbytes, srv, amp,
               redundancy, demand, samples, hottest, writers, cost, capacity) -> CheckpointResult:
    cat, host = F["cat"], F["host"]
    H = hosts.size
    fin, beg = sim.finish, sim.start

    def span_of(c):
        m = cat == c
        if not m.any():
            return None
        return float(np.min(beg[m])), float(np.max(fin[m]))

    per_host_max = lambda c: _group_max(fin, host, cat == c, H)   # noqa: E731
    stage, meta, dat = span_of(CAT_STAGE), span_of(CAT_META), span_of(CAT_DATA)
    end = max(x[1] for x in (stage, meta, dat) if x is not None) if any((stage, meta, dat)) else 0.0
    if restore:
        blocked = durable = end
        host_done = np.fmax(np.fmax(per_host_max(CAT_STAGE), per_host_max(CAT_DATA)), per_host_max(CAT_META))
        host_blocked = host_done
        phases = [_phase("metadata", meta), _phase("reading", dat), _phase("loading", stage),
                  {"name": "loaded", "start": end, "end": end}]
    else:
        durable = end
        blocked = durable if mode == "sync" else (stage[1] if stage else 0.0)
        host_done = np.fmax(per_host_max(CAT_DATA), per_host_max(CAT_META))
        host_blocked = host_done if mode == "sync" else per_host_max(CAT_STAGE)
        phases = [_phase("staging", stage), _phase("metadata", meta), _phase("uploading", dat),
                  {"name": "durable", "start": end, "end": end}]
    data = cat == CAT_DATA
    stored = float(F["size"][data].sum())
    total = float(hbytes.sum())
    window = (dat[1] - dat[0]) if dat else 0.0

    edges = np.linspace(0.0, end, samples + 1) if end > 0 else np.zeros(samples + 1)
    by_cat = np.array(rec.by_cat) if rec.by_cat else np.zeros((0, 4))
    rate = rec.resample(edges, by_cat[:, CAT_DATA]).ravel() if end > 0 else np.zeros(samples)
    staging = rec.resample(edges, by_cat[:, CAT_STAGE]).ravel() if end > 0 else np.zeros(samples)
    loading = rec.resample(edges, by_cat[:, CAT_LOAD]).ravel() if end > 0 else np.zeros(samples)
    server_rate = (rec.resample(edges, np.array(rec.by_server)) if end > 0 and rec.by_server
                   else np.zeros((samples, srv.size)))
    moved = np.cumsum(np.array(rec.by_host), axis=0) if rec.by_host else np.zeros((0, H))
    host_target = np.bincount(host[data], F["size"][data], minlength=H)
    host_progress = _progress_at(np.asarray(rec.t) + np.asarray(rec.dt), moved, edges[1:], host_target)

    # Utilization over the data phase of every resource, all traffic moved meanwhile included.
    carried = link_loads(F["ptr"], F["links"], rec.in_window, capacity.size, usage=F["usage"])
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where((capacity > 0) & (window > 0), carried / (capacity * max(window, 1e-300)), 0.0)
    util[~np.isfinite(util)] = 0.0
    # Metadata carries operations over its own phase.
    # The metadata service counts operations, over the whole run (the share of the run it was busy).
    if meta and end > 0:
        m = st.kind == RES_META
        ops = link_loads(F["ptr"], F["links"], np.where(cat == CAT_META, sim.delivered, 0.0), capacity.size)
        util[m] = ops[m] / (capacity[m] * end)
        carried[m] = ops[m]
    order = np.argsort(-util, kind="stable")[:hottest]
    order = order[util[order] > 0]
    names, tiers = st.resource_names(order), st.resource_tier(order)
    bottlenecks = [Bottleneck(tier=t, name=n, resource=int(r), capacity=float(capacity[r]),
                              utilization=float(util[r])) for r, n, t in zip(order.tolist(), names, tiers)]
    tier_rows = _tiers(st, util, carried)
    server_bytes = np.bincount(F["server"][data], F["size"][data], minlength=srv.size)
    E = st.n_links
    dl = None
    if demand > 0:
        lo_m = cat == CAT_LOAD
        want = demand * H
        during = (float(sim.delivered[lo_m].sum()) / end) if end > 0 else 0.0
        dl = {"demand_per_host": demand, "demand": want, "mean_during": during,
              "kept": during / want if want > 0 else 1.0}
    return CheckpointResult(
        store=store, mode=mode, restore=restore, gpus=gpus, writers=writers, hosts=hosts, host_bytes=hbytes,
        host_blocked=host_blocked, host_done=host_done, servers=srv, server_bytes=server_bytes,
        server_ssds=st.server_ssds[srv], bytes=total, stored_bytes=stored, amplification=amp, redundancy=redundancy,
        blocked_seconds=float(blocked), durable_seconds=float(durable), peak_rate=float(rate.max(initial=0.0)),
        mean_rate=stored / window if window > 0 else 0.0, phases=phases, times=edges, rate=rate,
        goodput=rate / amp, server_rate=server_rate, staging_rate=staging, loading_rate=loading,
        host_progress=host_progress, bottlenecks=bottlenecks, tiers=tier_rows, link_utilization=util[:E],
        data_loading=dl, flows=int(F["size"].size), events=sim.events,
        ssd_bytes=0.0 if restore else stored * cost.ssd_write_amp,
        costs={"client_write_s_per_byte": cost.client_write, "client_read_s_per_byte": cost.client_read,
               "server_s_per_byte": cost.server, "ssd_write_amp": cost.ssd_write_amp},
        published=published(store, peak_rate=float(rate.max(initial=0.0)),
                            mean_rate=stored / window if window > 0 else 0.0, servers=int(srv.size),
                            restore=restore),
        server_names=server_names(layout, srv), host_names=host_names(layout, hosts))


def _phase(name, sp):
    return {"name": name, "start": sp[0] if sp else None, "end": sp[1] if sp else None}


def _group_max(values, group, mask, n) -> np.ndarray:
    out = np.full(n, -np.inf)
    np.maximum.at(out, group[mask], values[mask])
    out[out == -np.inf] = np.nan
    return out


def _progress_at(ends, moved, at, target) -> np.ndarray:
    """(len(at), H) share of each host's bytes moved by each time of ``at`` (linear within an interval)."""
    H = target.size
    if not len(ends):
        return np.zeros((len(at), H))
    starts = np.r_[0.0, ends[:-1]]
    prev = np.vstack([np.zeros((1, H)), moved[:-1]])
    i = np.clip(np.searchsorted(ends, at, side="left"), 0, len(ends) - 1)
    frac = np.clip((at - starts[i]) / np.maximum(ends[i] - starts[i], 1e-300), 0, 1)
    got = prev[i] + (moved[i] - prev[i]) * frac[:, None]
    got[at >= ends[-1]] = moved[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(target > 0, np.clip(got / target, 0, 1), 1.0)


def _tiers(st, util, carried) -> list[dict]:
    """Per tier: resources used, the busiest one's name and utilization, and what the tier carried."""
    used = np.flatnonzero(carried > 0)
    if not used.size:
        return []
    codes, names = st.tier_codes()
    rows = []
    for c in np.unique(codes[used]).tolist():
        ids = used[codes[used] == c]
        top = ids[np.argmax(util[ids])]
        rows.append({"tier": names[c], "resources": int(ids.size), "max_utilization": float(util[top]),
                     "busiest": st.resource_names([top])[0], "carried": float(carried[ids].sum())})
    rows.sort(key=lambda r: -r["max_utilization"])
    return rows


__all__ = ["run_checkpoint", "CheckpointResult", "Bottleneck", "RES_NAMES", "RES_LINK"]

