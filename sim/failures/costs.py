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

STORE_SUSTAINED_BPS = 2e12        # Tectonic's sustained 2 TB/s (docs/sources.md [S1]): store "off" defaults
CHECKPOINT_BYTES_PER_PARAM = BF16 + 3 * FP32   # BF16 weights + FP32 master weights, Adam m and v [S22]
NO_STORE = "off"                  # store: no storage simulation, the checkpoint_* parameters
TOKEN_ID_BYTES = 4                # a pre-tokenized token id read by the data loader: int32 (assumption; a 128K
                                  # vocabulary needs 17 bits)
KEPT_TOLERANCE = 1e-9             # data loading kept within this of its demand: not slowed
METADATA_TIER = "metadata"        # the storage result's tier of the metadata service (sim.storage.topology)


def data_loading_demand_gbps(p: dict, step_s: float, hosts: int) -> float:
    """Training-data reads per job host (Gb/s): the parameter, or the job's own input: ``batch_tokens`` token ids of
    :data:`TOKEN_ID_BYTES` each per healthy step, spread over its hosts."""
    if p["data_loading_gbps"] is not None:
        return float(p["data_loading_gbps"])
    return p["batch_tokens"] * TOKEN_ID_BYTES / step_s / max(1, hosts) / GBPS


def checkpoint_costs(layout, topo, p: dict, job: dict, model, progress, step_s: float = 1.0, hosts: int = 1) -> dict:
    """The checkpoint's costs (docs/reliability.md "A checkpoint's full cost"): training's wait (``blocked_s``), the
    time until durable (``durable_s``), the restore, and what the drain costs training: the training-data reads it
    takes from the job (``data_loading_s``), with its metadata operations reported (``metadata_ops``,
    ``metadata_busy_s``). Simulated once each on the store when there is one
    (:func:`sim.storage.checkpoint.run_checkpoint`, with the job's data loading beside the write), else the bytes at
    :data:`STORE_SUSTAINED_BPS`; given values win. ``cost_s`` = blocked + data loading: the training time one
    checkpoint costs."""
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
             "data_loading_s": 0.0, "metadata_ops": 0.0, "metadata_busy_s": 0.0, "stored_bytes": float(per_gpu * gpus)}
    if store == NO_STORE:
        plain = per_gpu * gpus / STORE_SUSTAINED_BPS
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
        blocked, durable, restore = w.blocked_seconds, w.durable_seconds, r.blocked_seconds
        source = f"{store} model ({p['checkpoint_mode']})"
        extra.update(metadata_of(w), stored_bytes=float(w.stored_bytes))
        if w.data_loading:
            kept = float(w.data_loading["kept"])
            alone = 1.0
            if kept < 1.0 - KEPT_TOLERANCE:       # the store may not meet the demand even without a checkpoint
                a = run_checkpoint(layout, {**values, "bytes_per_gpu": 1, "data_loading_gbps": demand},
                                   backend=topo, progress=span(progress, 0.8, 1.0))
                alone = float(a.data_loading["kept"])
            extra.update(data_loading_kept=kept, data_loading_kept_alone=alone,
                         data_loading_s=drain_loss_s(kept, alone, durable))
    if p["checkpoint_mode"] == "sync":
        blocked = durable
    blocked = p["checkpoint_blocked_s"] if p["checkpoint_blocked_s"] is not None else blocked
    durable = p["checkpoint_durable_s"] if p["checkpoint_durable_s"] is not None else durable
    restore = p["restore_s"] if p["restore_s"] is not None else restore
    if durable < blocked:
        raise ParamError("checkpoint_durable_s", f"{durable:g} s: a checkpoint cannot be durable before training "
                                                 f"stops waiting for it ({blocked:g} s)")
    if p["checkpoint_mode"] == "sync":
        extra["data_loading_s"] = 0.0            # training is stopped for the whole drain: nothing more to lose
    return {"blocked_s": float(blocked), "durable_s": float(durable), "restore_s": float(restore),
            "bytes_per_gpu": int(per_gpu), "source": source, **extra,
            "cost_s": float(blocked) + extra["data_loading_s"]}


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
