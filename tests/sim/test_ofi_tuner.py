"""aws-ofi-nccl on EFA: its tuner's regions (sim/fabric/ofi_tuner.py) and its reported latency on each network hop
(sim/fabric/netplugin.py plugin_hop)."""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np
import pytest

from sim.fabric.achievable import Efficiencies
from sim.fabric.netplugin import AWS_OFI_EFA, NCCL_IB, net_plugin, plugin_hop
from sim.fabric.netsim import run_collective
from sim.fabric.nccl_tuning import LL, LL128, PROTOCOLS, SIMPLE
from sim.fabric.ofi_tuner import extend_region, inside, tuner_choice
from sim.fabric.topology import load_topology

MIB = 1 << 20
ANY = lambda a, p: True                                   # noqa: E731  every pair in NCCL's cost table


@lru_cache(maxsize=2)
def _preset(name):
    return load_topology(name)[1]


def preset(name):
    return dataclasses.replace(_preset(name), cache={})


# ------------------------------------------------------------------------------------------------ geometry
def test_inside_square_edge_and_outside():
    sq = ((0, 0), (10, 0), (10, 10), (0, 10))
    assert inside((5, 5), sq) == 1
    assert inside((10, 5), sq) == 0 and inside((0, 0), sq) == 0       # on an edge, a vertex: counts as inside
    assert inside((11, 5), sq) == -1 and inside((5, -1), sq) == -1


def test_inside_concave_polygon():
    """An L shape: the notch is outside though inside the bounding box (the ray count decides)."""
    ell = ((0, 0), (10, 0), (10, 4), (4, 4), (4, 10), (0, 10))
    assert inside((2, 8), ell) == 1 and inside((8, 2), ell) == 1
    assert inside((8, 8), ell) == -1


def test_extend_region_follows_the_line():
    assert extend_region((1, 1), (1, 5), (100, 50)) == (1, 50)                # vertical: z's y
    assert extend_region((1, 3), (5, 3), (100, 50)) == (100, 3)               # horizontal: z's x
    assert extend_region((0, 0), (1, 1), (100, 50)) == pytest.approx((50, 50))   # y = x reaches y = 50 first
    assert extend_region((0, 0), (1, 1), (30, 50)) == pytest.approx((30, 30))


# ------------------------------------------------------------------------------------------------ p5 regions
def test_p5_allreduce_regions():
    """p5's regions at 8 ranks per node (nccl_ofi_regions.cpp): Tree LL128 up to 30 MiB at 16 ranks and to
    288 MiB at 128; Ring LL128 between; NVLS-Tree and Ring Simple at the largest sizes."""
    assert tuner_choice("p5", "allreduce", 32 * MIB, 32, 4, ANY) == ("tree", LL128)
    assert tuner_choice("p5", "allreduce", 256 * MIB, 128, 16, ANY) == ("tree", LL128)
    assert tuner_choice("p5", "allreduce", 256 * MIB, 64, 8, ANY) == ("ring", LL128)
    assert tuner_choice("p5", "allreduce", 1024 * MIB, 128, 16, ANY) == ("ring", LL128)
    assert tuner_choice("p5", "allreduce", 1024 * MIB, 256, 32, ANY) == ("nvls_tree", SIMPLE)
    assert tuner_choice("p5", "allreduce", 8192 * MIB, 128, 16, ANY) == ("ring", SIMPLE)


def test_tuner_leaves_nccl_to_decide():
    """No tuner, 2 nodes or fewer (v1.15.0), another collective, another shape: NCCL's own model (None)."""
    assert tuner_choice(None, "allreduce", 32 * MIB, 32, 4, ANY) is None
    assert tuner_choice("p5", "allreduce", 32 * MIB, 16, 2, ANY) is None
    assert tuner_choice("p5", "allgather", 32 * MIB, 32, 4, ANY) is None
    assert tuner_choice("p5", "allreduce", 32 * MIB, 12, 3, ANY) is None


def test_tuner_skips_pairs_nccl_ignores():
    """A region whose pair NCCL's cost table ignores (LL128 off: NCCL_PROTO=simple) is skipped, and the next
    region holding the point wins, or NCCL's model where none does."""
    simple = lambda a, p: p == SIMPLE                                             # noqa: E731
    assert tuner_choice("p5", "allreduce", 32 * MIB, 32, 4, simple) is None
    no_nvls = lambda a, p: a != "nvls_tree"                                       # noqa: E731
    assert tuner_choice("p5", "allreduce", 1024 * MIB, 256, 32, no_nvls) != ("nvls_tree", SIMPLE)


def test_p5_auto_runs_the_tuners_choice():
    """On the p5 preset (NIC keys ofi_tuner = "p5", ordered_128b) NCCL runs what the tuner picks above 2 nodes."""
    topo = preset("aws-p5-pod")
    plugin = net_plugin(topo)
    assert plugin.tuner == "p5" and LL128 in plugin.protocols
    r = run_collective(topo, np.arange(32), "allreduce", [32 * MIB, 256 * MIB], algorithm="auto")
    assert [(row.algorithm, row.protocol) for row in r.rows] == [("tree", LL128), ("ring", LL128)]
    assert net_plugin(preset("aws-p4d-pod")).tuner is None                      # p4d: no regions


# ------------------------------------------------------------------------------------------------ hop latency
def test_plugin_hop_is_nccls_charge():
    """Each network hop pays the plugin's latency, twice with Simple (NCCL's model: latencyInter per inter-node
    step, once more for Simple's flush), times efa_latency_scale; NCCL's IB plugin adds nothing."""
    assert plugin_hop(AWS_OFI_EFA, LL) == pytest.approx(75e-6)
    assert plugin_hop(AWS_OFI_EFA, LL128) == pytest.approx(75e-6)
    assert plugin_hop(AWS_OFI_EFA, SIMPLE) == pytest.approx(150e-6)
    assert plugin_hop(AWS_OFI_EFA, SIMPLE, 0.5) == pytest.approx(75e-6)
    assert all(plugin_hop(NCCL_IB, p) == 0.0 for p in PROTOCOLS)


def test_efa_latency_on_each_network_hop_of_the_critical_path():
    """The simulated latency of a 2-node p4d ring over EFA grows by the critical path's network hops x the
    plugin's per-hop charge; at scale 0 it is the fabric's alone."""
    topo = preset("aws-p4d-pod")
    kw = dict(algorithm="ring", protocol=SIMPLE)
    off = run_collective(topo, np.arange(16), "allreduce", [1 * MIB], efficiencies=Efficiencies(efa_latency=0.0),
                         **kw)
    on = run_collective(topo, np.arange(16), "allreduce", [1 * MIB], efficiencies=Efficiencies(efa_latency=1.0),
                        **kw)
    for p in PROTOCOLS:
        net_hops = on.critical_hops[p][0]
        assert net_hops > 0
        assert on.latencies[p] - off.latencies[p] == pytest.approx(net_hops * plugin_hop(AWS_OFI_EFA, p), rel=1e-6)


# ------------------------------------------------------------------------------------------------ AllToAll batches
def test_alltoall_batches_follow_nccls_channel_mapping():
    """NCCL 2.27 (paths.cc, channel.h, enqueue.cc): p2pnChannels = pow2Up(channels); 2 channels per network peer,
    halved while 2 x nRanks > 4 x p2pnChannels, at least the GPU's NIC count; one batch of 8 rounds per node
    distance on each of its channels: a channel runs ceil(nodes x perPeer / p2pnChannels) batches."""
    from sim.fabric.p2p_batches import alltoall_batches, p2p_channels, per_peer_channels
    assert p2p_channels(12) == 16 and p2p_channels(100) == 64
    assert per_peer_channels(16, 16) == 2 and per_peer_channels(64, 16) == 1
    assert per_peer_channels(256, 16, nics_per_gpu=4) == 4            # p5: 4 EFA cards per GPU
    assert alltoall_batches(16, 2, 8, 4) == 1
    assert alltoall_batches(256, 32, 16, 4) == 8                       # 32 node distances x 4 channels over 16
    assert alltoall_batches(256, 32, 16, 1) == 2                       # one NIC: 1 channel per peer
    assert alltoall_batches(8, 1, 16, 4) == 1


def test_alltoall_latency_takes_each_batch_in_turn():
    """On 16 p5 nodes the AllToAll's latency is 4 batches' hops (16 node distances x 4 channels per peer over 16
    channels), on 2 nodes one; an AllReduce is unchanged."""
    topo = preset("aws-p5-pod")
    r2 = run_collective(topo, np.arange(16), "alltoall", [1 * MIB], algorithm="ring")
    r16 = run_collective(topo, np.arange(128), "alltoall", [1 * MIB], algorithm="ring")
    assert r2.critical_hops[SIMPLE][0] == 1 and r16.critical_hops[SIMPLE][0] == 4
    assert r16.latencies[SIMPLE] > 3 * plugin_hop(AWS_OFI_EFA, SIMPLE)


def test_alltoall_batches_follow_the_runs_forced_channels():
    """NCCL_MIN/MAX_NCHANNELS set comm->nChannels, from which p2pnChannels follows: on 16 p5 nodes 32 forced
    channels spread the 16 node distances x 4 channels per peer over 32 (2 batches), 4 channels over 4 (16)."""
    topo = preset("aws-p5-pod")
    many = run_collective(topo, np.arange(128), "alltoall", [1 * MIB], algorithm="ring", min_channels=32)
    few = run_collective(topo, np.arange(128), "alltoall", [1 * MIB], algorithm="ring", max_channels=4)
    assert many.critical_hops[SIMPLE][0] == 2 and few.critical_hops[SIMPLE][0] == 16


def test_efa_latency_scale_is_a_nullable_collective_parameter_within_the_factors_bounds():
    from sim.core import fitted
    from sim.core.errors import ParamError
    from sim.fabric.params import COLLECTIVE
    f = fitted.factor("efa_latency_scale")
    assert COLLECTIVE.validate({})["efa_latency_scale"] is None              # null: the fitted value
    assert COLLECTIVE.validate({"efa_latency_scale": f.high})["efa_latency_scale"] == f.high
    for bad in (f.low - 0.1, f.high + 0.1, "slow"):
        with pytest.raises(ParamError) as e:
            COLLECTIVE.validate({"efa_latency_scale": bad})
        assert list(e.value.errors) == ["efa_latency_scale"]
