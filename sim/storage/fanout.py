"""Fan-out: N clients open and read the same small files (a code change seen on every node at once, Meta 2024
[S1]), on Hammerspace (parallel NFS) or Tectonic.

Model
-----
Clients run ``clients_per_host`` to a host, on the first hosts (in layout order) with a usable frontend NIC. Each
client opens every one of ``files`` files: ``ops_per_file`` metadata operations per file (Hammerspace: LOOKUP/OPEN,
LAYOUTGET, GETATTR, CLOSE, :mod:`sim.storage.stores`), one at a time per client, so a client issues at most one per
``metadata_latency_us``. NFS's close-to-open consistency revalidates a file at every open (Linux ``nfs(5)``,
docs/sources.md [S18]), so every client pays its own operations; the file's *data* is fetched once per host (the
host's page cache serves its other clients). Files lie round-robin on the store's usable data servers and are
served from the servers' memory (the same few files are read by everyone: assumption), so a read crosses
``[server CPU, server NIC up, fabric..., host NIC down, client CPU, host memory]`` (CPUs charged per byte as
:func:`sim.storage.stores.costs` says for a read).

Flows (:mod:`sim.core.flowcore`, one event-driven max-min run): per host one metadata flow of
``clients_on_host x files x ops_per_file`` operations over the metadata service, capped at
``clients_on_host / latency``; when it ends, one data flow per (host, server holding files) of the bytes on that
server. The time for N clients is when the last flow ends. Few clients: each client's serial operations bound it
(``files x ops x latency``); many: the metadata service (``N x files x ops / capacity``); large files: the data
servers' NICs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import ParamError
from sim.core.flowcore import simulate_flows
from sim.core.maxmin import link_loads
from sim.core.progress import silent, span
from sim.fabric.routing import route
from sim.storage.flows import store_of, turns, usable_servers, wrap_links
from sim.storage.stores import costs
from sim.storage.topology import build_storage, resource_usage
from sim.core.units import IDX

SWEEP = (1024, 2048, 4096, 8192, 16384, 24576)     # the "1k to 24k clients"
EVENT_MERGE = 1e-2     # completions within 1 % of the busiest resource's lower bound leave together (flowcore)


@dataclass
class FanoutRun:
    """One client count: ``seconds`` until every client has read every file; the metadata and data phases;
    ``limit``: what bounds it (``metadata-latency``, ``metadata-service``, ``data``)."""

    clients: int
    hosts: int
    seconds: float
    metadata_seconds: float
    data_seconds: float
    operations: float
    bytes: float
    limit: str
    events: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class FanoutResult:
    store: str
    files: int
    file_size: int
    ops_per_file: int
    metadata_ops_per_s: float
    metadata_latency: float
    run: FanoutRun                                  # the requested client count
    sweep: list[FanoutRun] = field(default_factory=list)
    bottlenecks: list[dict] = field(default_factory=list)
    servers: np.ndarray = None                      # layout ids of the servers holding files
    server_bytes: np.ndarray = None                 # bytes each served
    seconds: float = 0.0                            # wall time of the simulation

    def to_dict(self) -> dict:
        return {"store": self.store, "files": self.files, "file_size": self.file_size,
                "ops_per_file": self.ops_per_file, "metadata_ops_per_s": self.metadata_ops_per_s,
                "metadata_latency_s": self.metadata_latency, **self.run.to_dict(),
                "sweep": [r.to_dict() for r in self.sweep], "bottlenecks": self.bottlenecks,
                "per_server": {"server": self.servers.tolist(), "bytes": self.server_bytes.tolist()},
                "wall_seconds": self.seconds}


def run_fanout(layout, values: dict, *, storage=None, progress=None) -> FanoutResult:
    """Simulate ``clients`` clients opening and reading the same ``files`` files (see the module docstring);
    ``values`` are :data:`sim.storage.params.STORAGE_FANOUT`'s, validated (every parameter, defaults filled in: the
    defaults live there only). With ``sweep`` also 1,024, 2,048, ... clients up to ``clients``."""
    store, clients, clients_per_host, files, file_size, ops_per_file, servers, metadata_kops, metadata_latency_us, \
        sweep = (values[k] for k in ("store", "clients", "clients_per_host", "files", "file_size", "ops_per_file",
                                     "servers", "metadata_kops", "metadata_latency_us", "sweep"))
    t0 = time.perf_counter()
    say = progress or silent
    model = store_of(layout, store)
    ops = model.read_ops_per_file if ops_per_file is None else int(ops_per_file)
    kops = model.metadata_kops if metadata_kops is None else float(metadata_kops)
    latency = (model.metadata_latency_us if metadata_latency_us is None else float(metadata_latency_us)) * 1e-6
    k = [s.kind for s in layout.spec.storage].index(store)
    caps = [1.0] * len(layout.spec.storage)
    caps[k] = kops * 1e3
    st = storage or build_storage(layout, metadata_ops=caps)
    srv = usable_servers(layout, st, k, store, servers)
    hosts_ok = np.flatnonzero(st.host_ep[:, 0] >= 0)
    need = -(-clients // clients_per_host)
    if need > hosts_ok.size:
        raise ParamError("clients", f"{clients:,} clients at {clients_per_host} per host need {need:,} hosts but "
                                    f"only {hosts_ok.size:,} have an active frontend NIC")
    holding = srv[:min(files, srv.size)]
    per_server = np.bincount(np.arange(files) % srv.size, minlength=srv.size)[:holding.size] * float(file_size)
    counts = sorted({c for c in SWEEP if c < clients} | {clients}) if sweep else [clients]
    weights = np.array(counts, dtype=float)
    bounds = np.r_[0.0, np.cumsum(weights) / weights.sum()]
    runs, last = [], None
    for i, n in enumerate(counts):
        part = span(progress, bounds[i], bounds[i + 1])
        run, last = _one(st, k, hosts_ok, holding, per_server, n, clients_per_host, files, ops, latency, part,
                         costs(model, model.redundancy))
        runs.append(run)
        say(bounds[i + 1], f"{n:,} clients: {run.seconds:.3f} s ({run.limit})")
    F, sim = last
    carried = link_loads(F["ptr"], F["links"], sim.delivered, st.capacity.size, usage=F["usage"])
    end = runs[-1].seconds
    util = np.where(st.capacity > 0, carried / (st.capacity * max(end, 1e-300)), 0.0)
    top = np.argsort(-util, kind="stable")[:5]
    top = top[util[top] > 0]
    bottlenecks = [{"tier": t, "name": nm, "resource": int(r), "capacity": float(st.capacity[r]),
                    "utilization": float(util[r])}
                   for r, nm, t in zip(top.tolist(), st.resource_names(top), st.resource_tier(top))]
    return FanoutResult(store=store, files=files, file_size=int(file_size), ops_per_file=ops,
                        metadata_ops_per_s=kops * 1e3, metadata_latency=latency, run=runs[-1], sweep=runs,
                        bottlenecks=bottlenecks, servers=holding, server_bytes=per_server * runs[-1].hosts,
                        seconds=time.perf_counter() - t0)


def _one(st, k, hosts_ok, holding, per_server, clients, cph, files, ops, latency, progress, cost):
    n_hosts = -(-clients // cph)
    hosts = hosts_ok[:n_hosts]
    on_host = np.full(n_hosts, cph, dtype=np.float64)
    on_host[-1] = clients - cph * (n_hosts - 1)
    H, S = n_hosts, holding.size
    # Metadata flows (ops), then data flows (bytes) per (host, server).
    m_ops = on_host * files * ops
    m_cap = on_host / latency if latency > 0 else np.full(H, np.inf)
    w = np.repeat(np.arange(H, dtype=IDX), S)
    s = np.tile(np.arange(S, dtype=IDX), H)
    ptr, links = route(st.topo, *_fanout_endpoints(st, hosts, holding, w, s), None, "ecmp", 0)
    dptr, dlinks = wrap_links(ptr, links, st.server_cpu[holding[s]],
                              np.stack([st.host_client[hosts[w]], st.host_mem[hosts[w]]], 1))
    all_ptr = np.concatenate([np.arange(H + 1, dtype=IDX), dptr[1:] + H])
    all_links = np.concatenate([np.full(H, st.metadata[k], dtype=IDX), dlinks])
    size = np.concatenate([m_ops, per_server[s]])
    cap = np.concatenate([m_cap, np.full(w.size, np.inf)])
    group = np.concatenate([np.arange(H), np.full(w.size, -1)])
    after = np.concatenate([np.full(H, -1), w])
    usage = resource_usage(st, all_ptr, all_links, np.ones(size.size, bool), cost)   # reads: CPU-seconds per byte
    load = link_loads(all_ptr, all_links, size, st.capacity.size, usage=usage)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = float(np.nanmax(np.where(st.capacity > 0, load / st.capacity, 0.0)))
    sim = simulate_flows(all_ptr, all_links, st.capacity, size, rate_cap=cap, group=group, after=after,
                         merge=EVENT_MERGE * bound, progress=progress, usage=usage)
    meta_end = float(sim.finish[:H].max()) if H else 0.0
    end = float(sim.finish.max()) if sim.finish.size else 0.0
    serial = files * ops * latency
    if end - meta_end > meta_end:
        limit = "data"
    elif meta_end <= serial * (1 + 1e-6):
        limit = "metadata-latency"
    else:
        limit = "metadata-service"
    run = FanoutRun(clients=int(clients), hosts=int(H), seconds=end, metadata_seconds=meta_end,
                    data_seconds=end - meta_end, operations=float(m_ops.sum()),
                    bytes=float(per_server.sum() * H), limit=limit, events=sim.events)
    F = {"ptr": all_ptr, "links": all_links, "usage": usage}
    return run, (F, sim)


def _fanout_endpoints(st, hosts, holding, w, s):
    """(server endpoint, host endpoint) of each data flow: a host's flows take its usable NICs in turn, as do a
    server's (:func:`sim.storage.flows.turns`)."""
    j = np.arange(w.size)
    hep = st.host_ep[hosts[w]]
    h_ep = hep[j, j % np.maximum((hep >= 0).sum(1), 1)]
    sep = st.server_ep[holding[s]]
    s_ep = sep[j, turns(s) % np.maximum((sep >= 0).sum(1), 1)]
    return s_ep, h_ep


__all__ = ["run_fanout", "FanoutResult", "FanoutRun", "SWEEP"]
