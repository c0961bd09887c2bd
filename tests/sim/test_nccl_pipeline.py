"""NCCL's chunk sizes and the pipeline's fill, and what the network plugin changes (EFA's aws-ofi-nccl): analytic
cases (docs/engine.md "Chunks and the pipeline's fill", "The network plugin")."""
from __future__ import annotations

import dataclasses
import math
from functools import lru_cache

import numpy as np
import pytest

from sim.fabric.achievable import nvlink_rate
from sim.fabric.chunking import ChunkConfig, chunk_size, ll_chunk_size
from sim.fabric.netplugin import AWS_OFI_EFA, NCCL_IB, chunk_config, net_plugin
from sim.fabric.netsim import nccl_comm, run_collective
from sim.fabric.nccl_tuning import LL, LL128, SIMPLE, NcclComm, algo_time, choose, choose_algo
from sim.fabric.topology import load_topology
from tests.sim.test_algorithms import LINE, h100

KIB = 1024


@lru_cache(maxsize=1)
def _p4d():
    return load_topology("aws-p4d-pod")[1]


def p4d():
    return dataclasses.replace(_p4d(), cache={})


# ------------------------------------------------------------------------------------------------ chunk sizes
def test_nvls_chunk_by_size():
    """NVLS on 8 heads x 16 channels (128 concurrent operations), 128 KiB chunk: 64 KiB below 64 x 128 x 128 KiB
    = 1 GiB, 32 KiB below 8 x 128 x 64 KiB = 64 MiB, 16 KiB below 2 x 128 x 32 KiB = 8 MiB (enqueue.cc)."""
    sizes = [4 << 20, 8 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
    assert [chunk_size("nvls", s, 8) // KIB for s in sizes] == [16, 32, 32, 64, 64, 128]


def test_nvls_tree_chunk_caps():
    """NVLS-Tree: its cap is 64 KiB from 4 nodes on (nvls.cc) unless set, as aws-ofi-nccl sets 512 KiB; then 256,
    128, 64, 32 KiB below 32, 16, 4, 1 x the concurrent operations' chunks."""
    two, four = ChunkConfig(n_nodes=2), ChunkConfig(n_nodes=4)
    assert chunk_size("nvls_tree", 1 << 34, 8, two) == 128 * KIB
    assert chunk_size("nvls_tree", 1 << 34, 8, four) == 64 * KIB
    efa = ChunkConfig(nvls_chunk=512 * KIB, nvls_tree_max_chunk=512 * KIB, n_nodes=4)
    assert chunk_size("nvls_tree", 1 << 34, 8, efa) == 512 * KIB
    assert chunk_size("nvls_tree", 64 << 20, 8, efa) == 128 * KIB       # not below 4 x 128 x 128 KiB = 64 MiB
    assert chunk_size("nvls_tree", 32 << 20, 8, efa) == 64 * KIB        # below it, not below 1 x 128 x 64 KiB
    assert chunk_size("nvls_tree", 4 << 20, 8, efa) == 32 * KIB


def test_tree_and_chain_chunk_is_one_step():
    """Trees and Broadcast/Reduce chains move one step of the Simple buffer: NCCL_BUFFSIZE / NCCL_STEPS."""
    assert chunk_size("tree", 1 << 30, 8) == (4 << 20) // 8
    assert chunk_size("chain", 1 << 30, 8, ChunkConfig(buffsize=8 << 20)) == 1 << 20
    assert chunk_size("ring", 1 << 30, 8) == 0 and chunk_size("pat", 1 << 30, 1) == 0


def test_ll_and_ll128_chunks():
    """LL: half its 64 KiB step; LL128: 15/16 of its 600 KiB step (576,000 bytes), which a tree halves while
    nBytes / (nChannels x chunk) is under nstepsLL128 x 64 / ppn (down to 128 KiB), then under nstepsLL128 x 16 / ppn
    (down to 32 KiB); nstepsLL128 = 1 + log2(nodes) + 0.1 ppn (enqueue.cc calcCollChunking)."""
    assert ll_chunk_size("tree", LL, 1 << 28, 32, 16, 8) == 32768
    assert ll_chunk_size("ring", LL128, 1 << 20, 32, 16, 8) == 576000        # no halving outside the tree
    assert ll_chunk_size("tree", SIMPLE, 1 << 28, 32, 16, 8) == 0
    # 16 nodes: nsteps 5.8, threshold 46.4 chunks; 256 MiB / (32 x 576,000) = 14 -> 288,000: 29 -> 144,000: 58.
    assert ll_chunk_size("tree", LL128, 1 << 28, 32, 16, 8) == 144000
    # 2 nodes, 1 MiB: the first loop stops at 72,000 (not above 128 KiB), the second (5.6 chunks) at 18,000.
    assert ll_chunk_size("tree", LL128, 1 << 20, 32, 2, 8) == 18000


def test_ll128_fill_is_the_network_hops_only():
    """LL / LL128 stream over NVLink but are stored and forwarded a step at a time at a network hop (net.cc's send
    proxy). Inside one host a tree's LL128 has no fill (Simple's chain has); over 2 hosts the critical path crosses
    the network twice (up and down), so the fill is one network hop of the chunk (two, less the slowest's), with
    NCCL's LL128 chunk for the size (NCCL's channels twice the twin's tree channels)."""
    one = run_collective(h100(), np.arange(8), "allreduce", [1 << 26], algorithm="tree", efficiencies=LINE)
    assert one.fill(1 << 26, LL128) == 0.0 < one.fill(1 << 26, SIMPLE)
    size = 1 << 28
    r = run_collective(h100(), np.arange(16), "allreduce", [size], algorithm="tree", efficiencies=LINE)
    ph = r.phases[0]
    assert r.critical_hops[LL128][0] == 2
    net = np.asarray(ph.hop_network, dtype=bool)
    per = np.zeros(len(ph.phase.src))
    np.maximum.at(per, ph.flows.transfer, ph.flows.share / ph.rates)
    per = per / ph.phase.share
    nvl = np.minimum(per[~net], r.plan.channels / nvlink_rate(h100(), LINE))   # an NVLink hop at a channel's rate
    # Two network hops of the chunk, less the slowest hop's where that is a network one (the steady state's).
    expected = 2 * per[net].max() - (per[net].max() if per[net].max() >= nvl.max() else 0.0)
    assert ph.fill_net == pytest.approx(expected, rel=1e-9)
    chunk = ll_chunk_size("tree", LL128, size, 2 * r.plan.channels, 2, 8)
    assert r.fill(size, LL128) == pytest.approx(ph.fill_net * min(chunk, size / (2 * r.plan.channels)), rel=1e-9)
    assert 0 < r.fill(size, LL128) < r.fill(size, SIMPLE)


# ------------------------------------------------------------------------------------------------ pipeline fill
def test_chain_fill_is_the_other_hops_of_one_chunk():
    """Broadcast over 8 GPUs of one host: each channel's chain has 7 NVLink hops at one channel's rate r =
    NVLink / 16 channels; a Simple chunk c fills the 6 hops behind the first: 6 c / r, with c = min(512 KiB,
    S / 16); LL streams lines (no fill)."""
    topo = h100()
    r = run_collective(topo, np.arange(8), "broadcast", [1 << 20, 1 << 26], algorithm="ring", efficiencies=LINE)
    rate = nvlink_rate(topo, LINE) / r.plan.channels
    for size in (1 << 20, 1 << 26):
        c = min(512 * KIB, size / r.plan.channels)
        assert r.fill(size, SIMPLE) == pytest.approx(6 * c / rate, rel=1e-9)
        assert r.fill(size, LL) == 0.0
    base = r.time(1 << 26, SIMPLE) - r.fill(1 << 26, SIMPLE)
    assert r.time(1 << 26, SIMPLE) > base > 0


def test_ring_has_no_fill():
    """A ring's ranks all send their own data in the first step: every hop works from the start, no fill."""
    r = run_collective(h100(), np.arange(8), "allreduce", [1 << 26], algorithm="ring", efficiencies=LINE)
    assert all(p.fill == 0.0 for p in r.phases) and r.fill(1 << 26, SIMPLE) == 0.0


def test_tree_fill_grows_with_the_chunk():
    """A double tree over 2 hosts: the fill is the chunk times the critical path's other hops, so it grows with the
    chunk until the chunk is NCCL's step, then stays; its share of the time falls as the size grows."""
    r = run_collective(h100(), np.arange(16), "allreduce", [1 << 20, 1 << 24, 1 << 28, 1 << 32],
                       algorithm="tree", efficiencies=LINE)
    fills = [r.fill(s, SIMPLE) for s in (1 << 20, 1 << 24, 1 << 28, 1 << 32)]
    assert 0 < fills[0] < fills[1] <= fills[2] == pytest.approx(fills[3])
    assert fills[3] / r.time(1 << 32, SIMPLE) < fills[1] / r.time(1 << 24, SIMPLE)


def test_nvls_one_node_fill_is_the_kernels_stages():
    """One-node NVLS (all_reduce.h, oneNode): scatter, reduce and gather warp groups hand each channel's data on a
    step of 8 heads x chunk at a time, at the solved rate (a channel: 1 / 16 of it). At 1 MiB each of the 16
    channels holds 64 KiB, less than a step (8 x 16 KiB): the three stages run one after the other, 3 x the
    bandwidth term. At 1 GiB (128 KiB chunks) two steps of 8 x 128 KiB at one channel's rate, 2 x 16 MiB of message
    at the full rate. ReduceScatter and AllGather have two stages."""
    r = run_collective(h100(), np.arange(8), "allreduce", [1 << 20, 1 << 30], algorithm="nvls", efficiencies=LINE)
    lat, unit = r.latencies[SIMPLE], r.unit_time
    assert r.rows[0].time == pytest.approx(lat + 3 * (1 << 20) * unit, rel=1e-9)
    assert r.rows[1].time == pytest.approx(lat + (1 << 30) * unit + 2 * 16 * 8 * 128 * KIB * unit, rel=1e-9)
    rs = run_collective(h100(), np.arange(8), "reducescatter", [1 << 20], algorithm="nvls", efficiencies=LINE)
    assert rs.rows[0].time == pytest.approx(rs.latencies[SIMPLE] + 2 * (1 << 20) * rs.unit_time, rel=1e-9)
    assert r.fill(1 << 30, LL) == 0.0


# ------------------------------------------------------------------------------------------------ the net plugin
def test_efa_runs_aws_ofi_nccl_with_simple_only():
    """EFA loads aws-ofi-nccl: NCCL_PROTO=simple (no 128-byte in-order delivery), 75 us reported to NCCL's
    tuning, an 8 MiB NCCL_BUFFSIZE; the IB plugin leaves NCCL as it is."""
    topo = p4d()
    assert net_plugin(topo) == AWS_OFI_EFA and AWS_OFI_EFA.protocols == (SIMPLE,)
    assert net_plugin(h100()) == NCCL_IB and NCCL_IB.latency_us == 0.0
    assert chunk_config(topo, 2).buffsize == 8 << 20 and chunk_config(topo, 1).buffsize == 4 << 20
    comm = nccl_comm(topo, np.arange(16), 16)
    assert comm.protocols == (SIMPLE,) and comm.latency_inter == 75.0
    one = nccl_comm(topo, np.arange(8), 16)
    assert LL in one.protocols and one.latency_inter == 0.0               # no network: no plugin effect
    r = run_collective(topo, np.arange(16), "allreduce", [8, 1 << 16, 1 << 20, 1 << 30], algorithm="auto")
    assert {row.protocol for row in r.rows} == {SIMPLE}
    assert choose("alltoall", "direct", 1024, 16, 2, 16, 1e11, comm=comm) == SIMPLE   # point-to-point too


def test_efa_with_ordered_128b_writes_keeps_ll128():
    """A NIC whose EFA delivers aligned 128-byte writes in order (NIC key ``ordered_128b``) keeps NCCL's
    protocols: the plugin does not set NCCL_PROTO; its latency still goes to NCCL's model."""
    topo = dataclasses.replace(p4d(), nic_model=dict(p4d().nic_model, ordered_128b=True))
    plugin = net_plugin(topo)
    assert LL in plugin.protocols and plugin.latency_us == 75.0


def test_plugin_latency_in_nccl_model():
    """NCCL adds the plugin's latency to each inter-node step of its model, and once more for Simple (the
    flush): a 2-node ring AllReduce has 2 such steps, so 4 x 75 us more with Simple, 2 x 75 with LL."""
    base = NcclComm(n_ranks=16, n_nodes=2, channels=16, ring_bw=400e9)
    efa = dataclasses.replace(base, latency_inter=75.0)
    for proto, n in ((SIMPLE, 4), (LL, 2)):
        d = algo_time("allreduce", "ring", proto, 1 << 10, efa) - algo_time("allreduce", "ring", proto, 1 << 10, base)
        assert d == pytest.approx(n * 75e-6, rel=1e-9)
    simple_only = dataclasses.replace(base, protocols=(SIMPLE,))
    assert math.isinf(algo_time("allreduce", "ring", LL, 1 << 10, simple_only))


def test_ampere_balanced_tree_graph_wins_on_nic_bound_hosts():
    """Before Hopper NCCL's tree graph is a balanced tree counting half a channel on each of two GPUs' NICs: on
    2 NIC-bound p4d hosts its bandwidth is twice the ring's, and NCCL picks the tree for large AllReduce, which
    sends each byte once over the NICs instead of 2 (N - 1) / N times (busbw close to 2x the ring's)."""
    topo = p4d()
    comm = nccl_comm(topo, np.arange(16), 16, 50e9)
    assert comm.tree_bw == pytest.approx(2 * comm.ring_bw)
    assert choose_algo("allreduce", 1 << 30, comm)[0] == "tree"
    assert nccl_comm(h100(), np.arange(16), 16).tree_bw == 0.0              # Hopper: a plain tree, the ring's
    ring = run_collective(topo, np.arange(16), "allreduce", [1 << 30], algorithm="ring")
    tree = run_collective(topo, np.arange(16), "allreduce", [1 << 30], algorithm="tree")
    assert tree.limit_busbw > 1.7 * ring.limit_busbw
