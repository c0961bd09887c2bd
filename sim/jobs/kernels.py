"""The training step per kernel: one layer's GEMMs by shape, its attention, its memory-bound kernels and their
launches, the output head and loss, and the optimizer step, on one GPU for one micro-batch (docs/jobs.md
"Compute, per kernel").

* **GEMMs** (:func:`gemm_seconds`): the larger of a compute time and an HBM time (the roofline at the GEMM's
  arithmetic intensity). Compute: FLOPs over the dense peak x the ceiling a large GEMM reaches (:data:`GEMM_CEILING`,
  the best-shape Maximum Achievable Matmul FLOPS measured per GPU [S100]) x ``gemm_efficiency_scale`` (fitted) x the
  tile and wave quantization of the output (:func:`tile_quantization`: the output cut into CTA tiles run in waves of
  one tile per SM, the last wave part empty [S103]) x the clock share under a power cap. HBM: the inputs read once and
  the BF16 output written once, at ``hbm_efficiency`` of the peak bandwidth. A given ``gemm_efficiency`` replaces
  all of it by the flat FLOPs / (peak x that share), as the model did before.
* **Attention** (:func:`attention_efficiency`): FlashAttention-3 on Hopper, FlashAttention-2 on Ampere (the
  ``attention_kernel`` parameter may name another: FlashAttention v1, or FlashAttention in Triton), at the kernel's
  measured ceiling x ``k / (k + S0)`` for the ``k`` keys a query visits on average (``seq / 2``, causal: the
  per-block prologue and epilogue, [S102]) x ``seq / (seq + 128)`` (the causal mask's diagonal blocks computed
  whole). Backward: 2.5 x the forward's FLOPs (it recomputes the scores: five matmuls against two [S101]) at the
  forward's efficiency, except where the source measures the kernel's backward apart (Triton's: relatively slower,
  [S170]). Attention runs in BF16
  even in an FP8 job (Transformer Engine's FP8 recipe leaves dot-product attention in BF16 by default [S106]).
* **Memory-bound kernels** (:func:`layer_memory`): RMSNorm, residual adds, rotary embedding, SwiGLU, and on the last
  stage the final norm and the cross-entropy over the vocabulary: the bytes they read and write per token, at
  ``hbm_efficiency`` of HBM's peak. ``compiled`` (default): the element-wise kernels fused as torch.compile,
  Megatron's and Transformer Engine's fused kernels run them; eager: PyTorch's separate ops, each a kernel with
  its own FP32 intermediates. Backward: twice the forward's bytes (reads the saved input and the output gradient,
  writes the input gradient). Llama 3 has no dropout.
* **The FP8 recipe's own kernels** (:func:`fp8_cast_bytes`, FP8 jobs): every GEMM operand quantized from BF16 to
  FP8, row-wise and transposed, by a memory-bound kernel per GEMM and pass (``fp8_recipe``: delayed scaling reads
  it once, current scaling twice) [S135, S136].
* **The loss** (:func:`head_memory`): unfused by default, on the logits upcast to FP32 as Megatron's and
  torchtitan's losses run it [S137, S138]; ``fused_loss``: one kernel on the BF16 logits.
* **Launches**: ``launch_overhead_us`` (fitted) per kernel the GPU runs: the gap between back-to-back kernels.
* **Optimizer** (:func:`optimizer_seconds`): AdamW over the GPU's shard of its stage's parameters, memory-bound:
  :data:`OPTIMIZER_BYTES_PER_PARAM` bytes per parameter.

All of it on the GPU of the job's cluster (:mod:`sim.jobs.gpu`); a power cap ``power_cap_w`` slows the
compute-bound kernels (GEMMs, attention) by the clock relation of :mod:`sim.jobs.clocks`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core import fitted
from sim.core.errors import ParamError
from sim.jobs.clocks import clock_share, static_w
from sim.jobs.gpu import GPU, gpu_of
from sim.jobs.models import BF16, FP32, ModelShape

# Maximum Achievable Matmul FLOPS (best shape, mean of 100 runs) over the dense peak [S100]: H100 SXM BF16 794.5 of
# 989, FP8 1,402.6 of 1,979; A100 SXM BF16 271.2 of 312. By architecture and precision; H200 measured the same as H100.
GEMM_CEILING = {("hopper", "bf16"): 794.5 / 989, ("hopper", "fp8"): 1402.6 / 1979, ("ampere", "bf16"): 271.2 / 312}
# CTA tiles of Hopper/Ampere tensor-core GEMMs the library chooses between (CUTLASS's 128x256 and 128x128 [S103]);
# the model takes the one that quantizes the output best.
TILES = ((128, 256), (256, 128), (128, 128))

ATTENTION_KERNELS = ("auto", "fa1", "fa2", "fa3", "triton")
# A kernel's efficiency ceiling by (kernel, architecture), share of the dense BF16 peak:
# FlashAttention-3, head dim 128, forward on H100: 630 TFLOPs/s at long sequences (S102's 430 at 512 tokens ... 621
# at 16k follow ceiling x s / (s + 240)); FlashAttention-2 on H100: 35 % [S24]; on A100 up to 73 % [S101].
# FlashAttention (v1), what frameworks ran before FlashAttention-2 (July 2023): 25-40 % of A100's peak [S101], its
# upper end as the long-sequence ceiling; on H100 no figure is published: assumed to keep the share of A100's that
# FlashAttention-2 keeps (0.35 / 0.73), neither using Hopper's asynchronous tensor-core instructions [S24].
# FlashAttention in Triton (``triton``: flash-attention's experimental ``flash_attn_triton.py``, which llm-foundry's
# ``attn_impl: triton`` copies, and Triton's fused-attention kernel it grew from): FlashAttention-2 is "around
# 1.3-1.5x faster than FlashAttention in Triton in the forward pass and around 2x faster in the backward pass" (A100,
# [S170], the same benchmark as S101): its forward ceiling is FA-2's / 1.4 (the range's middle), its backward's FA-2's
# / 2 (:data:`ATTENTION_BACKWARD_SHARE`); the kernel's own docstring agrees (its forward faster than FlashAttention
# v1's, its backward slower [S171]). On H100 no figure is published: the kernel was written and tested on A100
# [S171] and llm-foundry compiles it with a pre-MLIR Triton [S172], so it is assumed, as FA-1 is, to keep its A100
# ratios to FA-2 (which uses no Hopper-only instructions either [S24]).
TRITON_FORWARD_SLOWDOWN = 1.4     # FA-2 over Triton, forward: 1.3-1.5x [S170]
TRITON_BACKWARD_SLOWDOWN = 2.0    # FA-2 over Triton, backward: about 2x [S170]
FA2_CEILING = {"hopper": 0.35, "ampere": 0.73}     # FlashAttention-2's share by architecture [S24, S101]
ATTENTION_CEILING = {("fa3", "hopper"): 630.0 / 989,
                     **{("fa2", a): c for a, c in FA2_CEILING.items()},
                     ("fa1", "ampere"): 0.40, ("fa1", "hopper"): 0.40 * FA2_CEILING["hopper"] / FA2_CEILING["ampere"],
                     **{("triton", a): c / TRITON_FORWARD_SLOWDOWN for a, c in FA2_CEILING.items()}}
# The backward pass's efficiency over the forward's, by kernel (1 where no source separates them): Triton's backward
# is relatively slower (FA-2 gains 2x there against 1.4x forward [S170]).
ATTENTION_BACKWARD_SHARE = {"triton": TRITON_FORWARD_SLOWDOWN / TRITON_BACKWARD_SLOWDOWN}
ATTENTION_S0 = 240.0              # keys: the per-query-block fixed cost, from S102's curve (docstring)
ATTENTION_BLOCK = 128             # the kernels' key/query block: the causal mask's diagonal blocks run whole
ATTENTION_BACKWARD_FLOPS = 2.5    # backward / forward FLOPs of FlashAttention (five matmuls against two) [S101]

# AdamW on a shard of FP32 master weights: reads the master weight, the FP32 gradient and the two moments (16 bytes),
# writes the master weight and the moments (12) and the BF16 working copy of the weight (2) [S22].
OPTIMIZER_BYTES_PER_PARAM = 4 * FP32 + 3 * FP32 + BF16

GEMMS_PER_LAYER = 4               # QKV, attention output, FC1 (gate and up), FC2: Megatron/TE's fused GEMMs

# FP8 scaling recipes and the HBM bytes per element their quantization kernels move (docs/jobs.md "The FP8 recipe's
# own kernels"): every FP8 GEMM operand is quantized from BF16 by a memory-bound kernel that reads it (2 bytes) and
# writes it in FP8 twice, row-wise and transposed (1 + 1: Hopper's FP8 tensor cores take only the "TN" layout, so
# the weight-gradient and input-gradient GEMMs need the transposed copy; Transformer Engine's fused cast-transpose)
# [S135, S136]. Delayed scaling takes the scale from the amax history: one read; current (dynamic, per-tensor)
# scaling computes the amax first: a second read [S135].
FP8_RECIPES = ("delayed", "current")
FP8_CAST_BYTES = {"delayed": BF16 + 2 * 1, "current": 2 * BF16 + 2 * 1}


@dataclass(frozen=True)
class Settings:
    """What the kernels read of a job: ``precision``, ``flat_gemm`` (``gemm_efficiency`` or None), ``scale``
    (``gemm_efficiency_scale``), ``flat_attention`` (``attention_efficiency`` or None), ``attention_kernel``,
    ``hbm_efficiency``, ``launch_s`` (seconds per kernel), ``compiled``, ``clock`` (share of the clock under the
    job's power cap)."""

    precision: str
    flat_gemm: float | None
    scale: float
    flat_attention: float | None
    attention_kernel: str
    hbm_efficiency: float
    launch_s: float
    compiled: bool
    clock: float
    fp8_recipe: str = "delayed"
    fused_loss: bool = False


def _factor(p: dict, name: str) -> float:
    v = p.get(name)
    return float(fitted.value(name) if v is None else v)


def settings(p: dict, gpu: GPU) -> Settings:
    """The kernel settings of the resolved job ``p`` on ``gpu`` (fitted factors where the job leaves them null)."""
    cap = p.get("power_cap_w")
    clock = 1.0
    if cap is not None:
        static = static_w(gpu.slug, gpu.tdp)
        if cap <= static:
            raise ParamError("power_cap_w", f"{cap:g} W is not above the {gpu.name}'s {static:g} W that do not "
                                            f"scale with its clock: nothing would run")
        clock = clock_share(float(cap), gpu.tdp, static)
    return Settings(precision=p["precision"], flat_gemm=p.get("gemm_efficiency"),
                    scale=_factor(p, "gemm_efficiency_scale"), flat_attention=p.get("attention_efficiency"),
                    attention_kernel=p.get("attention_kernel") or "auto",
                    hbm_efficiency=_factor(p, "hbm_efficiency"), launch_s=_factor(p, "launch_overhead_us") * 1e-6,
                    compiled=bool(p.get("compiled", True)), clock=clock,
                    fp8_recipe=p.get("fp8_recipe") or "delayed", fused_loss=bool(p.get("fused_loss", False)))


# ------------------------------------------------------------------------------------------------ GEMMs
def tile_quantization(M, N, sms: int) -> np.ndarray:
    """The share of the tensor cores' work that is useful when an ``M x N`` output is cut into CTA tiles run in
    waves of ``sms`` (one tile per SM): ``M N / (waves x sms x tile)``, the best of :data:`TILES` [S103]."""
    M, N = np.asarray(M, float), np.asarray(N, float)
    best = np.zeros(np.broadcast(M, N).shape)
    for tm, tn in TILES:
        tiles = np.ceil(M / tm) * np.ceil(N / tn)
        waves = np.ceil(tiles / sms)
        best = np.maximum(best, M * N / (waves * sms * tm * tn))
    return best


def gemm_ceiling(gpu: GPU, precision: str) -> float:
    """The share of the dense peak a large GEMM reaches on ``gpu`` (:data:`GEMM_CEILING`; Hopper's for an
    unlisted architecture)."""
    return GEMM_CEILING.get((gpu.arch, precision), GEMM_CEILING[("hopper", precision)])


def gemm_seconds(M, N, K, gpu: GPU, s: Settings) -> np.ndarray:
    """Seconds of ``(M x K) @ (K x N)`` GEMMs (arrays broadcast) on ``gpu`` (module docstring)."""
    M, N, K = (np.asarray(x, float) for x in (M, N, K))
    flops = 2.0 * M * N * K
    peak = gpu.peak_flops(s.precision)
    if s.flat_gemm is not None:
        return flops / (peak * s.flat_gemm * s.clock)
    share = min(1.0, gemm_ceiling(gpu, s.precision) * s.scale) * tile_quantization(M, N, gpu.sms)
    compute = flops / (peak * share * s.clock)
    inputs = 1 if s.precision == "fp8" else BF16
    memory = (inputs * (M * K + K * N) + BF16 * M * N) / (gpu.hbm * s.hbm_efficiency)
    return np.maximum(compute, memory)


def gemm_efficiency(M, N, K, gpu: GPU, s: Settings) -> np.ndarray:
    """Achieved share of the dense peak of the GEMM ``M x N x K`` (:func:`gemm_seconds`)."""
    return 2.0 * np.asarray(M, float) * N * K / (gpu.peak_flops(s.precision) * gemm_seconds(M, N, K, gpu, s))


def layer_gemms(model: ModelShape, tokens: float, tp: int) -> dict:
    """Each forward GEMM of a layer on one TP shard for ``tokens`` (a micro-batch's tokens on the CP rank, gathered
    over TP by sequence parallelism): ``{name: (M, N, K)}``; FC1 is SwiGLU's gate and up (``2 F``) or GELU's up."""
    d, kv, F = model.dim, model.kv_dim, model.ffn_dim
    return {"qkv": (tokens, (d + 2 * kv) / tp, d), "out": (tokens, d, d / tp),
            "fc1": (tokens, (model.mlp_matrices - 1) * F / tp, d), "fc2": (tokens, d, F / tp)}


def pass_seconds(shapes: list, gpu: GPU, s: Settings) -> np.ndarray:
    """(n, 3) seconds of each GEMM ``(M, N, K)`` of ``shapes`` in its three passes: forward, input gradient (``M x
    K`` over ``N``) and weight gradient (``K x N`` over the ``M`` tokens); one vectorised call."""
    M, N, K = np.asarray(shapes, float).T
    return gemm_seconds(np.stack([M, M, K], 1), np.stack([N, K, N], 1), np.stack([K, N, M], 1), gpu, s)


# ------------------------------------------------------------------------------------------------ attention
def attention_kernel(gpu: GPU, kernel: str) -> str:
    """The attention kernel a job runs: ``auto`` = FlashAttention-3 on Hopper, FlashAttention-2 otherwise."""
    if kernel == "auto":
        return "fa3" if gpu.arch == "hopper" else "fa2"
    if kernel == "fa3" and gpu.arch != "hopper":
        raise ParamError("attention_kernel", f"fa3 does not run on the {gpu.name} ({gpu.arch}): FlashAttention-3 "
                                             f"needs a Hopper GPU")
    return kernel


def attention_efficiency(seq: int, gpu: GPU, kernel: str = "auto", backward: bool = False) -> float:
    """Share of the dense BF16 peak causal attention over ``seq`` tokens reaches in its forward pass, or with
    ``backward`` in its backward pass (the forward's x :data:`ATTENTION_BACKWARD_SHARE`) (module docstring)."""
    k = attention_kernel(gpu, kernel)
    ceiling = ATTENTION_CEILING.get((k, gpu.arch), ATTENTION_CEILING[(k, "hopper")])
    if backward:
        ceiling *= ATTENTION_BACKWARD_SHARE.get(k, 1.0)
    keys = seq / 2.0
    return ceiling * keys / (keys + ATTENTION_S0) * seq / (seq + ATTENTION_BLOCK)


# ------------------------------------------------------------------------------------------------ memory-bound
def layer_memory(model: ModelShape, compiled: bool) -> tuple[float, int]:
    """(bytes per token, kernels) of one layer's memory-bound kernels in the forward pass, per GPU: with sequence
    parallelism the norms and residual adds run on the GPU's ``1/tp`` of the tokens at full width, rotary and SwiGLU
    on all the tokens at ``1/tp`` of the width, so both are the GPU's token share x the full widths below.

    Compiled (fused): two residual-add + RMSNorm kernels (read the input and the residual, write the sum and the
    normalised output: ``4 d`` elements each), rotary on Q and K (read and write ``d + kv_dim``), SwiGLU (read gate
    and up, write their product: ``3 F``); BF16. Eager (PyTorch's separate ops): RMSNorm as upcast, square, mean,
    scale, downcast, weight (36 d bytes, 6 kernels, FP32 intermediates), two residual adds (3 d elements each),
    rotary as upcast, complex multiply, downcast for Q and for K (20 bytes per element, 6 kernels), SwiGLU as SiLU
    then multiply (10 F bytes, 2 kernels).

    A gpt layer (``model.layer``) has no rotary and a GELU (read ``F``, write ``F``) for the SwiGLU. Compiled: the
    two residual-add + LayerNorm kernels as above and the GELU, 3 kernels. Eager: each LayerNorm one kernel on BF16
    (read and write ``d``: MPT's low-precision LayerNorm, ``F.layer_norm`` with autocast off [S172]), two residual
    adds, the GELU: 5 kernels."""
    d, kv, F = model.dim, model.kv_dim, model.ffn_dim
    if model.layer == "gpt":
        if compiled:
            return BF16 * (2 * 4 * d + 2 * F), 3
        return BF16 * (2 * 2 * d + 2 * 3 * d + 2 * F), 5
    if compiled:
        return BF16 * (2 * 4 * d + 2 * (d + kv) + 3 * F), 4
    return 2 * 36 * d + 2 * 3 * BF16 * d + 20 * (d + kv) + 10 * F, 2 * 6 + 2 + 6 + 2


def head_memory(model: ModelShape, compiled: bool, fused_loss: bool | None = None) -> tuple[float, float, int, int]:
    """The last stage's final RMSNorm and cross-entropy over the vocabulary, per token: (forward bytes, backward
    bytes, forward kernels, backward kernels). The norm: compiled one kernel (``2 d`` BF16 elements forward, twice
    that backward), eager PyTorch's six (36 d bytes). The loss: fused (``fused_loss``; Megatron's
    ``--cross-entropy-loss-fusion``, a compiled loss) reads the BF16 logits (``2 V``), its backward reads them again
    and writes their gradient (``4 V``), one kernel each; unfused, as Megatron's vocab-parallel cross-entropy and
    torchtitan's loss run by default [S137, S138], on the logits upcast to FP32: upcast, log-softmax, and its
    gradient downcast (14 V bytes each way, 3 kernels each). ``fused_loss`` None: fused when ``compiled`` (the
    model before the unfused FP32 loss was named). A gpt layer's final LayerNorm eager: one BF16 kernel, as
    compiled (:func:`layer_memory`)."""
    d, V = model.dim, model.vocab
    fused = compiled if fused_loss is None else fused_loss
    one = compiled or model.layer == "gpt"
    nf, nb, kf, kb = (BF16 * 2 * d, 2 * BF16 * 2 * d, 1, 2) if one else (36 * d, 2 * 36 * d, 6, 12)
    lf, lb, jf, jb = (BF16 * V, 2 * BF16 * V, 1, 1) if fused else (14 * V, 14 * V, 3, 3)
    return nf + lf, nb + lb, kf + jf, kb + jb


def fp8_cast_bytes(shapes: dict, tp: int, micro_batches: int, recipe: str) -> tuple[float, float]:
    """HBM bytes of the FP8 recipe's quantization kernels for one layer and one micro-batch on one GPU: (forward,
    backward). Each GEMM ``{name: (M, N, K)}`` (:func:`layer_gemms`) quantizes its input (``M x K``) in forward and
    its output gradient (``M x N``) in backward, :data:`FP8_CAST_BYTES` per element; a full-width tensor of the
    sequence-parallel shard (the QKV and FC1 inputs, the attention-output and FC2 output gradients) is quantized
    before its TP all-gather, on the GPU's ``1/tp`` of the tokens. The weights (``K x N``) once per step (the first
    micro-batch's cast kept for the others, Transformer Engine's ``is_first_microbatch``), spread over the step's
    ``micro_batches``."""
    q = FP8_CAST_BYTES[recipe]
    full_in, full_grad = ("qkv", "fc1"), ("out", "fc2")
    fwd = bwd = 0.0
    for name, (M, N, K) in shapes.items():
        fwd += M * K / (tp if name in full_in else 1) * q + K * N * q / micro_batches
        bwd += M * N / (tp if name in full_grad else 1) * q
    return fwd, bwd


def optimizer_seconds(params: float, gpu: GPU, s: Settings) -> float:
    """Seconds of AdamW over ``params`` parameters on one GPU (its shard), bound by HBM."""
    return params * OPTIMIZER_BYTES_PER_PARAM / (gpu.hbm * s.hbm_efficiency)


# ------------------------------------------------------------------------------------------------ per-op SAC
def op_recompute_gemms(model: ModelShape, tokens: float, tp: int, compiled: bool = False) -> dict:
    """The GEMMs torchtitan's selective per-op activation checkpointing (``recompute`` op) runs again in backward,
    ``{name: (M, N, K)}`` on one TP shard. Its policy saves the output of every matmul of a layer's forward but the
    second, fourth, ... in call order [S173]; torchtitan's Llama layer calls ``wq, wk, wv, wo`` then ``w1, w3, w2``
    (``w2(silu(w1(x)) * w3(x))``) [S173], so ``wk``, ``wo`` and ``w3`` are not saved. ``wk``'s output (the keys,
    for the attention's backward) and ``w3``'s (for the product's and ``w2``'s gradients) are needed, so run again.
    ``wo`` runs again too unless nothing needs it: without TP its output is the residual add's, whose sum the MLP's
    norm (recomputed, for ``w1``'s and ``w3``'s weight gradients) reads; with TP it only feeds the reduce-scatter,
    whose output is saved, but eager PyTorch replays the layer's forward in call order, running every op not on
    the save list until the last needed output (``w3``'s, after ``wo``) is made, so only a compiled layer (the
    partitioner keeps just what the backward reads) leaves it out. A gpt layer's MLP calls ``w1, w2``: ``w2``'s
    output is not needed (the replay stops at the GELU after ``w1``), so ``wk`` and ``wo``."""
    d, kv, F = model.dim, model.kv_dim, model.ffn_dim
    out = {"wk": (tokens, kv / tp, d)}
    if tp == 1 or not compiled:
        out["wo"] = (tokens, d, d / tp)
    if model.layer != "gpt":
        out["w3"] = (tokens, F / tp, d)
    return out


OP_GATHERED = ("wk", "w3")        # the recomputed GEMMs whose input TP all-gathers again (the norms' outputs)


# ------------------------------------------------------------------------------------------------ one layer
@dataclass(frozen=True)
class LayerTimes:
    """Seconds of one layer (and of the output head) for one micro-batch on one GPU, by kernel kind and pass:
    GEMMs ``gemm_f``, ``gemm_d`` (input gradients), ``gemm_w`` (weight gradients); attention ``attn_f``,
    ``attn_b``; memory-bound ``mem_f``, ``mem_b``; launches ``launch_f``, ``launch_d``, ``launch_w`` (seconds of
    the kernels' launch gaps of each pass); per GEMM ``gemms`` ({name: (forward, backward)} for TP overlap); the
    head's (``head``: the same keys); with ``recompute`` op, what its backward runs again (:func:`op_recompute_gemms`):
    ``op`` ({gemm, memory, launch}: seconds by kernel kind; None without it) and ``op_gemms`` (the key and
    up-projection GEMMs' seconds, for TP overlap)."""

    gemm_f: float
    gemm_d: float
    gemm_w: float
    attn_f: float
    attn_b: float
    mem_f: float
    mem_b: float
    launch_f: float
    launch_d: float
    launch_w: float
    gemms: dict
    head: dict
    op: dict | None = None
    op_gemms: tuple = (0.0, 0.0)


def layer_times(model: ModelShape, p: dict, gpu: GPU | None = None) -> LayerTimes:
    """One layer's and the head's kernel times for the resolved job ``p`` (module docstring)."""
    gpu = gpu or gpu_of(p)
    s = settings(p, gpu)
    tp = p["tp"]
    tokens = p["seq"] * p["micro_batch"] / p["cp"]                     # a CP rank's micro-batch, gathered over TP
    local = tokens / tp                                                # the GPU's share
    shapes = layer_gemms(model, tokens, tp)
    t = pass_seconds(list(shapes.values()) + [(tokens, model.vocab / tp, model.dim)], gpu, s)   # the head last
    gemms = {k: tuple(float(x) for x in row) for k, row in zip(shapes, t[:-1])}
    gf, gd, gw = (float(x) for x in t[:-1].sum(axis=0))
    attn_flops = local * model.attention_flops_per_token(p["seq"])
    peak = gpu.peak_flops("bf16") * s.clock
    if s.flat_attention is not None:
        attn_f = attn_flops / (peak * s.flat_attention)
        attn_b = 2.0 * attn_f
    else:
        attn_f = attn_flops / (peak * attention_efficiency(p["seq"], gpu, s.attention_kernel))
        attn_b = ATTENTION_BACKWARD_FLOPS * attn_flops / (peak * attention_efficiency(p["seq"], gpu,
                                                                                      s.attention_kernel, True))
    rate = gpu.hbm * s.hbm_efficiency
    mem, kernels = layer_memory(model, s.compiled)
    cast_f = cast_b = 0.0
    casts = 0
    if s.precision == "fp8":
        cast_f, cast_b = fp8_cast_bytes(shapes, tp, int(p.get("micro_batches") or 1), s.fp8_recipe)
        casts = GEMMS_PER_LAYER
    op, op_g = None, (0.0, 0.0)
    if p.get("recompute") == "op":
        # per-op SAC [S173]: the backward runs again wk, w3 and (eager or without TP) wo (op_recompute_gemms), every memory-bound kernel of
        # the forward (norms, residual add, rotary, SwiGLU: none is on the save list) and, in an FP8 job, the
        # quantization of the two gathered inputs (of the QKV and the MLP's first GEMMs); attention's output and
        # the other matmuls' are saved
        rg = op_recompute_gemms(model, tokens, tp, s.compiled)
        secs = dict(zip(rg, (float(x) for x in gemm_seconds(*np.asarray(list(rg.values()), float).T, gpu, s))))
        op_g = tuple(secs[k] for k in OP_GATHERED if k in secs)
        recast = 0.0
        if s.precision == "fp8":
            recast = FP8_CAST_BYTES[s.fp8_recipe] * sum(shapes[k][0] * shapes[k][2] / tp for k in ("qkv", "fc1"))
        op = {"gemm": sum(secs.values()), "memory": (local * mem + recast) / rate, "launch": (len(rg) + kernels) * s.launch_s}
    hf, hd, hw = (float(x) for x in t[-1])
    hbf, hbb, hkf, hkb = head_memory(model, s.compiled, s.fused_loss)
    head = {"gemm_f": hf, "gemm_d": hd, "gemm_w": hw, "mem_f": local * hbf / rate, "mem_b": local * hbb / rate,
            "launch_f": (1 + hkf) * s.launch_s, "launch_d": (1 + hkb) * s.launch_s, "launch_w": s.launch_s}
    return LayerTimes(gemm_f=gf, gemm_d=gd, gemm_w=gw, attn_f=attn_f, attn_b=attn_b,
                      mem_f=(local * mem + cast_f) / rate, mem_b=(2 * local * mem + cast_b) / rate,
                      launch_f=(GEMMS_PER_LAYER + 1 + kernels + casts) * s.launch_s,
                      launch_d=(GEMMS_PER_LAYER + 1 + 2 * kernels + casts) * s.launch_s,
                      launch_w=GEMMS_PER_LAYER * s.launch_s,
                      gemms={k: (g[0], g[1] + g[2]) for k, g in gemms.items()}, head=head, op=op, op_gemms=op_g)
