"""A training job's, a schedule's and shared jobs' parameters."""
from __future__ import annotations

from sim.core.params import MAX_GPUS, Param, ParamSet
from sim.fabric.params import HASH, HOTTEST, QPS, ROUTING, SEED, UDP_SPORT
from sim.fabric.placement import PLACEMENTS
from sim.jobs.kernels import ATTENTION_KERNELS, FP8_RECIPES
from sim.jobs.layout import MAX_DIM, check_job
from sim.jobs.models import CUSTOM, LAYERS, MODELS
from sim.jobs.pipeline import SCHEDULES
from sim.jobs.queue import MAX_QUEUED, MAX_SHARED_JOBS, read_jobs
from sim.jobs.step import DP_COMM_SMS, GPU_SMS, TP_OVERLAP_AG_SMS, TP_OVERLAP_RS_SMS


# ------------------------------------------------------------------------------------------- training jobs
PRECISIONS = ("bf16", "fp8")
RECOMPUTE = ("none", "selective", "full", "auto", "op")
TP_OVERLAP_BACKENDS = ("te", "torch")
MAX_JOBS_TEXT = 4 << 20           # a schedule's jobs file: at most 4 MiB


JOB_PARAMS = (
    Param("model", "choice", "llama3-8b", "model preset (Llama 3 shapes), or custom (give layers, dim, ffn_dim, "
                                            "heads, kv_heads)", choices=tuple(MODELS) + (CUSTOM,)),
    Param("layers", "int", None, "transformer layers; null: the preset's", min=1, max=10_000, nullable=True),
    Param("dim", "int", None, "model dimension; null: the preset's", min=1, max=1 << 20, nullable=True),
    Param("ffn_dim", "int", None, "FFN (MLP hidden) dimension; null: the preset's", min=1, max=1 << 22, nullable=True),
    Param("heads", "int", None, "attention heads; null: the preset's", min=1, max=65_536, nullable=True),
    Param("kv_heads", "int", None, "key/value heads (GQA); null: the preset's", min=1, max=65_536, nullable=True),
    Param("vocab", "int", None, "vocabulary; null: the preset's (128,256)", min=1, max=1 << 24, nullable=True),
    Param("layer", "choice", "llama", "the layer's kind: llama (RMSNorm, rotary, SwiGLU MLP of three matrices), gpt "
                                      "(LayerNorm, no rotary, GELU MLP of two: GPT, MPT)", choices=LAYERS),
    Param("gpus", "int", None, "GPUs of the job; null: tp x cp x pp x dp", min=1, max=MAX_GPUS, nullable=True,
          short="-n"),
    Param("tp", "int", 8, "tensor-parallel ways (Megatron TP with sequence parallelism)", min=1, max=MAX_DIM),
    Param("cp", "int", 1, "context-parallel ways (all-gather of K and V, as Llama 3)", min=1, max=MAX_DIM),
    Param("pp", "int", 1, "pipeline stages", min=1, max=MAX_DIM),
    Param("dp", "int", None, "data-parallel ways (FSDP); null: gpus / (tp x cp x pp)", min=1, max=MAX_GPUS,
          nullable=True),
    Param("order", "text", "tp,cp,pp,dp", "rank order of the dimensions, innermost first (tp,cp,pp,dp: TP on "
                                          "consecutive ranks, as Llama 3)", max=64),
    Param("seq", "int", 8192, "sequence length in tokens", min=1, max=1 << 24),
    Param("batch_tokens", "size", "16M", "global batch in tokens (K/M: powers of 1024; 16M = 2,048 x 8,192)",
          min=1, max=1 << 40),
    Param("micro_batch", "int", 1, "sequences per micro-batch", min=1, max=1 << 20),
    Param("schedule", "choice", "1f1b", "pipeline schedule: 1f1b (PipeDream-flush), interleaved (Megatron's, "
                                        "virtual stages), zb-h1 (zero bubble: weight gradients deferred)",
          choices=SCHEDULES),
    Param("virtual_stages", "int", 1, "model chunks per pipeline stage (interleaved: at least 2)", min=1, max=1024),
    Param("micro_batches_per_round", "int", None, "interleaved: micro-batches taken through each chunk in turn "
                                                  "(Llama 3's tunable N); null: pp (Megatron's)", min=1,
          max=1 << 20, nullable=True),
    Param("balance_stages", "bool", True, "one layer fewer on the first and last chunks, for the embedding and the "
                                          "output head (as Llama 3)"),
    Param("precision", "choice", "bf16", "GEMM precision: bf16, or fp8 (weights, gradients and collectives stay "
                                         "BF16/FP32)", choices=PRECISIONS),
    Param("fp8_recipe", "choice", "delayed", "FP8 scaling: delayed (Transformer Engine's default: the scale from the "
                                             "amax history, one read per quantization) or current (per-tensor "
                                             "dynamic scaling, torchao's float8: the amax read first, two reads); "
                                             "FP8 jobs only", choices=FP8_RECIPES),
    Param("recompute", "choice", "auto", "activation recomputation: none, selective (the fewest layers per stage "
                                         "recomputed whole that make it fit HBM), full (every layer), auto (= "
                                         "selective), op (torchtitan's selective per-op checkpointing: every "
                                         "second matmul of a layer, its norms, element-wise ops and TP "
                                         "all-gathers recomputed in backward)", choices=RECOMPUTE),
    Param("fsdp", "bool", True, "data parallelism as FSDP (all-gather weights, reduce-scatter gradients, sharded "
                                "optimizer); off: DDP (all-reduce of gradients, replicated optimizer)"),
    Param("reshard_after_forward", "bool", False, "FSDP frees each layer's gathered weights after its forward "
                                                  "(ZeRO-3; FSDP2's default, FSDP1's FULL_SHARD): gathered again "
                                                  "in backward and gradients reduce-scattered every micro-batch; "
                                                  "off: kept to the backward (SHARD_GRAD_OP, as Llama 3)"),
    Param("dp_comm_sms", "int", DP_COMM_SMS, "SMs (of the H100's 132) a data-parallel collective's NCCL kernel "
                                             "holds while it overlaps compute (one per channel: 16 on an 8-NIC "
                                             "host)", min=0, max=GPU_SMS - 1),
    Param("overlap", "bool", True, "overlap data-parallel communication with compute (off: all of it exposed)"),
    Param("tp_comm_overlap", "bool", True, "overlap TP all-gathers and reduce-scatters with the GEMMs they feed "
                                           "(Megatron --tp-comm-overlap with Transformer Engine's userbuffers, "
                                           "PyTorch async TP), each GEMM slowed by the SMs its collective's "
                                           "kernel holds; on by default, as NVIDIA's Llama 3 70B and 405B H100 "
                                           "performance recipes run it (docs/jobs.md); off: all exposed"),
    Param("tp_overlap_backend", "choice", "te", "how TP overlap is built: te (Transformer Engine's userbuffers: "
                                                "every collective with its GEMM) or torch (PyTorch's async TP, "
                                                "torch.compile's micro-pipeline pass: a reduce-scatter only with "
                                                "the one matmul producing its input, so the backward "
                                                "reduce-scatters of a layer with separate q/k/v and w1/w3 "
                                                "linears stay exposed; docs/jobs.md)", choices=TP_OVERLAP_BACKENDS),
    Param("tp_overlap_rs_sms", "int", TP_OVERLAP_RS_SMS, "SMs (of the H100's 132) a TP reduce-scatter's kernel "
                                                         "holds while it overlaps its GEMM (Transformer Engine "
                                                         "userbuffers' default num_sm: 16)", min=0,
          max=GPU_SMS - 1),
    Param("tp_overlap_ag_sms", "int", TP_OVERLAP_AG_SMS, "SMs a TP all-gather holds while it overlaps its GEMM "
                                                         "(0: Transformer Engine's ring exchange moves the data "
                                                         "with the copy engines; NCCL would hold one per "
                                                         "channel)", min=0, max=GPU_SMS - 1),
    Param("gemm_efficiency", "float", None, "achieved share of the GPU's dense peak in every GEMM, flat; null: the "
                                            "efficiency curve by shape (docs/jobs.md)", min=0.01, max=1.0,
          nullable=True),
    Param("gemm_efficiency_scale", "float", None, "fitted factor: scales the GEMM curve's ceiling; null: its "
                                                  "fitted value (docs/validation.md)", min=0.1, max=2.0,
          nullable=True),
    Param("attention_efficiency", "float", None, "achieved share of the dense BF16 peak in attention, flat; null: "
                                                 "the attention kernel's by sequence length", min=0.01, max=1.0,
          nullable=True),
    Param("attention_kernel", "choice", "auto", "attention kernel: auto (FlashAttention-3 on Hopper, "
                                                "FlashAttention-2 on Ampere), fa1 (FlashAttention v1, before "
                                                "mid-2023), fa2, fa3, triton (FlashAttention in Triton, as "
                                                "llm-foundry's attn_impl triton)", choices=ATTENTION_KERNELS),
    Param("hbm_efficiency", "float", None, "fitted factor: achievable share of HBM's peak bandwidth in memory-bound "
                                           "kernels; null: its fitted value", min=0.05, max=1.0, nullable=True),
    Param("launch_overhead_us", "float", None, "fitted factor: microseconds lost per kernel launched; null: its "
                                               "fitted value", min=0.0, max=10_000.0, nullable=True),
    Param("compiled", "bool", True, "element-wise kernels fused (torch.compile, Megatron/Transformer Engine's fused "
                                    "kernels); off: eager PyTorch, one kernel per op"),
    Param("fused_loss", "bool", False, "cross-entropy fused into one kernel on the BF16 logits (Megatron "
                                        "--cross-entropy-loss-fusion, a compiled loss); off: the frameworks' default, "
                                        "the logits upcast to FP32, log-softmax and its gradient as separate kernels"),
    Param("power_cap_w", "float", None, "GPU power limit in W (nvidia-smi -pl): compute-bound kernels slow with the "
                                        "clock (docs/power.md); null: none (the TDP)", min=50.0, max=5_000.0,
          nullable=True),
    Param("hbm_gb", "float", None, "GPU memory in GB; null: the GPU's (80 on H100)", min=1.0, max=1e6,
          nullable=True),
    Param("framework_gb", "float", None, "GB per GPU outside PyTorch's allocator (CUDA context, NCCL buffers); "
                                         "null: 0.75 + NCCL's buffers for the layout (docs/jobs.md)", min=0.0,
          max=1e6, nullable=True),
    Param("fragmentation", "float", None, "the caching allocator's reserve as a share of its tensors; null: 0.05 "
                                          "(assumption, docs/jobs.md)", min=0.0, max=1.0, nullable=True),
    Param("placement", "choice", "topology", "how the job's GPUs are chosen", choices=PLACEMENTS),
    SEED,
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    HOTTEST,
)

JOB = ParamSet("job", JOB_PARAMS, check=check_job,
               doc="One training step of a 4D-parallel job: compute, every parallel group's traffic on the fabric, "
                   "pipeline bubble.")

POLICIES = ("topology", "first-fit", "random")


def _check_queue(v: dict) -> None:
    """The job queue, when given, read as the scheduler reads it (each entry a valid JOB, errors naming
    ``jobs[i].field`` and the line), so a bad file is refused before a run is queued, not in the worker."""
    if v["jobs"] is not None:
        read_jobs(v["jobs"], JOB.validate, timed=True, max_jobs=MAX_QUEUED)


SCHEDULE = ParamSet("schedule", (
    Param("policy", "choice", "topology", "placement policy: topology (pack racks then zones), first-fit (lowest "
                                          "GPU ids), random (whole hosts anywhere: fragmented)", choices=POLICIES),
    Param("jobs", "text", None, "the job queue: a JSON list or TOML [[job]] tables (docs/jobs.md); null: "
                                "synthetic arrivals", max=MAX_JOBS_TEXT, nullable=True, blank_is_null=False),
    Param("arrivals", "int", 200, "synthetic jobs when no jobs file is given", min=1, max=100_000),
    Param("days", "float", 30.0, "simulated span of the synthetic arrivals, days", min=0.001, max=3650.0),
    Param("max_gpus", "int", None, "largest synthetic job in GPUs; null: two thirds of the cluster", min=8,
          max=MAX_GPUS, nullable=True),
    SEED,
    ROUTING,
    QPS,
    HASH,
), check=_check_queue, doc="A job queue over simulated time on one cluster under a placement policy.")


def _check_jobs(v: dict) -> None:
    """The jobs file parses, each entry a valid JOB (errors name ``jobs[i].field``), and holds at most
    :data:`sim.jobs.queue.MAX_SHARED_JOBS` jobs."""
    read_jobs(v["jobs"], JOB.validate, timed=False, max_jobs=MAX_SHARED_JOBS)


JOBS = ParamSet("jobs", (
    Param("jobs", "text", None, "the jobs sharing the fabric: a JSON list or TOML [[job]] tables, each a job's "
                                "parameters (docs/jobs.md); placed one after the other on what the previous left",
          max=MAX_JOBS_TEXT),
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    HOTTEST,
), check=_check_jobs, doc="Several training jobs at once on one fabric: each one's step together and alone.")


