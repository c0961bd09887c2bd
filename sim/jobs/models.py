"""Model shapes of dense decoder-only transformers (Llama 3), their FLOPs, parameters and memory per GPU.

Presets are the Llama 3 paper's table (layers, model dim, FFN dim, heads, KV heads; vocabulary 128,256 tokens)
(docs/sources.md [S3]). A layer is grouped-query attention (Q, K, V, O projections; ``kv_heads`` key/value heads of
``dim / heads`` each) and a SwiGLU MLP (three ``dim x ffn_dim`` matrices), with RMSNorm; the output projection is
not tied to the embedding.

FLOPs (a multiply-add = 2): forward GEMMs per token per layer ``2 (dim^2 (2 + 2 kv/heads) + 3 dim ffn)``;
attention ``2 x 2 x seq x dim`` for QK^T and AV over all keys, halved by the causal mask, so ``2 seq dim`` per token
per layer; the output head ``2 dim vocab`` per token. Backward = 2 x forward; full recomputation adds a forward
(Narayanan et al. 2021, docs/sources.md [S21]).

Memory per GPU (bytes; :func:`memory_per_gpu`), model after Rajbhandari et al. (ZeRO) and Korthikanti et al.
(docs/sources.md [S22], [S23]): BF16 weights of the GPU's stage and TP shard held whole during the step (Llama 3's
FSDP does not reshard after the forward pass [S3]), BF16 gradients of the same, and FP32 master weights + Adam's
two moments + FP32 gradient accumulator (16 bytes per parameter) sharded over DP when FSDP is on. Activations: with
sequence parallelism every tensor a layer saves is sharded over TP and CP; per token and layer it saves the BF16
inputs of its norms, GEMMs and attention (``2 (4 dim + 2 kv_dim + 3 ffn)`` bytes: two norm inputs, two norm
outputs, the attention output, Q/K/V, the gate, up and SiLU outputs; FlashAttention keeps no score matrix);
with full recomputation only each layer's input (``2 dim``) plus one layer's full set. The first pipeline stage
holds ``min(m, PP)`` micro-batches in flight under 1F1B, times ``1 + (PP - 1) / (PP v)`` when interleaved [S23].
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

VOCAB = 128_256                   # Llama 3's tokenizer (docs/sources.md [S3])
BF16 = 2                          # bytes
FP32 = 4
ADAM_STATE_BYTES = 16             # FP32 master weight, Adam m and v, FP32 gradient accumulator [S22]


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer: ``layers``, model ``dim``, ``ffn_dim``, attention ``heads`` and ``kv_heads``,
    ``vocab``."""

    name: str
    layers: int
    dim: int
    ffn_dim: int
    heads: int
    kv_heads: int
    vocab: int = VOCAB

    @property
    def kv_dim(self) -> int:
        return self.dim * self.kv_heads // self.heads

    @property
    def layer_params(self) -> int:
        d = self.dim
        return 2 * d * d + 2 * d * self.kv_dim + 3 * d * self.ffn_dim + 2 * d

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
        """BF16 bytes one layer saves per token for its backward pass (no recomputation, FlashAttention)."""
        return BF16 * (4 * self.dim + 2 * self.kv_dim + 3 * self.ffn_dim)

    def to_dict(self) -> dict:
        return {**asdict(self), "params": self.params}


MODELS = {
    "llama3-8b": ModelShape("llama3-8b", 32, 4096, 14336, 32, 8),
    "llama3-70b": ModelShape("llama3-70b", 80, 8192, 28672, 64, 8),
    "llama3-405b": ModelShape("llama3-405b", 126, 16384, 53248, 128, 8),
}
CUSTOM = "custom"


def stage_layers(layers: int, pp: int, v: int) -> list[int]:
    """Layers of each of the ``pp`` physical stages when the ``layers`` are cut into ``pp x v`` chunks (chunk
    ``k`` on stage ``k mod pp``). Chunks get ``ceil(layers / (pp v))`` layers; a shortfall is taken one layer at a
    time from the last and first chunks alternately, as Llama 3 took one layer from each end stage [S3]."""
    chunks = pp * v
    size = [math.ceil(layers / chunks)] * chunks
    short, k = size[0] * chunks - layers, 0
    while short > 0:
        i = chunks - 1 - k // 2 if k % 2 == 0 else k // 2
        if size[i] > 1:
            size[i] -= 1
            short -= 1
        k += 1
    out = [0] * pp
    for c, s in enumerate(size):
        out[c % pp] += s
    return out


def memory_per_gpu(model: ModelShape, *, tp: int, cp: int, pp: int, dp: int, v: int, seq: int, micro_batch: int,
                   micro_batches: int, fsdp: bool, recompute: bool) -> dict:
    """Bytes on the busiest GPU (first stage, or the last with the output head and its logits), by part."""
    layers = stage_layers(model.layers, pp, v)
    best = None
    for s, n in enumerate(layers):
        p = n * model.layer_params + (model.vocab * model.dim if s == 0 else 0) \
            + (model.vocab * model.dim if s == pp - 1 else 0)
        p_gpu = p / tp
        tokens = seq * micro_batch / (tp * cp)                   # tokens of a micro-batch a GPU saves, sharded
        if recompute:
            per_layer_mb = tokens * BF16 * model.dim
            act = per_layer_mb * n * _in_flight(pp, v, micro_batches, s) + tokens * model.activation_bytes_per_token()
        else:
            act = tokens * model.activation_bytes_per_token() * n * _in_flight(pp, v, micro_batches, s)
        if s == pp - 1:
            act += tokens * model.vocab * FP32                   # FP32 logits of one micro-batch
        parts = {"weights": BF16 * p_gpu, "gradients": BF16 * p_gpu,
                 "optimizer": ADAM_STATE_BYTES * p_gpu / (dp if fsdp else 1), "activations": act}
        parts["total"] = sum(parts.values())
        if best is None or parts["total"] > best["total"]:
            best = {**parts, "stage": s}
    return best


def _in_flight(pp: int, v: int, m: int, stage: int) -> float:
    """Micro-batches whose activations stage ``stage`` holds at its peak (1F1B: ``pp - stage``, capped by ``m``;
    interleaved: times ``1 + (pp - 1) / (pp v)`` [S23])."""
    base = min(m, pp - stage)
    return base * (1 + (pp - 1) / (pp * v)) if v > 1 else base
