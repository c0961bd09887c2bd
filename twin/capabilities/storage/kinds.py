"""The storage run kinds: ``checkpoint`` (a job saves or restores its state, :func:`sim.storage.checkpoint.run_checkpoint`)
and ``storage`` (N clients open and read the same small files, :func:`sim.storage.fanout.run_fanout`), registered
like the collective kinds (:mod:`twin.runs.kinds`), on the cluster as the inventory holds it: failed or drained
storage servers, SSDs, storage racks (their servers count as down: :mod:`twin.inventory.adapter`), NICs, links and
switches of the frontend fabric are left out or lower capacity, as :mod:`sim.storage.topology` says.

Arrays (orders are the live frames' sections, :mod:`twin.capabilities.storage.live`):

- ``server_rate`` (T, V) float16: each storage server's data rate in GB/s (10^9 bytes/s; write for a checkpoint,
  read for a restore or a fan-out) in each of the T samples of the result's time series; V = every StorageServer
  row of the cluster, by id (0 for servers the run did not use). ``server_mean`` (V,) float32: the mean over the
  data phase.
- ``host_progress`` (T, H) uint8: each host's share of its checkpoint bytes moved at each sample's end, quantized
  as the ``host_progress`` frame section (PROGRESS_SCALE; HOST_NOT_IN_JOB outside the job); H = Host rows by id.
- ``host_blocked``, ``host_done`` (H,) float32: seconds until the host's GPUs train again and until its data is
  durable (loaded, for a restore); -1 outside the job (JSON has no NaN).
- ``frontend_utilization`` (L,) float16: per frontend cable (Link rows of the frontend fabric by id) the busier
  direction's utilization over the data phase.

Live frames: ``checkpoint_phase`` planning while the job is placed and routed (the engine's progress fractions as
the run's percentage), then two frames of the simulated checkpoint: at its busiest sample (phase uploading, or
reading for a restore; per-server rates, per-host progress at that time) and at its end (durable or loaded; the
per-server means over the data phase, every host done), both with the frontend link utilization. The engine
computes the whole checkpoint in one event-driven solve, so these are states of the simulated timeline, not of
wall time; the Storage page replays the stored series.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.core.errors import ParamError
from sim.fabric.layout import FABRIC_FRONTEND
from sim.storage import published as store_facts
from sim.storage.params import CHECKPOINT, STORAGE_FANOUT
from twin.capabilities.storage import live
from twin.inventory import gpu_grid
from twin.runs import limits
from twin.runs.registry import Headline, Kind, register

GB = 1e9

CHECKPOINT_ARRAYS = {"server_rate": "float16", "server_mean": "float32", "host_progress": "uint8",
                     "host_blocked": "float32", "host_done": "float32", "frontend_utilization": "float16"}
CHECKPOINT_HEADLINE = (Headline("blocked_seconds", "training blocked", "s"),
                       Headline("durable_seconds", "time to durable (restore: loaded)", "s"),
                       Headline("peak_rate", "peak aggregate rate at the servers", "TBps"),
                       Headline("checkpoint_rate", "checkpoint bytes / time to durable", "TBps"))
FANOUT_ARRAYS = {"server_mean": "float32"}
FANOUT_HEADLINE = (Headline("seconds", "every client has read every file", "s"),
                   Headline("opens_per_s", "files opened per second, all clients", "int"),
                   Headline("limit", "what bounds it", "text"))


# ------------------------------------------------------------------------------------------------- helpers
def frontend_cable_utilization(layout, directed: np.ndarray) -> np.ndarray:
    """Per frontend cable (Link rows of the frontend fabric, by id) the larger utilization of its two directions;
    ``directed`` is per directed link of the frontend topology (:func:`sim.storage.topology.frontend_topology`,
    whose ``link_cable`` maps them to layout links)."""
    from sim.storage.topology import frontend_topology
    topo = frontend_topology(layout)
    front = np.flatnonzero(np.asarray(layout.link_fabric) == FABRIC_FRONTEND)
    out = np.zeros(front.size, dtype=np.float32)
    np.maximum.at(out, np.searchsorted(front, np.asarray(topo.link_cable)), np.asarray(directed, np.float32))
    return out


def _per_server(layout, servers, values) -> np.ndarray:
    """``values`` (..., S) of the layout servers ``servers`` spread onto every server of the cluster (..., V)."""
    values = np.asarray(values, dtype=np.float32)
    out = np.zeros(values.shape[:-1] + (len(layout.server_rack),), dtype=np.float32)
    out[..., np.asarray(servers, dtype=np.int64)] = values
    return out


def _per_host(layout, hosts, values, fill=-1.0) -> np.ndarray:
    values = np.asarray(values, dtype=np.float32)
    out = np.full(values.shape[:-1] + (len(layout.host_rack),), fill, dtype=np.float32)
    out[..., np.asarray(hosts, dtype=np.int64)] = values
    return out


# --------------------------------------------------------------------------------------------------- kinds
def checkpoint(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """A checkpoint (or restore) of a job as ``python -m sim checkpoint`` runs it (the same engine call, the same
    progress fractions); see the module docstring for the arrays and frames."""
    from sim.fabric.topology import topology_from_layout
    from sim.storage.entry import run_checkpoint
    restore = params["restore"]
    progress(0.0, "placing the job", checkpoint_phase="planning", force=True)
    r = run_checkpoint(topology_from_layout(layout), params,
                       progress=lambda f, message="": progress(0.99 * f, message)).result
    H = len(layout.host_rack)
    in_job = np.zeros(H, bool)
    in_job[r.hosts] = True
    server_rate = _per_server(layout, r.servers, r.server_rate) / GB
    share = _per_host(layout, r.hosts, r.host_progress, fill=0.0)
    host_progress = np.stack([live.quantize_progress(s, in_job) for s in share]) if len(share) else \
        np.zeros((0, H), np.uint8)
    data = next((p for p in r.phases if p["name"] == ("reading" if restore else "uploading")), None)
    window = (data["end"] - data["start"]) if data and data["start"] is not None else 0.0
    server_mean = _per_server(layout, r.servers, r.server_bytes / window / GB if window > 0 else
                              np.zeros(len(r.servers)))
    fe_util = frontend_cable_utilization(layout, r.link_utilization)
    rate_key = "server_read" if restore else "server_write"
    if len(r.rate):                    # the busiest sample of the simulated timeline
        i = int(np.argmax(r.rate))
        progress(0.995, **{rate_key: server_rate[i]}, host_progress=host_progress[i], frontend_util=fe_util,
                 checkpoint_phase="reading" if restore else "uploading", force=True)
    progress(1.0, **{rate_key: server_mean}, host_progress=live.quantize_progress(np.ones(H), in_job),
             frontend_util=fe_util, checkpoint_phase="loaded" if restore else "durable",
             force=True)
    doc = r.to_dict(series=False, links=False)
    doc.pop("per_host")
    doc.pop("per_server")
    summary = {
        **doc, "params": {k: params[k] for k in ("gpus", "bytes_per_gpu", "store", "mode", "restore")},
        "direction": "read" if restore else "write",
        "checkpoint_rate": r.bytes / r.durable_seconds if r.durable_seconds > 0 else None,
        "servers_used": len(r.servers), "hosts_used": len(r.hosts),
        "busiest_server": r.server_names[int(np.argmax(r.server_bytes))] if len(r.servers) else None,
        "series": {"times": r.times.tolist(), "rate": r.rate.tolist(), "goodput": r.goodput.tolist(),
                   "staging_rate": r.staging_rate.tolist(), "loading_rate": r.loading_rate.tolist()},
        "rated": rated_bandwidth(),
    }
    arrays = {"server_rate": server_rate, "server_mean": server_mean, "host_progress": host_progress,
              "host_blocked": _per_host(layout, r.hosts, np.nan_to_num(r.host_blocked, nan=0.0)),
              "host_done": _per_host(layout, r.hosts, np.nan_to_num(r.host_done, nan=0.0)),
              "frontend_utilization": fe_util}
    return summary, arrays


def storage_fanout(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """N clients open and read the same small files (``python -m sim storage-fanout``): the time for the
    requested client count (and, with ``sweep``, for 1,024, 2,048, ... up to it), what bounds it, and the
    per-server read rate over the run as the ``server_read`` frame section."""
    from sim.storage.fanout import run_fanout
    progress(0.0, "placing the clients")
    r = run_fanout(layout, params, progress=lambda f, message="": progress(0.99 * f, message))
    seconds = r.run.seconds
    server_mean = _per_server(layout, r.servers, r.server_bytes / seconds / GB if seconds > 0 else
                              np.zeros(len(r.servers)))
    progress(1.0, server_read=server_mean, force=True)
    doc = r.to_dict()
    doc["per_server"]["name"] = _server_names(layout, r.servers)
    doc["opens_per_s"] = r.run.clients * r.files / seconds if seconds > 0 else None
    return doc, {"server_mean": server_mean}


def _server_names(layout, servers) -> list[str]:
    from sim.storage.topology import server_names
    return server_names(layout, servers)


def rated_bandwidth() -> dict:
    """The storage's published rated bandwidth, drawn on the Storage page's timeline: Meta's storage for the two
    24k clusters (7,500 SSD servers, 240 PB) sustains 2 TB/s and peaks at 7 TB/s (docs/sources.md [S1, S3]).
    Bytes/s, from :mod:`sim.storage.published` (declared there once)."""
    return {"sustained": RATED_SUSTAINED_BPS, "peak": RATED_PEAK_BPS, "source": "[S1, S3] Meta 2024: 2 TB/s "
            "sustained, 7 TB/s peak, for the storage of both 24k clusters (7,500 servers)"}


RATED_SUSTAINED_BPS = store_facts.SUSTAINED_BPS
RATED_PEAK_BPS = store_facts.PEAK_BPS


# ------------------------------------------------------------------------------------- checks on the cluster
def _store_servers(cluster, kind: str, field: str = "store") -> int:
    """Active servers of the cluster's storage cluster of ``kind`` (in an active rack); ParamError naming
    ``field`` when the cluster has no such storage cluster or none of its servers is active."""
    from twin.inventory.models import StorageCluster, StorageServer
    stores = StorageCluster.objects.filter(cluster=cluster, kind=kind)
    if not stores.exists():
        have = sorted(set(StorageCluster.objects.filter(cluster=cluster).values_list("kind", flat=True)))
        raise ParamError(field, f"{cluster.name} has no {kind} storage (it has: {', '.join(have) or 'none'})")
    n = StorageServer.objects.filter(storage_cluster__in=stores, status="active", rack__status="active").count()
    if n == 0:
        raise ParamError(field, f"{kind} of {cluster.name} has no active server")
    return n


def _check_servers(values: dict, active: int) -> None:
    if values["servers"] is not None and values["servers"] > active:
        raise ParamError("servers", f"{values['servers']:,} servers asked, {values['store']} has {active:,} active")


def _check_checkpoint(values: dict, cluster) -> None:
    """Usable GPUs (as the collectives count them), the store present with active servers, ``servers`` within
    them."""
    asked = values["gpus"]
    if asked > (usable := gpu_grid.usable_gpus(cluster)):
        raise ParamError("gpus", f"{asked:,} GPUs asked, {cluster.name} has {usable:,} usable")
    _check_servers(values, _store_servers(cluster, values["store"]))


def _check_fanout(values: dict, cluster) -> None:
    """The store present with active servers; the clients' hosts within the cluster's hosts."""
    from twin.inventory.models import Host
    _check_servers(values, _store_servers(cluster, values["store"]))
    need = -(-values["clients"] // values["clients_per_host"])
    hosts = Host.objects.filter(cluster=cluster).count()
    if need > hosts:
        raise ParamError("clients", f"{values['clients']:,} clients at {values['clients_per_host']} per host need "
                                    f"{need:,} hosts, {cluster.name} has {hosts:,}")


def _checkpoint_cost(values: dict, cluster) -> int:
    """Flows of one checkpoint (sim.storage.checkpoint, sim.storage.stores.spread_segments): a staging flow per writing GPU, two
    metadata flows per host, and the data segments: about hosts x spread + rounds x servers, rounds =
    ceil(spread x hosts / servers); as many again for training-data loading."""
    hosts = -(-values["gpus"] // gpu_grid.gpus_per_host(cluster))
    servers = values["servers"] or _store_servers(cluster, values["store"])
    rounds = -(-values["spread"] * hosts // servers)
    data = hosts * values["spread"] + rounds * servers
    return {"flows": (values["writers"] or values["gpus"]) + 2 * hosts
            + data * (2 if values["data_loading_gbps"] else 1)}


def _fanout_cost(values: dict, cluster) -> int:
    """Flows of every client count simulated: per host a metadata flow and a data flow per server holding
    files."""
    from sim.storage.fanout import SWEEP
    counts = sorted({c for c in SWEEP if c < values["clients"]} | {values["clients"]}) if values["sweep"] \
        else [values["clients"]]
    holding = min(values["files"], values["servers"] or _store_servers(cluster, values["store"]))
    return {"flows": sum(-(-c // values["clients_per_host"]) * (1 + holding) for c in counts)}


def _seconds(cost):
    """A flows kind's time estimate (:func:`twin.runs.limits.flows_estimate`)."""
    return lambda values, cluster: limits.flows_estimate(values, cluster, cost)


register(Kind("checkpoint", "Checkpoint or restore (a job's state to storage over the frontend fabric)", CHECKPOINT,
              checkpoint, headline=CHECKPOINT_HEADLINE, best="checkpoint_rate", arrays=CHECKPOINT_ARRAYS,
              view="checkpoint", form=False, brief=("gpus", "bytes_per_gpu", "store", "mode", "restore"),
              check=_check_checkpoint, cost=_checkpoint_cost, estimate=_seconds(_checkpoint_cost),
              throughputs=(limits.FLOWS_PER_SECOND,),
              main=("gpus", "bytes_per_gpu", "store", "mode", "restore", "data_loading_gbps")))
register(Kind("storage", "Storage fan-out (N clients open and read the same small files)", STORAGE_FANOUT,
              storage_fanout, headline=FANOUT_HEADLINE, best="opens_per_s", arrays=FANOUT_ARRAYS,
              view="storage", form=False, brief=("store", "clients", "files", "file_size"), check=_check_fanout,
              cost=_fanout_cost, estimate=_seconds(_fanout_cost), throughputs=(limits.FLOWS_PER_SECOND,)))
