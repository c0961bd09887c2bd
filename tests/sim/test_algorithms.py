"""NCCL's algorithms beyond Ring and Tree (NVLS, NVLS-Tree, PAT, CollNet's refusal without SHARP), NCCL's choice of algorithm and
protocol, the achievable bandwidth of NVLink, the NVSwitch, PCIe and the NIC, and the host floor: analytic cases
(issue 39 item 3; docs/engine.md "NCCL's algorithms", "Achievable bandwidth")."""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.core.units import GB
from sim.fabric.achievable import Efficiencies, nic_rate, nvlink_rate, pcie_rate
from sim.fabric.algorithms import pat_steps
from sim.fabric.algorithms import plan as plan_collective
from sim.fabric.collectives import SWITCH_DOWN, SWITCH_UP, CollectiveError
from sim.fabric.netsim import nccl_comm, run_collective
from sim.fabric.nccl_tuning import NcclComm, algo_time, available, choose_algo
from sim.fabric.params import COLLECTIVE
from sim.fabric.topology import load_topology

LINE = Efficiencies(nvlink=1.0, nic=1.0, pcie=0.91, host_latency=0.0)
A100 = {"slug": "a100-sxm-80gb", "name": "A100 SXM4 80GB", "compute_capability": 80, "arch": "ampere",
        "nvlink_generation": 3, "nvls": False, "pcie_gen": 4, "nvlink_gbps": 4800}


@lru_cache(maxsize=1)
def _pod():
    return load_topology("dgx-h100-superpod")[1]


def h100():
    return dataclasses.replace(_pod(), cache={})


def a100():
    return dataclasses.replace(_pod(), cache={}, gpu_model=dict(A100), nvlink_bandwidth=600e9)


def legs(phase, kind):
    """Bytes per byte of message size into (SWITCH_UP) or out of (SWITCH_DOWN) the NVSwitch, per GPU."""
    sel = phase.switch == kind
    return np.bincount(phase.src[sel], phase.share[sel])


# --------------------------------------------------------------------------------------------- NVLS
def test_nvls_allreduce_bytes_on_the_wire_per_gpu():
    """NVLS AllReduce over N GPUs: each GPU sends S (the switch reads and reduces its whole buffer) plus S/N (its
    reduced share, multicast) and receives S/N + S: S (N + 1) / N each way, against 2 S (N - 1) / N for a ring."""
    n = 8
    plan = plan_collective("allreduce", np.arange(n), np.zeros(n, int), "nvls", nvls=True)
    (ph,) = plan.phases
    assert np.allclose(legs(ph, SWITCH_UP), (n + 1) / n) and np.allclose(legs(ph, SWITCH_DOWN), (n + 1) / n)
    ag = plan_collective("allgather", np.arange(n), np.zeros(n, int), "nvls", nvls=True).phases[0]
    assert np.allclose(legs(ag, SWITCH_UP), 1 / n) and np.allclose(legs(ag, SWITCH_DOWN), 1.0)
    rs = plan_collective("reducescatter", np.arange(n), np.zeros(n, int), "nvls", nvls=True).phases[0]
    assert np.allclose(legs(rs, SWITCH_UP), 1.0) and np.allclose(legs(rs, SWITCH_DOWN), 1 / n)


def test_nvls_busbw_is_the_switch_rate():
    """8 H100s: the NVSwitch (8 x 370.8 GB/s x NCCL's nvlsEfficiency 0.85 each way) carries 9/8 S each way per
    GPU, so busbw = 2 (N-1)/N / ((N+1)/N) x 0.85 x 370.8 GB/s = 14/9 x 315.18 = 490.3 GB/s; the ring on the same
    GPUs: the NVLink rate itself, 370.8 GB/s."""
    topo = h100()
    nvls = run_collective(topo, np.arange(8), "allreduce", [1 << 30], algorithm="nvls", efficiencies=LINE)
    ring = run_collective(topo, np.arange(8), "allreduce", [1 << 30], algorithm="ring", efficiencies=LINE)
    assert nvlink_rate(topo, LINE) == pytest.approx(18 * 20.6e9)
    assert nvls.limit_busbw == pytest.approx(14 / 9 * 0.85 * 370.8e9, rel=1e-9)
    assert ring.limit_busbw == pytest.approx(370.8e9, rel=1e-9)
    assert nvls.rows[0].algorithm == "nvls" and nvls.rows[0].protocol == "Simple"


@pytest.mark.parametrize("m", [5, 6, 7])
def test_nvls_rate_is_per_gpu_port(m):
    """NVLS on m GPUs of an 8-GPU host: the switch serves 0.85 x NVLink per GPU that runs it (nvlsEfficiency is per
    channel of each GPU), not the host's 8 GPUs' worth shared by m: busbw = 2 (m-1)/(m+1) x 0.85 x 370.8 GB/s (420
    GB/s on 5 GPUs, where a switch of 8 ports would let each GPU reach its own NVLink, 494). A background job's GPUs
    on the host add their ports."""
    topo = h100()
    nvls = run_collective(topo, np.arange(m), "allreduce", [1 << 30], algorithm="nvls", efficiencies=LINE)
    assert nvls.limit_busbw == pytest.approx(2 * (m - 1) / (m + 1) * 0.85 * 370.8e9, rel=1e-9)
    if m <= 6:
        both = run_collective(topo, np.arange(m), "allreduce", [1 << 30], algorithm="nvls", efficiencies=LINE,
                              background=[np.arange(m, 8)])
        assert both.limit_busbw == pytest.approx(nvls.limit_busbw, rel=1e-9)


def test_nvls_unavailable_on_a100():
    topo = a100()
    assert nvlink_rate(topo, LINE) == pytest.approx(12 * 20.0e9)            # NVLink 3: 12 links x NCCL's 20 GB/s
    with pytest.raises(CollectiveError, match="NVLink SHARP"):
        run_collective(topo, np.arange(8), "allreduce", [1 << 30], algorithm="nvls")
    auto = run_collective(topo, np.arange(8), "allreduce", [1 << 20, 1 << 30], algorithm="auto", efficiencies=LINE)
    assert {r.algorithm for r in auto.rows} <= {"ring", "tree"}
    assert auto.rows[-1].busbw == pytest.approx(240e9, rel=0.02)


@pytest.mark.parametrize("hosts, per_channel", [(2, 57.7e9), (4, 45.5e9)])
def test_nvls_tree_busbw_is_capped_per_channel(hosts, per_channel):
    """NVLS-Tree across hosts of 8 H100s: NCCL caps its bandwidth at perChMaxNVLSTreeBw per NVLS channel (one per GPU
    of a node; tuning.cc: 57.7 GB/s on 2 nodes, 45.5 on more), below the NVSwitch's 2 (N-1)/N / ((m+1)/m) x 315
    GB/s: the bandwidth term of the time is the bytes over 8 x the cap."""
    n = 8 * hosts
    r = run_collective(h100(), np.arange(n), "allreduce", [1 << 30], algorithm="nvls_tree", efficiencies=LINE)
    cap = 8 * per_channel
    assert r.limit_busbw > cap
    band = r.rows[0].time - r.latencies["Simple"] - r.fill(1 << 30, "Simple")
    assert band == pytest.approx((1 << 30) * 2 * (n - 1) / n / cap, rel=1e-9)


def test_nvls_across_hosts_needs_collnet():
    with pytest.raises(CollectiveError, match="CollNet"):
        plan_collective("allreduce", np.arange(16), np.arange(16) // 8, "nvls", nvls=True)
    with pytest.raises(CollectiveError, match="single node"):
        plan_collective("allreduce", np.arange(8), np.zeros(8, int), "nvls_tree", nvls=True)


def test_nvls_tree_two_hosts_sends_half_a_tree_per_nic():
    """NVLS-Tree over 2 hosts: each head sends its share's half up one tree and half down the other, S/m per NIC
    (NCCL's 2-node case, interBw x 2), against about 2 S/m for the tree."""
    m = 8
    plan = plan_collective("allreduce", np.arange(2 * m), np.arange(2 * m) // m, "nvls_tree", nvls=True)
    (ph,) = plan.phases
    net = (ph.src // m) != (ph.dst // m)
    sent = np.bincount(ph.src[net], ph.share[net], minlength=2 * m)
    assert np.allclose(sent, 1 / m)


def test_collnet_unavailable_without_sharp():
    """A fabric whose switches have no SHARP (here the pod with its switches' key taken away) refuses CollNet."""
    with pytest.raises(CollectiveError, match="SHARP"):
        run_collective(dataclasses.replace(h100(), sharp=False), np.arange(16), "allreduce", [1 << 20],
                       algorithm="collnet_direct")


# --------------------------------------------------------------------------------------------- PAT
@pytest.mark.parametrize("n, steps", [(2, 1), (5, 3), (16, 4), (1024, 10)])
def test_pat_steps_are_log2_of_ranks(n, steps):
    """PAT with one GPU per node: ceil(log2 N) steps, each rank sending N - 1 shares of S/N in all (as a ring)."""
    for name in ("allgather", "reducescatter"):
        plan = plan_collective(name, np.arange(n), np.arange(n), "pat")
        assert len(plan.phases) == pat_steps(n) == steps
        sent = sum(np.bincount(p.src, p.share, minlength=n) for p in plan.phases)
        assert np.allclose(sent, (n - 1) / n)
    with pytest.raises(CollectiveError, match="one GPU per node"):
        plan_collective("allgather", np.arange(16), np.arange(16) // 8, "pat")


def test_pat_allgather_delivers_every_share():
    """Bruck's pattern: after the steps every rank holds every share (simulated by the shares each step moves)."""
    n = 6
    have = np.eye(n, dtype=bool)
    for k in range(pat_steps(n)):
        d = 1 << k
        cnt = min(d, n - d)
        new = have.copy()
        for r in range(n):
            src_blocks = [(r + j) % n for j in range(cnt)]             # the first cnt blocks rank r holds
            assert all(have[r, b] for b in src_blocks)
            for b in src_blocks:
                new[(r - d) % n, b] = True
        have = new
    assert have.all()


# --------------------------------------------------------------------------------------------- NCCL's choice
def _h100_node() -> NcclComm:
    return NcclComm(n_ranks=8, n_nodes=1, channels=16, ring_bw=370.8e9, arch="hopper", nvls=True,
                    nvls_channels=8, nvls_bw_intra=50.0, nvls_bw_inter=50.0)


def test_nccl_switch_points_8_h100_one_node():
    """NCCL's model (tuning.cc) for 8 H100s on one NVSwitch host, by hand:
    ring LL: 6.6 + 14 x 0.6 = 15 us, busBw min(141, 370.8 / 2) = 141 GB/s, algbw x 8/14 = 80.57 GB/s;
    NVLS: 25 us, per channel min(50 x 0.85 x 7/8 x 2, 50) = 50, x 8 channels = 400, algbw x 8/14 = 228.57 GB/s;
    ring Simple: 8.4 + 14 x 3.4 = 56 us at 370.8 x 8/14 = 211.89 GB/s.
    1 MiB: ring LL 15 + 13.01 = 28.01 us < NVLS 25 + 4.59 = 29.59 us; 2 MiB: NVLS 34.17 < ring LL 41.03;
    1 GiB: NVLS 4722.7 us < ring Simple 5123.5 us."""
    c = _h100_node()
    mib = 1 << 20
    assert algo_time("allreduce", "ring", "LL", mib, c) * 1e6 == pytest.approx(15 + mib / (1000 * 141 * 8 / 14))
    assert algo_time("allreduce", "nvls", "Simple", mib, c) * 1e6 == pytest.approx(25 + mib / (1000 * 400 * 8 / 14))
    assert algo_time("allreduce", "ring", "Simple", 1 << 30, c) * 1e6 == pytest.approx(
        56 + (1 << 30) / (1000 * 370.8 * 8 / 14))
    assert choose_algo("allreduce", mib, c) == ("ring", "LL")
    assert choose_algo("allreduce", 2 * mib, c) == ("nvls", "Simple")
    assert choose_algo("allreduce", 1 << 30, c) == ("nvls", "Simple")
    assert choose_algo("allreduce", 8, c) == ("ring", "LL")
    no_nvls = dataclasses.replace(c, nvls=False)
    assert choose_algo("allreduce", 1 << 30, no_nvls)[0] == "ring"


def test_nccl_comm_of_an_h100_host_is_the_hand_one():
    topo = h100()
    c = nccl_comm(topo, np.arange(8), 16)
    assert (c.nvls, c.nvls_channels, c.nvls_bw_intra, c.ring_bw) == (True, 8, 50.0, pytest.approx(370.8e9))
    assert not nccl_comm(a100(), np.arange(8), 16).nvls


def test_pat_chosen_for_small_allgather_one_gpu_per_node():
    """One GPU per node: PAT's log latency (8 + log2 N x 14/3.5 + 2.8 N us) beats the ring's N - 1 network steps
    of 14 us (Simple) at 64 nodes; PAT is not offered with 8 GPUs per node."""
    one = NcclComm(n_ranks=64, n_nodes=64, channels=2, ring_bw=50e9)
    a, p = choose_algo("allgather", 1 << 22, one, protocols=("Simple",))
    assert (a, p) == ("pat", "Simple")
    eight = NcclComm(n_ranks=64, n_nodes=8, channels=16, ring_bw=400e9)
    assert choose_algo("allgather", 1 << 22, eight, protocols=("Simple",))[0] == "ring"


def test_auto_reports_the_algorithm_per_size():
    res = run_collective(h100(), np.arange(8), "allreduce", [8, 1 << 20, 1 << 30], algorithm="auto")
    assert [r.algorithm for r in res.rows] == ["ring", "ring", "nvls"]
    assert res.algorithm_choice == "auto" and res.to_dict()["rows"][2]["algorithm"] == "nvls"


def test_explicit_ring_and_tree_keep_their_algorithm():
    res = run_collective(h100(), np.arange(16), "allreduce", [1 << 30], algorithm="tree")
    assert res.rows[0].algorithm == "tree" and res.plan.algorithm == "tree"


# --------------------------------------------------------------------------------------------- achievable rates
def test_pcie_gen4_caps_the_nic_path():
    """A 400G NIC behind PCIe Gen4 x16 (16 x 16 GT/s x 128/130 / 8 = 31.5 GB/s x 0.91 = 28.7 GB/s) sends at the
    PCIe rate: a ring AllGather over 2 hosts of 8 reaches 8 x 28.7 GB/s; on Gen5 the NIC (49.7 GB/s after IB
    framing) is not the limit there (the rail fabric's PXN hops load NVLink first)."""
    gen5 = h100()
    gen4 = dataclasses.replace(gen5, nic_model=dict(gen5.nic_model, pcie_gen=4))
    assert pcie_rate(gen4, LINE) == pytest.approx(16 * 16e9 * 128 / 130 / 8 * 0.91)
    assert nic_rate(gen4, LINE) == pytest.approx(pcie_rate(gen4, LINE))
    assert nic_rate(gen5, LINE) == pytest.approx(50e9 * 4096 / 4122)             # IB framing, PCIe Gen5 not binding
    r4 = run_collective(gen4, np.arange(16), "allgather", [1 << 30], algorithm="ring", efficiencies=LINE)
    r5 = run_collective(gen5, np.arange(16), "allgather", [1 << 30], algorithm="ring", efficiencies=LINE)
    assert r4.limit_busbw == pytest.approx(8 * pcie_rate(gen4, LINE), rel=0.01)
    assert r5.limit_busbw > 1.25 * r4.limit_busbw


def test_efficiency_factors_scale_the_links():
    topo = h100()
    half = dataclasses.replace(LINE, nvlink=0.5)
    r = run_collective(topo, np.arange(8), "allreduce", [1 << 30], algorithm="ring", efficiencies=half)
    assert r.limit_busbw == pytest.approx(0.5 * 370.8e9, rel=1e-9)


def test_host_floor_shows_at_8_bytes():
    """The host floor adds to NCCL's latency: 8 bytes cost it in full, and it is the only change."""
    topo = h100()
    zero = run_collective(topo, np.arange(8), "allreduce", [8], algorithm="ring", efficiencies=LINE)
    five = run_collective(topo, np.arange(8), "allreduce", [8], algorithm="ring",
                          efficiencies=dataclasses.replace(LINE, host_latency=5e-6))
    assert five.rows[0].time - zero.rows[0].time == pytest.approx(5e-6)
    assert zero.rows[0].time >= zero.latencies[zero.rows[0].protocol] > 0


# --------------------------------------------------------------------------------------------- parameters
def test_algo_parameter_takes_nccl_spellings_and_refuses_mismatches():
    v = COLLECTIVE.validate({"collective": "allreduce", "algorithm": "NVLSTree"})
    assert v["algorithm"] == "nvls_tree" and COLLECTIVE.validate({})["algorithm"] == "auto"
    with pytest.raises(ParamError, match="algorithm"):
        COLLECTIVE.validate({"collective": "allgather", "algorithm": "nvls_tree"})
    with pytest.raises(ParamError, match="protocol"):
        COLLECTIVE.validate({"collective": "allreduce", "algorithm": "nvls", "protocol": "LL"})
    got = COLLECTIVE.validate({"nvlink_efficiency": "0.9", "host_latency_us": "3"})
    assert got["nvlink_efficiency"] == 0.9 and COLLECTIVE.validate({})["pcie_efficiency"] is None
    eff = Efficiencies.of(got)
    assert eff.nvlink == 0.9 and math.isclose(eff.host_latency, 3e-6)


def test_cli_takes_algo_as_nccl_algo_and_reports_each_rows_algorithm(capsys):
    from sim.cli import main
    code = main(["collective", "--preset", "dgx-h100-superpod", "-c", "allreduce", "-n", "8", "--sizes", "8,1G",
                 "--algo", "NVLS", "--json", "-q"])
    doc = __import__("json").loads(capsys.readouterr().out)
    assert code == 0 and doc["algorithm"] == "nvls" and [r["algorithm"] for r in doc["rows"]] == ["nvls", "nvls"]
    code = main(["collective", "--preset", "dgx-h100-superpod", "-c", "allreduce", "-n", "8", "--sizes", "8,1G",
                 "-q"])
    out = capsys.readouterr().out
    assert code == 0 and "auto: ring, nvls" in out and " nvls Simple " in out.replace("  ", " ")


def test_auto_progress_grows_to_one_over_the_chosen_algorithms():
    seen = []
    run_collective(h100(), np.arange(8), "allreduce", [8, 1 << 30], algorithm="auto",
                   progress=lambda f, m: seen.append(f))
    assert seen == sorted(seen) and seen[-1] == pytest.approx(1.0) and len(seen) > 2


def test_collnet_rows_exist_only_with_in_network_reduction():
    """NCCL's CollNet rows (tuning.cc) are transcribed: with SHARP, CollNet Direct AllReduce on 2 nodes of 8 has
    NCCL's latency 2 (1 x 3.7 + 7 x 0.4) + 31 = 44 us; without (every fabric of the twin) it is never offered."""
    c = NcclComm(n_ranks=16, n_nodes=2, channels=16, ring_bw=400e9)
    assert not available("allreduce", "collnet_direct", c)
    sharp = dataclasses.replace(c, sharp=True)
    assert available("allreduce", "collnet_direct", sharp) and available("allreduce", "collnet_chain", sharp)
    t = algo_time("allreduce", "collnet_direct", "Simple", 0, sharp)
    assert t * 1e6 == pytest.approx(2 * (3.7 + 7 * 0.4) + 31)
