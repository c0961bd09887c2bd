"""The bench's comparison case (bench/specs/one-switch-4096.toml): 4,096 endpoints of 50 GB/s on one switch, one
NPU per host. Its ring AllReduce is the textbook alpha-beta case, T = 2 (N - 1) (alpha + S / (N B)): every step
each endpoint sends S / N bytes to its successor through its own NIC, no link is shared, no NVLink hop.

alpha is the engine's per-hop latency for this path as the latency model states it (sim/netsim.py LatencyModel:
the fabric's base RTT per network hop plus the switch latency of the path, here one switch crossed); if the latency
model changes, this is the one line that restates it."""
from pathlib import Path

import numpy as np
import pytest

from sim.netsim import LatencyModel, run_collective
from sim.placement import place
from sim.topology import load_topology

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
    r = run_collective(topo, place(topo, N, "topology"), "allreduce", [size])
    ph = r.phases[0]
    paths = np.diff(ph.flows.ptr)
    assert ph.flows.network.all() and (paths == 2).all()            # NIC -> switch -> NIC, never NVLink
    alpha = LatencyModel().network(topo.kind) + topo.hop_latency    # base RTT + the one switch crossed
    beta = 1.0 / topo.nic_bandwidth
    assert ph.alpha == pytest.approx(alpha, rel=1e-12)
    assert ph.unit_time == pytest.approx(2 * (N - 1) * beta / N, rel=1e-12)           # the bandwidth term
    assert r.rows[0].time == pytest.approx(2 * (N - 1) * (alpha + size * beta / N), rel=1e-12)
