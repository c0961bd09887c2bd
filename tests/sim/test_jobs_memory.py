"""A job's memory per GPU (sim/jobs/models.py, sim/jobs/layout.py): held activations from the schedule's table,
the framework, NCCL and allocator parts, per-layer recomputation chosen to fit; and the overlap of TP and DP
communication (sim/jobs/step.py)."""
import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.jobs.layout import DIMS, resolve_job
from sim.jobs.models import (BF16, CUDA_CONTEXT_BYTES, FP32, FRAGMENTATION, MODELS, chunk_layers, nccl_buffer_bytes,
                             stage_memory)
from sim.jobs.params import JOB
from sim.jobs.pipeline import build, peak_in_flight
from sim.jobs.step import compute_times, pipelined, step_breakdown

L405 = {"model": "llama3-405b", "gpus": 16384, "tp": 8, "pp": 16, "dp": 128, "seq": 8192, "batch_tokens": "16M"}


def test_nccl_buffers_count_channels_peers_and_protocols():
    # TP and DP rings: 32 channels x one receiving peer x (Simple 4 MiB + LL128 4,915,200 B + LL 524,288 B);
    # two pipeline neighbours x 2 channels x 4 MiB
    per = (4 << 20) + 4_915_200 + 524_288
    assert nccl_buffer_bytes({"tp": 8, "cp": 1, "pp": 16, "dp": 128}) == 2 * 32 * per + 2 * 2 * (4 << 20)
    assert nccl_buffer_bytes({"tp": 1, "cp": 1, "pp": 1, "dp": 1}) == 0


def test_1f1b_first_stage_holds_pp_micro_batches_of_its_layers():
    p = resolve_job(JOB.validate({**L405, "recompute": "none"}))
    model = MODELS["llama3-405b"]
    cl = chunk_layers(126, 16, 1, True)
    held = peak_in_flight(build("1f1b", 16, 16), cl)
    assert held[0] == 16 * 7 and held[1] == 15 * 8                      # stage s holds pp - s micro-batches
    tokens = 8192 / 8
    full = tokens * model.activation_bytes_per_token()
    st = p["memory_stages"]
    assert st[1]["activations"] == pytest.approx(15 * 8 * full, rel=1e-12)
    assert st[-1]["activations"] == pytest.approx(1 * 7 * full + tokens * model.vocab * FP32, rel=1e-12)
    overhead = CUDA_CONTEXT_BYTES + nccl_buffer_bytes({"tp": 8, "cp": 1, "pp": 16, "dp": 128})
    tensors = sum(st[1][k] for k in ("weights", "gradients", "optimizer", "activations"))
    assert st[1]["total"] == pytest.approx(tensors * (1 + FRAGMENTATION) + overhead, rel=1e-12)
    assert p["memory"]["total"] == max(s["total"] for s in st) < 80e9


def test_interleaved_with_m_equal_pp_holds_every_micro_batch_like_1f1b_stage_0():
    # m = pp = 16, v = 2: Megatron warms stage 0 up with 2 (pp - 1) + (v - 1) pp = 46 >= m v = 32 forwards: all
    # of them, so it holds 16 micro-batches of its two chunks (4 + 3 layers: 112 layer-micro-batches, 1F1B's 16 x 7)
    cl = chunk_layers(126, 16, 2, True)
    assert peak_in_flight(build("interleaved", 16, 16, 2), cl)[0] == 16 * cl[0].sum()
    # with more micro-batches (m = 32) it holds Korthikanti's 1 + (pp - 1)/(pp v) times pp micro-batches' chunks
    assert peak_in_flight(build("interleaved", 16, 32, 2))[0] == 2 * 15 + 16 + 1 == 16 * 2 * (1 + 15 / 32)


def test_selective_recompute_takes_the_fewest_layers_that_fit_and_costs_only_theirs():
    base = {**L405, "hbm_gb": 70.0}
    p = resolve_job(JOB.validate({**base, "recompute": "selective"}))
    r = np.array(p["recompute_layers"])
    assert p["recompute_mode"] == "selective" and 0 < r.max() < 8
    model = MODELS["llama3-405b"]
    common = dict(tp=8, cp=1, dp=128, seq=8192, micro_batch=1, fsdp=True, overhead=p["memory"]["framework"],
                  fragmentation=FRAGMENTATION)
    cl = chunk_layers(126, 16, 1, True)
    layers, held = cl.sum(axis=1), peak_in_flight(p["pipeline"], cl)
    fits = stage_memory(model, **common, layers=layers, held=held, recompute=r)
    assert all(s["total"] <= 70e9 for s in fits)
    for s in np.flatnonzero(r):                                          # one layer fewer does not fit
        fewer = r.copy()
        fewer[s] -= 1
        assert stage_memory(model, **common, layers=layers, held=held, recompute=fewer)[s]["total"] > 70e9
    # compute: the recomputed layers' forward again (not the output head's), those layers only
    none = compute_times(model, resolve_job(JOB.validate({**L405, "recompute": "none"})))
    sel = compute_times(model, p)
    head = np.zeros(16)
    h = none["layer"].head
    head[15] = h["gemm_f"] + h["mem_f"] + h["launch_f"]
    layer_forward = none["f"][:, 0] - head
    extra = np.asarray(sel["per_stage"]) - np.asarray(none["per_stage"])
    assert extra == pytest.approx(r / layers * layer_forward, rel=1e-9)


def test_auto_recomputes_nothing_when_the_job_fits_and_full_recomputes_every_layer():
    assert resolve_job(JOB.validate(L405))["recompute_mode"] == "none"
    p = resolve_job(JOB.validate({**L405, "recompute": "full"}))
    assert p["recompute_mode"] == "full" and p["recompute_layers"] == chunk_layers(126, 16, 1, True).sum(1).tolist()


def test_a_job_that_does_not_fit_is_refused_on_the_field_that_fixes_it():
    with pytest.raises(ParamError) as e:
        JOB.validate({**L405, "pp": 4, "dp": 512, "recompute": "none", "hbm_gb": 80.0})
    assert "pp" in e.value.errors and "framework and NCCL" in str(e.value.errors["pp"])
    with pytest.raises(ParamError) as e:
        JOB.validate({"model": "llama3-405b", "gpus": 8, "tp": 8, "pp": 1, "dp": 1, "seq": 8192, "batch_tokens": 8192,
                      "hbm_gb": 1.0})
    assert "model" in e.value.errors or "pp" in e.value.errors


def test_without_a_cluster_the_largest_gpu_holds_and_the_run_checks_its_own():
    """Validated alone (no GPU known) a job's memory is not refused; run on an H100 cluster it is checked against the
    H100's 80 GB (the GPU's catalog memory_gb), refused on the field that fixes it with that GPU's numbers."""
    from sim.fabric.topology import load_topology
    from sim.jobs.job import solve_job
    from sim.jobs.layout import unplaced_hbm_gb
    assert unplaced_hbm_gb() > 80.0
    big = {"model": "llama3-70b", "gpus": 64, "tp": 8, "pp": 1, "dp": 8, "seq": 16384, "batch_tokens": 16384 * 8,
           "recompute": "none"}
    need = JOB.validate(big)
    with pytest.raises(ParamError) as e:
        solve_job(load_topology("demo-256")[1], need)
    assert "more than the GPU's 80 GB" in str(e.value)


def test_pipelined_overlap_exposes_one_piece_or_the_excess():
    assert pipelined(1.0, 10.0, 8) == pytest.approx(1.0 / 8)           # short comm: its first piece
    assert pipelined(10.0, 1.0, 8) == pytest.approx(10.0 - 1.0 + 1.0 / 8)   # long comm: all but the GEMM's
    assert pipelined(0.0, 5.0, 8) == 0.0


def test_tp_overlap_hides_behind_the_gemms_and_cp_stays_exposed_as_llama3_says():
    model = MODELS["llama3-70b"]
    base = {"model": "llama3-70b", "gpus": 64, "tp": 8, "cp": 2, "pp": 2, "dp": 2, "seq": 16384,
            "batch_tokens": 16384 * 2 * 4}
    unit = {d: 2e-11 for d in DIMS}
    alpha = {d: 5e-6 for d in DIMS}
    ranks = {"tp": 8, "cp": 2, "pp": 2, "dp": 2}
    on = step_breakdown(model, resolve_job(JOB.validate({**base, "tp_comm_overlap": True})), unit, alpha, ranks)
    off = step_breakdown(model, resolve_job(JOB.validate({**base, "tp_comm_overlap": False})), unit, alpha, ranks)
    assert 0 < on["tp"] < off["tp"]
    # off: every TP collective of the busiest stage exposed: 4 per layer forward, 4 backward, per micro-batch
    s = off["busiest_stage"]
    assert off["tp"] == pytest.approx(off["stages"][s]["tp"])
    layers = off["stages"][s]["layers"]
    act = 16384 / 2 * model.dim * BF16
    from sim.jobs.step import collective_time
    one = collective_time("allgather", act, 8, unit["tp"], alpha["tp"])
    assert off["tp"] == pytest.approx(4 * 8 * layers * one, rel=1e-12)  # 4 micro-batches x 8 collectives
    # CP: the K/V all-gather and its gradients' reduce-scatter exposed whole, with or without TP overlap
    assert on["cp"] == off["cp"] == pytest.approx(on["comm_total"]["cp"] * layers / max(
        st["layers"] for st in on["stages"]), rel=1e-12)


# ------------------------------------------------------------------ one-layer chunks: Llama 3's balanced end chunks
def test_balanced_one_layer_chunks_leave_the_end_chunks_the_embedding_and_the_head_only():
    from sim.jobs.models import chunks_hold_layers
    # Llama 3 [S3]: one transformer layer fewer on the first and last stages, so that "the first model chunk on the
    # first stage has only the embedding, and the last model chunk on the last stage has only output projection and
    # loss": 126 layers + embedding + head = 128 one-slot chunks = 16 stages x 8 chunks
    cl = chunk_layers(126, 16, 8, True)
    assert cl[0, 0] == 0 and cl[-1, -1] == 0 and cl.sum() == 126
    assert (np.delete(cl.T.ravel(), [0, cl.size - 1]) == 1).all()
    assert chunks_hold_layers(cl, True) and not chunks_hold_layers(cl, False)
    # any other chunk without a layer is refused
    bad = cl.copy()
    bad[1, 0] = 0
    assert not chunks_hold_layers(bad, True)


def test_llama3_405b_runs_on_16_stages_of_8_one_layer_chunks_only_with_balanced_ends():
    base = {**L405, "schedule": "interleaved", "virtual_stages": 8, "recompute": "none"}
    p = resolve_job(JOB.validate(base))
    assert p["micro_batches"] == 16 and p["memory"]["total"] < 80e9
    with pytest.raises(ParamError) as e:
        resolve_job(JOB.validate({**base, "balance_stages": False}))
    assert "pp" in e.value.errors
    with pytest.raises(ParamError) as e:                 # 136 chunks: more than 126 layers and the two ends
        resolve_job(JOB.validate({**base, "pp": 17, "gpus": 8 * 17 * 128}))
    assert "pp" in e.value.errors


def test_an_embedding_only_first_chunk_keeps_the_step_finite_and_its_interleaving_bubble():
    # the step of the 405B layout on 8 one-layer chunks per stage: the first stage's first chunk has no layer; its
    # DP overlap takes the stage's mean layer, and the bubble is the schedule's, near (pp - 1)/(v m) of the work
    m = MODELS["llama3-405b"]
    p = resolve_job(JOB.validate({**L405, "schedule": "interleaved", "virtual_stages": 8, "recompute": "none"}))
    ranks = {"tp": 8, "cp": 1, "pp": 16, "dp": 128}
    zero = {d: 0.0 for d in DIMS}
    b = step_breakdown(m, p, {**zero, "dp": 1e-12}, zero, ranks)
    assert all(np.isfinite(b[k]) and b[k] >= 0 for k in ("compute", "tp", "pp", "dp", "bubble", "step"))
    work = b["compute"] + b["tp"]
    assert b["bubble"] / work == pytest.approx(15 / (8 * 16), rel=0.15)
    one = step_breakdown(m, resolve_job(JOB.validate({**L405, "recompute": "none"})), {**zero, "dp": 1e-12}, zero,
                         ranks)
    assert one["bubble"] > 6 * b["bubble"]
