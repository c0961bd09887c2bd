"""Training jobs on the fabric: one step of a 4D-parallel (TP, CP, PP, DP with FSDP) transformer, from first
principles (docs/jobs.md).

* **Compute**: the FLOPs of each layer (:mod:`sim.jobs.models`) on the slowest pipeline stage, GEMMs at
  ``gemm_efficiency`` and attention at ``attention_efficiency`` of the GPU's dense peak (:data:`PEAK_FLOPS`).
* **Communication**: every parallel group of the job at once, as flows on the fabric (NCCL rings of
  :func:`sim.fabric.collectives.plan_collective` for TP, CP and DP groups; point-to-point sends between neighbouring
  pipeline stages, both directions, for PP), all four dimensions' transfers in ONE max-min solve
  (:func:`sim.fabric.netsim.solve_phase`), each dimension's time per byte set by its slowest flow. A collective of
  ``S`` bytes over ``n`` ranks then costs ``unit x S + base + steps x alpha`` (alpha-beta: ``alpha`` the slowest
  one-way hop of that dimension's transfers plus NCCL's Simple protocol cost, ``base`` NCCL's Simple base latency;
  :func:`collective_time`).
* **Step** (:func:`step_breakdown`): ``m`` micro-batches; a pipeline slot = compute + TP + CP collectives of one
  micro-batch on one stage (exposed: they sit between the GEMMs that need them); bubble ``(PP - 1) / v`` slots
  (1F1B: ``(PP-1)/(m+PP-1)`` of the pipelined time); PP sends of the fill and drain exposed (``2 (PP v - 1)``
  sends), the steady state's overlap the other micro-batches' compute; FSDP all-gathers (weights, BF16, once per
  step: no reshard after forward) and reduce-scatters (gradients, FP32) overlap the compute except the first
  layer's all-gather and the last layer's reduce-scatter, and whatever exceeds the compute time.

``run_job`` times one job; ``run_jobs`` several jobs sharing the fabric (their traffic in one solve) and each one's
slowdown against running alone (a job none of whose links carries another job's flow is its own component of the
max-min problem: its rates alone are its rates together, exactly, and it is not solved again).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sim.fabric.collectives import Phase, plan_collective
from sim.core.errors import ParamError, UsageError
from sim.core.maxmin import link_loads
from sim.jobs.models import BF16, CUSTOM, FP32, MODELS, ModelShape, memory_per_gpu, stage_layers
from sim.fabric.flows import link_capacity, link_names
from sim.fabric.netsim import solve_phase
from sim.fabric.nccl_tuning import base_latency, sim_hop
from sim.core.progress import silent, span
from sim.core.units import IDX

DIMS = ("tp", "cp", "pp", "dp")
PEAK_FLOPS = {"bf16": 989e12, "fp8": 1979e12}     # H100 SXM dense tensor-core peak (docs/sources.md [S4])
GEMM_EFFICIENCY = 0.75                            # assumption (docs/jobs.md): large BF16/FP8 GEMMs reach ~3/4 of peak
ATTENTION_EFFICIENCY = {"bf16": 740 / 989, "fp8": 1200 / 1979}   # FlashAttention-3 forward on H100 [S24]
HBM_GB = 80.0                                     # H100 SXM 80 GB (docs/sources.md [S4])
PROTOCOL = "Simple"                               # large messages: NCCL's Simple protocol (sim/fabric/nccl_tuning.py)


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
    return ModelShape(v["model"], **shape)


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
    if v["schedule"] == "1f1b" and vs != 1:
        raise ParamError("virtual_stages", "1f1b has one model chunk per stage: use schedule interleaved")
    if v["schedule"] == "interleaved" and (vs < 2 or pp < 2):
        raise ParamError("virtual_stages", "interleaved needs pp of at least 2 and at least 2 virtual stages")
    if model.layers < pp * vs:
        raise ParamError("pp", f"pp x virtual_stages = {pp * vs:,} chunks but the model has only {model.layers} "
                               f"layers")
    per_mb = v["seq"] * v["micro_batch"] * v["dp"]
    if v["batch_tokens"] % per_mb:
        raise ParamError("batch_tokens", f"{v['batch_tokens']:,} tokens do not split into micro-batches of "
                                         f"micro_batch x seq = {v['seq'] * v['micro_batch']:,} tokens on each of "
                                         f"dp = {v['dp']:,} replicas")
    m = v["batch_tokens"] // per_mb
    if v["schedule"] == "interleaved" and m % pp:
        raise ParamError("batch_tokens", f"the interleaved schedule needs micro-batches ({m:,}) divisible by pp "
                                         f"({pp})")
    hbm = (v.get("hbm_gb") or HBM_GB) * 1e9
    mem = {rc: memory_per_gpu(model, tp=tp, cp=cp, pp=pp, dp=v["dp"], v=vs, seq=v["seq"],
                              micro_batch=v["micro_batch"], micro_batches=m, fsdp=v["fsdp"], recompute=rc)
           for rc in (False, True)}
    on = {"none": False, "full": True, "auto": mem[False]["total"] > hbm}[v["recompute"]]
    if mem[on]["total"] > hbm:
        mm = mem[on]
        raise ParamError("hbm_gb", f"the job needs {mm['total'] / 1e9:.1f} GB on a GPU of stage {mm['stage']} "
                                   f"(weights {mm['weights'] / 1e9:.1f}, gradients {mm['gradients'] / 1e9:.1f}, "
                                   f"optimizer {mm['optimizer'] / 1e9:.1f}, activations "
                                   f"{mm['activations'] / 1e9:.1f}), more than {hbm / 1e9:g} GB"
                                   + ("" if on else ": recompute, or more tp / pp / dp"))
    return {"micro_batches": m, "recompute_on": on, "memory": mem[on]}


def validate_job(values: dict) -> dict:
    """``values`` checked as :data:`sim.jobs.params.JOB` does (convenience for callers outside the CLI)."""
    from sim.jobs.params import JOB
    return JOB.validate(values)


# ------------------------------------------------------------------------------------------------ layout
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


def _ring_transfers(gpus_of_groups: np.ndarray, gpu_host: np.ndarray, nic_bandwidth: float):
    """Ring AllGather transfers of every group (rows of GPU ids) concatenated: ``(src, dst, share, channel,
    group, steps)``. Groups that are the same pattern shifted by whole hosts reuse one plan."""
    k, n = gpus_of_groups.shape
    if n < 2:
        e = np.zeros(0, IDX)
        return e, e, np.zeros(0), e, e, 0
    gph = int(np.bincount(gpu_host).max())
    host = gpu_host[gpus_of_groups]
    plans, out = {}, []
    for i in range(k):
        g, h = gpus_of_groups[i], host[i]
        key = ((g - g[0]).tobytes(), (h - h[0]).tobytes(), int(g[0]) % gph)
        ref = plans.get(key)
        if ref is None:
            ph = plan_collective("allgather", g, gpu_host, nic_bandwidth=nic_bandwidth).phases[0]
            plans[key] = ref = (int(g[0]), ph)
        g0, ph = ref
        off = int(g[0]) - g0
        out.append((ph.src + off, ph.dst + off, ph.share, ph.channel, np.full(ph.src.size, i, IDX)))
    cat = [np.concatenate([o[j] for o in out]) for j in range(5)]
    return (*cat, n - 1)


def _pp_transfers(gpus_of_groups: np.ndarray, interleaved: bool):
    """Sends between neighbouring stages of every pipeline, both directions (forward activations, backward
    gradients); with virtual stages the last stage also sends to the first."""
    k, n = gpus_of_groups.shape
    if n < 2:
        e = np.zeros(0, IDX)
        return e, e, np.zeros(0), e, e
    a, b = gpus_of_groups[:, :-1], gpus_of_groups[:, 1:]
    if interleaved:
        a = np.concatenate([a, gpus_of_groups[:, -1:]], axis=1)
        b = np.concatenate([b, gpus_of_groups[:, :1]], axis=1)
    grp = np.broadcast_to(np.arange(k, dtype=IDX)[:, None], a.shape)
    src = np.concatenate([a.ravel(), b.ravel()])
    dst = np.concatenate([b.ravel(), a.ravel()])
    return src, dst, np.ones(src.size), np.zeros(src.size, IDX), np.concatenate([grp.ravel(), grp.ravel()])


@dataclass
class JobTraffic:
    """The transfers of one job's step as one phase's worth: ``tag`` (P,) the dimension index of each transfer
    (in :data:`DIMS`), ``steps`` per dimension (ring steps of a collective; 1 for a PP send)."""

    src: np.ndarray
    dst: np.ndarray
    share: np.ndarray
    channel: np.ndarray
    tag: np.ndarray
    steps: dict
    ranks: dict                                   # dim -> ranks per group


def job_traffic(topo, gpus: np.ndarray, p: dict) -> JobTraffic:
    sizes = {d: p[d] for d in DIMS}
    grid = rank_grid(sizes, parse_order(p["order"]))
    parts, steps, ranks = [], {}, {}
    for t, d in enumerate(DIMS):
        g = groups_of(grid, d)
        ranks[d] = g.shape[1]
        if d == "pp":
            src, dst, share, chan, _ = _pp_transfers(gpus[g], p["schedule"] == "interleaved")
            steps[d] = 1
        else:
            src, dst, share, chan, _, steps[d] = _ring_transfers(gpus[g], np.asarray(topo.gpu_host),
                                                                 topo.nic_bandwidth)
        parts.append((src, dst, share, chan, np.full(src.size, t, IDX)))
    cat = [np.concatenate([q[j] for q in parts]) for j in range(5)]
    return JobTraffic(*cat, steps=steps, ranks=ranks)


# ------------------------------------------------------------------------------------------------ the step model
def compute_times(model: ModelShape, p: dict) -> dict:
    """Seconds of compute of one micro-batch (forward + backward, + forward again with recomputation) on each
    pipeline stage; the slowest stage paces the pipeline."""
    peak = PEAK_FLOPS[p["precision"]]
    ge = p.get("gemm_efficiency") or GEMM_EFFICIENCY
    ae = p.get("attention_efficiency") or ATTENTION_EFFICIENCY[p["precision"]]
    tokens = p["seq"] * p["micro_batch"] / (p["tp"] * p["cp"])           # a GPU's share of a micro-batch
    layers = stage_layers(model.layers, p["pp"], p["virtual_stages"])
    passes = 4.0 if p["recompute_on"] else 3.0
    out = []
    for s, n in enumerate(layers):
        gemm = n * model.gemm_flops_per_token() + (model.head_flops_per_token() if s == len(layers) - 1 else 0)
        attn = n * model.attention_flops_per_token(p["seq"])
        out.append(passes * tokens * (gemm / (peak * ge) + attn / (peak * ae)))
    return {"per_stage": out, "slot": max(out), "layers": max(layers)}


def message_sizes(model: ModelShape, p: dict) -> dict:
    """Bytes of each dimension's operations and how many per step, per GPU: ``{dim: [(name, bytes, count,
    kind)]}`` with ``kind`` the collective (``allgather``, ``reducescatter``, ``allreduce``, ``send``) and the
    count per micro-batch (TP, CP, PP) or per step (DP)."""
    tp, cp, pp, v = p["tp"], p["cp"], p["pp"], p["virtual_stages"]
    tokens = p["seq"] * p["micro_batch"]
    L = max(stage_layers(model.layers, pp, v))
    recompute = 1 if p["recompute_on"] else 0
    act = tokens / cp * model.dim * BF16                                  # a micro-batch's activations on a CP rank
    out = {"tp": [], "cp": [], "pp": [], "dp": []}
    if tp > 1:   # Megatron SP: 2 all-gathers + 2 reduce-scatters per layer in forward, as many in backward
        out["tp"] = [("activations", act, L * (4 + 2 * recompute), "allgather"),
                     ("activations", act, L * (4 + 2 * recompute), "reducescatter")]
    if cp > 1:   # all-gather of K and V in forward (and recompute), reduce-scatter of their gradients in backward
        kv = tokens * 2 * model.kv_dim / tp * BF16
        out["cp"] = [("keys and values", kv, L * (1 + recompute), "allgather"),
                     ("key and value gradients", kv, L, "reducescatter")]
    if pp > 1:   # one activation (forward) and one gradient (backward) per chunk boundary per micro-batch
        out["pp"] = [("activations", act / tp, 2 * v, "send")]
    if p["dp"] > 1:
        params = max(_stage_params(model, pp, v)) / tp
        if p["fsdp"]:
            out["dp"] = [("weights (BF16)", params * BF16, 1, "allgather"),
                         ("gradients (FP32)", params * FP32, 1, "reducescatter")]
        else:
            out["dp"] = [("gradients (FP32)", params * FP32, 1, "allreduce")]
    return out


def _stage_params(model: ModelShape, pp: int, v: int) -> list[float]:
    layers = stage_layers(model.layers, pp, v)
    return [n * model.layer_params + (model.vocab * model.dim if s == 0 else 0)
            + ((model.vocab + 1) * model.dim if s == pp - 1 else 0) for s, n in enumerate(layers)]


def collective_time(kind: str, size: float, ranks: int, unit: float, alpha: float) -> float:
    """Seconds of one operation of ``size`` bytes: ``unit`` seconds per byte of a ring AllGather (all its steps,
    on the fabric as solved), ``alpha`` seconds per step. AllReduce = 2 x; a send = one step."""
    if ranks < 2 or size <= 0:
        return 0.0
    if kind == "send":
        return unit * size + alpha
    mult = 2 if kind == "allreduce" else 1
    return mult * (unit * size + (ranks - 1) * alpha) + base_latency("ring", PROTOCOL)


def step_breakdown(model: ModelShape, p: dict, unit: dict, alpha: dict, ranks: dict) -> dict:
    """The step: ``compute``, exposed ``tp``/``cp``/``pp``/``dp``, ``bubble``, ``step`` (seconds), from the fabric's
    per-dimension ``unit`` (seconds per byte of a ring AllGather's message, or of a PP send) and ``alpha`` (seconds
    per step); see the module docstring."""
    ct = compute_times(model, p)
    sizes = message_sizes(model, p)
    t = {d: sum(collective_time(kind, size, ranks[d], unit[d], alpha[d]) * count
                for _, size, count, kind in sizes[d]) for d in DIMS}
    m, pp, v = p["micro_batches"], p["pp"], p["virtual_stages"]
    slot = ct["slot"] + t["tp"] + t["cp"]                   # one micro-batch on the slowest stage
    bubble = (pp - 1) / v * slot
    send = t["pp"] / (2 * v) if pp > 1 else 0.0             # one send
    exposed_pp = 2 * (pp * v - 1) * send if pp > 1 else 0.0
    compute = m * ct["slot"]
    if p["overlap"] and p["dp"] > 1:
        first_last = t["dp"] / max(ct["layers"], 1)         # the first layer's gather, the last one's reduction
        window = compute if p["fsdp"] else compute * 2 / 3  # DDP: the backward pass only
        exposed_dp = first_last + max(0.0, t["dp"] - first_last - window)
    else:
        exposed_dp = t["dp"]
    out = {"compute": compute, "tp": m * t["tp"], "cp": m * t["cp"], "pp": exposed_pp, "dp": exposed_dp,
           "bubble": bubble}
    out["step"] = sum(out.values())
    out["comm_total"] = {"tp": m * t["tp"], "cp": m * t["cp"], "pp": m * t["pp"], "dp": t["dp"]}
    out["slot"] = slot
    return out


# ------------------------------------------------------------------------------------------------ results
@dataclass
class HotLink:
    link: int
    name: str
    utilization: float
    flows: dict                                   # dim (or job:dim) -> flows on the link

    def to_dict(self) -> dict:
        return {"link": self.link, "name": self.name, "utilization": round(self.utilization, 4),
                "flows": self.flows}


@dataclass
class JobResult:
    """One job's step. Times in seconds; ``breakdown``: compute, exposed tp/cp/pp/dp, bubble, step;
    ``comm``: per dimension the group size, bytes per step per GPU, the fabric's busbw-equivalent and time."""

    params: dict
    model: ModelShape
    gpus: np.ndarray
    breakdown: dict
    comm: dict
    memory: dict
    hottest: list = field(default_factory=list)
    n_flows: int = 0
    seconds: float = 0.0
    routing: str = ""

    @property
    def step_time(self) -> float:
        return self.breakdown["step"]

    @property
    def tokens_per_s(self) -> float:
        return self.params["batch_tokens"] / self.step_time

    @property
    def tflops_per_gpu(self) -> float:
        return self.tokens_per_s * self.model.model_flops_per_token(self.params["seq"]) / self.gpus.size / 1e12

    @property
    def mfu(self) -> float:
        return self.tflops_per_gpu * 1e12 / PEAK_FLOPS[self.params["precision"]]

    def to_dict(self) -> dict:
        p = self.params
        return {
            "model": self.model.to_dict(),
            "layout": {d: p[d] for d in DIMS} | {"gpus": int(self.gpus.size), "order": p["order"],
                                                 "schedule": p["schedule"], "virtual_stages": p["virtual_stages"],
                                                 "micro_batches": p["micro_batches"], "micro_batch": p["micro_batch"],
                                                 "seq": p["seq"], "batch_tokens": p["batch_tokens"],
                                                 "precision": p["precision"], "fsdp": p["fsdp"],
                                                 "recompute": "full" if p["recompute_on"] else "none"},
            "placement": p["placement"], "routing": self.routing, "qps": p["qps"], "seed": p["seed"],
            "step_time": float(self.step_time), "tokens_per_s": float(self.tokens_per_s),
            "tflops_per_gpu": float(self.tflops_per_gpu), "mfu": float(self.mfu),
            "breakdown": {k: float(self.breakdown[k]) for k in ("compute", "tp", "cp", "pp", "dp", "bubble", "step")},
            "comm": self.comm,
            "memory_gb": {k: (round(float(v) / 1e9, 3) if k != "stage" else int(v)) for k, v in self.memory.items()},
            "hottest": [h.to_dict() for h in self.hottest],
            "flows": self.n_flows, "seconds": round(self.seconds, 3),
        }


@dataclass
class JobsResult:
    """Several jobs sharing the fabric: each one's result together and its step time alone."""

    together: list
    alone: list
    seconds: float = 0.0
    names: list = field(default_factory=list)

    @property
    def slowdowns(self) -> list[float]:
        return [t.step_time / a.step_time for t, a in zip(self.together, self.alone)]

    def to_dict(self) -> dict:
        """Each job's result together (:meth:`JobResult.to_dict`) with its name, ``alone_step_time`` (s) and
        ``slowdown`` (step together / step alone, 1 = unaffected); ``worst_slowdown``: the largest slowdown - 1
        (a share: 0.05 = 5 % slower), ``gpus``: GPUs of all jobs."""
        names = self.names or [f"job{i}" for i in range(len(self.together))]
        jobs = [{"name": n, **t.to_dict(), "alone_step_time": float(a.step_time), "slowdown": float(s)}
                for n, t, a, s in zip(names, self.together, self.alone, self.slowdowns)]
        return {"jobs": jobs, "worst_slowdown": max((j["slowdown"] for j in jobs), default=1.0) - 1.0,
                "gpus": int(sum(t.gpus.size for t in self.together)), "seconds": round(self.seconds, 3)}


# ------------------------------------------------------------------------------------------------ running
def _place(topo, p: dict, taken: np.ndarray | None = None, gpus=None) -> np.ndarray:
    from sim.fabric.placement import place
    if gpus is not None:
        return np.asarray(gpus, dtype=IDX)
    if taken is None or not taken.any():
        try:
            return place(topo, p["gpus"], p["placement"], p["seed"])
        except ValueError as e:
            raise UsageError(str(e)) from None
    # place on what the other jobs left: a topology view with their GPUs unusable
    from copy import copy
    view = copy(topo)
    view.gpu_usable = np.asarray(topo.gpu_usable) & ~taken
    try:
        return place(view, p["gpus"], p["placement"], p["seed"])
    except ValueError as e:
        raise UsageError(f"job of {p['gpus']:,} GPUs does not fit beside the others: {e}") from None


def _solve(topo, traffics: list[JobTraffic], p0: dict, progress):
    """One max-min solve of every job's transfers; per job and dimension: seconds per byte (``unit``) and the
    alpha (seconds per step)."""
    from sim.fabric.routing import resolve_routing
    routing = resolve_routing(p0["routing"], topo.kind)
    job = np.concatenate([np.full(t.src.size, j, IDX) for j, t in enumerate(traffics)])
    tag = np.concatenate([t.tag for t in traffics])
    phase = Phase("job", np.concatenate([t.src for t in traffics]), np.concatenate([t.dst for t in traffics]),
                  np.concatenate([t.share for t in traffics]), np.concatenate([t.channel for t in traffics]))
    res = solve_phase(topo, phase, p0["qps"], routing, p0["seed"], progress=progress, hash=p0["hash"],
                      udp_sport=p0["udp_sport"])
    fl = res.flows
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(res.rates > 0, fl.share / res.rates, np.inf)
    K = len(traffics) * len(DIMS)
    worst = _max_by_key(job[fl.transfer] * len(DIMS) + tag[fl.transfer], per, K)
    tkey = job * len(DIMS) + tag
    hop = _max_by_key(tkey, np.where(res.hop_network, res.hop_latency, 0.0), K)
    net = _max_by_key(tkey, res.hop_network.astype(np.float64), K) > 0
    units, alphas = [], []
    for j, t in enumerate(traffics):
        u, a = {}, {}
        for i, d in enumerate(DIMS):
            k = j * len(DIMS) + i
            u[d] = t.steps[d] * worst[k]
            extra, nvl = sim_hop("ring", PROTOCOL, max(t.ranks[d], 2), 2 if net[k] else 1)
            a[d] = hop[k] + extra if net[k] else nvl
        units.append(u)
        alphas.append(a)
    return res, job, tag, units, alphas, routing


def _max_by_key(key: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n,) the largest of ``values`` per ``key`` (0 where none): sorted segments, no ``ufunc.at``."""
    out = np.zeros(n)
    if key.size == 0:
        return out
    order = np.argsort(key, kind="stable")
    k, v = key[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    out[k[starts]] = np.maximum.reduceat(v, starts)
    return np.maximum(out, 0.0)


def _shared_jobs(res, job: np.ndarray, n_jobs: int) -> np.ndarray:
    """(n_jobs,) bool: the job has a flow on a link that another job's flow also crosses. A job sharing no link is
    its own component of the max-min problem, so its rates together are exactly its rates alone."""
    fl = res.flows
    per_link_job = np.repeat(job[fl.transfer], np.diff(fl.ptr))
    pairs = np.unique(fl.links * n_jobs + per_link_job)
    links, jobs = pairs // n_jobs, pairs % n_jobs
    shared = np.bincount(links)[links] > 1
    out = np.zeros(n_jobs, bool)
    out[jobs[shared]] = True
    return out


def _hottest(topo, res, job, tag, k: int, label) -> list[HotLink]:
    if k <= 0:
        return []
    fl = res.flows
    cap = link_capacity(topo)
    load = link_loads(fl.ptr, fl.links, res.rates, cap.size)
    util = np.where(cap > 0, load / np.maximum(cap, 1e-300), 0.0)
    top = np.argsort(-util, kind="stable")[:k]
    top = top[util[top] > 0]
    names = link_names(topo, top)
    out = []
    pos = np.flatnonzero(np.isin(fl.links, top))                 # entries of the CSR on the hottest links
    flow_at = np.searchsorted(fl.ptr, pos, side="right") - 1
    link_at = fl.links[pos]
    for i, name in zip(top.tolist(), names):
        t = fl.transfer[flow_at[link_at == i]]
        labels, counts = np.unique(job[t] * len(DIMS) + tag[t], return_counts=True)
        out.append(HotLink(i, name, float(util[i]), {label(int(x)): int(c) for x, c in zip(labels, counts)}))
    return out


def _result(topo, p, model, gpus, unit, alpha, traffic, **extra) -> JobResult:
    br = step_breakdown(model, p, unit, alpha, traffic.ranks)
    sizes = message_sizes(model, p)
    m = p["micro_batches"]
    comm = {}
    for d in DIMS:
        per_step = sum(size * count * (1 if d == "dp" else m) for _, size, count, _ in sizes[d])
        comm[d] = {"ranks": int(traffic.ranks[d]), "bytes_per_gpu": float(per_step),
                   "time": float(br["comm_total"][d]), "exposed": float(br[d]),
                   "seconds_per_gib": float(unit[d] * (1 << 30)), "alpha_us": float(alpha[d] * 1e6),
                   "ops": [{"what": w, "bytes": s, "count": c, "kind": k} for w, s, c, k in sizes[d]]}
    return JobResult(params=p, model=model, gpus=gpus, breakdown=br, comm=comm, memory=p["memory"], **extra)


def run_job(topo, params: dict, progress=None, gpus=None, traffic: JobTraffic | None = None) -> JobResult:
    """One step of the job ``params`` (validated by :data:`sim.jobs.params.JOB`) on ``topo``; ``gpus``: a given
    placement (rank -> GPU) instead of ``params['placement']``; ``traffic``: the job's transfers at that placement
    when already built (:func:`job_traffic`: they depend on the placement and the hosts, not on the fabric's
    state, so a re-solve after a link failure reuses them)."""
    t0 = time.perf_counter()
    say = progress or silent
    p = resolve_job(params)
    model = model_of(p)
    gpus = _place(topo, p, gpus=gpus)
    _check_usable(topo, gpus, p["gpus"])
    say(0.02, f"placed {gpus.size:,} GPUs ({p['placement']}); building every group's transfers")
    traffic = traffic if traffic is not None else job_traffic(topo, gpus, p)
    say(0.1, f"{traffic.src.size:,} transfers (tp {traffic.ranks['tp']}, cp {traffic.ranks['cp']}, pp "
             f"{traffic.ranks['pp']}, dp {traffic.ranks['dp']}); solving them together")
    res, job, tag, units, alphas, routing = _solve(topo, [traffic], p, span(progress, 0.1, 0.95))
    hot = _hottest(topo, res, job, tag, p["hottest"], lambda x: DIMS[x % len(DIMS)])
    out = _result(topo, p, model, gpus, units[0], alphas[0], traffic, hottest=hot, n_flows=res.flows.n_flows,
                  routing=routing)
    out.seconds = time.perf_counter() - t0
    say(1.0, f"step {out.step_time:.3f} s, MFU {100 * out.mfu:.1f} %")
    return out


def run_jobs(topo, jobs: list[dict], progress=None, placements=None) -> JobsResult:
    """Several jobs at once on ``topo`` (each a validated JOB dict), placed one after the other on what the
    previous ones left (or at ``placements``); their traffic is solved together, then each alone. Routing, QPs,
    hash and seed are the first job's (one fabric)."""
    t0 = time.perf_counter()
    say = progress or silent
    if not jobs:
        raise UsageError("run_jobs needs at least one job")
    taken = np.zeros(topo.n_gpus, bool)
    placed, traffics, models = [], [], []
    jobs = [resolve_job(p) for p in jobs]
    for i, p in enumerate(jobs):
        g = _place(topo, p, taken, None if placements is None else placements[i])
        _check_usable(topo, g, p["gpus"])
        if taken[g].any():
            raise UsageError(f"job {i} shares GPUs with an earlier job")
        taken[g] = True
        placed.append(g)
        traffics.append(job_traffic(topo, g, p))
        models.append(model_of(p))
    say(0.05, f"{len(jobs)} jobs placed on {int(taken.sum()):,} GPUs; solving their traffic together")
    res, job, tag, units, alphas, routing = _solve(topo, traffics, jobs[0], span(progress, 0.05, 0.5))
    hot = _hottest(topo, res, job, tag, jobs[0]["hottest"], lambda x: f"job{x // len(DIMS)}:{DIMS[x % len(DIMS)]}")
    together = [_result(topo, p, mdl, g, u, a, t, n_flows=int(np.count_nonzero(job[res.flows.transfer] == j)),
                        routing=routing)
                for j, (p, mdl, g, u, a, t) in enumerate(zip(jobs, models, placed, units, alphas, traffics))]
    if together:
        together[0].hottest = hot
    alone = []
    shared = _shared_jobs(res, job, len(jobs))
    for j, (p, mdl, g, t) in enumerate(zip(jobs, models, placed, traffics)):
        if not shared[j]:                                       # its own max-min component: alone = together
            alone.append(together[j])
            continue
        r, jb, tg, u, a, _ = _solve(topo, [t], jobs[0], span(progress, 0.5 + 0.5 * j / len(jobs),
                                                              0.5 + 0.5 * (j + 1) / len(jobs)))
        alone.append(_result(topo, p, mdl, g, u[0], a[0], t, n_flows=r.flows.n_flows, routing=routing))
    say(1.0, f"{len(jobs)} jobs solved together and alone")
    return JobsResult(together=together, alone=alone, seconds=time.perf_counter() - t0)


def shared_jobs(params: dict) -> tuple[list[str], list[dict]]:
    """The jobs of a validated :data:`sim.jobs.params.JOBS` (names, JOB parameter dicts), each on the one fabric the
    set declares: its ``routing``, ``qps``, ``hash`` and ``udp_sport`` replace the jobs' own (the first job's seed
    seeds the routing hash, each job's its own placement)."""
    from sim.jobs.params import MAX_SHARED_JOBS
    from sim.jobs.scheduler import parse_jobs
    fabric = {k: params[k] for k in ("routing", "qps", "hash", "udp_sport")}
    queued = parse_jobs(params["jobs"], timed=False, max_jobs=MAX_SHARED_JOBS)
    jobs = [{**q.params, **fabric, "hottest": 0} for q in queued]
    jobs[0]["hottest"] = params["hottest"]
    return [q.name for q in queued], jobs


def run_shared(topo, params: dict, progress=None, placements=None) -> JobsResult:
    """:func:`run_jobs` of a validated :data:`sim.jobs.params.JOBS` (its jobs file, on its fabric), the result named."""
    names, jobs = shared_jobs(params)
    out = run_jobs(topo, jobs, progress=progress, placements=placements)
    out.names = names
    return out


def _check_usable(topo, gpus: np.ndarray, n: int) -> None:
    if gpus.size != n:
        raise UsageError(f"the placement has {gpus.size:,} GPUs, the job {n:,}")
    if np.unique(gpus).size != gpus.size:
        raise UsageError("a placement may not give one GPU to two ranks")
    bad = ~np.asarray(topo.gpu_usable)[gpus]
    if bad.any():
        raise UsageError(f"{int(bad.sum())} GPUs of the placement are not usable (first: GPU {int(gpus[bad][0])})")
