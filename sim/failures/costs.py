"""The checkpoint's costs a failures timeline uses: training's wait per checkpoint, the time until it is durable,
and the restore, simulated on the cluster's store (:func:`sim.storage.checkpoint.run_checkpoint`) or from the
parameters.
"""
from __future__ import annotations

from sim.core.errors import ParamError
from sim.core.progress import span
from sim.core.units import GBPS
from sim.jobs.models import BF16, FP32
from sim.storage.checkpoint import run_checkpoint
from sim.storage.params import CHECKPOINT
from sim.storage.published import CLUSTER_SHARE, SUSTAINED_BPS
from sim.storage.stores import STORES

CHECKPOINT_BYTES_PER_PARAM = BF16 + 3 * FP32   # BF16 weights + FP32 master weights, Adam m and v [S22]
NO_STORE = "off"                  # store: no storage simulation, the checkpoint_* parameters
TOKEN_ID_BYTES = 4                # a pre-tokenized token id read by the data loader: int32 (assumption; a 128K
                                  # vocabulary needs 17 bits)
KEPT_TOLERANCE = 1e-9             # data loading kept within this of its demand: not slowed
METADATA_TIER = "metadata"        # the storage result's tier of the metadata service (sim.storage.topology)
# A checkpoint's background write slows training (host CPU: DCP's writer threads contend with the trainer for the
# GIL and the CPU that launches its kernels). Meta and Crusoe measured it on 1,856 H200 GPUs, Llama 3 70B,
# TorchTitan [S66]: training at 700 tokens/s per GPU dips to 315 while DCP's default thread-based async_save
# writes in the background, to 372 with its process-based writer and cached save plans.
DCP_TRAIN_TPS = 700.0             # tokens/s per GPU without a checkpoint [S66]
DCP_THREAD_DIP_TPS = 315.0        # the dip under the thread-based writer (async_save's default) [S66]
DCP_PROCESS_DIP_TPS = 372.0       # the dip under the process-based writer with cached plans [S66]
BACKGROUND_SPEED = DCP_THREAD_DIP_TPS / DCP_TRAIN_TPS   # 0.45: held over the whole write (the dip's depth: an
                                                        # upper bound on the loss)
DCP_METADATA_FILES = 1            # the coordinator's ``.metadata`` file, written after every rank's files [S16]


def data_loading_demand_gbps(p: dict, step_s: float, hosts: int) -> float:
    """Training-data reads per job host (Gb/s): the parameter, or the job's own input: ``batch_tokens`` token ids of
    :data:`TOKEN_ID_BYTES` each per healthy step, spread over its hosts."""
    if p["data_loading_gbps"] is not None:
        return float(p["data_loading_gbps"])
    return p["batch_tokens"] * TOKEN_ID_BYTES / step_s / max(1, hosts) / GBPS


def checkpoint_costs(layout, topo, p: dict, job: dict, model, progress, step_s: float = 1.0, hosts: int = 1) -> dict:
    """The checkpoint's costs (docs/reliability.md "A checkpoint's full cost"): training's wait (``blocked_s``), the
    time until durable (``durable_s``: the storage model's files, blocks and bytes, then DCP's ``.metadata`` file,
    ``dcp_finish_s``), the restore, what the background write costs training (``data_loading_s``: the training-data
    reads it takes from the job; ``host_cpu_s``: the host CPU its writer takes from the trainer,
    ``checkpoint_background_speed``), and the shortest spacing of checkpoints the store sustains (``store_gap_s``:
    the stored bytes at the store's sustained rate left to the job), with its metadata operations reported
    (``metadata_ops``, ``metadata_busy_s``). Simulated once each on the store when there is one
    (:func:`sim.storage.checkpoint.run_checkpoint`, with the job's data loading beside the write), else the bytes at
    :data:`sim.storage.published.SUSTAINED_BPS`; given values win. ``cost_s`` = blocked + data loading + host CPU: the training time
    one checkpoint costs."""
    gpus = p["gpus"]
    per_gpu = p["bytes_per_gpu"] or max(1, int(model.params * CHECKPOINT_BYTES_PER_PARAM / gpus))
    store = p["store"]
    kinds = [s.kind for s in layout.spec.storage]
    if store is None:
        store = "tectonic" if "tectonic" in kinds else NO_STORE
    elif store != NO_STORE and store not in kinds:
        raise ParamError("store", f"{layout.spec.name} has no {store} storage cluster "
                                  f"({', '.join(kinds) or 'none'})")
    demand = data_loading_demand_gbps(p, step_s, hosts)
    extra = {"data_loading_gbps": demand, "data_loading_kept": None, "data_loading_kept_alone": None,
             "data_loading_s": 0.0, "host_cpu_s": 0.0, "background_speed": float(p["checkpoint_background_speed"]),
             "dcp_finish_s": 0.0, "store_gap_s": 0.0, "metadata_ops": 0.0, "metadata_busy_s": 0.0,
             "stored_bytes": float(per_gpu * gpus)}
    kept, alone = 1.0, 1.0
    if store == NO_STORE:
        plain = per_gpu * gpus / SUSTAINED_BPS
        blocked, durable, restore, source = plain, plain, plain, "parameters (bytes at 2 TB/s)"
    else:
        # CHECKPOINT's values built here, not re-validated: the bytes per GPU computed from the model may exceed
        # the checkpoint command's maximum (MAX_CHECKPOINT_BYTES).
        values = {**CHECKPOINT.validate({}), "gpus": gpus, "bytes_per_gpu": per_gpu, "store": store,
                  "placement": p["placement"], "seed": p["seed"], "samples": 2, "hottest": 0}
        w = run_checkpoint(layout, {**values, "mode": p["checkpoint_mode"], "data_loading_gbps": demand},
                           backend=topo, progress=span(progress, 0.0, 0.4))
        # the restore runs while the job is down: no training-data reads beside it
        r = run_checkpoint(layout, {**values, "restore": True, "data_loading_gbps": 0.0}, backend=topo,
                           progress=span(progress, 0.4, 0.8))
        finish = dcp_finish_s(store)
        blocked, durable, restore = w.blocked_seconds, w.durable_seconds + finish, r.blocked_seconds
        source = f"{store} model ({p['checkpoint_mode']})"
        extra.update(metadata_of(w), stored_bytes=float(w.stored_bytes), dcp_finish_s=finish,
                     store_gap_s=store_gap_s(store, float(w.stored_bytes), demand * hosts * GBPS))
        if w.data_loading:
            kept = float(w.data_loading["kept"])
            if kept < 1.0 - KEPT_TOLERANCE:       # the store may not meet the demand even without a checkpoint
                a = run_checkpoint(layout, {**values, "bytes_per_gpu": 1, "data_loading_gbps": demand},
                                   backend=topo, progress=span(progress, 0.8, 1.0))
                alone = float(a.data_loading["kept"])
            extra.update(data_loading_kept=kept, data_loading_kept_alone=alone)
    if p["checkpoint_mode"] == "sync":
        blocked = durable
    blocked = p["checkpoint_blocked_s"] if p["checkpoint_blocked_s"] is not None else blocked
    durable = p["checkpoint_durable_s"] if p["checkpoint_durable_s"] is not None else durable
    restore = p["restore_s"] if p["restore_s"] is not None else restore
    if durable < blocked:
        raise ParamError("checkpoint_durable_s", f"{durable:g} s: a checkpoint cannot be durable before training "
                                                 f"stops waiting for it ({blocked:g} s)")
    # the background write: from training's restart (blocked) until durable; nothing in sync mode (training is
    # stopped for the whole write)
    window = 0.0 if p["checkpoint_mode"] == "sync" else durable - blocked
    dl, cpu = background_loss_s(kept, alone, p["checkpoint_background_speed"], window)
    extra.update(data_loading_s=dl, host_cpu_s=cpu)
    return {"blocked_s": float(blocked), "durable_s": float(durable), "restore_s": float(restore),
            "bytes_per_gpu": int(per_gpu), "source": source, **extra,
            "cost_s": float(blocked) + dl + cpu}


def background_loss_s(kept: float, alone: float, speed: float, window_s: float) -> tuple[float, float]:
    """``(data_loading_s, host_cpu_s)``: training seconds a checkpoint's background write of ``window_s`` takes.
    Training runs at the slower of two paces meanwhile: its input's (the loader keeps ``kept`` of its demand
    against ``alone`` without the checkpoint: :func:`drain_loss_s`) and its host's (``speed`` of its throughput
    left by the writer's CPU work [S66]). The data loading's share is charged first, the host CPU's for what it
    takes beyond it: together ``(1 - min(kept / alone, speed)) x window``."""
    dl = drain_loss_s(kept, alone, window_s)
    pace = max(0.0, alone - kept) / alone if alone > 0 else 0.0
    cpu = max(0.0, (1.0 - speed) - pace) * window_s
    return dl, cpu


def dcp_finish_s(store: str) -> float:
    """Seconds DCP's coordinator takes to create its ``.metadata`` file once every rank's files are written (its
    ``finish`` step [S16]): the store's operations per file, one after the other at its latency (the file is a few
    bytes per tensor: its data time is left out)."""
    m = STORES[store]
    return DCP_METADATA_FILES * m.write_ops_per_file * m.metadata_latency_us * 1e-6


def store_gap_s(store: str, stored_bytes: float, loading_bps: float) -> float:
    """The shortest spacing of checkpoints the store sustains: the stored bytes at the store's published sustained
    rate for this cluster's share of it (:data:`sim.storage.published.SUSTAINED_BPS` x ``CLUSTER_SHARE`` [S1, S3])
    less the job's own steady reads (``loading_bps``). A checkpoint that starts sooner would queue behind the
    previous one's bytes. 0 for a store with no published sustained rate (Hammerspace)."""
    if store != "tectonic":
        return 0.0
    left = SUSTAINED_BPS * CLUSTER_SHARE - loading_bps
    if left <= 0:
        raise ParamError("data_loading_gbps", f"{loading_bps * 8 / 1e9:,.1f} Gb/s of data loading over the job "
                                              f"leaves nothing of the store's sustained "
                                              f"{SUSTAINED_BPS * CLUSTER_SHARE / 1e12:g} TB/s for checkpoints")
    return stored_bytes / left


def drain_loss_s(kept: float, alone: float, durable_s: float) -> float:
    """Training seconds a checkpoint's drain takes from the job's data loading: the loader keeps ``kept`` of its
    demand while the checkpoint drains (``durable_s``) against ``alone`` without it; training, paced by its input
    with no slack (an upper bound: a prefetch buffer hides part), loses ``(alone - kept) / alone`` of the drain."""
    if alone <= 0:
        return 0.0
    return max(0.0, alone - kept) / alone * durable_s


def metadata_of(result) -> dict:
    """The checkpoint's metadata operations and the seconds of the store's metadata service they take, from
    :class:`sim.storage.checkpoint.CheckpointResult`'s per-tier figures (operations carried; utilization over the
    run = operations / (capacity x durable))."""
    for t in result.tiers:
        if t["tier"] == METADATA_TIER:
            return {"metadata_ops": float(t["carried"]),
                    "metadata_busy_s": float(t["max_utilization"]) * float(result.durable_seconds)}
    return {"metadata_ops": 0.0, "metadata_busy_s": 0.0}
