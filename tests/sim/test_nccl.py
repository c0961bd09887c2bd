"""NCCL's defaults as sim/fabric/nccl.py models them (NCCL 2.30.7, docs/sources.md [S11], [S12]): channels per NIC,
connections and QPs per peer, QP numbers, the UDP source port of each QP. Given / when / then."""
import doctest

import numpy as np
import pytest

import sim.fabric.nccl
from sim.fabric.collectives import plan_collective
from sim.fabric.layout import expand
from sim.fabric.nccl import (FIXED_UDP_SPORT, connection_flows, ring_channel_steps, ring_channels, udp_sport_of_qp)
from sim.fabric.flows import build_flows
from sim.fabric.spec import load_spec
from sim.fabric.topology import topology_from_layout


@pytest.fixture(scope="module")
def demo():
    return topology_from_layout(expand(load_spec("demo-256")))


def test_doctests():
    assert doctest.testmod(sim.fabric.nccl).failed == 0


# ------------------------------------------------------------------------------------------------ channels
def test_an_8_nic_h100_host_gets_16_ring_channels_2_per_nic():
    # Given 8 H100s with a 400G NIC each on PCIe Gen5 x16 (48 GB/s): the search finds one channel per NIC at
    # 48 GB/s, ncclTopoDupChannels keeps 8 (sm90, 48 < 50 and more than 4 channels), ncclTopoPostset doubles.
    steps = ring_channel_steps(8, nodes=2, nic_gbps=50.0)
    assert (steps.speed, steps.searched, steps.duplicated, steps.postset, steps.final) == (48.0, 8, 8, 16, 16)
    assert steps.final // 8 == 2


@pytest.mark.parametrize("nics, nic_gbps, searched, duplicated, final", [
    (4, 50.0, 4, 8, 16),          # 4 channels: ncclTopoDupChannels doubles them (not more than 4), postset again
    (1, 50.0, 1, 2, 4),           # one GPU per host
    (8, 25.0, 8, 8, 16),          # 200G NICs: 24 GB/s per channel, under 25: no search duplication
    (8, 12.5, 8, 8, 16),          # 100G NICs: 12 GB/s
])
def test_other_hosts_follow_the_same_rules(nics, nic_gbps, searched, duplicated, final):
    steps = ring_channel_steps(nics, nodes=2, nic_gbps=nic_gbps)
    assert (steps.searched, steps.duplicated, steps.final) == (searched, duplicated, final)


@pytest.mark.parametrize("kw, final", [
    ({"max_channels": 4}, 4),                      # NCCL_MAX_NCHANNELS keeps the first channels
    ({"max_channels": 32}, 16),                    # a maximum above the count changes nothing
    ({"min_channels": 32}, 32),                    # NCCL_MIN_NCHANNELS copies channels up to the minimum
    ({"min_channels": 8}, 16),
    ({"min_channels": 100}, 64),                   # MAXCHANNELS bounds both
    ({"max_channels": 2, "min_channels": 8}, 8),   # max first, then min (NCCL: "combining max, then min")
])
def test_min_and_max_nchannels(kw, final):
    assert ring_channels(8, **kw) == final


def test_the_plan_uses_nccls_count_and_each_nic_carries_two_connections_each_way():
    gpu_host = np.repeat(np.arange(4), 8)
    plan = plan_collective("allgather", np.arange(32), gpu_host)
    assert plan.channels == 16
    ph, = plan.phases
    inter = gpu_host[ph.src] != gpu_host[ph.dst]
    assert np.bincount(ph.src[inter], minlength=32).tolist() == [2] * 32
    assert plan_collective("allgather", np.arange(32), gpu_host, max_channels=4).channels == 4


# ------------------------------------------------------------------------------------------------ connections, QPs
def test_a_ring_hop_between_hosts_is_two_connections_of_k_qps(demo):
    # Given 2 full hosts and 4 QPs per connection (NCCL_IB_QPS_PER_CONNECTION=4)
    gpus = np.arange(16)
    ph, = plan_collective("allgather", gpus, demo.gpu_host).phases
    fl = build_flows(demo, ph, qps=4, routing="ecmp", seed=3)
    net = fl.network
    # Then each GPU pair joined over the network has 2 connections (channels c and c + 8) x 4 QPs = 8 flows
    pairs, count = np.unique(fl.src[net] * 10_000 + fl.dst[net], return_counts=True)
    assert set(count.tolist()) == {8}
    for p in pairs[:4]:
        sel = net & (fl.src * 10_000 + fl.dst == p)
        assert len(np.unique(fl.channel[sel])) == 2 and len(np.unique(fl.transfer[sel])) == 2
        assert sorted(fl.qp[sel].tolist()) == [0, 0, 1, 1, 2, 2, 3, 3]
    # and every flow carries 1/4 of its connection's bytes
    assert np.allclose(fl.share[net] * 4, ph.share[fl.transfer[net]])


def test_qp_numbers_are_consecutive_per_nic_in_connection_order():
    # Given NIC 0 sending on channels 0 and 1 to NIC 1, and receiving on channel 0 from NIC 2, 3 QPs each
    c = connection_flows([0, 0, 2], [1, 1, 0], [0, 1, 0], qps=3, udp_sport="fixed", qpn_base=0x100)
    sq, dq = c.sqpn.reshape(3, 3), c.dqpn.reshape(3, 3)
    # Then NIC 0 numbers: channel 0 send (0x100..), channel 0 receive (0x103..), channel 1 send (0x106..)
    assert sq[0].tolist() == [0x100, 0x101, 0x102] and dq[2].tolist() == [0x103, 0x104, 0x105]
    assert sq[1].tolist() == [0x106, 0x107, 0x108]
    # NIC 1 receives channel 0 then channel 1; NIC 2 sends channel 0
    assert dq[0].tolist() == [0x100, 0x101, 0x102] and dq[1].tolist() == [0x103, 0x104, 0x105]
    assert sq[2].tolist() == [0x100, 0x101, 0x102]


def test_a_seeded_base_differs_per_nic_and_stays_24_bits():
    c = connection_flows(np.arange(100), np.arange(100) + 100, np.zeros(100, int), qps=16, seed=7)
    assert c.sqpn.max() < 1 << 24 and c.dqpn.max() < 1 << 24
    assert len(np.unique(c.sqpn[::16])) == 100                      # first QPs of 100 NICs: all different
    assert np.array_equal(np.diff(c.sqpn.reshape(100, 16), axis=1), np.ones((100, 15)))


# ------------------------------------------------------------------------------------------------ UDP source port
def _kernel_sport(lqpn: int, rqpn: int) -> int:
    """rdma_calc_flow_label + rdma_flow_label_to_udp_sport (include/rdma/ib_verbs.h), in plain Python."""
    v = (lqpn * rqpn) & (2**64 - 1)
    v ^= v >> 20
    v ^= v >> 40
    fl = v & 0xFFFFF
    return ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000


def test_per_qp_ports_are_the_kernels_from_the_qp_numbers():
    c = connection_flows(np.arange(50), np.arange(50) + 50, np.zeros(50, int), qps=4, udp_sport="per_qp", seed=1)
    expect = [_kernel_sport(int(a), int(b)) for a, b in zip(c.sqpn, c.dqpn)]
    assert c.sport.tolist() == expect
    assert all(0xC000 <= p <= 0xFFFF for p in expect)
    assert int(udp_sport_of_qp(0x1234, 0x5678)) == _kernel_sport(0x1234, 0x5678)


def test_fixed_and_per_connection_ports():
    kw = dict(src_nic=np.arange(20), dst_nic=np.arange(20) + 20, channel=np.zeros(20, int), qps=8, seed=2)
    fixed = connection_flows(udp_sport="fixed", **kw)
    assert set(fixed.sport.tolist()) == {FIXED_UDP_SPORT}
    conn = connection_flows(udp_sport="per_connection", **kw)
    per = conn.sport.reshape(20, 8)
    assert (per == per[:, :1]).all()                                # one port per connection
    assert per[:, 0].tolist() == [_kernel_sport(int(a), int(b)) for a, b in zip(conn.sqpn[::8], conn.dqpn[::8])]
    with pytest.raises(ValueError, match="udp_sport"):
        connection_flows(udp_sport="random", **kw)


def test_ecmp_sees_one_path_per_nic_pair_with_a_fixed_port_and_spreads_per_qp_ports(demo):
    # Given one GPU pair across zones with 16 QPs on one connection, 5-tuple ECMP
    from sim.fabric.collectives import Phase
    ph = Phase("one", np.array([0]), np.array([200]), np.array([1.0]), np.array([0]))
    paths = {}
    for mode in ("fixed", "per_qp"):
        fl = build_flows(demo, ph, qps=16, routing="ecmp", seed=5, udp_sport=mode)
        paths[mode] = {tuple(fl.links[fl.ptr[i]:fl.ptr[i + 1]]) for i in range(fl.n_flows)}
    assert len(paths["fixed"]) == 1                  # all QPs hash alike: one path
    assert len(paths["per_qp"]) >= 8                 # 16 ports over 2,048 equal-cost paths


def test_qp_numbering_order_is_nic_channel_role_transfer():
    """The packed-key sort that numbers a NIC's endpoints gives lexsort's order (NIC, channel, send before receive,
    transfer), including when the fields do not fit in one 64-bit word."""
    from sim.fabric.nccl import endpoint_order
    rng = np.random.default_rng(4)
    for nic_max in (50, 2**50):
        T = 500
        nic = rng.integers(0, nic_max, size=2 * T)
        nic[T:] = rng.permutation(nic[:T])
        channel = rng.integers(-1, 20, size=T)
        e = np.arange(2 * T)
        expected = np.lexsort((e % T, e // T, np.concatenate([channel, channel]), nic))
        assert np.array_equal(endpoint_order(nic, channel, T), expected)
