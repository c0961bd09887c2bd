"""CollNet (NCCL's in-network reduction through InfiniBand SHARP switches): the bytes each NIC and each GPU's NVLink
carry against a ring's, the flow core's limit, the refusal where the switches cannot reduce, and NCCL's choice,
which never picks CollNet unless the plugin is enabled (docs/engine.md "CollNet")."""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.fabric.achievable import Efficiencies, nic_rate, nvlink_rate
from sim.fabric.algorithms import plan as plan_collective
from sim.fabric.collectives import SHARP_DOWN, SHARP_UP, CollectiveError
from sim.fabric.netsim import run_collective
from sim.fabric.params import COLLECTIVE
from sim.fabric.topology import load_topology

LINE = Efficiencies(nvlink=1.0, nic=1.0, pcie=0.91, host_latency=0.0, sharp=1.0)
M, H = 8, 8                       # 8 hosts of 8 GPUs, a NIC per GPU
N = M * H


@lru_cache(maxsize=1)
def _pod():
    return load_topology("dgx-h100-superpod")[1]


def h100():
    return dataclasses.replace(_pod(), cache={})


@lru_cache(maxsize=1)
def roce():
    return load_topology("demo-256")[1]


def _collnet(algorithm: str):
    gpus = np.arange(N)
    return plan_collective("allreduce", gpus, gpus // M, algorithm, sharp=True, channels=2 * M).phases[0]


def _nic_bytes(phase, host):
    """Per GPU, bytes per byte of S out of and into its NIC: transfers between hosts and SHARP legs."""
    inter = host[phase.src] != host[phase.dst]
    sw = phase.switch if phase.switch is not None else np.zeros(len(phase.src), np.int8)
    out = np.bincount(phase.src, np.where(inter | (sw == SHARP_UP), phase.share, 0.0) * phase.steps, minlength=N)
    into = np.bincount(phase.dst, np.where(inter | (sw == SHARP_DOWN), phase.share, 0.0) * phase.steps, minlength=N)
    return out, into


def _nvlink_out(phase, host):
    intra = (host[phase.src] == host[phase.dst])
    if phase.switch is not None:
        intra &= phase.switch == 0
    return np.bincount(phase.src, np.where(intra, phase.share, 0.0) * phase.steps, minlength=N)


@pytest.mark.parametrize("algorithm", ["collnet_chain", "collnet_direct"])
def test_collnet_sends_s_over_m_per_nic_against_a_rings_twice_that(algorithm):
    """The switches reduce, so each NIC sends its share S/m up the SHARP tree once and receives the result once;
    a ring's NIC carries 2 S (N - 1) / (N m) each way: N / (2 (N - 1)) of it (about half)."""
    host = np.arange(N) // M
    out, into = _nic_bytes(_collnet(algorithm), host)
    assert np.allclose(out, 1 / M) and np.allclose(into, 1 / M)
    gpus = np.arange(N)
    ring = plan_collective("allreduce", gpus, host, "ring", channels=2 * M).phases[0]
    r_out, r_in = _nic_bytes(ring, host)
    assert np.allclose(r_out, 2 * (N - 1) / (N * M)) and np.allclose(r_in, 2 * (N - 1) / (N * M))
    assert out.sum() / r_out.sum() == pytest.approx(N / (2 * (N - 1)))


@pytest.mark.parametrize("algorithm", ["collnet_chain", "collnet_direct"])
def test_collnet_nvlink_carries_the_whole_buffer_in_and_out_of_the_host(algorithm):
    """Inside the host every GPU's data reaches the heads and the result comes back: 2 S (m - 1) / m out of each
    GPU's NVLink (the chain's up and down edges, or Direct's scatter and gather)."""
    host = np.arange(N) // M
    assert np.allclose(_nvlink_out(_collnet(algorithm), host), 2 * (M - 1) / M)


def test_collnet_chain_limit_is_nvlink_then_the_sharp_rate():
    """On the pod the chain's NVLink binds: busbw = 2 (N-1)/N x (achievable NVLink) x m / (2 (m - 1)). With SHARP's
    aggregation at 0.3 of the NIC's rate, the NIC legs bind instead: 2 (N-1)/N x m x 0.3 x NIC."""
    topo = h100()
    r = run_collective(topo, np.arange(N), "allreduce", [1 << 30], algorithm="collnet_chain", efficiencies=LINE)
    factor = 2 * (N - 1) / N
    assert r.limit_busbw == pytest.approx(factor * nvlink_rate(topo, LINE) * M / (2 * (M - 1)), rel=1e-6)
    slow = dataclasses.replace(LINE, sharp=0.3)
    r = run_collective(topo, np.arange(N), "allreduce", [1 << 30], algorithm="collnet_chain", efficiencies=slow)
    assert r.limit_busbw == pytest.approx(factor * M * 0.3 * nic_rate(topo, slow), rel=1e-6)
    assert any(h.name.startswith("sharp") for h in r.hottest)


def test_collnet_latency_is_the_chain_and_one_sharp_round_trip():
    """NCCL's CollNet Chain latency has 2 (m - 1) NVLink hops and one network term (tuning.cc): so has the
    simulated critical path."""
    r = run_collective(h100(), np.arange(N), "allreduce", [8], algorithm="collnet_chain", efficiencies=LINE)
    assert r.critical_hops["Simple"] == (1, 2 * (M - 1))
    d = run_collective(h100(), np.arange(N), "allreduce", [8], algorithm="collnet_direct", efficiencies=LINE)
    assert d.critical_hops["Simple"] == (1, 2)


def test_collnet_refused_on_ethernet_and_on_one_host():
    assert not roce().sharp
    with pytest.raises(CollectiveError, match="SHARP"):
        run_collective(roce(), np.arange(16), "allreduce", [1 << 20], algorithm="collnet_chain")
    with pytest.raises(CollectiveError, match="nodes"):
        run_collective(h100(), np.arange(8), "allreduce", [1 << 20], algorithm="collnet_chain")


def test_sharp_only_on_infiniband_with_sharp_switches():
    assert h100().sharp and load_topology("dgx-a100-superpod")[1].sharp
    for preset in ("demo-256", "aws-p5-pod"):
        assert not load_topology(preset)[1].sharp


def test_auto_never_chooses_collnet_unless_enabled():
    sizes = [8, 1 << 16, 1 << 20, 1 << 26, 1 << 30, 8 << 30]
    off = run_collective(h100(), np.arange(N), "allreduce", sizes, algorithm="auto", efficiencies=LINE)
    assert not any(r.algorithm.startswith("collnet") for r in off.rows)
    on = run_collective(h100(), np.arange(N), "allreduce", sizes, algorithm="auto", efficiencies=LINE, collnet=True)
    assert any(r.algorithm.startswith("collnet") for r in on.rows)
    ether = run_collective(roce(), np.arange(16), "allreduce", sizes, algorithm="auto", collnet=True)
    assert not any(r.algorithm.startswith("collnet") for r in ether.rows)


def test_collnet_parameter_and_nccl_algo_spelling():
    v = COLLECTIVE.validate({"collective": "allreduce", "algorithm": "COLLNETCHAIN", "gpus": 64})
    assert v["algorithm"] == "collnet_chain" and v["collnet"] is False and v["sharp_efficiency"] is None
    with pytest.raises(ParamError):
        COLLECTIVE.validate({"collective": "allreduce", "sharp_efficiency": 2.0})


def test_nccl_tuning_offers_collnet_only_with_sharp_and_two_nodes():
    """NCCL's rows: CollNet needs the plugin with SHARP (comm.sharp) and NCCL_COLLNET_NODE_THRESHOLD's 2 nodes; CollNet
    Chain's latency is 2 (m - 1) x 2.8 + 30 us (tuning.cc)."""
    from sim.fabric.nccl_tuning import NcclComm, algo_time, available
    two = NcclComm(n_ranks=16, n_nodes=2, channels=16, ring_bw=400e9, sharp=True)
    one = dataclasses.replace(two, n_ranks=8, n_nodes=1)
    assert available("allreduce", "collnet_chain", two) and not available("allreduce", "collnet_chain", one)
    assert not available("allreduce", "collnet_chain", dataclasses.replace(two, sharp=False))
    assert algo_time("allreduce", "collnet_chain", "Simple", 0, two) * 1e6 == pytest.approx(2 * 7 * 2.8 + 30)
