"""Model shapes of dense decoder-only transformers (Llama 3), their FLOPs, parameters and memory per GPU.

Presets are the Llama 3 paper's table (layers, model dim, FFN dim, heads, KV heads; vocabulary 128,256 tokens)
(docs/sources.md [S3]). A layer is grouped-query attention (Q, K, V, O projections; ``kv_heads`` key/value heads of
``dim / heads`` each) and a SwiGLU MLP (three ``dim x ffn_dim`` matrices), with RMSNorm; the output projection is
not tied to the embedding.

FLOPs (a multiply-add = 2): forward GEMMs per token per layer ``2 (dim^2 (2 + 2 kv/heads) + 3 dim ffn)``;
attention ``2 x 2 x seq x dim`` for QK^T and AV over all keys, halved by the causal mask, so ``2 seq dim`` per token
per layer; the output head ``2 dim vocab`` per token. Backward = 2 x forward; full recomputation adds a forward
(Narayanan et al. 2021, docs/sources.md [S21]).

Memory per GPU (bytes; :func:`stage_memory`), model after Rajbhandari et al. (ZeRO) and Korthikanti et al.
(docs/sources.md [S22], [S23]): BF16 weights of the GPU's stage and TP shard held whole during the step (Llama 3's
FSDP does not reshard after the forward pass [S3]), BF16 gradients of the same, and FP32 master weights + Adam's
two moments + FP32 gradient accumulator (16 bytes per parameter) sharded over DP when FSDP is on. Activations: with
sequence parallelism every tensor a layer saves is sharded over TP and CP; per token and layer it saves the BF16
inputs of its norms, GEMMs and attention (``2 (4 dim + 2 kv_dim + 3 ffn)`` bytes: two norm inputs, two norm
outputs, the attention output, Q/K/V, the gate, up and SiLU outputs; FlashAttention keeps no score matrix);
a recomputed layer keeps only its input (``2 dim``), plus one layer's full set while recomputing. How many
micro-batch-chunks a stage holds comes from the pipeline schedule's table (:func:`sim.jobs.pipeline.peak_in_flight`).
Outside the tensors: the caching allocator's reserve, the CUDA context and NCCL's buffers (:func:`stage_memory`,
:func:`nccl_buffer_bytes`; docs/jobs.md "Memory").
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from sim.fabric.p2p_batches import NCHANNELS_PER_NET_PEER

VOCAB = 128_256                   # Llama 3's tokenizer (docs/sources.md [S3])
# A layer's kind (docs/jobs.md "Model"): llama = RMSNorm, rotary embedding, SwiGLU MLP (three dim x ffn_dim
# matrices); gpt = LayerNorm, positions outside the layer (learned, or ALiBi in the attention), GELU MLP (two).
LAYERS = ("llama", "gpt")
BF16 = 2                          # bytes
FP32 = 4
ADAM_STATE_BYTES = 16             # FP32 master weight, Adam m and v, FP32 gradient accumulator [S22]


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer: ``layers``, model ``dim``, ``ffn_dim``, attention ``heads`` and ``kv_heads``,
    ``vocab``, ``layer`` (:data:`LAYERS`)."""

    name: str
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    kv_heads: int
    vocab: int = VOCAB
    layer: str = "llama"

    @property
    def kv_dim(self) -> int:
        return self.dim * self.kv_heads // self.heads

    @property
    def mlp_matrices(self) -> int:
        """``dim x ffn_dim`` matrices of the MLP: SwiGLU's gate, up and down; GELU's up and down."""
        return 3 if self.layer == "llama" else 2

    @property
    def layer_params(self) -> int:
        d = self.dim
        return 2 * d * d + 2 * d * self.kv_dim + self.mlp_matrices * d * self.ffn_dim + 2 * d

    @property
    def params(self) -> int:
        """All parameters: embedding, layers, final norm, output head."""
        return self.layers * self.layer_params + 2 * self.vocab * self.dim + self.dim

    def gemm_flops_per_token(self) -> float:
        """Forward GEMM FLOPs of one layer per token."""
        return 2.0 * (self.layer_params - 2 * self.dim)

    def attention_flops_per_token(self, seq: int) -> float:
        """Forward attention (QK^T and AV, causal) FLOPs of one layer per token."""
        return 2.0 * seq * self.dim

    def head_flops_per_token(self) -> float:
        return 2.0 * self.dim * self.vocab

    def model_flops_per_token(self, seq: int) -> float:
        """Training FLOPs per token (forward + backward = 3 x forward, no recomputation): the MFU numerator."""
        fwd = self.layers * (self.gemm_flops_per_token() + self.attention_flops_per_token(seq))
        return 3.0 * (fwd + self.head_flops_per_token())

    def activation_bytes_per_token(self) -> int:
        """BF16 bytes one layer saves per token for its backward pass (no recomputation, FlashAttention); a GELU
        MLP saves its up projection's and the GELU's outputs (``2 ffn_dim``) where SwiGLU saves three."""
        return BF16 * (4 * self.dim + 2 * self.kv_dim + self.mlp_matrices * self.ffn_dim)

    def op_activation_bytes_per_token(self, tp: int) -> int:
        """BF16 bytes one layer saves per token under torchtitan's selective per-op checkpointing (``recompute``
        op, [S173]): of the tensors its backward needs, the outputs of the saved ops only: the layer's input, the
        query and value projections' outputs (the keys' matmul is recomputed), the attention's output, the first
        MLP matmul's output (``w1``; ``w3``'s is recomputed) and, with TP, the attention block's reduce-scatter
        output (the MLP norm's input is recomputed from it); ``4 dim + kv_dim + ffn_dim (+ dim)``, sharded over TP
        as the others."""
        return BF16 * (4 * self.dim + self.kv_dim + self.ffn_dim + (self.dim if tp > 1 else 0))

    def to_dict(self) -> dict:
        return {**asdict(self), "params": self.params}


MODELS = {
    "llama3-8b": ModelShape("llama3-8b", 32, 4096, 14336, 32, 8),
    "llama3-70b": ModelShape("llama3-70b", 80, 8192, 28672, 64, 8),
    "llama3-405b": ModelShape("llama3-405b", 126, 16384, 53248, 128, 8),
}
CUSTOM = "custom"


def chunk_layers(layers: int, pp: int, v: int, balance: bool = False) -> np.ndarray:
    """(pp, v) layers of chunk ``c`` of stage ``s`` (chunk-stage ``c pp + s`` of the model) when the ``layers`` are
    cut into ``pp x v`` chunks. Chunks get ``ceil(layers / (pp v))`` layers; a shortfall is taken one layer at a
    time from the last and first chunks alternately, inwards, as Llama 3 took one layer from each end stage [S3].
    ``balance``: the first chunk also holds the embedding and the last the output head and loss, each counted as
    one layer in the cut (Llama 3 [S3]: one transformer layer fewer on the first and the last stage); the shortfall
    leaves an end chunk at least one layer, but chunks of one slot each leave the end chunks none: Llama 3's
    "first model chunk on the first stage has only the embedding, and the last model chunk on the last stage has
    only output projection and loss calculation" [S3] (126 layers on 16 stages of 8 chunks;
    :func:`chunks_hold_layers`)."""
    chunks = pp * v
    extra = np.zeros(chunks, dtype=np.int64)
    if balance and chunks > 1:
        extra[0] = extra[-1] = 1
    slots = layers + int(extra.sum())
    size = np.full(chunks, math.ceil(slots / chunks), dtype=np.int64)
    short = int(size.sum()) - slots
    order = [chunks - 1 - k // 2 if k % 2 == 0 else k // 2 for k in range(chunks)]
    while short > 0:
        took = False
        for i in order:
            if short and size[i] > 1 + extra[i]:
                size[i] -= 1
                short -= 1
                took = True
        if not took:
            raise ValueError(f"{layers} layers do not fill {chunks} chunks")
    return (size - extra).reshape(v, pp).T.copy()


def chunks_hold_layers(cl: np.ndarray, balance: bool = False) -> bool:
    """Whether the cut ``cl`` ((pp, v) layers per chunk, :func:`chunk_layers`) gives every chunk a transformer
    layer; with ``balance`` the first chunk of the first stage and the last chunk of the last stage may hold none,
    as they hold the embedding and the output head with the loss (Llama 3 [S3])."""
    need = np.ones(cl.shape, bool)
    if balance and cl.size > 1:
        need[0, 0] = need[-1, -1] = False
    return bool((cl[need] >= 1).all())


def stage_layers(layers: int, pp: int, v: int, balance: bool = False) -> list[int]:
    """Layers of each of the ``pp`` physical stages (its chunks' layers, :func:`chunk_layers`)."""
    return [int(x) for x in chunk_layers(layers, pp, v, balance).sum(axis=1)]


# ------------------------------------------------------------------------------------------------ memory parts
CUDA_CONTEXT_BYTES = 0.75e9       # assumption (docs/jobs.md "Memory"): CUDA context, kernels, cuBLAS/cuDNN workspaces
NCCL_SIMPLE_BYTES = 4 << 20       # NCCL_BUFFSIZE default: the Simple protocol's buffer per channel and peer [S6]
NCCL_LL128_BYTES = 120 * 640 * 8 * 8   # LL128: elements per thread x threads x NCCL_STEPS x 8 bytes [S6]
NCCL_LL_BYTES = 8 * 512 * 8 * 16       # LL: lines per thread x threads x NCCL_STEPS x 16-byte lines [S6]
NCCL_RING_CHANNELS = 32           # MAXCHANNELS: a ring communicator's channels at most on H100 [S6, S11]
NCCL_P2P_CHANNELS = NCHANNELS_PER_NET_PEER   # channels per point-to-point network peer (sim.fabric.p2p_batches) [S6]
FRAGMENTATION = 0.05              # assumption (docs/jobs.md "Memory"): the caching allocator's reserve over its tensors


def nccl_buffer_bytes(ranks: dict) -> float:
    """Device bytes of NCCL's communication buffers on one GPU: per ring communicator (TP, CP, DP with more than
    one rank) ``NCCL_RING_CHANNELS`` channels x one receiving peer x the three protocols' buffers; per pipeline
    neighbour (two at most) ``NCCL_P2P_CHANNELS`` x the Simple buffer [S6]."""
    per_channel = NCCL_SIMPLE_BYTES + NCCL_LL128_BYTES + NCCL_LL_BYTES
    rings = sum(1 for d in ("tp", "cp", "dp") if ranks.get(d, 1) > 1)
    p2p = min(ranks.get("pp", 1) - 1, 2)
    return float(rings * NCCL_RING_CHANNELS * per_channel + p2p * NCCL_P2P_CHANNELS * NCCL_SIMPLE_BYTES)


def stage_params(model: ModelShape, layers) -> list[float]:
    """Parameters held by each stage: its layers, plus the embedding on the first and the final norm and output
    head on the last."""
    pp = len(layers)
    return [n * model.layer_params + (model.vocab * model.dim if s == 0 else 0)
            + ((model.vocab + 1) * model.dim if s == pp - 1 else 0) for s, n in enumerate(layers)]


def stage_memory(model: ModelShape, *, tp: int, cp: int, dp: int, seq: int, micro_batch: int, fsdp: bool,
                 layers, held, recompute, overhead: float, fragmentation: float, per_op: bool = False) -> list[dict]:
    """Bytes on a GPU of each pipeline stage, by part. ``layers``: each stage's layers; ``held``: each stage's peak
    held layer-micro-batches (the schedule's peak in-flight chunks weighted by their layers,
    :func:`sim.jobs.pipeline.peak_in_flight`); ``recompute``: layers fully recomputed per stage (they keep only
    their input, plus one layer's full set while recomputing); ``overhead``: bytes outside the allocator (CUDA
    context, NCCL buffers); ``fragmentation``: the allocator's reserve as a share of its tensors; ``per_op``:
    every layer saves what torchtitan's per-op checkpointing keeps
    (:meth:`ModelShape.op_activation_bytes_per_token`)."""
    out = []
    pp = len(layers)
    tokens = seq * micro_batch / (tp * cp)                       # tokens of a micro-batch a GPU saves, sharded
    full = tokens * (model.op_activation_bytes_per_token(tp) if per_op else model.activation_bytes_per_token())
    kept = tokens * BF16 * model.dim                             # a recomputed layer keeps its input only
    for s, (n, h, r) in enumerate(zip(layers, held, recompute)):
        p_gpu = stage_params(model, layers)[s] / tp
        share = r / n if n else 0.0
        act = h * ((1 - share) * full + share * kept) + (full if r > 0 else 0.0)
        if s == pp - 1:
            act += tokens * model.vocab * FP32                   # FP32 logits of one micro-batch
        parts = {"weights": BF16 * p_gpu, "gradients": BF16 * p_gpu,
                 "optimizer": ADAM_STATE_BYTES * p_gpu / (dp if fsdp else 1), "activations": act}
        parts["allocator"] = fragmentation * sum(parts.values())
        parts["framework"] = overhead
        parts["total"] = sum(parts.values())
        parts["stage"] = s
        parts["recompute_layers"] = int(r)
        out.append(parts)
    return out


def fewest_recomputed(model: ModelShape, *, tp: int, cp: int, seq: int, micro_batch: int, layers, held,
                      budget) -> np.ndarray:
    """(pp,) the fewest layers per stage to recompute fully so that the stage's activations fit ``budget`` bytes
    of activations (per stage); ``layers + 1`` where even recomputing every layer does not fit."""
    tokens = seq * micro_batch / (tp * cp)
    full = tokens * model.activation_bytes_per_token()
    kept = tokens * BF16 * model.dim
    out = np.zeros(len(layers), dtype=np.int64)
    for s, (n, h, b) in enumerate(zip(layers, held, budget)):
        if h * full <= b:
            continue
        # act(r) = h full - r (h / n)(full - kept) + full for r >= 1
        per = h / n * (full - kept)
        r = math.ceil((h * full + full - b) / per - 1e-9) if per > 0 else n + 1
        out[s] = max(1, r) if r <= n else n + 1
    return out
