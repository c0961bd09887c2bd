"""A job's 4D-parallel layout: the rules across its parameters (the model shape, the parallel dimensions against
the GPU count, memory against HBM) and its rank grid. The job's parameter declaration (:data:`sim.jobs.params.JOB`)
checks with :func:`check_job`; every part of the job model starts from :func:`resolve_job`.
"""
from __future__ import annotations

import numpy as np

from sim.core.errors import ParamError
from sim.core.units import IDX
from sim.fabric.catalog import load_catalog
from sim.jobs.models import (CUDA_CONTEXT_BYTES, CUSTOM, FRAGMENTATION, MODELS, ModelShape, chunk_layers,
                             chunks_hold_layers, fewest_recomputed, nccl_buffer_bytes, stage_memory)
from sim.jobs.pipeline import build, check_schedule, peak_in_flight

DIMS = ("tp", "cp", "pp", "dp")
MAX_DIM = 1 << 17                                 # any parallel dimension: at most 131,072 ways
HBM_GB = 80.0                                     # H100 SXM 80 GB (docs/sources.md [S4])


def unplaced_hbm_gb() -> float:
    """The memory a job's recomputation is chosen for before it has a cluster (``hbm_gb`` null, as its parameters
    are validated): the largest GPU of the catalog. Its memory is not refused then: the run checks it against its
    cluster's GPU (:func:`on_gpu`: :func:`sim.jobs.job.solve_job`, the twin's job kinds), with that GPU's numbers."""
    return float(max(m["memory_gb"] for m in load_catalog().models["gpu"].values()))


# ------------------------------------------------------------------------------------------------ validation
def model_of(v: dict) -> ModelShape:
    """The model shape: the preset with any given field replacing its own; ``custom`` needs every field."""
    fields = ("layers", "dim", "ffn_dim", "heads", "kv_heads", "vocab")
    if v["model"] == CUSTOM:
        missing = [f for f in fields[:-1] if v.get(f) is None]
        if missing:
            raise ParamError({f: ["required for a custom model"] for f in missing})
        base = {"layers": 0, "dim": 0, "ffn_dim": 0, "heads": 0, "kv_heads": 0, "vocab": MODELS["llama3-8b"].vocab}
    else:
        m = MODELS[v["model"]]
        base = {f: getattr(m, f) for f in fields}
    shape = {f: (v.get(f) if v.get(f) is not None else base[f]) for f in fields}
    if shape["dim"] % shape["heads"]:
        raise ParamError("heads", f"dim ({shape['dim']:,}) must be divisible by heads ({shape['heads']:,})")
    if shape["heads"] % shape["kv_heads"]:
        raise ParamError("kv_heads", f"heads ({shape['heads']:,}) must be divisible by kv_heads "
                                     f"({shape['kv_heads']:,})")
    return ModelShape(v["model"], **shape, layer=v.get("layer") or "llama")


def parse_order(text: str) -> tuple[str, ...]:
    order = tuple(p.strip().lower() for p in str(text).split(",") if p.strip())
    if sorted(order) != sorted(DIMS):
        raise ParamError("order", f"must name each of {', '.join(DIMS)} once, innermost first, got {text!r}")
    return order


def check_job(v: dict) -> None:
    """Rules across a job's parameters (called by ``sim.jobs.params.JOB.validate``): fills ``dp`` or ``gpus`` and
    normalizes ``order``; raises :class:`ParamError` naming the field and why."""
    derive_job(v)


def resolve_job(params: dict) -> dict:
    """A validated job's parameters plus what follows from them: ``micro_batches``, ``recompute_on`` (bool) and
    ``memory`` (bytes on the busiest GPU, by part)."""
    p = dict(params)
    p.update(derive_job(p))
    return p


def on_gpu(topo, params: dict) -> dict:
    """The job's parameters with ``hbm_gb`` its cluster's GPU memory when null (the catalog's ``memory_gb``), so
    the memory check and the recomputation choice are the GPU's own."""
    if params.get("hbm_gb") is None and topo.gpu_model.get("memory_gb"):
        return {**params, "hbm_gb": float(topo.gpu_model["memory_gb"])}
    return params


def derive_job(v: dict) -> dict:
    """Checks ``v`` (filling ``dp``/``gpus``, ``order``) and returns the derived values (:func:`resolve_job`)."""
    model = model_of(v)
    tp, cp, pp = v["tp"], v["cp"], v["pp"]
    inner = tp * cp * pp
    if v["dp"] is None:
        if v["gpus"] is None:
            v["dp"] = 1
        elif v["gpus"] % inner:
            raise ParamError("gpus", f"{v['gpus']:,} GPUs are not divisible by tp x cp x pp = {inner:,}")
        else:
            v["dp"] = v["gpus"] // inner
    if v["gpus"] is None:
        v["gpus"] = inner * v["dp"]
    if inner * v["dp"] != v["gpus"]:
        raise ParamError("gpus", f"tp x cp x pp x dp = {tp} x {cp} x {pp} x {v['dp']} = {inner * v['dp']:,}, not "
                                 f"gpus ({v['gpus']:,})")
    v["order"] = ",".join(parse_order(v["order"]))
    if model.heads % tp:
        raise ParamError("tp", f"the model's {model.heads} heads are not divisible by tp ({tp})")
    if cp > 1 and v["seq"] % (2 * cp):
        raise ParamError("cp", f"seq ({v['seq']:,}) must be divisible by 2 x cp ({2 * cp}): each CP rank takes "
                               f"two chunks for load balance")
    vs = v["virtual_stages"]
    ends = 2 if v.get("balance_stages") and pp * vs > 1 else 0      # chunks that may hold the embedding or head only
    if model.layers + ends < pp * vs:
        raise ParamError("pp", f"pp x virtual_stages = {pp * vs:,} chunks but the model has only {model.layers} "
                               f"layers" + (" (and the embedding and head, with balance_stages)" if ends else ""))
    per_mb = v["seq"] * v["micro_batch"] * v["dp"]
    if v["batch_tokens"] % per_mb:
        raise ParamError("batch_tokens", f"{v['batch_tokens']:,} tokens do not split into micro-batches of "
                                         f"micro_batch x seq = {v['seq'] * v['micro_batch']:,} tokens on each of "
                                         f"dp = {v['dp']:,} replicas")
    m = v["batch_tokens"] // per_mb
    group = check_schedule(v["schedule"], pp, m, vs, v.get("micro_batches_per_round"))
    hbm = (v.get("hbm_gb") or unplaced_hbm_gb()) * 1e9
    fit = fit_memory(model, v, pp, m, hbm)
    if fit is None or (not fit["fits"] and v.get("hbm_gb") is not None):
        _refuse_memory(v, model, fit, hbm, m)
    return {"micro_batches": m, "micro_batches_per_round": group if v["schedule"] == "interleaved" else None,
            "pipeline": fit["schedule"], "recompute_on": bool(fit["recompute"].any()),
            "recompute_layers": [int(x) for x in fit["recompute"]], "recompute_mode": fit["mode"],
            "memory": fit["memory"],
            "memory_stages": fit["stages"]}


def fit_memory(model: ModelShape, v: dict, pp: int, m: int, hbm: float) -> dict | None:
    """Memory of the job ``v`` on ``pp`` stages: the schedule's peak held activations per stage
    (:func:`sim.jobs.pipeline.peak_in_flight` weighted by the chunks' layers), the layers recomputed per stage by
    the ``recompute`` choice (``selective``/``auto``: the fewest that make each stage fit), each stage's parts and
    the busiest GPU's; ``fits``. ``None`` when the schedule cannot run on ``pp`` stages."""
    vs = v["virtual_stages"]
    try:
        sched = build(v["schedule"], pp, m, vs, v.get("micro_batches_per_round") if pp == v["pp"] else None)
    except ParamError:
        return None
    cl = chunk_layers(model.layers, pp, vs, v.get("balance_stages", False))
    if not chunks_hold_layers(cl, v.get("balance_stages", False)):
        return None
    layers = cl.sum(axis=1)
    held = peak_in_flight(sched, cl)
    ranks = {"tp": v["tp"], "cp": v["cp"], "pp": pp, "dp": v["dp"]}
    overhead = v["framework_gb"] * 1e9 if v.get("framework_gb") is not None \
        else CUDA_CONTEXT_BYTES + nccl_buffer_bytes(ranks)
    frag = v["fragmentation"] if v.get("fragmentation") is not None else FRAGMENTATION
    common = dict(tp=v["tp"], cp=v["cp"], seq=v["seq"], micro_batch=v["micro_batch"])
    kind = v["recompute"]
    if kind in ("none", "op"):              # op: no layer recomputed whole, each saves less (stage_memory)
        r = np.zeros(pp, dtype=np.int64)
    elif kind == "full":
        r = layers.copy()
    else:                                   # selective / auto: the fewest layers per stage that fit
        base = stage_memory(model, **common, dp=v["dp"], fsdp=v["fsdp"], layers=layers, held=np.zeros(pp),
                            recompute=np.zeros(pp), overhead=overhead, fragmentation=frag)
        budget = [(hbm - overhead) / (1 + frag) - (b["weights"] + b["gradients"] + b["optimizer"] + b["activations"])
                  for b in base]                                         # what the held activations may take
        r = np.minimum(fewest_recomputed(model, **common, layers=layers, held=held, budget=budget), layers)
    stages = stage_memory(model, **common, dp=v["dp"], fsdp=v["fsdp"], layers=layers, held=held, recompute=r,
                          overhead=overhead, fragmentation=frag, per_op=kind == "op")
    worst = max(stages, key=lambda x: x["total"])
    mode = "op" if kind == "op" else "none" if not r.any() else "full" if (r >= layers).all() else "selective"
    return {"schedule": sched, "recompute": r, "mode": mode, "stages": stages, "memory": worst,
            "fits": all(x["total"] <= hbm for x in stages)}


def _refuse_memory(v: dict, model: ModelShape, fit: dict | None, hbm: float, m: int) -> None:
    """The job does not fit a GPU's memory: refused on the field that fixes it, with the numbers. The layout's
    ``pp`` when more pipeline stages fit it: on the same GPUs first (dp shrinking as pp grows), else with more
    (same tp, cp, dp), saying how many; else ``model`` (too large for any pipeline the model's layers allow at this
    tp and dp). Not ``hbm_gb``: the GPU is what it is. Which of these layouts fits a given cluster is
    :func:`sim.jobs.defaults.with_nearest`'s to say."""
    tp, cp, pp, dp, vs = v["tp"], v["cp"], v["pp"], v["dp"], v["virtual_stages"]
    if fit is None:
        raise ParamError("pp", f"pp = {pp} with virtual_stages = {vs} leaves a chunk without a layer of the "
                               f"model's {model.layers} (balance_stages counts the embedding and the head as one "
                               f"layer each)")
    mm = fit["memory"]
    need = (f"the job needs {mm['total'] / 1e9:.1f} GB on a GPU of stage {mm['stage']} (weights "
            f"{mm['weights'] / 1e9:.1f}, gradients {mm['gradients'] / 1e9:.1f}, optimizer {mm['optimizer'] / 1e9:.1f}, "
            f"activations {mm['activations'] / 1e9:.1f}, allocator {mm['allocator'] / 1e9:.1f}, framework and NCCL "
            f"{mm['framework'] / 1e9:.1f}), more than the GPU's {hbm / 1e9:g} GB")
    other = "recompute, " if v["recompute"] in ("none", "op") else ""
    bigger = pp * 2
    while model.layers >= bigger * vs and dp * pp % bigger == 0:     # the same GPUs first: dp shrinks as pp grows
        same, per = dp * pp // bigger, v["seq"] * v["micro_batch"]
        f = fit_memory(model, {**v, "dp": same}, bigger, v["batch_tokens"] // (per * same), hbm) \
            if v["batch_tokens"] % (per * same) == 0 else None
        if f is not None and f["fits"]:
            raise ParamError("pp", f"{need}: pp = {bigger} with dp = {same} (the same {v['gpus']:,} GPUs) needs "
                                   f"{f['memory']['total'] / 1e9:.1f} GB; or {other}more tp")
        bigger *= 2
    bigger = pp * 2
    while model.layers >= bigger * vs:
        f = fit_memory(model, v, bigger, m, hbm)
        if f is not None and f["fits"]:
            raise ParamError("pp", f"{need}: pp = {bigger} ({tp * cp * bigger * dp:,} GPUs) needs "
                                   f"{f['memory']['total'] / 1e9:.1f} GB; or {other}more tp / dp")
        bigger *= 2
    raise ParamError("model", f"{need}, even at pp = {bigger // 2}: a smaller model, or {other}more tp / dp")


# ------------------------------------------------------------------------------------------------ rank grid
def rank_grid(sizes: dict, order) -> np.ndarray:
    """(dp, pp, cp, tp) array of ranks: rank ``r`` is the mixed-radix number of its coordinates, ``order[0]`` the
    fastest-varying digit."""
    order = list(order)
    n = int(np.prod([sizes[d] for d in DIMS]))
    grid = np.arange(n, dtype=IDX).reshape([sizes[d] for d in reversed(order)])
    # axes are reversed(order); move them into (dp, pp, cp, tp)
    axes = [list(reversed(order)).index(d) for d in ("dp", "pp", "cp", "tp")]
    return grid.transpose(axes)


def groups_of(grid: np.ndarray, dim: str) -> np.ndarray:
    """(groups, size) ranks of every ``dim`` group (size 1 groups included)."""
    ax = ("dp", "pp", "cp", "tp").index(dim)
    g = np.moveaxis(grid, ax, -1)
    return g.reshape(-1, g.shape[-1])
