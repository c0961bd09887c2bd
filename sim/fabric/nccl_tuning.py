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
from dataclasses import dataclass

from sim.core.units import GB, US  # NCCL's bandwidths are GB/s (1e9 bytes/s), its latencies us

NCCL_VERSION = "2.30.7 (commit 5067397c)"
PROTOCOLS = ("LL", "LL128", "Simple")            # NCCL's ncclProtoStr, in NCCL_PROTO_* order
PROTOCOL_CHOICES = ("auto",) + PROTOCOLS         # auto: NCCL's choice; else forced, as NCCL_PROTO=<one>
LL, LL128, SIMPLE = PROTOCOLS
# NCCL's algorithms (ncclAlgoStr order: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT).
NCCL_ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")

# baseLatencies[algorithm][protocol], us (tuning.cc ncclTunerConstantsDefaults).
BASE_LATENCY = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "collnet_direct": (0.0, 0.0, 0.0),
                "collnet_chain": (0.0, 0.0, 0.0), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0),
                "pat": (8.0, 8.0, 8.0)}
# hwLatencies[hw][algorithm][protocol], us.
HW_LATENCY = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0.0, 0.0, 3.7),
               "collnet_chain": (0.0, 0.0, 2.8), "nvls": (0.0, 0.0, 25.0), "nvls_tree": (0.0, 0.0, 25.0),
               "pat": (0.0, 0.0, 4.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0.0, 0.0, 31.0),
            "collnet_chain": (0.0, 0.0, 30.0), "nvls": (0.0, 0.0, 18.0), "nvls_tree": (0.0, 0.0, 20.9),
            "pat": (0.0, 0.0, 14.0)},
}
# llMaxBws[index1][index2] GB/s: multi-node rows by CPU vendor (0 Intel, 1 AMD), single node by compute capability
# (1 Ampere, 2 Hopper); index2 = 0 (1 node), 1 (2 nodes), 2 (more).
LL_MAX_BW = {"intel": (39.0, 39.0, 20.4), "amd": (87.7, 22.5, 19.0), "ampere": (87.7, 22.5, 19.0),
             "hopper": (141.0, 45.0, 35.0)}
# Per-architecture rows (Ampere, Hopper), GB/s per channel.
PER_CH_MAX_RING_LL128_BWS = {"ampere": (20.0, 20.0, 20.0), "hopper": (36.7, 36.7, 36.7)}
PER_CH_MAX_TREE_LL128_BWS = {"ampere": (20.0, 20.0, 20.0), "hopper": (36.7, 36.7, 29.0)}
PER_CH_MAX_TREE_BWS = {"ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0)}
PER_CH_MAX_NVLS_TREE_BWS = {"ampere": (24.0, 23.6, 17.8), "hopper": (0.0, 57.7, 45.5)}
PER_CH_MAX_RING_LL128_BW = PER_CH_MAX_RING_LL128_BWS["hopper"]
PER_CH_MAX_TREE_LL128_BW = PER_CH_MAX_TREE_LL128_BWS["hopper"]
PER_CH_MAX_TREE_BW = PER_CH_MAX_TREE_BWS["hopper"]
NVLS_EFFICIENCY = {"ampere": 0.0, "hopper": 0.85}   # tuning.cc nvlsEfficiency
PAT_BW_FACTOR = 0.75                            # tuning.cc: PAT's bus bandwidth x .75
PAT_LINEAR_US = 2.8                             # tuning.cc: PAT's latency grows by 2.8 us per rank
PAT_LOG_DIVISOR = 3.5                           # tuning.cc: PAT's network latency per log2 step / 3.5
COLLNET_ARITY_US = 0.4                          # tuning.cc: CollNet Direct's arity serialization latency
NET_OVERHEAD = {"intel": 1.0, "amd": 2.0}       # getNetOverhead, us; Simple pays 3 x
CPU_VENDOR = "intel"                            # assumption: Grand Teton's host CPUs (selects the rows above)
# sm90SpeedArrayIntra (search.cc): the per-channel speeds NCCL's intra-node search tries, GB/s.
SM90_SPEED_INTRA = (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0)
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
    return algorithm if algorithm in NCCL_ALGORITHMS else "ring"


def _arch(arch: str) -> str:
    return "hopper" if arch not in ("ampere",) else "ampere"


def _nsteps(collective: str, n_ranks: int) -> int:
    if collective == "allreduce":
        return 2 * (n_ranks - 1)
    if collective in ("allgather", "reducescatter"):
        return n_ranks - 1
    return n_ranks


def _log2i(n: int) -> int:
    return int(n).bit_length() - 1 if n > 0 else 0


def base_latency(algorithm: str, proto: str, n_ranks: int = 0, n_nodes: int = 1) -> float:
    """NCCL's base latency of ``algorithm`` with ``proto``, seconds (once per collective). PAT adds its linear part,
    2.8 us per rank, as NCCL's model does."""
    a = _algo(algorithm)
    lat = BASE_LATENCY[a][_p(proto)]
    if a == "pat":
        lat += n_ranks * PAT_LINEAR_US
    return lat * US


def sim_hop(algorithm: str, proto: str, n_ranks: int, n_nodes: int) -> tuple[float, float]:
    """What the simulation adds per hop for ``proto``, seconds: ``(network extra, nvlink hop)``.

    A network hop costs its path's one-way latency plus ``network extra`` = NCCL's ``hwLatencies[NET]`` of the
    algorithm and protocol minus :data:`NET_REFERENCE` (with one GPU per node NCCL takes the tree's network latency
    for every algorithm; PAT's per step is a 3.5th of it), floored at 0. An NVLink hop costs NCCL's
    ``hwLatencies[NVLINK]``; in a ring over several nodes at least the network proxy's overhead
    (``getNetOverhead``, 3 x for Simple), as ``ncclTopoTuneModel`` charges it."""
    a, p = _algo(algorithm), _p(proto)
    net_algo = "tree" if n_nodes > 1 and n_ranks == n_nodes else a
    net = HW_LATENCY["net"][net_algo][p]
    if a == "pat":
        net /= PAT_LOG_DIVISOR
    extra = max(net - NET_REFERENCE, 0.0)
    nvl = HW_LATENCY["nvlink"][a][p]
    if a == "ring" and n_nodes > 1:
        nvl = max(nvl, NET_OVERHEAD[CPU_VENDOR] * (3 if proto == SIMPLE else 1))
    return extra * US, nvl * US


def _caps(algorithm: str, proto: str, n_nodes: int, channels: int, arch: str = "hopper") -> tuple[float, float]:
    """``(factor, cap)`` of a protocol's bandwidth relative to Simple's, cap in bytes/s (``inf``: none)."""
    i2, ar = _index2(n_nodes), _arch(arch)
    ll_max = (LL_MAX_BW[ar] if n_nodes == 1 else LL_MAX_BW[CPU_VENDOR])[i2] * GB
    if algorithm == "ring":
        if proto == LL:
            return 0.5, ll_max
        if proto == LL128:
            return 0.92, channels * PER_CH_MAX_RING_LL128_BWS[ar][i2] * GB
    elif algorithm == "tree":
        if proto == LL:
            return 1 / 3.8, ll_max
        if proto == LL128:
            return (7 / 9 if n_nodes == 1 else 120 / 128), channels * PER_CH_MAX_TREE_LL128_BWS[ar][i2] * GB
    elif algorithm == "nvls_tree" and n_nodes > 1:   # perChMaxNVLSTreeBw, per NVLS channel (one per GPU of a node)
        return 1.0, channels * PER_CH_MAX_NVLS_TREE_BWS[ar][i2] * GB
    elif proto == LL:                                # point-to-point LL: half of each 16-byte line is flags
        return 0.5, math.inf
    return 1.0, math.inf


def sim_busbw(algorithm: str, proto: str, busbw: float, n_nodes: int, channels: int, arch: str = "hopper") -> float:
    """The busbw (bytes/s) a protocol reaches when Simple reaches ``busbw``: NCCL's protocol factor and cap of
    ``ncclTopoTuneModel`` (ring LL x 0.5 up to ``llMaxBw``; ring LL128 x 0.92 up to ``channels x
    perChMaxRingLL128Bw``; tree LL / 3.8, tree LL128 x 120/128, likewise capped). Simple: ``busbw`` itself, but
    NVLS-Tree (Simple only) at most ``channels x perChMaxNVLSTreeBw`` (Hopper: 57.7 GB/s a channel on 2 nodes, 45.5
    on more; ``channels`` its NVLS channels, one per GPU of a node), the cap NCCL's model puts on it as on LL128."""
    factor, cap = _caps(algorithm, proto, n_nodes, channels, arch)
    return min(busbw * factor, cap)


@dataclass(frozen=True)
class NcclComm:
    """What NCCL's tuning model knows of a communicator (its topology search's outcome, as the twin reads it):
    ranks, nodes, the ring/tree channels and their total bandwidth ``ring_bw`` (``nChannels x bw`` of the ring
    graph, bytes/s), the GPUs' architecture, NVLink SHARP (``nvls``) with its graph (``nvls_channels`` x
    ``nvls_bw_intra`` / ``nvls_bw_inter`` GB/s per channel), in-network reduction (``sharp``: CollNet), and
    whether every node holds the same number of ranks."""

    n_ranks: int
    n_nodes: int
    channels: int
    ring_bw: float
    arch: str = "hopper"
    nvls: bool = False
    nvls_channels: int = 0
    nvls_bw_intra: float = 0.0
    nvls_bw_inter: float = 0.0
    sharp: bool = False
    equal_nodes: bool = True
    latency_inter: float = 0.0                   # the net plugin's latency, us (graph->latencyInter)
    tree_bw: float = 0.0                         # the tree graph's nChannels x bw, bytes/s (0: ring_bw)
    protocols: tuple[str, ...] = PROTOCOLS       # the protocols NCCL may use (NCCL_PROTO; the net plugin's)

    @property
    def ppn(self) -> float:
        return self.n_ranks / self.n_nodes


def nvls_graph(gpus_per_node: int, nvlink_gbps: float, nic_gbps: float, n_nodes: int) -> tuple[int, float, float]:
    """NCCL's NVLS graph (``ncclTopoCompute`` with ``NCCL_TOPO_PATTERN_NVLS``, search.cc): one channel per GPU of
    the node (the heads; inside one node ``minChannels = maxChannels = GPUs``), at the first speed of
    ``sm90SpeedArrayIntra`` whose ``channels x speed`` fits the GPU's NVLink (``nvlink_gbps``, NCCL's per-link
    constant x links), raised by ``GPUs / (GPUs - 1)`` for patterns other than the ring; across nodes the NIC
    speed bounds ``bwInter`` (``sm90SpeedArrayInter``, as for rings). ``(channels, bwIntra, bwInter)`` GB/s."""
    m = max(int(gpus_per_node), 1)
    total = nvlink_gbps * (m / (m - 1) if m > 1 else 1.0)
    speed = next((x for x in SM90_SPEED_INTRA if x <= nvlink_gbps and x * m <= total), SM90_SPEED_INTRA[-1])
    inter = speed if n_nodes == 1 else min(speed, nic_gbps)
    return m, speed, inter


def _entry(coll: str, a: str, proto: str, c: NcclComm) -> tuple[float, float] | None:
    """``(latency us, bandwidth GB/s)`` of ``comm->latencies/bandwidths[coll][a][proto]`` (ncclTopoTuneModel), or
    ``None`` where NCCL does not run it (its enable rules; bandwidth 0)."""
    p, ar = _p(proto), _arch(c.arch)
    n, nodes, ppn = c.n_ranks, c.n_nodes, c.ppn
    if coll in ("broadcast", "reduce") and a != "ring":
        return None
    if coll in ("reducescatter", "allgather") and a not in ("pat", "ring", "nvls", "collnet_direct"):
        return None
    if coll == "allreduce" and a == "pat":
        return None
    if coll == "alltoall":
        return None
    if a in ("nvls", "nvls_tree", "pat", "collnet_direct", "collnet_chain") and proto != SIMPLE:
        return None
    if proto not in c.protocols:
        return None
    # Enable rules (tuning.cc, enqueue.cc updateCollCostTable, search.cc).
    if a in ("nvls", "nvls_tree") and (not c.nvls or not c.equal_nodes or c.nvls_channels < 2):
        return None
    if a == "nvls" and nodes > 1 and not c.sharp:
        return None
    if a == "nvls_tree" and nodes == 1:
        return None
    if a.startswith("collnet") and (not c.sharp or nodes < 2):
        return None                                  # NCCL_COLLNET_NODE_THRESHOLD 2 (init.cc)
    if a == "pat" and n != nodes:
        return None
    i2 = _index2(nodes)
    nsteps = _nsteps(coll, n)
    ring_ch_bw = c.ring_bw / GB / max(c.channels, 1)             # GB/s per channel of the ring graph
    channels = c.channels
    bw = ring_ch_bw
    if a == "tree" and c.tree_bw > 0:
        bw = c.tree_bw / GB / max(c.channels, 1)                  # the tree graph's own search (balanced tree)
    if a in ("nvls", "nvls_tree"):
        channels = c.nvls_channels
        intra = c.nvls_bw_intra * NVLS_EFFICIENCY[ar] * (channels - 1) / channels
        intra *= 2.0 if coll == "allreduce" else (ppn - 1) / ppn
        inter = c.nvls_bw_inter * (2 if nodes <= 2 and a == "nvls_tree" else 1)
        bw = min(intra, inter, PER_CH_MAX_NVLS_TREE_BWS[ar][i2] if a == "nvls_tree" else math.inf)
    bus = channels * bw
    if a == "ring" and proto == LL:
        bus = min((LL_MAX_BW[ar] if nodes == 1 else LL_MAX_BW[CPU_VENDOR])[i2], bus * 0.5)
    if a == "ring" and proto == LL128:
        bus = min(bus * 0.92, channels * PER_CH_MAX_RING_LL128_BWS[ar][i2])
    if a == "tree" and coll == "allreduce":
        bus = min(bus * 0.92, channels * PER_CH_MAX_TREE_BWS[ar][i2])
    if a == "tree" and proto == LL:
        bus = min(bus / 3.8, (LL_MAX_BW[ar] if nodes == 1 else LL_MAX_BW[CPU_VENDOR])[i2])
    if a == "tree" and proto == LL128:
        bus = min(bus * (7 / 9 if nodes == 1 else 120 / 128), channels * PER_CH_MAX_TREE_LL128_BWS[ar][i2])
    if a == "pat":
        bus *= PAT_BW_FACTOR
    if a == "collnet_direct":
        if coll in ("allgather", "reducescatter"):
            bus = ppn * min(ring_ch_bw, ring_ch_bw * 0.9)
        else:
            factor = ppn / channels
            bus /= factor - (factor - 1) / 2
            if ar == "hopper":
                bus *= 0.85
    if a in ("nvls", "collnet_direct") and coll in ("allgather", "reducescatter") and nodes > 1:
        return None                                  # needs the CollNet plugin's allgather / reducescatter
    if not (a != "ring" and coll in ("allgather", "reducescatter")):
        bus *= n / nsteps if a in ("ring", "nvls", "nvls_tree") else 0.5
    if bus <= 0:
        return None
    # Latencies.
    lat = BASE_LATENCY[a][p]
    intra = HW_LATENCY["nvlink"][a][p]
    inter = HW_LATENCY["net"]["tree" if ppn == 1 else a][p]
    inter += c.latency_inter * (2 if proto == SIMPLE else 1)   # the plugin's latency; Simple's flush once more
    if a == "ring":
        if coll in ("broadcast", "reduce"):
            # sameChannels = 0: the twin's channels enter each host at a different GPU.
            hw = HW_LATENCY["net" if nodes > 1 else "nvlink"]["tree" if proto == SIMPLE else "ring"][p]
            return lat + nsteps * hw, bus
        if nodes > 1:
            intra = max(intra, NET_OVERHEAD[CPU_VENDOR] * (3 if proto == SIMPLE else 1))
        n_inter = 0 if nodes == 1 else (2 if coll == "allreduce" else 1) * (nodes - 1)
        lat += (nsteps - n_inter) * intra + n_inter * inter
    elif a == "tree":
        lat += 2 * ((n // nodes - 1) * intra + _log2i(nodes) * inter)
    elif a == "collnet_direct":
        lat += 2 * (min(1, n // nodes - 1) * intra + (n // nodes - 1) * COLLNET_ARITY_US) + inter
    elif a == "collnet_chain":
        lat += 2 * (n // nodes - 1) * intra + inter
    elif a == "nvls":
        lat = intra + (inter if nodes > 1 else 0.0)
    elif a == "nvls_tree":
        lat += intra + 2 * _log2i(nodes) * inter
    elif a == "pat":
        lat += _log2i(nodes) * (inter / PAT_LOG_DIVISOR) + n * PAT_LINEAR_US
    return lat, bus


def algo_time(coll: str, a: str, proto: str, size: int, c: NcclComm) -> float:
    """``ncclTopoGetAlgoTime`` (one operation in the pipeline), seconds; ``inf`` where NCCL does not run it."""
    e = _entry(coll, a, proto, c)
    if e is None:
        return math.inf
    lat, bw = e
    log_size = _log2i(int(size) >> 6)
    if a == "tree" and coll == "allreduce" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[_p(proto)][log_size]
    if (a == "ring" and proto == SIMPLE and c.n_nodes > 1 and coll == "allreduce"
            and size / (c.channels * c.n_ranks) >= 64):
        lat *= RING_PLATEAU
    return (lat + size / (1000 * bw)) * US if bw > 0 else math.inf


def available(coll: str, a: str, c: NcclComm) -> bool:
    """Whether NCCL runs ``coll`` with algorithm ``a`` on this communicator (with some protocol)."""
    return any(_entry(coll, a, p, c) is not None for p in PROTOCOLS)


def choose_algo(coll: str, size: int, c: NcclComm, algorithms=None, protocols=None) -> tuple[str, str]:
    """NCCL's ``(algorithm, protocol)`` for ``size`` bytes: the least predicted time over the enabled pairs
    (``topoGetAlgoInfo``, in NCCL's algorithm and protocol order, the first of equal times winning).
    ``algorithms`` / ``protocols``: the enabled ones (``NCCL_ALGO`` / ``NCCL_PROTO``; default all)."""
    best, pick = math.inf, None
    for a in NCCL_ALGORITHMS:
        if algorithms is not None and a not in algorithms:
            continue
        for p in PROTOCOLS:
            if protocols is not None and p not in protocols:
                continue
            t = algo_time(coll, a, p, size, c)
            if t < best:
                best, pick = t, (a, p)
    if pick is None:
        raise ValueError(f"no algorithm and protocol of NCCL runs {coll} here")
    return pick


def _comm(n_ranks, n_nodes, channels, topo_busbw, arch="hopper") -> NcclComm:
    return NcclComm(n_ranks=n_ranks, n_nodes=n_nodes, channels=channels, ring_bw=topo_busbw, arch=arch)


def nccl_latency(collective: str, algorithm: str, proto: str, n_ranks: int, n_nodes: int) -> float:
    """``comm->latencies[coll][algo][proto]``, seconds (``latencyInter`` 0: the IB plugin leaves it unset)."""
    c = _comm(n_ranks, n_nodes, 1, GB, "hopper")
    e = _entry(collective, _algo(algorithm), proto, c)
    return (e[0] if e else math.nan) * US


def predict(collective: str, algorithm: str, proto: str, size: int, n_ranks: int, n_nodes: int, channels: int,
            topo_busbw: float, arch: str = "hopper", comm: NcclComm | None = None) -> float:
    """NCCL's predicted time (seconds) of ``collective`` of ``size`` bytes with ``algorithm`` and ``proto``
    (``ncclTopoGetAlgoTime`` with one operation in the pipeline). ``topo_busbw``: NCCL's ``nChannels x bw`` of its
    ring graph, bytes/s; ``comm``: the whole communicator (NVLS graph ...) when the caller has it. AllToAll
    ("direct") is point-to-point, outside this model: ``nan``."""
    if algorithm not in NCCL_ALGORITHMS:
        return math.nan
    c = comm or _comm(n_ranks, n_nodes, channels, topo_busbw, arch)
    t = algo_time(collective, algorithm, proto, size, c)
    return t if math.isfinite(t) else math.nan


def choose(collective: str, algorithm: str, size: int, n_ranks: int, n_nodes: int, channels: int,
           topo_busbw: float, arch: str = "hopper", comm: NcclComm | None = None) -> str:
    """The protocol NCCL picks for ``size`` bytes with ``algorithm``: least predicted time over LL, LL128, Simple
    (``topoGetAlgoInfo``; LL128 is on by default on Hopper with NICs near their GPUs). AllToAll goes through NCCL's
    point-to-point path: LL for at most :data:`P2P_LL_THRESHOLD` bytes per peer, Simple above."""
    if algorithm not in NCCL_ALGORITHMS:
        allowed = comm.protocols if comm is not None else PROTOCOLS
        return LL if size / max(n_ranks, 1) <= P2P_LL_THRESHOLD and LL in allowed else SIMPLE
    c = comm or _comm(n_ranks, n_nodes, channels, topo_busbw, arch)
    times = [algo_time(collective, algorithm, p, size, c) for p in PROTOCOLS]
    return PROTOCOLS[min(range(len(PROTOCOLS)), key=times.__getitem__)]
