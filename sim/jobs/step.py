"""A job's step: compute per pipeline chunk, each dimension's messages, a collective's alpha-beta time, TP overlap
with its GEMMs, FSDP's exposure, and the step's breakdown (compute, exposed TP/CP/PP/DP, bubble) from the job's
pipeline schedule simulated (:mod:`sim.jobs.pipeline`) with the fabric's per-dimension time per byte and per step
(docs/jobs.md; the module :mod:`sim.jobs.job` has the whole model).
"""
from __future__ import annotations

import numpy as np

from sim.core.errors import ParamError
from sim.fabric.nccl_tuning import base_latency
from sim.jobs.gpu import gpu_of
from sim.jobs.kernels import layer_times, optimizer_seconds, settings
from sim.jobs.layout import DIMS
from sim.jobs.models import BF16, FP32, ModelShape, chunk_layers, stage_params
from sim.jobs.pipeline import peak_in_flight, simulate

# The flat values the model used before the per-kernel step (sim.jobs.kernels): what ``gemm_efficiency`` and
# ``attention_efficiency`` meant by default, kept as calibration's starting points (sim/calibrate/fit.py).
GEMM_EFFICIENCY = 0.75
ATTENTION_EFFICIENCY = {"bf16": 740 / 989, "fp8": 1200 / 1979}   # FlashAttention-3 forward on H100 [S24]
PROTOCOL = "Simple"                               # large messages: NCCL's Simple protocol (sim/fabric/nccl_tuning.py)
GPU_SMS = 132                                     # H100 SXM streaming multiprocessors (docs/sources.md [S62])
# SMs a TP communication kernel holds while it overlaps a GEMM (docs/jobs.md "Overlap", docs/sources.md [S63]):
# Transformer Engine's userbuffers reduce-scatters (its `pipeline` and `bulk` methods) run on `num_sm` 16 SMs by
# default; its all-gathers (`ring_exchange`, `use_ce`) move the data with the copy engines, holding no SM.
TP_OVERLAP_RS_SMS = 16
TP_OVERLAP_AG_SMS = 0
# SMs a data-parallel collective's NCCL kernel holds while it overlaps compute: NCCL runs one CTA (on one SM) per
# channel [S132], and opens 16 channels on an 8-NIC H100 host (docs/engine.md "Hosts and channels"); the compute it
# overlaps runs on the rest (docs/jobs.md "FSDP's own costs").
DP_COMM_SMS = 16
PARTS = ("gemm", "attention", "memory", "launch")  # the compute's parts by kernel kind (docs/jobs.md)


def compute_times(model: ModelShape, p: dict) -> dict:
    """Seconds of compute of one micro-batch on each pipeline chunk, per kernel (:mod:`sim.jobs.kernels`, on the
    job's GPU ``p['gpu']``): ``f``, ``b``, ``w`` ((pp, v): forward, backward (with the recomputed layers' forward
    again), and the weight-gradient pass when the schedule splits it off the backward; else 0), ``gemm`` ((pp, v)
    forward GEMM seconds of the layers), ``parts`` ({gemm, attention, memory, launch}: (pp, v) seconds of all
    passes by kernel kind; they sum to f + b + w), ``layer`` (the :class:`sim.jobs.kernels.LayerTimes`),
    ``per_stage`` (one micro-batch through a stage, all passes), ``slot`` (the slowest stage's) and ``layers``
    (the most layers on a stage)."""
    lt = layer_times(model, p)
    cl = job_chunk_layers(model, p).astype(float)
    pp, v = cl.shape
    share = recompute_share(p, cl)
    fwd = {"gemm": lt.gemm_f, "attention": lt.attn_f, "memory": lt.mem_f, "launch": lt.launch_f}
    last = np.zeros_like(cl)
    last[pp - 1, v - 1] = 1.0                                           # the output head and loss
    h = lt.head
    parts = {"gemm": cl * (lt.gemm_f + lt.gemm_d + lt.gemm_w) + last * (h["gemm_f"] + h["gemm_d"] + h["gemm_w"]),
             "attention": cl * (lt.attn_f + lt.attn_b),
             "memory": cl * (lt.mem_f + lt.mem_b) + last * (h["mem_f"] + h["mem_b"]),
             "launch": cl * (lt.launch_f + lt.launch_d + lt.launch_w)
             + last * (h["launch_f"] + h["launch_d"] + h["launch_w"])}
    op = lt.op or {}                                                    # recompute op: what backward runs again
    for k in PARTS:
        parts[k] = parts[k] + share * cl * fwd[k] + cl * op.get(k, 0.0)  # the recomputed layers' forward again
    layer_f = sum(fwd.values())
    f = cl * layer_f + last * (h["gemm_f"] + h["mem_f"] + h["launch_f"])
    recompute = share * cl * layer_f + cl * sum(op.values())
    b_input = (cl * (lt.gemm_d + lt.attn_b + lt.mem_b + lt.launch_d) + last * (h["gemm_d"] + h["mem_b"] + h["launch_d"])
               + recompute)
    w_pass = cl * (lt.gemm_w + lt.launch_w) + last * (h["gemm_w"] + h["launch_w"])
    if split_w(p):
        b, w = b_input, w_pass
    else:
        b, w = b_input + w_pass, np.zeros_like(f)
    per_stage = (f + b + w).sum(axis=1)
    return {"f": f, "b": b, "w": w, "gemm": cl * lt.gemm_f, "parts": parts, "layer": lt,
            "per_stage": per_stage.tolist(), "slot": float(per_stage.max()), "layers": int(cl.sum(axis=1).max())}


def job_chunk_layers(model: ModelShape, p: dict) -> np.ndarray:
    """(pp, v) layers of each chunk of each stage for the job ``p`` (:func:`sim.jobs.models.chunk_layers`)."""
    return chunk_layers(model.layers, p["pp"], p["virtual_stages"], p.get("balance_stages", False))


def recompute_share(p: dict, cl: np.ndarray) -> np.ndarray:
    """(pp, 1) share of each stage's layers recomputed (``p['recompute_layers']``; all with ``recompute_on`` and no
    per-stage list)."""
    n = cl.sum(axis=1, keepdims=True)
    r = p.get("recompute_layers")
    if r is None:
        return np.full_like(n, 1.0 if p["recompute_on"] else 0.0)
    return np.minimum(np.asarray(r, float).reshape(-1, 1), n) / np.maximum(n, 1)


def split_w(p: dict) -> bool:
    return p["schedule"] == "zb-h1"


def reshard(p: dict) -> bool:
    """FSDP that frees each layer's gathered weights after its forward (ZeRO-3, FSDP2's default): it gathers them
    again for the backward, and reduce-scatters every micro-batch's gradients [S130, S131]."""
    return bool(p["fsdp"] and p.get("reshard_after_forward"))


def dp_comm_held(p: dict) -> float:
    """The share of the GPU's SMs a DP collective's kernel holds while it overlaps compute (``dp_comm_sms`` of
    the GPU's SMs)."""
    n = p.get("dp_comm_sms")
    n = DP_COMM_SMS if n is None else int(n)
    sms = gpu_of(p).sms
    if not 0 <= n < sms:
        raise ParamError("dp_comm_sms", f"{n} SMs held: the {gpu_of(p).name} has {sms}, compute would have none")
    return n / sms


def overlapped(comm, work, held: float):
    """Seconds a collective of ``comm`` seconds adds to ``work`` seconds of compute it overlaps, when its kernel
    holds the share ``held`` of the SMs: the compute runs on the rest (``1 / (1 - held)`` times longer) while the
    collective runs, so the pair takes ``max(comm, work + held x comm)`` and adds ``max(comm - work, held x
    comm)``: never less than the SMs' share of the collective, even when it is shorter than the compute."""
    comm = np.asarray(comm, float)
    return np.maximum(comm - np.asarray(work, float), held * comm)


def message_sizes(model: ModelShape, p: dict) -> dict:
    """Bytes of each dimension's operations and how many per step, per GPU: ``{dim: [(name, bytes, count,
    kind)]}`` with ``kind`` the collective (``allgather``, ``reducescatter``, ``allreduce``, ``send``) and the
    count per micro-batch (TP, CP, PP) or per step (DP)."""
    tp, cp, pp, v = p["tp"], p["cp"], p["pp"], p["virtual_stages"]
    tokens = p["seq"] * p["micro_batch"]
    layers = job_chunk_layers(model, p).sum(axis=1)
    s = int(np.argmax(layers))
    L = int(layers[s])
    R = int(round(float(recompute_share(p, layers.reshape(-1, 1))[s, 0]) * L))    # its layers recomputed
    act = tokens / cp * model.dim * BF16                                  # a micro-batch's activations on a CP rank
    out = {"tp": [], "cp": [], "pp": [], "dp": []}
    if tp > 1:   # Megatron SP: 2 all-gathers + 2 reduce-scatters per layer in forward, as many in backward
        op = 2 * L if p.get("recompute") == "op" else 0                  # per-op SAC gathers again in backward
        out["tp"] = [("activations", act, 4 * L + 2 * R + op, "allgather"),
                     ("activations", act, 4 * L + 2 * R, "reducescatter")]
    if cp > 1:   # all-gather of K and V in forward (and recompute), reduce-scatter of their gradients in backward
        kv = tokens * 2 * model.kv_dim / tp * BF16
        out["cp"] = [("keys and values", kv, L + R, "allgather"),
                     ("key and value gradients", kv, L, "reducescatter")]
    if pp > 1:   # one activation (forward) and one gradient (backward) per chunk boundary per micro-batch
        out["pp"] = [("activations", act / tp, 2 * v, "send")]
    if p["dp"] > 1:
        params = max(stage_params(model, layers)) / tp
        if p["fsdp"]:
            m = p["micro_batches"] if reshard(p) else 1
            out["dp"] = [("weights (BF16)", params * BF16, 2 * m if reshard(p) else 1, "allgather"),
                         ("gradients (FP32)", params * FP32, m, "reducescatter")]
        else:
            out["dp"] = [("gradients (FP32)", params * FP32, 1, "allreduce")]
    return out


def collective_time(kind: str, size: float, ranks: int, unit: float, alpha: float) -> float:
    """Seconds of one operation of ``size`` bytes: ``unit`` seconds per byte of a ring AllGather (all its steps,
    on the fabric as solved), ``alpha`` seconds per step. AllReduce = 2 x; a send = one step."""
    if ranks < 2 or size <= 0:
        return 0.0
    if kind == "send":
        return unit * size + alpha
    mult = 2 if kind == "allreduce" else 1
    return mult * (unit * size + (ranks - 1) * alpha) + base_latency("ring", PROTOCOL)


def pipelined(comm: float, gemm: float, pieces: int, slowdown: float = 1.0) -> float:
    """Seconds a collective adds to the GEMM it feeds (or is fed by) when both are cut into ``pieces`` and
    pipelined (Megatron's ``--tp-comm-overlap``, PyTorch's async TP): one piece of each runs alone (the first
    communication piece before the GEMM can start, or the last after it ends; the GEMM's lone piece on every SM),
    the other ``pieces - 1`` run side by side, each step as long as the longer of the two, the GEMM's pieces
    ``slowdown`` times longer (``GPU_SMS / (GPU_SMS - SMs the communication kernel holds)``): ``comm / pieces +
    gemm / pieces + (pieces - 1) / pieces x max(comm, slowdown x gemm) - gemm``. With ``slowdown`` 1 this is
    ``max(comm, gemm) + min(comm, gemm) / pieces - gemm``; a slowdown can make it exceed ``comm`` (overlap worse
    than the collective exposed), as it does on a GPU whose GEMMs lose more time to the SMs than is hidden."""
    return comm / pieces + gemm / pieces + (pieces - 1) / pieces * max(comm, slowdown * gemm) - gemm


def sm_slowdown(comm_sms: int, sms: int = GPU_SMS) -> float:
    """How many times longer a GEMM runs on the ``sms`` SMs less those a communication kernel holding ``comm_sms``
    leaves it."""
    if not 0 <= comm_sms < sms:
        raise ValueError(f"comm_sms must be in 0..{sms - 1}, got {comm_sms}")
    return sms / (sms - comm_sms)


def tp_per_layer(model: ModelShape, p: dict, c_ag: float, c_rs: float, lt=None) -> tuple[float, float]:
    """Exposed TP seconds per layer and micro-batch: (forward, backward). Sequence parallelism [S23]: an
    all-gather feeds the QKV and the first MLP GEMMs, a reduce-scatter follows the attention output and the second
    MLP GEMMs, in forward; in backward the mirror: an all-gather of the incoming gradient feeds the attention
    output's and the second MLP's GEMMs, a reduce-scatter follows the QKV's and the first MLP's (backward GEMMs:
    input and weight gradients; each GEMM's time from :mod:`sim.jobs.kernels`, ``lt``). Without ``tp_comm_overlap``
    all of them are exposed; with it each is
    pipelined with its GEMM (:func:`pipelined`), the GEMM slowed by the SMs the collective's kernel holds:
    ``tp_overlap_ag_sms`` for the all-gathers, ``tp_overlap_rs_sms`` for the reduce-scatters (Transformer Engine's
    userbuffers: ring exchange by copy engines, reduce-scatter kernels on ``num_sm`` SMs [S63]). With ``recompute``
    op (torchtitan's per-op SAC [S173]) the backward also gathers the two norms' outputs again (an all-gather's
    output is not on its save list): exposed, or pipelined with the recomputed GEMM each feeds (``wk``, ``w3``:
    PyTorch's async TP fuses an all-gather with the matmul that consumes it [S174]). ``tp_overlap_backend`` torch
    (PyTorch's async TP, torch.compile's micro-pipeline pass [S175]): it fuses a reduce-scatter only with the one
    matmul that produces its input; in torchtitan's Llama layer the backward's reduce-scatters take the sum of the
    input gradients of the separate ``wq``, ``wk``, ``wv`` (and ``w1``, ``w3``) linears [S173], no matmul's
    output, so those two stay exposed; the forward's four and the backward's all-gathers are overlapped."""
    if p["tp"] < 2:
        return 0.0, 0.0
    op = p.get("recompute") == "op"
    if not p.get("tp_comm_overlap"):
        return 2 * c_ag + 2 * c_rs, 2 * c_ag + 2 * c_rs + (2 * c_ag if op else 0.0)
    lt = lt or layer_times(model, p)
    g = lt.gemms                                                       # {name: (forward, backward)} seconds
    (qkv, qkv_b), (out, out_b), (fc1, fc1_b), (fc2, fc2_b) = (g[k] for k in ("qkv", "out", "fc1", "fc2"))
    gpu = gpu_of(p)
    held = {k: p.get(k, d) for k, d in (("tp_overlap_ag_sms", TP_OVERLAP_AG_SMS),
                                        ("tp_overlap_rs_sms", TP_OVERLAP_RS_SMS))}
    for k, n in held.items():
        if n >= gpu.sms:
            raise ParamError(k, f"{n} SMs held: the {gpu.name} has {gpu.sms}, the GEMM would have none")
    s_ag = sm_slowdown(held["tp_overlap_ag_sms"], gpu.sms)
    s_rs = sm_slowdown(held["tp_overlap_rs_sms"], gpu.sms)
    n = p["tp"]
    fwd = (pipelined(c_ag, qkv, n, s_ag) + pipelined(c_rs, out, n, s_rs) + pipelined(c_ag, fc1, n, s_ag)
           + pipelined(c_rs, fc2, n, s_rs))
    if p.get("tp_overlap_backend") == "torch":
        rs_qkv, rs_fc1 = c_rs, c_rs                                     # a sum of matmuls: not fused [S175]
    else:
        rs_qkv, rs_fc1 = pipelined(c_rs, qkv_b, n, s_rs), pipelined(c_rs, fc1_b, n, s_rs)
    bwd = rs_qkv + pipelined(c_ag, out_b, n, s_ag) + rs_fc1 + pipelined(c_ag, fc2_b, n, s_ag)
    if op:
        bwd += sum(pipelined(c_ag, x, n, s_ag) for x in lt.op_gemms) + (2 - len(lt.op_gemms)) * c_ag
    return fwd, bwd


def step_breakdown(model: ModelShape, p: dict, unit: dict, alpha: dict, ranks: dict) -> dict:
    """The step: ``compute``, exposed ``tp``/``cp``/``pp``/``dp``, ``bubble``, ``step`` (seconds), from the fabric's
    per-dimension ``unit`` (seconds per byte of a ring AllGather's message, or of a PP send) and ``alpha`` (seconds
    per step). The pipeline schedule ``p['pipeline']`` (:mod:`sim.jobs.pipeline`) runs with each chunk's compute
    plus its exposed TP and CP: ``bubble`` = its makespan without sends - the busiest stage's work; exposed ``pp`` =
    what the sends (asynchronous) add to the makespan; ``compute``, ``tp``, ``cp`` are the busiest stage's;
    ``optimizer``: the AdamW step after the gradients are reduced (the stage with the most parameters on a GPU,
    :func:`sim.jobs.kernels.optimizer_seconds`). ``compute_parts``: the busiest stage's compute by kernel kind
    (:data:`PARTS`: gemm, attention, memory, launch; they sum to ``compute``). Also ``stages`` (each stage's
    ``busy``, ``idle``, ``compute``, ``tp``, ``cp`` seconds, ``layers``, ``in_flight``) and ``schedule``."""
    ct = compute_times(model, p)
    sizes = message_sizes(model, p)
    t = {d: sum(collective_time(kind, size, ranks[d], unit[d], alpha[d]) * count
                for _, size, count, kind in sizes[d]) for d in DIMS}
    m, pp = p["micro_batches"], p["pp"]
    sched = p["pipeline"]
    cl = job_chunk_layers(model, p).astype(float)
    share = recompute_share(p, cl)
    act = p["seq"] * p["micro_batch"] / p["cp"] * model.dim * BF16
    tp_f, tp_b = tp_per_layer(model, p, collective_time("allgather", act, ranks["tp"], unit["tp"], alpha["tp"]),
                              collective_time("reducescatter", act, ranks["tp"], unit["tp"], alpha["tp"]), ct["layer"])
    kv = p["seq"] * p["micro_batch"] * 2 * model.kv_dim / p["tp"] * BF16
    cp_f = collective_time("allgather", kv, ranks["cp"], unit["cp"], alpha["cp"])        # exposed, as Llama 3 [S3]
    cp_b = collective_time("reducescatter", kv, ranks["cp"], unit["cp"], alpha["cp"])
    tp_chunk = cl * (tp_f + tp_b + share * tp_f)                        # (pp, v) per micro-batch
    cp_chunk = cl * (cp_f + cp_b + share * cp_f)
    f = ct["f"] + cl * (tp_f + cp_f)
    b = ct["b"] + cl * (tp_b + cp_b + share * (tp_f + cp_f))
    send = collective_time("send", act / p["tp"], ranks["pp"], unit["pp"], alpha["pp"]) if pp > 1 else 0.0
    quiet = simulate(sched, f, b, ct["w"])
    run = simulate(sched, f, b, ct["w"], send=send) if send > 0 else quiet
    compute = m * (ct["f"] + ct["b"] + ct["w"]).sum(axis=1)
    tp_s, cp_s = m * tp_chunk.sum(axis=1), m * cp_chunk.sum(axis=1)
    busiest = int(np.argmax(quiet.busy))
    exposed_dp, dp_total, dp_front, dp_end = _exposed_dp(model, p, ct, cl, run, unit["dp"], alpha["dp"], ranks["dp"])
    out = {"compute": float(compute[busiest]), "tp": float(tp_s[busiest]), "cp": float(cp_s[busiest]),
           "pp": run.makespan - quiet.makespan, "dp": exposed_dp, "bubble": quiet.bubble,
           "optimizer": optimizer_step(model, p, cl)}
    out["step"] = sum(out.values())
    out["compute_parts"] = {k: float(m * ct["parts"][k][busiest].sum()) for k in PARTS}
    out["comm_total"] = {"tp": m * t["tp"], "cp": m * t["cp"], "pp": m * t["pp"], "dp": dp_total}
    out["slot"] = float(((f + b + ct["w"]).sum(axis=1)).max())
    in_flight = peak_in_flight(sched)
    out["stages"] = [{"stage": s, "layers": int(cl[s].sum()), "busy": float(run.busy[s]),
                      "idle": float(run.makespan - run.busy[s]), "compute": float(compute[s]), "tp": float(tp_s[s]),
                      "cp": float(cp_s[s]), "in_flight": int(in_flight[s])} for s in range(pp)]
    out["busiest_stage"] = busiest
    out["timeline"] = timeline(sched, run)
    # where the exposed DP falls (sim.power draws it): dp_front before the pipeline starts (its start times are
    # from the pipeline's start), and each stage's DP collectives ending at dp_end[s] after it (same clock)
    out["dp_front"], out["dp_end"] = dp_front, dp_end
    return out


def optimizer_step(model: ModelShape, p: dict, cl: np.ndarray) -> float:
    """Seconds of the optimizer step: AdamW over each GPU's shard of its stage's parameters (``1/tp``, and ``1/dp``
    with FSDP), the stage holding the most (:func:`sim.jobs.kernels.optimizer_seconds`)."""
    params = max(stage_params(model, cl.sum(axis=1).astype(int))) / p["tp"] / (p["dp"] if p["fsdp"] else 1)
    gpu = gpu_of(p)
    return optimizer_seconds(params, gpu, settings(p, gpu))


TIMELINE_COLUMNS = ("stage", "kind", "micro_batch", "chunk", "start", "end")   # kind: 0 F, 1 B, 2 W (pipeline.KINDS)


def timeline(sched, run) -> np.ndarray:
    """(ops, 6) float64: every operation of the simulated schedule as :data:`TIMELINE_COLUMNS` (start and end in
    seconds from the step's start), stage by stage in each stage's order: the slot table a page draws."""
    rows = [np.column_stack([np.full(len(ops), s), ops, run.start[s], run.end[s]])
            for s, ops in enumerate(sched.ops) if len(ops)]
    return np.concatenate(rows).astype(np.float64) if rows else np.zeros((0, len(TIMELINE_COLUMNS)))


def _exposed_dp(model, p, ct, cl, run, unit, alpha, ranks) -> tuple[float, float, float, np.ndarray]:
    """Exposed data-parallel seconds, the busiest stage's DP seconds in all, the exposed part before the pipeline
    starts, and each stage's end of its DP collectives on the pipeline's clock ((pp,): its last operation's end
    plus what of its gradients' collectives runs past it; 0 where there is none). FSDP without reshard after forward
    [S3]: each stage gathers its layers' BF16 weights once, one layer ahead of its first micro-batch's forward (the
    first layer's gather exposed beyond the idle time before the stage's first forward, each later one by what it
    exceeds the previous layer's forward), and reduce-scatters each layer's FP32 gradients after its last
    backward, overlapped with the next layer's (the last layer's, and any excess, exposed beyond the stage's end
    of work, up to the pipeline's end). DDP: an all-reduce of the gradients, likewise after the last backward.
    ``overlap`` off: all of it exposed."""
    pp = cl.shape[0]
    last = np.array([en[-1] if len(en) else 0.0 for en in run.end])
    if p["dp"] < 2:
        return 0.0, 0.0, 0.0, last
    params = np.asarray(stage_params(model, cl.sum(axis=1).astype(int))) / p["tp"]
    m = p["micro_batches"]
    again = reshard(p)
    if p["fsdp"]:
        gather = np.array([collective_time("allgather", x * BF16, ranks, unit, alpha) for x in params])
        reduce = np.array([collective_time("reducescatter", x * FP32, ranks, unit, alpha) for x in params])
    else:
        gather = np.zeros(params.size)
        reduce = np.array([collective_time("allreduce", x * FP32, ranks, unit, alpha) for x in params])
    total = (2 * m * gather + m * reduce) if again else gather + reduce
    if not p["overlap"]:
        return float(total.max()), float(total.max()), 0.0, np.full(pp, run.makespan + float(total.max()))
    held = dp_comm_held(p)
    n = np.maximum(cl.sum(axis=1), 1.0)          # a stage of the embedding or the head alone counts as one layer
    g_l, r_l = gather / n, reduce / n
    # one layer's forward and backward from the first chunk; a first chunk holding only the embedding (balanced end
    # stages of one-layer chunks, Llama 3 [S3]) takes the stage's mean layer, and its gathers and reduce-scatters
    # count as one layer's (the embedding's weights, of the order of a layer's)
    L = cl[:, 0]
    safe = np.maximum(L, 1.0)
    f_l = np.where(L > 0, ct["f"][:, 0] / safe, ct["f"].sum(axis=1) / n)
    b_l = np.where(L > 0, (ct["b"][:, 0] + ct["w"][:, 0]) / safe, (ct["b"] + ct["w"]).sum(axis=1) / n)
    L = safe
    first = np.array([st[0] for st in run.start])
    front = np.maximum(0.0, g_l - first) + (L - 1) * overlapped(g_l, f_l, held)
    if again:
        # every later micro-batch's forward gathers again, its first layer's gather exposed (nothing before it to
        # overlap [S131]); every backward gathers each layer but the last (kept from its forward) while the
        # previous layer's gradients are reduce-scattered: both on the layer's backward
        mid = ((m - 1) * (g_l + (L - 1) * overlapped(g_l, f_l, held))
               + m * (L - 1) * overlapped(g_l + r_l, b_l, held) + (m - 1) * overlapped(r_l, f_l, held))
        end = last + mid + r_l
    else:
        end = last + r_l + (L - 1) * overlapped(r_l, b_l, held)
    tail = end - run.makespan
    return float(front.max() + max(0.0, tail.max())), float(total.max()), float(front.max()), end
