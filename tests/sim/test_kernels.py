"""The training step per kernel (sim/jobs/kernels.py, sim/jobs/gpu.py, sim/jobs/clocks.py): analytic cases."""
import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.jobs import kernels
from sim.jobs.clocks import clock_share
from sim.jobs.gpu import H100, gpu_of
from sim.jobs.job import STEP_ONLY
from sim.jobs.layout import resolve_job
from sim.jobs.models import MODELS
from sim.jobs.params import JOB
from sim.jobs.step import compute_times, job_chunk_layers, optimizer_step

# An A100 SXM 80GB catalog entry as the catalog helper writes it (keys of CONTRACTS.md): 312 dense BF16 TFLOPs,
# no FP8, 2,039 GB/s HBM2e, 108 SMs, 400 W
A100 = {"slug": "a100-sxm-80gb", "name": "A100 SXM4 80GB", "arch": "ampere", "bf16_tflops": 312, "fp8_tflops": 0,
        "memory_bandwidth_gbps": 2039 * 8, "memory_gb": 80, "sms": 108, "boost_clock_mhz": 1410, "power_w": 400}
BASE = {"model": "llama3-8b", "gpus": 8, "tp": 1, "pp": 1, "dp": 8, "seq": 8192, "batch_tokens": 8 * 8192,
        "recompute": "none", "hbm_gb": 1000.0}


def job(**over):
    gpu = over.pop("gpu", None)
    p = resolve_job(JOB.validate({**BASE, **over}))
    if gpu is not None:
        p["gpu"] = gpu
    return p


def settings(p):
    return kernels.settings(p, gpu_of(p))


def test_a_memory_bound_kernel_takes_its_bytes_over_the_achievable_hbm_bandwidth():
    # Given Llama 3 8B's layer, compiled: two residual+norm kernels (4 d elements each), rotary on Q and K
    # (read and write d + kv), SwiGLU (3 F), BF16, per token of the GPU's share
    m = MODELS["llama3-8b"]
    d, kv, F = m.dim, m.kv_dim, m.ffn_dim
    per_token = 2 * (2 * 4 * d + 2 * (d + kv) + 3 * F)
    for eff in (0.9, 0.45):
        p = job(hbm_efficiency=eff)
        lt = kernels.layer_times(m, p)
        # Then the forward takes bytes / (3.35 TB/s x eff), the backward twice that
        assert lt.mem_f == pytest.approx(8192 * per_token / (26800e9 / 8 * eff), rel=1e-12)
        assert lt.mem_b == pytest.approx(2 * lt.mem_f, rel=1e-12)
    # and a GEMM too thin to reuse its inputs (K = 64) is on the HBM roof: its bytes over the same bandwidth
    p = job(hbm_efficiency=0.9)
    t = kernels.gemm_seconds(8192, 8192, 64, gpu_of(p), settings(p))
    assert t == pytest.approx(2 * (8192 * 64 * 2 + 8192 * 8192) / (26800e9 / 8 * 0.9), rel=1e-12)


def test_gemm_efficiency_rises_with_size_stays_below_one_and_a_large_gemm_is_near_the_flat_value():
    p = job()
    g, s = gpu_of(p), settings(p)
    sizes = 2 ** np.arange(7, 15)                                      # 128 .. 16,384, square
    eff = kernels.gemm_efficiency(sizes, sizes, sizes, g, s)
    assert np.all(np.diff(eff) >= 0) and eff[-1] > 10 * eff[0] and np.all(eff <= 1.0)
    # K alone: thin GEMMs are bound by HBM, long ones by the tensor cores
    k = 2 ** np.arange(4, 15)
    assert np.all(np.diff(kernels.gemm_efficiency(8192, 8192, k, g, s)) >= 0)
    # a large GEMM at the burst ceiling (scale 1): the measured MAMF (794.5 of 989 [S100]) less its wave
    # quantization, near the flat 0.75; at the prior, that times the sustained-over-burst 0.849 [S139]
    burst = kernels.settings(job(gemm_efficiency_scale=1.0), g)
    big = float(kernels.gemm_efficiency(8192, 8192, 8192, g, burst))
    assert big == pytest.approx(794.5 / 989, rel=0.05) and abs(big - 0.75) < 0.06
    assert float(kernels.gemm_efficiency(8192, 8192, 8192, g, s)) == pytest.approx(0.849 * big, rel=1e-9)
    # a scale that would push the ceiling past the peak is held at it
    over = kernels.settings(job(gemm_efficiency_scale=2.0), g)
    assert float(kernels.gemm_efficiency(8192, 8192, 8192, g, over)) <= 1.0
    # a flat gemm_efficiency is that share exactly, whatever the shape
    flat = kernels.settings(job(gemm_efficiency=0.6), g)
    assert kernels.gemm_efficiency(sizes, sizes, sizes, g, flat) == pytest.approx(np.full(sizes.size, 0.6))


def test_wave_quantization_one_tile_more_than_the_sms_costs_a_second_wave():
    # 132 SMs: 132 tiles of 128 x 256 fill one wave; 133 need two, the second nearly empty (133 / 264 useful);
    # 128 x 128 tiles do better there, 266 in three waves (266 / 396), and the library takes those
    assert kernels.tile_quantization(128 * 132, 256, 132) == pytest.approx(1.0)
    assert kernels.tile_quantization(128 * 133, 256, 132) == pytest.approx(max(133 / 264, 266 / 396))


def test_the_optimizer_reads_and_writes_30_bytes_per_parameter_of_the_gpus_shard():
    assert kernels.OPTIMIZER_BYTES_PER_PARAM == 30       # master, gradient, m, v read; master, m, v written; BF16 copy
    m = MODELS["llama3-8b"]
    p = job(hbm_efficiency=0.9)
    shard = m.params / 8                                  # FSDP over 8: one eighth of the model's parameters
    t = optimizer_step(m, p, job_chunk_layers(m, p))
    assert t == pytest.approx(shard * 30 / (26800e9 / 8 * 0.9), rel=1e-12)
    ddp = job(hbm_efficiency=0.9, fsdp=False)
    assert optimizer_step(m, ddp, job_chunk_layers(m, ddp)) == pytest.approx(8 * t, rel=1e-12)


def test_a_power_cap_slows_the_compute_bound_kernels_by_the_clock_relation_only():
    m = MODELS["llama3-8b"]
    free, capped = compute_times(m, job()), compute_times(m, job(power_cap_w=500))
    share = clock_share(500, 700, 120)                    # H100: TDP 700 W, 120 W not scaling with the clock
    assert share == pytest.approx(((500 - 120) / (700 - 120)) ** (1 / 3))
    for k in ("gemm", "attention"):
        assert capped["parts"][k].sum() == pytest.approx(free["parts"][k].sum() / share, rel=1e-12)
    for k in ("memory", "launch"):
        assert capped["parts"][k].sum() == pytest.approx(free["parts"][k].sum(), rel=1e-12)
    # at or above the TDP nothing changes; a cap at the static part would stop the GPU: refused
    assert compute_times(m, job(power_cap_w=700))["slot"] == pytest.approx(free["slot"], rel=1e-12)
    with pytest.raises(ParamError) as e:
        compute_times(m, job(power_cap_w=100))
    assert "power_cap_w" in e.value.errors


def test_eager_is_slower_than_compiled_by_its_extra_launches_and_bytes():
    m = MODELS["llama3-8b"]
    L = m.layers
    comp = compute_times(m, job(launch_overhead_us=5.0, fused_loss=True))        # compiled, the loss fused too
    eager = compute_times(m, job(launch_overhead_us=5.0, compiled=False))
    # launches per layer: compiled 4 GEMMs + attention + 4 fused kernels forward, 4 + 1 + 8 backward, 4 weight
    # gradients = 26; eager 22 element-wise kernels a forward: 27 + 49 + 4 = 80. Head: 8 against 27.
    extra = (L * (80 - 26) + (27 - 8)) * 5e-6
    assert eager["parts"]["launch"].sum() - comp["parts"]["launch"].sum() == pytest.approx(extra, rel=1e-12)
    assert eager["parts"]["memory"].sum() > 2 * comp["parts"]["memory"].sum()
    assert eager["parts"]["gemm"].sum() == pytest.approx(comp["parts"]["gemm"].sum(), rel=1e-12)
    assert eager["slot"] > comp["slot"]


def test_the_gpu_comes_from_the_catalog_entry_a100_against_h100():
    h, a = gpu_of(job()), gpu_of(job(gpu=A100))
    assert h.peak["bf16"] == 989e12 and h.peak["fp8"] == 1979e12 and h.sms == 132
    assert a.peak["bf16"] == 312e12 and a.sms == 108 and a.hbm == pytest.approx(2039e9)
    # the same job's GEMMs take at least the peaks' ratio longer on the A100 (its ceiling 271.2/312 [S100])
    m = MODELS["llama3-8b"]
    th, ta = compute_times(m, job()), compute_times(m, job(gpu=A100))
    ratio = ta["parts"]["gemm"].sum() / th["parts"]["gemm"].sum()
    assert 989 / 312 * (0.803 / 0.87) * 0.9 < ratio < 989 / 312 * (0.803 / 0.87) * 1.1
    # attention: FlashAttention-2 on Ampere, FlashAttention-3 on Hopper; FA-3 cannot run on an A100
    assert kernels.attention_kernel(a, "auto") == "fa2" and kernels.attention_kernel(h, "auto") == "fa3"
    with pytest.raises(ParamError) as e:
        compute_times(m, job(gpu=A100, attention_kernel="fa3"))
    assert "attention_kernel" in e.value.errors
    # no FP8 tensor cores on an A100: refused naming precision
    with pytest.raises(ParamError) as e:
        compute_times(m, job(gpu=A100, precision="fp8"))
    assert "precision" in e.value.errors
    # TP overlap on an A100 cannot hold more SMs than its 108 (the parameter's bound is H100's 132)
    from sim.jobs.step import step_breakdown
    tp = job(gpu=A100, model="llama3-70b", gpus=16, tp=8, dp=2, tp_overlap_rs_sms=110, batch_tokens=2 * 8192)
    with pytest.raises(ParamError) as e:
        step_breakdown(MODELS["llama3-70b"], tp, {d: 1e-11 for d in ("tp", "cp", "pp", "dp")},
                       {d: 1e-6 for d in ("tp", "cp", "pp", "dp")}, {"tp": 8, "cp": 1, "pp": 1, "dp": 2})
    assert "tp_overlap_rs_sms" in e.value.errors
    # nor can a DP collective's kernel
    dp = job(gpu=A100, gpus=16, dp=16, dp_comm_sms=110, batch_tokens=16 * 8192)
    with pytest.raises(ParamError) as e:
        step_breakdown(MODELS["llama3-8b"], dp, {d: 1e-11 for d in ("tp", "cp", "pp", "dp")},
                       {d: 1e-6 for d in ("tp", "cp", "pp", "dp")}, {"tp": 1, "cp": 1, "pp": 1, "dp": 16})
    assert "dp_comm_sms" in e.value.errors
    # an entry missing keys (an older catalog) takes H100's for them
    assert gpu_of({"gpu": {"slug": "x", "bf16_tflops": 500}}).sms == H100["sms"]


def test_attention_efficiency_rises_with_the_sequence_toward_the_kernels_ceiling():
    g = gpu_of(job())
    seqs = np.array([1024, 2048, 4096, 8192, 16384, 131072])
    eff = np.array([kernels.attention_efficiency(int(s), g) for s in seqs])
    assert np.all(np.diff(eff) > 0) and eff[-1] < 630 / 989 and eff[-1] == pytest.approx(630 / 989, rel=0.01)
    # FlashAttention-2 on an H100 reaches about half of FlashAttention-3 [S24]
    assert kernels.attention_efficiency(8192, g, "fa2") == pytest.approx(eff[3] * 0.35 / (630 / 989))


def test_every_new_step_parameter_is_step_only():
    for name in ("gemm_efficiency_scale", "hbm_efficiency", "launch_overhead_us", "compiled", "power_cap_w",
                 "attention_kernel", "reshard_after_forward", "dp_comm_sms", "fp8_recipe", "fused_loss",
                 "tp_overlap_backend"):
        assert name in STEP_ONLY and name in JOB.by_name


def test_fp8_quantizes_every_gemm_operand_at_its_bytes_over_hbm():
    # Given Llama 3 8B on one GPU (TP 1), one micro-batch of 8,192 tokens: each GEMM quantizes its input (M x K) in
    # forward, its output gradient (M x N) in backward, its weights (K x N) once per step; 4 bytes per element with
    # delayed scaling (read BF16, write FP8 row-wise and transposed), 6 with current scaling (the amax read first)
    m = MODELS["llama3-8b"]
    d, kv, F, T = m.dim, m.kv_dim, m.ffn_dim, 8192
    ins = T * (d + d + d + F)
    grads = T * ((d + 2 * kv) + d + 2 * F + d)
    weights = d * (d + 2 * kv) + d * d + d * 2 * F + F * d
    rate = 26800e9 / 8 * 0.84
    bf16 = kernels.layer_times(m, job(hbm_efficiency=0.84))
    for recipe, q in (("delayed", 4), ("current", 6)):
        lt = kernels.layer_times(m, job(precision="fp8", fp8_recipe=recipe, hbm_efficiency=0.84))
        # Then the memory-bound time grows by those bytes over the achievable HBM bandwidth, and nothing else does
        assert lt.mem_f - bf16.mem_f == pytest.approx(q * (ins + weights) / rate, rel=1e-9)
        assert lt.mem_b - bf16.mem_b == pytest.approx(q * grads / rate, rel=1e-9)
        assert lt.launch_f - bf16.launch_f == pytest.approx(4 * 4e-6, rel=1e-9)       # one cast kernel per GEMM
    # the weights' cast spreads over the step's micro-batches; TP quantizes full-width tensors on the GPU's shard
    two = kernels.fp8_cast_bytes(kernels.layer_gemms(m, T, 1), 1, 2, "delayed")
    one = kernels.fp8_cast_bytes(kernels.layer_gemms(m, T, 1), 1, 1, "delayed")
    assert one[0] - two[0] == pytest.approx(4 * weights / 2, rel=1e-12) and one[1] == two[1]
    tp2 = kernels.fp8_cast_bytes(kernels.layer_gemms(m, T, 2), 2, 1, "delayed")
    assert tp2[0] == pytest.approx(4 * (ins + weights) / 2, rel=1e-12)
    assert tp2[1] == pytest.approx(4 * grads / 2, rel=1e-12)


def test_the_unfused_loss_moves_14_bytes_a_vocabulary_entry_each_way_against_the_fused_2_and_4():
    m = MODELS["llama3-8b"]
    V, T = m.vocab, 8192
    rate = 26800e9 / 8 * 0.84
    fused = kernels.layer_times(m, job(hbm_efficiency=0.84, fused_loss=True)).head
    fp32 = kernels.layer_times(m, job(hbm_efficiency=0.84)).head                 # the default: unfused, FP32
    assert fp32["mem_f"] - fused["mem_f"] == pytest.approx(T * (14 - 2) * V / rate, rel=1e-12)
    assert fp32["mem_b"] - fused["mem_b"] == pytest.approx(T * (14 - 4) * V / rate, rel=1e-12)
    assert fp32["launch_f"] - fused["launch_f"] == pytest.approx(2 * 4e-6, rel=1e-9)
    # eager with the unfused loss is the eager head as before: its norm's bytes and the loss's
    eager = kernels.layer_times(m, job(hbm_efficiency=0.84, compiled=False)).head
    assert eager["mem_f"] == pytest.approx(T * (36 * m.dim + 14 * V) / rate, rel=1e-12)


def test_flashattention_v1_is_40_percent_of_a100_at_long_sequences_and_fa2s_share_of_it_on_h100():
    a, h = gpu_of(job(gpu=A100)), gpu_of(job())
    long = 1 << 20                                          # the sequence factors all but 1
    assert kernels.attention_efficiency(long, a, "fa1") == pytest.approx(0.40, rel=1e-3)
    assert kernels.attention_efficiency(long, h, "fa1") == pytest.approx(0.40 * 0.35 / 0.73, rel=1e-3)
    for s in (2048, 65536):
        assert (kernels.attention_efficiency(s, a, "fa1") / kernels.attention_efficiency(s, a, "fa2")
                == pytest.approx(0.40 / 0.73, rel=1e-12))


def test_triton_flashattention_is_fa2_over_1_4_forward_and_over_2_backward():
    # The FlashAttention-2 paper [S170]: FA-2 is around 1.3-1.5x faster than FlashAttention in Triton in the forward
    # pass and around 2x faster in the backward pass (A100); the same ratios assumed on H100
    a, h = gpu_of(job(gpu=A100)), gpu_of(job())
    for g in (a, h):
        for s in (2048, 65536):
            fa2 = kernels.attention_efficiency(s, g, "fa2")
            assert kernels.attention_efficiency(s, g, "triton") == pytest.approx(fa2 / 1.4, rel=1e-12)
            assert kernels.attention_efficiency(s, g, "triton", backward=True) == pytest.approx(fa2 / 2, rel=1e-12)
            # the other kernels' backward runs at their forward's efficiency
            assert kernels.attention_efficiency(s, g, "fa2", backward=True) == fa2
    # In a step: the forward takes 1.4 x FA-2's time, the backward (2.5 x the forward's FLOPs) 2 x FA-2's
    m = MODELS["llama3-8b"]
    fa2 = kernels.layer_times(m, job(gpu=A100, attention_kernel="fa2"))
    tri = kernels.layer_times(m, job(gpu=A100, attention_kernel="triton"))
    assert tri.attn_f == pytest.approx(1.4 * fa2.attn_f, rel=1e-12)
    assert tri.attn_b == pytest.approx(2.0 * fa2.attn_b, rel=1e-12)
    assert tri.attn_b / tri.attn_f == pytest.approx(2.5 * 2.0 / 1.4, rel=1e-12)
    assert tri.gemm_f == fa2.gemm_f and tri.mem_f == fa2.mem_f


def test_a_gpt_layer_has_two_mlp_matrices_layernorm_and_gelu_and_no_rotary():
    from sim.jobs.models import ModelShape
    llama = ModelShape("x", 24, 2048, 8192, 16, 16)
    gpt = ModelShape("x", 24, 2048, 8192, 16, 16, layer="gpt")
    d, F = 2048, 8192
    # GELU MLP: up and down (2 d F parameters), FC1 of width F; SwiGLU: gate, up and down, FC1 of width 2 F
    assert llama.layer_params - gpt.layer_params == d * F
    assert kernels.layer_gemms(gpt, 1000, 2)["fc1"] == (1000, F / 2, d)
    assert kernels.layer_gemms(llama, 1000, 2)["fc1"] == (1000, F, d)
    assert gpt.activation_bytes_per_token() == 2 * (4 * d + 2 * d + 2 * F)
    # eager (MPT's low-precision LayerNorm, one BF16 kernel each): 2 LayerNorms (2 d), 2 residual adds (3 d),
    # GELU (2 F), BF16, 5 kernels; compiled: 2 residual-add + LayerNorm (4 d), GELU, 3 kernels
    assert kernels.layer_memory(gpt, False) == (2 * (2 * 2 * d + 2 * 3 * d + 2 * F), 5)
    assert kernels.layer_memory(gpt, True) == (2 * (2 * 4 * d + 2 * F), 3)
    assert kernels.layer_memory(gpt, False)[0] < kernels.layer_memory(llama, False)[0] / 3
    # the head's final LayerNorm: one kernel eager too
    assert kernels.head_memory(gpt, False, False)[0] == 2 * 2 * d + 14 * gpt.vocab
    # the job parameter reaches the model
    p = job(model="custom", layers=24, dim=2048, ffn_dim=8192, heads=16, kv_heads=16, layer="gpt")
    from sim.jobs.layout import model_of
    assert model_of(p).layer == "gpt" and model_of(job()).layer == "llama"


def test_per_op_checkpointing_runs_wo_again_unless_a_compiled_layer_with_tp_leaves_it_out():
    # wo's output is the residual sum the MLP norm reads without TP; eager PyTorch replays the forward in call order
    # up to w3 (after wo) [S173]; only a compiled layer with TP (wo feeds the saved reduce-scatter alone) skips it
    op_recompute_gemms = kernels.op_recompute_gemms
    m = MODELS["llama3-8b"]
    assert set(op_recompute_gemms(m, 8192, 8, compiled=True)) == {"wk", "w3"}
    assert set(op_recompute_gemms(m, 8192, 8, compiled=False)) == {"wk", "wo", "w3"}
    assert set(op_recompute_gemms(m, 8192, 1, compiled=True)) == {"wk", "wo", "w3"}
    assert op_recompute_gemms(m, 8192, 8)["wo"] == (8192, m.dim, m.dim / 8)
