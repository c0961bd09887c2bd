"""The training-job step model (sim/jobs/job.py): analytic cases, the fabric's part, jobs sharing the fabric."""
import numpy as np
import pytest

from sim.fabric.achievable import framing
from sim.jobs.job import run_job, run_jobs
from sim.jobs.layout import DIMS, groups_of, rank_grid, resolve_job
from sim.jobs.step import ATTENTION_EFFICIENCY, GEMM_EFFICIENCY, step_breakdown

PEAK_BF16 = 989e12                # the catalog's H100 SXM (dense BF16)
from sim.jobs.traffic import job_traffic
from sim.jobs.models import MODELS, stage_layers
from sim.fabric.nccl_tuning import base_latency, sim_hop
from sim.fabric.latency import LatencyModel
from sim.jobs.params import JOB
from sim.fabric.placement import place
from sim.fabric.topology import load_topology
from tests.sim.test_netsim import spec_data, topo_of

SMALL = {"model": "custom", "layers": 4, "dim": 1024, "ffn_dim": 4096, "heads": 8, "kv_heads": 8, "vocab": 32000,
         "seq": 2048}


def nonblocking():
    """A non-blocking two-tier fabric: 4 racks x 2 hosts (64 GPUs), 16 NICs and 16 uplinks per leaf."""
    return topo_of(spec_data(racks=4, hosts_per_rack=2, hosts_per_leaf=2, leaf_uplinks=16, spines=4))


def test_dp_only_step_is_compute_plus_the_alpha_beta_allreduce():
    # Given a DP-only job (DDP, no overlap) over 64 GPUs of a non-blocking fabric, pinned routing
    topo = nonblocking()
    n, m = 64, 2
    p = JOB.validate({**SMALL, "gpus": n, "tp": 1, "dp": n, "batch_tokens": 2048 * n * m, "fsdp": False,
                      "overlap": False, "routing": "pinned", "gemm_efficiency": GEMM_EFFICIENCY,
                      "attention_efficiency": ATTENTION_EFFICIENCY["bf16"]})
    r = run_job(topo, p)
    # Compute from the FLOPs: forward GEMMs 2 (2 d^2 + 2 d kv + 3 d F) per token per layer, output head 2 d V,
    # attention 2 s d; backward twice the forward; m micro-batches of one sequence.
    d, F, L, V, s = 1024, 4096, 4, 32000, 2048
    gemm = L * 2 * (2 * d * d + 2 * d * d + 3 * d * F) + 2 * d * V
    attn = L * 2 * s * d
    # With flat efficiencies given, the GEMMs and attention are the FLOPs at those shares of the peak; the
    # memory-bound kernels and the launches come on top (tests/sim/test_kernels.py has their own cases).
    parts = r.breakdown["compute_parts"]
    flops = m * 3 * s * (gemm / (PEAK_BF16 * GEMM_EFFICIENCY) + attn / (PEAK_BF16 * ATTENTION_EFFICIENCY["bf16"]))
    assert parts["gemm"] + parts["attention"] == pytest.approx(flops, rel=1e-12)
    compute = r.breakdown["compute"]
    assert compute == pytest.approx(sum(parts.values()), rel=1e-12) and parts["memory"] > 0 and parts["launch"] > 0
    # AllReduce of the FP32 gradients by a ring over 8 hosts: 2 (n - 1) steps of S / n, each NIC at 50 GB/s
    # carrying 2 of NCCL's 16 channels at its payload rate (RoCEv2 framing): bandwidth term 2 (n - 1) / n x S /
    # (8 x 50 GB/s x framing). Latency: each step one
    # hop at most 3 switches away (host part 22/2 - 5 us, 1 us per switch) plus Simple's network cost, and
    # NCCL's Simple base latency once.
    S = 4 * (L * (2 * d * d + 2 * d * d + 3 * d * F + 2 * d) + 2 * V * d + d)
    extra, _ = sim_hop("ring", "Simple", n, 8)
    alpha = LatencyModel().host("roce", 1e-6) + 3e-6 + extra
    allreduce = 2 * (n - 1) / n * S / (400e9 * framing("roce")) + 2 * (n - 1) * alpha + base_latency("ring", "Simple")
    assert r.breakdown["dp"] == pytest.approx(allreduce, rel=1e-9)
    assert r.step_time == pytest.approx(compute + allreduce + r.breakdown["optimizer"], rel=1e-12)
    for k in ("tp", "cp", "pp", "bubble"):
        assert r.breakdown[k] == 0


# Equal stages: a vocabulary of one token makes the output head's FLOPs negligible (2 d per token against a
# layer's 33.5 M), flat GEMM efficiency and no launch gaps make its GEMM and its kernels' launches so too (the final
# norm's bytes stay: 32 layers make them 0.1 % of a stage), and balance_stages off keeps every stage at layers / pp:
# the closed forms then hold to 1e-3.
EVEN = {**SMALL, "layers": 32, "vocab": 1, "balance_stages": False, "gemm_efficiency": 0.75,
        "launch_overhead_us": 0.0}


@pytest.mark.parametrize("pp, m", [(4, 8), (2, 2), (8, 8)])
def test_1f1b_bubble_is_pp_minus_1_over_m_plus_pp_minus_1(pp, m):
    topo = nonblocking()
    p = JOB.validate({**EVEN, "gpus": 8 * pp, "tp": 8, "pp": pp, "dp": 1, "batch_tokens": 2048 * m})
    b = run_job(topo, p).breakdown
    pipelined = b["compute"] + b["tp"] + b["cp"] + b["bubble"]
    assert b["bubble"] / pipelined == pytest.approx((pp - 1) / (m + pp - 1), rel=1e-3)


def test_interleaving_divides_the_bubble_by_the_virtual_stages():
    topo = nonblocking()
    base = {**EVEN, "gpus": 32, "tp": 8, "pp": 4, "dp": 1, "batch_tokens": 2048 * 8}
    one = run_job(topo, JOB.validate(base)).breakdown
    two = run_job(topo, JOB.validate({**base, "schedule": "interleaved", "virtual_stages": 2})).breakdown
    assert two["bubble"] / (two["compute"] / 8 + two["tp"] / 8) == pytest.approx(3 / 2, rel=1e-3)
    assert one["bubble"] / (one["compute"] / 8 + one["tp"] / 8) == pytest.approx(3, rel=1e-3)


def test_tp_inside_one_host_never_touches_the_fabric():
    topo = nonblocking()
    p = resolve_job(JOB.validate({**SMALL, "gpus": 32, "tp": 8, "dp": 4, "batch_tokens": 2048 * 4, "hottest": 100}))
    gpus = place(topo, 32, "fragmented", seed=2)
    t = job_traffic(topo, gpus, p)
    tp = t.tag == DIMS.index("tp")
    assert tp.sum() > 0
    host = np.asarray(topo.gpu_host)
    assert (host[t.src[tp]] == host[t.dst[tp]]).all()
    for k, d in enumerate(DIMS):                                   # every GPU sends in each dimension of size > 1
        if p[d] > 1:
            assert set(t.src[t.tag == k].tolist()) == set(gpus.tolist())
    r = run_job(topo, p, gpus=gpus)
    for h in r.hottest:
        if "tp" in h.flows:
            assert h.name.startswith("nvlink")
    assert r.comm["tp"]["alpha_us"] == pytest.approx(sim_hop("ring", "Simple", 8, 1)[1] * 1e6)


def test_rank_order_tp_innermost_puts_each_tp_group_on_consecutive_ranks():
    grid = rank_grid({"tp": 8, "cp": 1, "pp": 4, "dp": 2}, ("tp", "cp", "pp", "dp"))
    assert (groups_of(grid, "tp")[1] == np.arange(8, 16)).all()
    assert (groups_of(grid, "pp")[0] == np.arange(0, 32, 8)).all()
    assert (groups_of(grid, "dp")[0] == np.array([0, 32])).all()
    swapped = rank_grid({"tp": 8, "cp": 1, "pp": 4, "dp": 2}, ("tp", "cp", "dp", "pp"))
    assert (groups_of(swapped, "dp")[0] == np.array([0, 8])).all()


def test_two_jobs_on_disjoint_racks_of_a_non_blocking_fabric_do_not_slow_each_other():
    topo = nonblocking()
    p = JOB.validate({**SMALL, "gpus": 32, "tp": 8, "dp": 4, "batch_tokens": 2048 * 4, "routing": "pinned"})
    racks = [np.arange(0, 32), np.arange(32, 64)]                # racks 0-1 and 2-3
    r = run_jobs(topo, [p, p], placements=racks)
    assert r.slowdowns == pytest.approx([1.0, 1.0], rel=1e-12)
    for g, together in zip(racks, r.together):                     # each job solved on its own, independently
        assert run_job(topo, p, gpus=g).step_time == pytest.approx(together.step_time, rel=1e-12)
    assert r.together[0].comm["dp"]["seconds_per_gib"] > 0


def test_jobs_sharing_an_oversubscribed_layer_slow_each_other():
    # demo-256: 1:4 at the CTSW layer; two jobs spread over both zones by host order share the zone exits.
    _, topo = load_topology("demo-256")
    p = JOB.validate({**SMALL, "gpus": 64, "tp": 8, "dp": 8, "batch_tokens": 2048 * 8, "placement": "fragmented",
                      "fsdp": False, "overlap": False})
    r = run_jobs(topo, [p, {**p, "seed": 1}])
    assert max(r.slowdowns) > 1.0
    assert min(r.slowdowns) >= 1.0 - 1e-9


def test_fragmented_placement_is_slower_than_topology_aware_on_the_roce_twin():
    _, topo = load_topology("demo-256")
    base = {**SMALL, "gpus": 128, "tp": 8, "dp": 16, "batch_tokens": 2048 * 16, "overlap": False}
    packed = run_job(topo, JOB.validate({**base, "placement": "topology"}))
    spread = run_job(topo, JOB.validate({**base, "placement": "fragmented", "seed": 3}))
    assert spread.breakdown["dp"] > packed.breakdown["dp"]
    assert spread.step_time > packed.step_time


def test_stage_layers_match_llama3s_uneven_split_and_sum_to_the_layers():
    assert stage_layers(126, 16, 1) == [7] + [8] * 14 + [7]
    for layers, pp, v in [(126, 16, 1), (80, 8, 2), (32, 4, 1), (33, 4, 1), (7, 7, 1)]:
        assert sum(stage_layers(layers, pp, v)) == layers


def test_model_presets_have_llama3s_parameter_counts():
    assert MODELS["llama3-8b"].params / 1e9 == pytest.approx(8.03, abs=0.01)
    assert MODELS["llama3-70b"].params / 1e9 == pytest.approx(70.6, abs=0.1)
    assert MODELS["llama3-405b"].params / 1e9 == pytest.approx(405.9, abs=0.1)


def test_mfu_counts_model_flops_only():
    topo = nonblocking()
    p = JOB.validate({**SMALL, "gpus": 8, "tp": 8, "batch_tokens": 2048, "recompute": "full"})
    r = run_job(topo, p)
    flops = MODELS["llama3-8b"].__class__("x", 4, 1024, 4096, 8, 8, 32000).model_flops_per_token(2048) * 2048
    assert r.tflops_per_gpu * 1e12 * 8 * r.step_time == pytest.approx(flops, rel=1e-12)
    assert r.breakdown["compute"] > 0 and r.to_dict()["layout"]["recompute"] == "full"


def test_step_breakdown_exposes_dp_beyond_what_one_layer_ahead_hides():
    m = MODELS["llama3-8b"]
    p = resolve_job(JOB.validate({"model": "llama3-8b", "gpus": 64, "tp": 8, "dp": 8, "batch_tokens": 8192 * 8,
                                  "dp_comm_sms": 0}))          # NCCL's kernels taking no SM from the compute
    ranks = {"tp": 8, "cp": 1, "pp": 1, "dp": 8}
    alpha = {d: 0.0 for d in DIMS}
    fast = step_breakdown(m, p, {d: 0.0 for d in DIMS}, alpha, ranks)
    slow = step_breakdown(m, p, {**{d: 0.0 for d in DIMS}, "dp": 1e-7}, alpha, ranks)
    assert fast["dp"] == pytest.approx(fast["comm_total"]["dp"] / 32, rel=1e-12)   # first gather, last reduction
    # one micro-batch of 32 layers: each later layer's gather hides behind the previous layer's forward (one layer
    # ahead), each reduction but the last behind the next layer's backward; beyond them the traffic is exposed
    hidden = slow["comm_total"]["dp"] - slow["dp"]
    assert p["micro_batches"] == 1
    assert slow["dp"] > 0 and hidden == pytest.approx(slow["compute"] * 31 / 32, rel=1e-9)


def test_overlapped_dp_collective_costs_at_least_the_sms_it_holds():
    from sim.jobs.step import overlapped
    # a collective shorter than the compute it overlaps still slows it by the SMs' share of its own length
    assert overlapped(1.0, 10.0, 16 / 132) == pytest.approx(16 / 132, rel=1e-12)
    assert overlapped(10.0, 1.0, 16 / 132) == pytest.approx(9.0, rel=1e-12)        # longer: exposed beyond it
    assert overlapped(2.0, 5.0, 0.0) == 0.0


def _dp_step(**kw):
    m = MODELS["llama3-8b"]
    p = resolve_job(JOB.validate({"model": "llama3-8b", "gpus": 64, "tp": 8, "dp": 8, "batch_tokens": 8192 * 8 * 4,
                                  **kw}))
    ranks = {"tp": 8, "cp": 1, "pp": 1, "dp": 8}
    zero = {d: 0.0 for d in DIMS}
    return p, step_breakdown(m, p, {**zero, "dp": 1e-12}, zero, ranks)


def _g_r(p):
    """One step's DP all-gather (BF16 weights) and reduce-scatter (FP32 gradients) seconds of the _dp_step job."""
    from sim.jobs.models import stage_params
    from sim.jobs.step import collective_time
    x = stage_params(MODELS["llama3-8b"], [32])[0] / p["tp"]
    return (collective_time("allgather", 2 * x, 8, 1e-12, 0.0), collective_time("reducescatter", 4 * x, 8, 1e-12, 0.0))


def test_dp_sms_held_expose_their_share_of_every_overlapped_layer():
    p, free = _dp_step(dp_comm_sms=0)
    _, held = _dp_step(dp_comm_sms=33)
    L = 32
    # tiny DP traffic hides behind every layer; held SMs add a quarter of each overlapped layer's collective
    # (31 gathers in forward, 31 reduce-scatters in backward), and nothing to the first gather or last reduction
    g, r = _g_r(p)
    assert held["dp"] - free["dp"] == pytest.approx(0.25 * (L - 1) * (g + r) / L, rel=1e-9)


def test_reshard_after_forward_gathers_twice_and_reduces_every_micro_batch():
    p, keep = _dp_step(dp_comm_sms=0)
    q, again = _dp_step(dp_comm_sms=0, reshard_after_forward=True)
    m = q["micro_batches"]
    assert m == 4
    g, r = _g_r(p)
    assert again["comm_total"]["dp"] == pytest.approx(2 * m * g + m * r, rel=1e-12)
    # traffic this small hides behind the layers but for each micro-batch's first gather (nothing before it to
    # overlap) and the last layer's reduce-scatter
    L = 32
    assert keep["dp"] == pytest.approx(g / L + r / L, rel=1e-9)
    assert again["dp"] == pytest.approx(m * g / L + r / L, rel=1e-9)


# ------------------------------------------------------------------ TP overlap and the SMs it takes from the GEMMs
def test_tp_overlap_without_sm_cost_is_the_plain_pipelined_overlap():
    from sim.jobs.step import pipelined, sm_slowdown
    assert sm_slowdown(0) == 1.0
    for c, g, n in ((1.0, 10.0, 8), (10.0, 1.0, 8), (3.0, 3.0, 4), (0.0, 5.0, 2), (2.0, 0.0, 8)):
        assert pipelined(c, g, n, sm_slowdown(0)) == pytest.approx(max(c, g) + min(c, g) / n - g, rel=1e-12)


def test_sm_cost_slows_the_overlapped_gemm_pieces_by_132_over_the_sms_left():
    from sim.jobs.step import GPU_SMS, pipelined, sm_slowdown
    assert GPU_SMS == 132                                   # H100 SXM
    for k in (1, 16, 24, 66, 131):
        assert sm_slowdown(k) == pytest.approx(132 / (132 - k), rel=1e-15)
    # no communication: the n - 1 pieces that run beside the collective's kernel take s times longer, the lone
    # one runs on every SM
    g, n, s = 6.0, 8, sm_slowdown(16)
    assert pipelined(0.0, g, n, s) == pytest.approx((n - 1) / n * g * (s - 1), rel=1e-12)
    # GEMM-bound (comm shorter than the slowed GEMM): one communication piece exposed plus the slowdown
    c = 1.0
    assert pipelined(c, g, n, s) == pytest.approx(c / n + (n - 1) / n * g * (s - 1), rel=1e-12)
    # communication-bound: the slowed GEMM hides behind it, as without the cost
    c = 20.0
    assert pipelined(c, g, n, s) == pytest.approx(pipelined(c, g, n, 1.0), rel=1e-12)
    with pytest.raises(ValueError):
        sm_slowdown(132)


def test_tp_overlap_never_beats_the_roofline_and_a_large_sm_cost_is_worse_than_no_overlap():
    from sim.jobs.step import pipelined, sm_slowdown
    rng = np.random.default_rng(26)
    for c, g, k in zip(rng.uniform(0, 5, 200), rng.uniform(0, 5, 200), rng.integers(0, 132, 200)):
        n = int(rng.choice([2, 4, 8]))
        total = g + pipelined(c, g, n, sm_slowdown(int(k)))
        assert total >= max(c, g) - 1e-12 and total >= (c + g) / n - 1e-12     # neither runs faster than alone
        assert pipelined(c, g, n, sm_slowdown(int(k))) >= pipelined(c, g, n, 1.0) - 1e-12   # SMs only cost
    # overlap is worse than the collective exposed once the GEMM's loss exceeds what it hides: (s - 1) g > c
    c, g, n = 1.0, 4.0, 8
    assert pipelined(c, g, n, sm_slowdown(16)) < c                 # 132/116: loses 0.55 s of 4, hides most of 1
    assert pipelined(c, g, n, sm_slowdown(100)) > c                # 132/32: loses 12.5 s


def _tp_step(**over):
    m = MODELS["llama3-70b"]
    base = {"model": "llama3-70b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "seq": 8192, "batch_tokens": 8192 * 4 * 4,
            "recompute": "none", "gemm_efficiency": GEMM_EFFICIENCY}
    p = resolve_job(JOB.validate({**base, **over}))
    unit = {d: 2e-11 for d in DIMS}
    alpha = {d: 5e-6 for d in DIMS}
    return m, p, step_breakdown(m, p, unit, alpha, {"tp": 8, "cp": 1, "pp": 2, "dp": 4}), unit, alpha


def test_tp_overlap_is_on_by_default_with_transformer_engines_sms():
    p = JOB.validate({})
    assert p["tp_comm_overlap"] is True and p["tp_overlap_rs_sms"] == 16 and p["tp_overlap_ag_sms"] == 0
    from sim.core.errors import ParamError
    for field, bad in (("tp_overlap_rs_sms", 132), ("tp_overlap_ag_sms", -1)):
        with pytest.raises(ParamError) as e:
            JOB.validate({field: bad})
        assert field in e.value.errors


def test_step_tp_is_each_collective_pipelined_with_its_gemm_slowed_by_its_kernels_sms():
    from sim.jobs.step import collective_time, pipelined, sm_slowdown
    m, p, br, unit, alpha = _tp_step()
    # by hand: a GPU's tokens, the four GEMMs of a layer (QKV, attention output, MLP in, MLP out) at the GEMM rate
    # (flat: _tp_step gives gemm_efficiency); backward: input and weight gradients, twice the FLOPs
    t = 8192 / 8
    d, kv, F = m.dim, m.kv_dim, m.ffn_dim
    rate = PEAK_BF16 * GEMM_EFFICIENCY
    qkv, out, fc1, fc2 = (t * 2 * x / rate for x in (d * (d + 2 * kv), d * d, 2 * d * F, d * F))
    act = 8192 * d * 2
    c = collective_time("allgather", act, 8, unit["tp"], alpha["tp"])
    assert c == collective_time("reducescatter", act, 8, unit["tp"], alpha["tp"])
    ag, rs = 1.0, 132 / 116            # all-gathers by copy engines, reduce-scatters on 16 SMs
    fwd = (pipelined(c, qkv, 8, ag) + pipelined(c, out, 8, rs) + pipelined(c, fc1, 8, ag)
           + pipelined(c, fc2, 8, rs))
    bwd = (pipelined(c, 2 * qkv, 8, rs) + pipelined(c, 2 * out, 8, ag) + pipelined(c, 2 * fc1, 8, rs)
           + pipelined(c, 2 * fc2, 8, ag))
    s = br["busiest_stage"]
    layers = br["stages"][s]["layers"]
    assert br["tp"] == pytest.approx(p["micro_batches"] * layers * (fwd + bwd), rel=1e-12)
    # 0 SMs: the plain overlap; every SM but one: worse than no overlap at all (these GEMMs are long)
    _, _, free, _, _ = _tp_step(tp_overlap_rs_sms=0)
    _, _, off, _, _ = _tp_step(tp_comm_overlap=False)
    _, _, hog, _, _ = _tp_step(tp_overlap_rs_sms=131, tp_overlap_ag_sms=131)
    assert free["tp"] < br["tp"] < off["tp"] < hog["tp"]
    assert sm_slowdown(0) == ag


def test_per_op_checkpointing_recomputes_wk_w3_the_memory_bound_kernels_and_two_all_gathers():
    # torchtitan's per-op SAC [S173]: the 2nd, 4th, 6th matmuls of wq, wk, wv, wo, w1, w3, w2 are not saved; wo's
    # output feeds only the saved reduce-scatter, so the backward runs wk and w3 again, the forward's memory-bound
    # kernels and, with TP, the two all-gathers of the norms' outputs
    from sim.jobs.kernels import gemm_seconds, layer_times, settings
    from sim.jobs.step import collective_time, compute_times
    from sim.jobs.gpu import gpu_of
    m, none, br0, unit, alpha = _tp_step(tp_comm_overlap=False)
    _, op, br1, _, _ = _tp_step(tp_comm_overlap=False, recompute="op")
    assert op["recompute_mode"] == "op" and not any(op["recompute_layers"])
    t = 8192                                                    # a micro-batch's tokens, gathered over TP
    lt0, lt1 = layer_times(m, none), layer_times(m, op)
    assert lt0.op is None
    g, s = gpu_of(op), settings(op, gpu_of(op))
    wk, w3 = (float(gemm_seconds(t, n / 8, m.dim, g, s)) for n in (m.kv_dim, m.ffn_dim))
    assert lt1.op["gemm"] == pytest.approx(wk + w3, rel=1e-12)
    assert lt1.op["memory"] == pytest.approx(lt0.mem_f, rel=1e-12)           # BF16: no casts
    # the backward of every layer grows by those seconds, the forward not at all; the parts still sum up
    c0, c1 = compute_times(m, none), compute_times(m, op)
    cl = np.array([[40.0], [40.0]])
    assert np.allclose(c1["f"], c0["f"]) and np.allclose(c1["b"] - c0["b"], cl * sum(lt1.op.values()))
    assert sum(br1["compute_parts"].values()) == pytest.approx(br1["compute"], rel=1e-12)
    # vanilla TP: two all-gathers more per layer and micro-batch, exposed
    c = collective_time("allgather", 8192 * m.dim * 2, 8, unit["tp"], alpha["tp"])
    assert br1["tp"] - br0["tp"] == pytest.approx(op["micro_batches"] * 40 * 2 * c, rel=1e-9)
    # async TP: each pipelined with the recomputed GEMM it feeds
    from sim.jobs.step import pipelined
    _, _, ov0, _, _ = _tp_step()
    _, opo, ov1, _, _ = _tp_step(recompute="op")
    wk, w3 = layer_times(m, opo).op_gemms
    assert ov1["tp"] - ov0["tp"] == pytest.approx(
        opo["micro_batches"] * 40 * (pipelined(c, wk, 8) + pipelined(c, w3, 8)), rel=1e-9)


def test_per_op_checkpointing_saves_the_layer_input_q_v_attention_w1_and_the_reduce_scatter():
    m = MODELS["llama3-8b"]
    d, kv, F = m.dim, m.kv_dim, m.ffn_dim
    assert m.op_activation_bytes_per_token(1) == 2 * (4 * d + kv + F)
    assert m.op_activation_bytes_per_token(8) == 2 * (5 * d + kv + F)
    assert m.op_activation_bytes_per_token(1) < m.activation_bytes_per_token()
    base = {"model": "llama3-8b", "gpus": 8, "tp": 1, "dp": 8, "seq": 8192, "batch_tokens": 8 * 8192 * 2,
            "micro_batch": 2, "hbm_gb": 1000.0}
    none = resolve_job(JOB.validate({**base, "recompute": "none"}))
    op = resolve_job(JOB.validate({**base, "recompute": "op"}))
    tokens = 8192 * 2
    assert (none["memory"]["activations"] - op["memory"]["activations"]
            == pytest.approx(32 * tokens * (m.activation_bytes_per_token() - m.op_activation_bytes_per_token(1)),
                             rel=1e-9))


def test_pytorch_async_tp_leaves_the_backward_reduce_scatters_of_summed_gradients_exposed():
    # PyTorch's micro-pipeline pass fuses a reduce-scatter only with the matmul producing its input [S175]; the
    # backward's two reduce-scatters take the sum of the separate q/k/v (w1/w3) linears' input gradients: exposed
    from sim.jobs.step import collective_time, pipelined, sm_slowdown
    from sim.jobs.kernels import layer_times
    m, p, te, unit, alpha = _tp_step()
    _, pt, torch_, _, _ = _tp_step(tp_overlap_backend="torch")
    c = collective_time("reducescatter", 8192 * m.dim * 2, 8, unit["tp"], alpha["tp"])
    g = layer_times(m, p).gemms
    rs = sm_slowdown(16)
    hidden = pipelined(c, g["qkv"][1], 8, rs) + pipelined(c, g["fc1"][1], 8, rs)
    layers = te["stages"][te["busiest_stage"]]["layers"]
    assert torch_["tp"] - te["tp"] == pytest.approx(p["micro_batches"] * layers * (2 * c - hidden), rel=1e-9)
    # without overlap the backend changes nothing
    _, _, off_te, _, _ = _tp_step(tp_comm_overlap=False)
    _, _, off_torch, _, _ = _tp_step(tp_comm_overlap=False, tp_overlap_backend="torch")
    assert off_te["tp"] == off_torch["tp"]


# ------------------------------------------------------------------ PP sends on NCCL's channels per network peer
def test_a_pp_send_between_hosts_runs_on_nccls_two_channels_per_net_peer_one_inside_a_host():
    from sim.jobs.models import NCCL_P2P_CHANNELS
    from sim.jobs.traffic import pp_transfers
    assert NCCL_P2P_CHANNELS == 2                      # NCCL_NCHANNELS_PER_NET_PEER's default [S6, S180]
    host = np.array([0, 0, 1, 1])
    # one pipeline over GPUs 0, 1 (host 0) and 2 (host 1): 0<->1 inside the host, 1<->2 between hosts
    src, dst, share, chan, grp = pp_transfers(np.array([[0, 1, 2]]), False, host)
    pairs = sorted(zip(src.tolist(), dst.tolist(), chan.tolist(), share.tolist()))
    assert pairs == [(0, 1, 0, 1.0), (1, 0, 0, 1.0), (1, 2, 0, 0.5), (1, 2, 1, 0.5), (2, 1, 0, 0.5), (2, 1, 1, 0.5)]
    assert (grp == 0).all()
    # without hosts (the channels unknown): one channel per send, as before
    src, dst, share, chan, _ = pp_transfers(np.array([[0, 1, 2]]), False)
    assert src.size == 4 and (share == 1).all() and (chan == 0).all()


def test_two_channels_per_pp_send_take_a_larger_share_of_a_nic_shared_with_a_dp_ring(monkeypatch):
    # TP 8 (a host) x PP 2 x DP 4: each GPU's NIC carries its PP sends and its DP ring; max-min shares a link per
    # flow, so the send's second connection (NCCL_NCHANNELS_PER_NET_PEER 2) raises its share of the NIC
    import sim.jobs.traffic as tr
    topo = nonblocking()
    p = JOB.validate({**SMALL, "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "batch_tokens": 2048 * 4 * 2,
                      "routing": "pinned"})
    two = run_job(topo, p).comm["pp"]["seconds_per_gib"]
    plain = tr.pp_transfers
    monkeypatch.setattr(tr, "pp_transfers", lambda g, inter, host=None: plain(g, inter, host, channels=1))
    one = run_job(topo, p).comm["pp"]["seconds_per_gib"]
    assert two < one


def test_end_stages_of_the_embedding_and_the_head_alone_give_a_finite_step():
    # 6 layers + embedding + head on 8 stages of one chunk: the first and last stages hold no transformer layer
    # (balance_stages), their DP collectives counted as one layer's; without balance_stages it is refused on pp
    topo = nonblocking()
    base = {**SMALL, "layers": 6, "gpus": 64, "tp": 4, "pp": 8, "dp": 2, "batch_tokens": 2048 * 8 * 2}
    r = run_job(topo, JOB.validate(base))
    assert [s["layers"] for s in r.breakdown["stages"]] == [0, 1, 1, 1, 1, 1, 1, 0]
    assert all(np.isfinite(r.breakdown[k]) for k in ("dp", "bubble", "pp", "step")) and r.breakdown["dp"] > 0
    from sim.core.errors import ParamError
    with pytest.raises(ParamError) as e:
        resolve_job(JOB.validate({**base, "balance_stages": False}))
    assert "pp" in e.value.errors


@pytest.mark.parametrize("field, good, bad", [
    ("layer", "gpt", "mamba"), ("tp_overlap_backend", "torch", "nccl"), ("recompute", "op", "ops"),
    ("attention_kernel", "triton", "fa4")])
def test_issue_39_job_choices_are_taken_and_a_wrong_one_refused_naming_its_field(field, good, bad):
    from sim.core.errors import ParamError
    assert JOB.validate({field: good})[field] == good
    with pytest.raises(ParamError) as e:
        JOB.validate({field: bad})
    assert list(e.value.errors) == [field]
