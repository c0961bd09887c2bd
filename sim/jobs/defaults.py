"""A model's default layout on a cluster, and the layouts nearest a refused one that fit it (docs/jobs.md "Default
layouts").

The parameters' own defaults (:data:`sim.jobs.params.JOB`: TP 8, one pipeline stage, one replica) suit no model on
every cluster: Llama 3 405B does not fit 8 GPUs, and a layout made for 16,384 GPUs does not fit 8,192. So the
layout a job starts with is chosen here, once, for a model on a cluster (:class:`Where`: its usable GPUs, GPUs per
host, GPU and NIC), and the command line (``--default-layout``), the REST API (``GET /api/runs/jobs/default/``) and
the Jobs page take it from here:

* **Published recipe** (:func:`recipe`): the model's run in :data:`sim.jobs.published.RUNS` at the default sequence
  length with the most GPUs the cluster holds, as published; on a cluster smaller than every published run, the
  published TP, CP and PP with as many data-parallel replicas as fit. Taken when it fits the GPU's memory.
* **Search** (:func:`search`) otherwise: every TP within a host (a power of two dividing the heads), every pipeline
  depth (a power of two the layers allow), 1F1B and interleaved (2 chunks per stage), each with the most replicas
  the cluster and the batch allow while every replica's pipeline stays full (at least ``pp`` micro-batches); of the
  layouts that fit the GPU's memory (the job's own validation, :func:`fits`), the one with the shortest step.
  The step is the engine's closed-form step (:func:`sim.jobs.step.step_breakdown`) on the fabric as the cluster
  declares it, uncontended (:func:`uncontended_fabric`): a ranking, not the run's figure, which the fabric solve
  gives.

Sequence length, batch and micro-batch are the declared defaults of :data:`~sim.jobs.params.JOB` (Llama 3's 8,192
tokens and 16M-token batch [S3]). A model whose weights, gradients and optimizer state alone exceed the cluster's
memory (:func:`min_gpus`) has no default: refused naming ``model``.

:func:`nearest` answers a refusal: the layouts that fit the cluster nearest the refused one (on a log scale of
each parallel degree and of the GPU count), the rest of the job as given; :func:`with_nearest` adds them to the
refusal's reason.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

from sim.core import fitted
from sim.core.errors import ParamError
from sim.core.units import GBPS
from sim.fabric.catalog import load_catalog
from sim.fabric.nccl_tuning import sim_hop
from sim.jobs.layout import DIMS, model_of, resolve_job
from sim.jobs.models import ADAM_STATE_BYTES, BF16, MODELS, ModelShape, stage_layers, stage_params
from sim.jobs.params import JOB
from sim.jobs.published import RUNS
from sim.jobs.step import PROTOCOL, step_breakdown

# What a default sets (the page fills these fields); ``dp`` follows from gpus / (tp x cp x pp).
FIELDS = ("gpus", "tp", "cp", "pp", "dp", "seq", "batch_tokens", "micro_batch", "schedule", "virtual_stages")
SCHEDULES = (("1f1b", 1), ("interleaved", 2))      # the searched schedules: (name, chunks per stage)
LAYOUT_FIELDS = ("gpus", "tp", "cp", "pp", "dp", "model", "batch_tokens", "micro_batch", "virtual_stages",
                 "micro_batches_per_round")        # a refusal on one of these gets the nearest layouts
NEAREST = 3                                        # layouts a refusal names
NEAREST_TRIES = 40                                 # candidates validated, nearest first, before giving up
NEAREST_OPS = 1 << 16                              # a candidate's pipeline at most this many operations (m pp v)


@dataclass(frozen=True)
class Where:
    """A cluster as a job's layout sees it: ``name``, ``gpus`` (usable), ``gpus_per_host``, its GPU (``gpu``: the
    catalog slug; ``hbm_gb``, ``nvlink_gbps`` per GPU) and ``nic_gbps`` (backend NIC bandwidth per GPU)."""

    name: str
    gpus: int
    gpus_per_host: int
    gpu: str
    hbm_gb: float
    nvlink_gbps: float
    nic_gbps: float

    @classmethod
    def of_spec(cls, spec, usable: int | None = None) -> "Where":
        """The cluster of ``spec`` (:class:`sim.fabric.spec.ClusterSpec`), ``usable`` of its GPUs (all when
        None)."""
        lay, backend = spec.layout, spec.backend
        g = (spec.catalog or load_catalog()).get("gpu", lay.gpu, "layout.gpu")
        return cls(spec.name, int(lay.gpus if usable is None else usable), int(lay.gpus_per_host), lay.gpu,
                   float(g["memory_gb"]), float(g["nvlink_gbps"]),
                   float(backend.nic_speed_gbps) * backend.nics_per_host / lay.gpus_per_host)

    def gpu_model(self) -> dict:
        """The GPU's catalog entry as a job's step reads it (``p["gpu"]``, :func:`sim.jobs.gpu.gpu_of`)."""
        m = load_catalog().get("gpu", self.gpu, "layout.gpu")
        return {"slug": m.slug, "name": m.name, **m.specs}

    def text(self) -> str:
        return f"{self.name} ({self.gpus:,} usable GPUs of {self.hbm_gb:g} GB)"


@dataclass(frozen=True)
class Default:
    """A model's default on a cluster: ``params`` (the :data:`FIELDS` and ``model``, JOB values), ``why`` (one
    sentence), ``source`` (``published`` or ``searched``), ``layouts`` (how many fit, of those searched),
    ``step_s`` (the ranking's step estimate, s) and ``memory_gb`` (the busiest GPU's)."""

    model: str
    params: dict
    why: str
    source: str
    layouts: int
    step_s: float
    memory_gb: float

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------------------------ fitting
def fits(values: dict, where: Where) -> dict | None:
    """The job ``values`` resolved (:func:`sim.jobs.layout.resolve_job`) when the job's validation takes it with the
    cluster's GPU memory and it needs at most the cluster's usable GPUs; None when refused."""
    try:
        p = resolve_job(JOB.validate({**values, "hbm_gb": values.get("hbm_gb") or where.hbm_gb}))
    except ParamError:
        return None
    return p if p["gpus"] <= where.gpus else None


def held_gb(shape: ModelShape, values: dict) -> float:
    """GB the busiest stage's weights, gradients and optimizer state take on a GPU of the layout ``values`` (tp, pp,
    dp, virtual_stages, balance_stages, fsdp): what its memory is at least (:func:`sim.jobs.models.stage_memory`
    adds activations, the allocator's reserve and the framework's); infinite when the cut leaves a chunk empty. A
    layout over the GPU's memory by this alone is not tried."""
    try:
        layers = stage_layers(shape.layers, values["pp"], values.get("virtual_stages", 1),
                              values.get("balance_stages", True))
    except ValueError:
        return math.inf
    per = max(stage_params(shape, layers)) / values["tp"]
    shard = values["dp"] if values.get("fsdp", True) else 1
    return (2 * BF16 * per + ADAM_STATE_BYTES * per / shard) / 1e9


def min_gpus(shape: ModelShape, where: Where) -> int:
    """The fewest GPUs of the cluster's memory that can hold the model's BF16 weights and gradients and its Adam
    state (``2 + 2 + 16`` bytes a parameter, each shared over the GPUs at best: no layout needs less,
    :func:`sim.jobs.models.stage_memory`)."""
    return math.ceil(shape.params * (2 * BF16 + ADAM_STATE_BYTES) / (where.hbm_gb * 1e9))


def uncontended_fabric(p: dict, where: Where) -> tuple[dict, dict, dict]:
    """Per dimension of the resolved job ``p``: seconds per byte of its ring AllGather (``(n - 1) / n`` of the
    message over the link; a PP send: all of it), its alpha and its ranks, on the cluster's links uncontended, ranks
    in ``order`` on whole hosts: a dimension whose group spans hosts runs on the NIC, shared by every dimension
    that leaves the host (the engine solves all of them at once), else on NVLink; alpha NCCL's per-hop latency of
    the same (:func:`sim.fabric.nccl_tuning.sim_hop`), the links' own latency left out. For ranking layouts only."""
    order = [d.strip() for d in p["order"].split(",")]
    stride, out = 1, {}
    for d in order:
        n = p[d]
        out[d] = (n, stride * n > where.gpus_per_host and n > 1)
        stride *= n
    leaving = max(1, sum(1 for _, net in out.values() if net))
    unit, alpha, ranks = {}, {}, {}
    for d in DIMS:
        n, net = out[d]
        bw = (where.nic_gbps / leaving if net else where.nvlink_gbps) * GBPS
        unit[d] = 0.0 if n < 2 else (1.0 if d == "pp" else (n - 1) / n) / bw
        extra, nvl = sim_hop("ring", PROTOCOL, max(n, 2), 2 if net else 1)
        alpha[d], ranks[d] = (extra if net else nvl), n
    return unit, alpha, ranks


def step_estimate(p: dict, where: Where) -> float:
    """Seconds of the resolved job ``p``'s step by the closed-form step on :func:`uncontended_fabric`."""
    p = {**p, "gpu": where.gpu_model()}
    return float(step_breakdown(model_of(p), p, *uncontended_fabric(p, where))["step"])


def _pow2(limit: int) -> list[int]:
    return [1 << k for k in range(max(0, int(limit)).bit_length())]


def _base(model: str) -> dict:
    """The declared defaults a default keeps: sequence, batch, micro-batch (JOB's)."""
    d = JOB.defaults()
    return {"model": model, "seq": d["seq"], "batch_tokens": JOB.by_name["batch_tokens"].parse(d["batch_tokens"]),
            "micro_batch": d["micro_batch"], "cp": 1}


def most_replicas(base: dict, inner: int, pp: int, where: Where) -> int | None:
    """The most data-parallel replicas of ``inner`` GPUs each (tp x cp x pp) the cluster holds whose share of the
    batch is whole micro-batches, at least ``pp`` of them (a full pipeline); None when not even one."""
    seqs = base["batch_tokens"] // (base["seq"] * base["micro_batch"])
    return max(replicas(base, min(where.gpus // inner, seqs // pp)), default=None)


def replicas(values: dict, most: int) -> list[int]:
    """The data-parallel degrees up to ``most`` whose share of the batch is whole micro-batches (``batch_tokens`` a
    multiple of ``seq x micro_batch x dp``), ascending."""
    per = values["seq"] * values["micro_batch"]
    return [d for d in range(1, min(most, values["batch_tokens"] // per) + 1) if values["batch_tokens"] % (per * d) == 0]


# ------------------------------------------------------------------------------------------------ the default
def recipe(model: str, where: Where) -> Default | None:
    """The model's published run (:data:`sim.jobs.published.RUNS`) at the default sequence length with the most
    GPUs the cluster holds, as published; else, on a smaller cluster, its TP, CP, PP, sequence and batch with the
    most replicas that fit (:func:`most_replicas`). None when the model has no published run, or it does not fit."""
    base = _base(model)
    runs = [r for r in RUNS if r.model == model and r.seq == base["seq"] and r.tp <= where.gpus_per_host]
    if not runs:
        return None
    held = [r for r in runs if r.gpus <= where.gpus]
    run = max(held, key=lambda r: r.gpus) if held else min(runs, key=lambda r: r.gpus)
    shape = {"tp": run.tp, "cp": run.cp, "pp": run.pp, "seq": run.seq, "batch_tokens": run.batch_tokens}
    dp = run.dp if held else most_replicas({**base, **shape}, run.tp * run.cp * run.pp, run.pp, where)
    if dp is None:
        return None
    values = {**base, **shape, "dp": dp, "gpus": run.tp * run.cp * run.pp * dp, "schedule": "1f1b",
              "virtual_stages": 1}
    p = fits(values, where)
    if p is None:
        return None
    if held:
        why = f"Meta's published run (Table 4 [S3]: {run.case}) on {run.gpus:,} of the {where.gpus:,} GPUs"
    else:
        why = (f"Meta's published layout (Table 4 [S3]: {run.case}) scaled to this cluster: DP {dp}, "
               f"{values['gpus']:,} of the {where.gpus:,} GPUs")
    return Default(model, _params(values), why, "published", 1, step_estimate(p, where), p["memory"]["total"] / 1e9)


def search(model: str, where: Where) -> Default:
    """The fastest layout that fits the cluster (the module's rule); ParamError naming ``model`` when none does."""
    base, shape = _base(model), MODELS[model]
    if min_gpus(shape, where) > where.gpus:
        raise ParamError("model", no_fit(shape, where))
    found = []
    for tp in [t for t in _pow2(where.gpus_per_host) if shape.heads % t == 0]:
        for schedule, v in SCHEDULES:
            last = math.inf
            for pp in _pow2(min(shape.layers + 2, where.gpus // tp)):
                dp = most_replicas(base, tp * pp, pp, where)
                if dp is None or (v > 1 and pp < 2):
                    continue
                values = {**base, "tp": tp, "pp": pp, "dp": dp, "gpus": tp * pp * dp, "schedule": schedule,
                          "virtual_stages": v}
                p = fits(values, where) if held_gb(shape, values) <= where.hbm_gb else None
                if p is None:
                    continue
                step = step_estimate(p, where)
                found.append((step, values["gpus"], tp * pp, values, p))
                if step > last:                # deeper pipelines than the fastest: slower still, not tried
                    break
                last = step
    if not found:
        raise ParamError("model", no_fit(shape, where))
    step, _, _, values, p = min(found, key=lambda x: x[:3])
    why = (f"searched: the fastest of {len(found)} layouts that fit {where.hbm_gb:g} GB on {where.gpus:,} GPUs "
           f"(TP within a host, each pipeline full; the step estimated on the fabric uncontended)")
    return Default(model, _params(values), why, "searched", len(found), step, p["memory"]["total"] / 1e9)


def no_fit(shape: ModelShape, where: Where) -> str:
    """Why no layout of the model ``shape`` fits the cluster."""
    need = min_gpus(shape, where)
    if need > where.gpus:
        return (f"{shape.name} does not fit {where.text()}: its weights, gradients and optimizer state alone need "
                f"at least {need:,} such GPUs; choose a smaller model or a larger cluster")
    return (f"no layout of {shape.name} searched fits {where.text()} (TP within a host, each pipeline full): give "
            f"its layout yourself")


def _params(values: dict) -> dict:
    return {"model": values["model"], **{k: values[k] for k in FIELDS}}


def default_layout(model: str, where: Where) -> Default:
    """The default of ``model`` (a :data:`sim.jobs.models.MODELS` name) on ``where``: the published recipe when it
    fits, else the search; ParamError naming ``model`` when the model has none. Kept per model, cluster and the
    fitted factors in effect (the steps it ranks by read them)."""
    if model not in MODELS:
        raise ParamError("model", f"{model!r} has no default layout: one of {', '.join(MODELS)} (a custom model "
                                  f"takes the layout given)")
    return _default(model, where, tuple(sorted(fitted.values().items())))


@lru_cache(maxsize=256)
def _default(model: str, where: Where, factors: tuple) -> Default:
    return recipe(model, where) or search(model, where)


# ------------------------------------------------------------------------------------------------ refusals
def nearest(values: dict, where: Where, k: int = NEAREST) -> list[dict]:
    """Up to ``k`` layouts (gpus, tp, cp, pp, dp, ``memory_gb``) that fit the cluster (:func:`fits`), nearest the
    refused ``values`` (the sum of ``|log2|`` of each parallel degree's and the GPU count's ratio), the rest of the
    job as given: TP a power of two within a host (or as given), CP as given or 1, PP a power of two (or as given),
    DP any count the batch splits into."""
    given = _given(values)
    if given is None:
        return []
    shape = model_of(given)
    tp0, cp0, pp0 = given["tp"], given["cp"], given["pp"]
    asked = given["gpus"] or tp0 * cp0 * pp0 * (given["dp"] or 1)
    tps = {t for t in _pow2(where.gpus_per_host) if shape.heads % t == 0} | {tp0}
    pps = set(_pow2(shape.layers + 2)) | {pp0}
    seqs = given["batch_tokens"] // (given["seq"] * given["micro_batch"])
    dps, vs = replicas(given, where.gpus), given["virtual_stages"]
    cands = []
    for t in tps:
        for c in {cp0, 1}:
            for p in pps:
                inner = t * c * p
                for d in (d for d in dps if inner * d <= where.gpus and seqs // d * p * vs <= NEAREST_OPS):
                    far = sum(abs(math.log2(a / b)) for a, b in ((t, tp0), (c, cp0), (p, pp0), (inner * d, asked)))
                    cands.append((far, inner * d, t, c, p, d))
    out, tries = [], 0
    for far, n, t, c, p, d in sorted(cands):
        lay = {"gpus": n, "tp": t, "cp": c, "pp": p, "dp": d}
        if held_gb(shape, {**given, **lay}) > where.hbm_gb:
            continue
        tries += 1
        if tries > NEAREST_TRIES:
            break
        got = fits({**given, **lay}, where)
        if got is not None:
            out.append({**lay, "memory_gb": round(got["memory"]["total"] / 1e9, 1)})
            if len(out) == k:
                break
    return out


def _given(values: dict) -> dict | None:
    """The job ``values`` parsed, the declared defaults for the rest (its other fields as given); None when a field
    does not parse or the model's shape is refused."""
    given = {**JOB.defaults(), **{key: v for key, v in values.items() if v is not None and key in JOB.by_name}}
    try:
        given = {key: JOB.by_name[key].parse(v) for key, v in given.items()}
        model_of(given)
    except ParamError:
        return None
    return given


def layout_text(lay: dict) -> str:
    """``tp 8 · cp 1 · pp 16 · dp 64 (8,192 GPUs, 73.9 GB)``."""
    return (" · ".join(f"{d} {lay[d]}" for d in DIMS) + f" ({lay['gpus']:,} GPUs"
            + (f", {lay['memory_gb']:g} GB)" if "memory_gb" in lay else ")"))


def with_nearest(error: ParamError, values: dict, where: Where) -> ParamError:
    """``error`` with the layouts :func:`nearest` the refused ``values`` that fit the cluster added to the (last)
    reason of its first layout field (:data:`LAYOUT_FIELDS`), in the same sentence: the command line's one line per
    reason; ``error`` itself when it refuses no layout field."""
    field = next((f for f in error.errors if f in LAYOUT_FIELDS), None)
    if field is None:
        return error
    found = nearest(values, where)
    given = _given(values)
    if found:
        said = f"nearest layouts that fit {where.text()}: " + " or ".join(layout_text(x) for x in found)
    elif given is not None and min_gpus(model_of(given), where) > where.gpus:
        said = no_fit(model_of(given), where)
    else:
        said = f"no layout of this job as given otherwise fits {where.text()}"
    *first, last = error.errors[field]
    return ParamError({**error.errors, field: [*first, f"{last}; {said}"]})
