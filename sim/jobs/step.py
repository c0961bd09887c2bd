"""A job's step in closed form: compute per pipeline stage, each dimension's messages, a collective's alpha-beta
time and the step's breakdown (compute, exposed TP/CP/PP/DP, bubble) from the fabric's per-dimension time per byte
and per step (docs/jobs.md; the module :mod:`sim.jobs.job` has the whole model).
"""
from __future__ import annotations

from sim.fabric.nccl_tuning import base_latency
from sim.jobs.layout import DIMS
from sim.jobs.models import BF16, FP32, ModelShape, stage_layers

PEAK_FLOPS = {"bf16": 989e12, "fp8": 1979e12}     # H100 SXM dense tensor-core peak (docs/sources.md [S4])
GEMM_EFFICIENCY = 0.75                            # assumption (docs/jobs.md): large BF16/FP8 GEMMs reach ~3/4 of peak
ATTENTION_EFFICIENCY = {"bf16": 740 / 989, "fp8": 1200 / 1979}   # FlashAttention-3 forward on H100 [S24]
PROTOCOL = "Simple"                               # large messages: NCCL's Simple protocol (sim/fabric/nccl_tuning.py)


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
