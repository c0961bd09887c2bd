"""The checkpoint's costs a failures timeline uses: training's wait per checkpoint, the time until it is durable,
and the restore, simulated on the cluster's store (:func:`sim.storage.checkpoint.run_checkpoint`) or from the
parameters.
"""
from __future__ import annotations

from sim.core.errors import ParamError
from sim.core.progress import span
from sim.jobs.models import BF16, FP32
from sim.storage.checkpoint import run_checkpoint
from sim.storage.params import CHECKPOINT

STORE_SUSTAINED_BPS = 2e12        # Tectonic's sustained 2 TB/s (docs/sources.md [S1]): store "off" defaults
CHECKPOINT_BYTES_PER_PARAM = BF16 + 3 * FP32   # BF16 weights + FP32 master weights, Adam m and v [S22]
NO_STORE = "off"                  # store: no storage simulation, the checkpoint_* parameters


def checkpoint_costs(layout, topo, p: dict, job: dict, model, progress) -> dict:
    """Blocked, durable and restore seconds of the job's checkpoint: simulated once each on the store when there is
    one (:func:`sim.storage.checkpoint.run_checkpoint`), else the bytes at :data:`STORE_SUSTAINED_BPS`; given values win."""
    gpus = p["gpus"]
    per_gpu = p["bytes_per_gpu"] or max(1, int(model.params * CHECKPOINT_BYTES_PER_PARAM / gpus))
    store = p["store"]
    kinds = [s.kind for s in layout.spec.storage]
    if store is None:
        store = "tectonic" if "tectonic" in kinds else NO_STORE
    elif store != NO_STORE and store not in kinds:
        raise ParamError("store", f"{layout.spec.name} has no {store} storage cluster "
                                  f"({', '.join(kinds) or 'none'})")
    if store == NO_STORE:
        plain = per_gpu * gpus / STORE_SUSTAINED_BPS
        blocked, durable, restore, source = plain, plain, plain, "parameters (bytes at 2 TB/s)"
    else:
        # CHECKPOINT's values built here, not re-validated: the bytes per GPU computed from the model may exceed
        # the checkpoint command's maximum (MAX_CHECKPOINT_BYTES).
        values = {**CHECKPOINT.validate({}), "gpus": gpus, "bytes_per_gpu": per_gpu, "store": store,
                  "placement": p["placement"], "seed": p["seed"], "samples": 2, "hottest": 0}
        w = run_checkpoint(layout, {**values, "mode": p["checkpoint_mode"]}, backend=topo,
                           progress=span(progress, 0.0, 0.5))
        r = run_checkpoint(layout, {**values, "restore": True}, backend=topo, progress=span(progress, 0.5, 1.0))
        blocked, durable, restore = w.blocked_seconds, w.durable_seconds, r.blocked_seconds
        source = f"{store} model ({p['checkpoint_mode']})"
    if p["checkpoint_mode"] == "sync":
        blocked = durable
    blocked = p["checkpoint_blocked_s"] if p["checkpoint_blocked_s"] is not None else blocked
    durable = p["checkpoint_durable_s"] if p["checkpoint_durable_s"] is not None else durable
    restore = p["restore_s"] if p["restore_s"] is not None else restore
    if durable < blocked:
        raise ParamError("checkpoint_durable_s", f"{durable:g} s: a checkpoint cannot be durable before training "
                                                 f"stops waiting for it ({blocked:g} s)")
    return {"blocked_s": float(blocked), "durable_s": float(durable), "restore_s": float(restore),
            "bytes_per_gpu": int(per_gpu), "source": source}
