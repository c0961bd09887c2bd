"""The bench's comparison case (bench/specs/one-switch-4096.toml): 4,096 endpoints of 50 GB/s on one switch, one
NPU per host. Its ring AllReduce is the textbook alpha-beta case, T = 2 (N - 1) (alpha + S / (N B)): every step
each endpoint sends S / N bytes to its successor through its own NIC, no link is shared, no NVLink hop.

alpha is the engine's per-hop latency for this path as the latency model states it (sim/fabric/netsim.py LatencyModel: the
one-way NIC/host part of the base RTT plus the one switch crossed) plus what NCCL's Simple protocol adds per network
hop (sim/nccl_tuning.sim_hop); NCCL's base latency is paid once. Simple is forced: its bandwidth factor is 1, so the
beta term is the NIC's bandwidth. If the latency model changes, the lines computing alpha restate it."""
from pathlib import Path

import numpy as np
import pytest

from sim.fabric.nccl_tuning import base_latency, sim_hop
from sim.fabric.latency import LatencyModel
from sim.fabric.achievable import Efficiencies
from sim.fabric.netsim import run_collective as _run_collective
from sim.fabric.placement import place
from sim.fabric.topology import load_topology


def run_collective(*args, **kw):
    """The engine at line rates: these tests check the flow core's own physics against line-rate arithmetic
    (achievable rates and the host floor: tests/sim/test_algorithms.py)."""
    kw.setdefault("efficiencies", Efficiencies.line_rate())
    return _run_collective(*args, **kw)


SPECS = Path(__file__).resolve().parents[2] / "bench" / "specs"
N = 4096


@pytest.fixture(scope="module")
def topo():
    return load_topology(spec=str(SPECS / "one-switch-4096.toml"), catalog=str(SPECS / "one-switch-catalog.toml"))[1]


def test_the_case_is_4096_single_gpu_hosts_of_50_GBps_on_one_switch(topo):
    assert topo.n_gpus == N and np.unique(topo.gpu_host).size == N
    assert topo.nic_bandwidth == 50e9
    assert np.unique(topo.gpu_leaf).size == 1                       # every endpoint on the same switch


@pytest.mark.parametrize("size", [1 << 20, 64 << 20, 1 << 30])
def test_ring_allreduce_time_is_the_alpha_beta_formula(topo, size):
    r = run_collective(topo, place(topo, N, "topology"), "allreduce", [size], protocol="Simple")
    ph = r.phases[0]
    paths = np.diff(ph.flows.ptr)
    assert ph.flows.network.all() and (paths == 2).all()            # NIC -> switch -> NIC, never NVLink
    one_way = LatencyModel().host(topo.kind, topo.hop_latency) + topo.hop_latency     # host part + one switch
    assert np.allclose(ph.hop_latency, one_way, rtol=1e-12)
    alpha = one_way + sim_hop("ring", "Simple", N, N)[0]
    beta = 1.0 / topo.nic_bandwidth
    assert ph.unit_time == pytest.approx(2 * (N - 1) * beta / N, rel=1e-12)           # the bandwidth term
    expected = base_latency("ring", "Simple") + 2 * (N - 1) * (alpha + size * beta / N)
    assert r.rows[0].time == pytest.approx(expected, rel=1e-9)
