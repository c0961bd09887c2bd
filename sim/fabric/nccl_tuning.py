"""NCCL's protocols (LL, LL128, Simple) and its own tuning model, as NCCL 2.30.7 has them.

Source (docs/sources.md [S6]): NVIDIA NCCL v2.30.7 (commit 5067397c2676d5aed50042fc39e5c8ee96eb0027),
``src/graph/tuning.cc``: ``ncclTunerConstantsDefaults`` (``baseLatencies``, ``hwLatencies``, ``llMaxBws``,
``perChMaxRingLL128Bws``, ``perChMaxTreeLL128Bws``, ``perChMaxTreeBws``), ``ncclTopoTuneModel`` (per collective,
algorithm and protocol a latency in us and a bandwidth in GB/s) and ``ncclTopoGetAlgoTime`` (``time = lat +
bytes / (1000 bw)``, the tree correction factors, the ring "plateau"); ``src/enqueue.cc`` ``topoGetAlgoInfo`` (the
algorithm and protocol of least predicted time win) and the point-to-point protocol choice
(``NCCL_P2P_LL_THRESHOLD``, 16 KiB); ``NCCL_PROTO`` restricts the protocols (``parseList``).

Two uses:

* :func:`predict` / :func:`choose`: NCCL's *own* prediction of a collective's time per protocol, from its constants
  and its topology bandwidth (``nChannels x bw``), and the protocol it therefore picks for a message size. NCCL
  does not know the fabric's congestion or its 22 us RTT; its choice is made on this model.
* :func:`sim_hop` / :func:`sim_busbw` / :func:`base_latency`: what the twin's simulation charges a protocol: NCCL's
  base latency once, each hop of the critical path its own latency plus the protocol's per-hop cost, and the
  simulated bandwidth times the protocol's bandwidth factor, capped as NCCL caps it (see docs/engine.md, Latency).

The hosts are Grand Teton H100 hosts (Hopper, compute capability 9.0) whose CPUs the twin takes as Intel
(:data:`CPU_VENDOR`, an assumption: it selects NCCL's ``llMaxBws`` row and ``getNetOverhead``'s 1 us).
"""
from __future__ import annotations

import math

from sim.core.units import GB, US  # NCCL's bandwidths are GB/s (1e9 bytes/s), its latencies us

NCCL_VERSION = "2.30.7 (commit 5067397c)"
PROTOCOLS = ("LL", "LL128", "Simple")            # NCCL's ncclProtoStr, in NCCL_PROTO_* order
PROTOCOL_CHOICES = ("auto",) + PROTOCOLS         # auto: NCCL's choice; else forced, as NCCL_PROTO=<one>
LL, LL128, SIMPLE = PROTOCOLS

# baseLatencies[algorithm][protocol], us (tuning.cc ncclTunerConstantsDefaults).
BASE_LATENCY = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4)}
# hwLatencies[hw][algorithm][protocol], us.
HW_LATENCY = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0)},
}
# llMaxBws[index1][index2] GB/s: multi-node rows by CPU vendor (0 Intel, 1 AMD), single node by compute capability
# (2 Hopper); index2 = 0 (1 node), 1 (2 nodes), 2 (more).
LL_MAX_BW = {"intel": (39.0, 39.0, 20.4), "amd": (87.7, 22.5, 19.0), "hopper": (141.0, 45.0, 35.0)}
PER_CH_MAX_RING_LL128_BW = (36.7, 36.7, 36.7)   # Hopper row, GB/s per channel
PER_CH_MAX_TREE_LL128_BW = (36.7, 36.7, 29.0)   # Hopper row
PER_CH_MAX_TREE_BW = (38.7, 41.4, 36.0)         # Hopper row
NET_OVERHEAD = {"intel": 1.0, "amd": 2.0}       # getNetOverhead, us; Simple pays 3 x
CPU_VENDOR = "intel"                            # assumption: Grand Teton's host CPUs (selects the rows above)
# treeCorrectionFactor[protocol][log2(bytes / 64)], sizes 64 B .. 256 MB (ncclTopoGetAlgoTime).
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)
RING_PLATEAU = 1.4                              # ring Simple AllReduce over nodes, compute capability >= 8.0
P2P_LL_THRESHOLD = 16384                        # bytes per peer and channel under which point-to-point uses LL
# The part of NCCL's network hop latency that is the network itself: NCCL's lowest network constant, ring LL's
# 2.7 us (assumption: LL adds no protocol work on the wire, its flags travel in the data). The other protocols'
# excess over it is their own cost per hop (LL128 +1.3 us, Simple +11.3 us: flags and fifo updates, the GPUDirect
# flush); the twin adds that excess to the simulated path's one-way latency.
NET_REFERENCE = HW_LATENCY["net"]["ring"][0]


def _p(proto: str) -> int:
    return PROTOCOLS.index(proto)


def _index2(n_nodes: int) -> int:
    return n_nodes - 1 if n_nodes <= 2 else 2


def _algo(algorithm: str) -> str:
    """NCCL's algorithm for the twin's (AllToAll's "direct" is point-to-point; its constants are the ring's)."""
    return "tree" if algorithm == "tree" else "ring"


def _nsteps(collective: str, n_ranks: int) -> int:
    if collective == "allreduce":
        return 2 * (n_ranks - 1)
    if collective in ("allgather", "reducescatter"):
        return n_ranks - 1
    return n_ranks


def base_latency(algorithm: str, proto: str) -> float:
    """NCCL's base latency of ``algorithm`` with ``proto``, seconds (once per collective)."""
    return BASE_LATENCY[_algo(algorithm)][_p(proto)] * US


def sim_hop(algorithm: str, proto: str, n_ranks: int, n_nodes: int) -> tuple[float, float]:
    """What the simulation adds per hop for ``proto``, seconds: ``(network extra, nvlink hop)``.

    A network hop costs its path's one-way latency plus ``network extra`` = NCCL's ``hwLatencies[NET]`` of the
    algorithm and protocol minus :data:`NET_REFERENCE` (with one GPU per node NCCL takes the tree's network latency
    for rings too). An NVLink hop costs NCCL's ``hwLatencies[NVLINK]``; in a ring over several nodes at least the
    network proxy's overhead (``getNetOverhead``, 3 x for Simple), as ``ncclTopoTuneModel`` charges it."""
    a, p = _algo(algorithm), _p(proto)
    net_algo = "tree" if n_nodes > 1 and n_ranks == n_nodes else a
    extra = HW_LATENCY["net"][net_algo][p] - NET_REFERENCE
    nvl = HW_LATENCY["nvlink"][a][p]
    if a == "ring" and n_nodes > 1:
        nvl = max(nvl, NET_OVERHEAD[CPU_VENDOR] * (3 if proto == SIMPLE else 1))
    return extra * US, nvl * US


def _caps(algorithm: str, proto: str, n_nodes: int, channels: int) -> tuple[float, float]:
    """``(factor, cap)`` of a protocol's bandwidth relative to Simple's, cap in bytes/s (``inf``: none)."""
    i2 = _index2(n_nodes)
    ll_max = (LL_MAX_BW["hopper"] if n_nodes == 1 else LL_MAX_BW[CPU_VENDOR])[i2] * GB
    if algorithm == "ring":
        if proto == LL:
            return 0.5, ll_max
        if proto == LL128:
            return 0.92, channels * PER_CH_MAX_RING_LL128_BW[i2] * GB
    elif algorithm == "tree":
        if proto == LL:
            return 1 / 3.8, ll_max
        if proto == LL128:
            return (7 / 9 if n_nodes == 1 else 120 / 128), channels * PER_CH_MAX_TREE_LL128_BW[i2] * GB
    elif proto == LL:                                # point-to-point LL: half of each 16-byte line is flags
        return 0.5, math.inf
    return 1.0, math.inf


def sim_busbw(algorithm: str, proto: str, busbw: float, n_nodes: int, channels: int) -> float:
    """The busbw (bytes/s) a protocol reaches when Simple reaches ``busbw``: NCCL's protocol factor and cap of
    ``ncclTopoTuneModel`` (ring LL x 0.5 up to ``llMaxBw``; ring LL128 x 0.92 up to ``channels x
    perChMaxRingLL128Bw``; tree LL / 3.8, tree LL128 x 120/128, likewise capped). Simple: ``busbw`` itself."""
    factor, cap = _caps(algorithm, proto, n_nodes, channels)
    return min(busbw * factor, cap)


def _nccl_busbw(collective: str, algorithm: str, proto: str, topo_busbw: float, n_nodes: int,
                channels: int) -> float:
    """``comm->bandwidths[coll][algo][proto]``: NCCL's algorithm bandwidth, bytes/s."""
    bw = topo_busbw
    if algorithm == "tree" and collective == "allreduce":
        bw = min(bw * 0.92, channels * PER_CH_MAX_TREE_BW[_index2(n_nodes)] * GB)
    return sim_busbw(algorithm, proto, bw, n_nodes, channels)


def nccl_latency(collective: str, algorithm: str, proto: str, n_ranks: int, n_nodes: int) -> float:
    """``comm->latencies[coll][algo][proto]``, seconds (``latencyInter`` 0: the IB plugin leaves it unset)."""
    a, p = _algo(algorithm), _p(proto)
    lat = BASE_LATENCY[a][p]
    intra = HW_LATENCY["nvlink"][a][p]
    inter = HW_LATENCY["net"]["tree" if n_ranks == n_nodes else a][p]
    nsteps = _nsteps(collective, n_ranks)
    if a == "ring":
        if collective in ("broadcast", "reduce"):
            # sameChannels = 0: the twin's channels enter each host at a different GPU.
            hw = HW_LATENCY["net" if n_nodes > 1 else "nvlink"]["tree" if proto == SIMPLE else "ring"][p]
            return (lat + nsteps * hw) * US
        if n_nodes > 1:
            intra = max(intra, NET_OVERHEAD[CPU_VENDOR] * (3 if proto == SIMPLE else 1))
        n_inter = 0 if n_nodes == 1 else (2 if collective == "allreduce" else 1) * (n_nodes - 1)
        return (lat + (nsteps - n_inter) * intra + n_inter * inter) * US
    log2_nodes = int(math.log2(n_nodes)) if n_nodes > 0 else 0
    return (lat + 2 * ((n_ranks // n_nodes - 1) * intra + log2_nodes * inter)) * US


def predict(collective: str, algorithm: str, proto: str, size: int, n_ranks: int, n_nodes: int, channels: int,
            topo_busbw: float) -> float:
    """NCCL's predicted time (seconds) of ``collective`` of ``size`` bytes with ``proto`` (``ncclTopoGetAlgoTime``
    with one operation in the pipeline). ``topo_busbw``: NCCL's ``nChannels x bw`` of its topology search, bytes/s.
    AllToAll ("direct") is point-to-point, outside this model: ``nan``."""
    if algorithm not in ("ring", "tree"):
        return math.nan
    lat = nccl_latency(collective, algorithm, proto, n_ranks, n_nodes)
    busbw = _nccl_busbw(collective, algorithm, proto, topo_busbw, n_nodes, channels)
    ratio = n_ranks / _nsteps(collective, n_ranks) if algorithm == "ring" else 0.5
    bw = busbw * ratio
    if algorithm == "tree" and collective == "allreduce" and size >= 64:
        log_size = int(math.log2(size >> 6))
        if log_size < 23:
            bw *= TREE_CORRECTION[_p(proto)][log_size]
    if (algorithm == "ring" and proto == SIMPLE and n_nodes > 1 and collective == "allreduce"
            and size / (channels * n_ranks) >= 64):
        lat *= RING_PLATEAU
    return lat + size / bw if bw > 0 else math.inf


def choose(collective: str, algorithm: str, size: int, n_ranks: int, n_nodes: int, channels: int,
           topo_busbw: float) -> str:
    """The protocol NCCL picks for ``size`` bytes: least predicted time over LL, LL128, Simple (``topoGetAlgoInfo``;
    LL128 is on by default on Hopper with NICs near their GPUs). AllToAll goes through NCCL's point-to-point path:
    LL for at most :data:`P2P_LL_THRESHOLD` bytes per peer, Simple above."""
    if algorithm not in ("ring", "tree"):
        return LL if size / max(n_ranks, 1) <= P2P_LL_THRESHOLD else SIMPLE
    times = [predict(collective, algorithm, p, size, n_ranks, n_nodes, channels, topo_busbw) for p in PROTOCOLS]
    return PROTOCOLS[min(range(len(PROTOCOLS)), key=times.__getitem__)]
