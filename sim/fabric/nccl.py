"""How NCCL maps a collective onto connections and queue pairs: channels per NIC, QPs per connection, QP numbers
and the RoCEv2 UDP source port of each QP.

Read from NCCL 2.30.7 (github.com/NVIDIA/nccl, commit 5067397, docs/sources.md [S11]) and the Linux kernel's RDMA
core ([S12]).

Channels (:func:`ring_channels`)
    NCCL searches ring channels per host (``src/graph/search.cc``, ``ncclTopoCompute``): on an H100 (sm90) with a
    NIC per GPU the inter-node speeds tried are ``sm90SpeedArrayInter`` (48, 45, 42, ... GB/s), starting at the
    largest one not above the fastest GPU-to-NIC path. That path is the slower of the NIC (``speed / 8000`` GB/s,
    ``src/graph/topo.cc``: 400 Gb/s -> 50) and its PCIe link (``width x speed / 80``: Gen5 x16 -> 48). Each channel
    takes its speed from a NIC's bandwidth, so the search finds ``floor(path / speed)`` channels per NIC (one at 48
    GB/s), at most ``MAXCHANNELS / 2 = 32`` (``src/init.cc``). ``ncclTopoDupChannels`` then doubles them when the
    speed is at least 25 GB/s, *unless* the GPU is sm80+ with a speed under 50 and more than 4 channels, which is the
    H100 case (8 channels at 48): no duplication there. ``ncclTopoPostset`` (``src/graph/connect.cc``) duplicates
    every ring once more (channel ``c + n`` runs ring ``c``): ``min(64, 2 n)``; on sm90 with several nodes and a ring
    speed above 45 GB/s it doubles again while under 16 channels. Last, ``NCCL_MAX_NCHANNELS`` keeps the first
    channels and ``NCCL_MIN_NCHANNELS`` copies channels (``copyChannels``) up to the minimum, both capped at
    ``MAXCHANNELS = 64``. On a Grand Teton host (8 H100, 8 x 400G NICs on PCIe Gen5): 8 -> 8 -> 16 channels, **2 per
    NIC**. The search's other passes (NVLink speed, tree patterns, PXN) are not modelled: the intra-host NVLink of
    an H100 (18 x 20.6 GB/s) has room for the 8 channels.

Connections and queue pairs (:func:`connection_flows`)
    Each channel's hop between hosts is one NCCL network connection (``src/transport/net.cc``): a send
    communicator on the sender's NIC and a receive communicator on the receiver's, with
    ``NCCL_IB_QPS_PER_CONNECTION`` QPs each (default 1, at most ``NCCL_IB_MAX_QPS = 128``;
    ``src/transport/net_ib/connect.cc``, ``common.h``). So a GPU pair that two channels join (channels ``c`` and
    ``c + 8`` on a Grand Teton host) has 2 connections, ``2 x qps`` QPs. ``NCCL_IB_SPLIT_DATA_ON_QPS`` (default 0,
    ``net_ib/common.cc``) chooses how a connection's messages use its QPs: 0 posts each message on one QP in turn
    (``(request id x 1 + 0) mod nqps``, ``ncclIbCommBaseGetQpForRequest``), 1 splits every message in equal parts
    over all QPs (``p2p.cc``). Either way each QP carries ``1 / qps`` of the connection's bytes, and because NCCL
    consumes a connection's messages in order, the slowest QP paces it: at flow level the two settings are the same,
    so the engine does not take the setting as a parameter.

QP numbers (an assumption)
    A QP number is 24 bits, given by the NIC. We assume each NIC numbers the QPs NCCL creates consecutively from a
    base, in the order the connections are made: channel by channel, on each channel the NIC's send connection(s)
    before its receive connection(s), ``qps`` numbers per connection. The base is per NIC, drawn from the seed (a NIC
    has created other QPs before; real numbers differ from host to host), or one fixed base for every NIC
    (``qpn_base``). A flow's destination QP (the BTH field E-ECMP hashes) is the receiver's QP number.

UDP source port (:data:`UDP_SPORT_MODES`)
    NCCL creates RC QPs with a GRH flow label of 0 on RoCE (``net_ib/connect.cc``, ``ncclIbQpRtr``). The kernel's mlx5
    driver then sets each QP's UDP source port from the two QP numbers (``mlx5_set_path_udp_sport`` in
    ``drivers/infiniband/hw/mlx5/qp.c``; ``rdma_calc_flow_label`` and ``rdma_flow_label_to_udp_sport`` in
    ``include/rdma/ib_verbs.h``, [S12]): ``v = lqpn x rqpn``, ``v ^= v >> 20``, ``v ^= v >> 40``, flow label
    ``fl = v & 0xFFFFF``; port ``((fl & 0x3FFF) ^ (fl >> 14)) | 0xC000``. That is mode ``per_qp`` (the default:
    what the real stack does). ``per_connection``: every QP of a connection uses its first QP's port (a stack that
    sets one flow label per connection). ``fixed``: one port, 0xC000 (``IB_ROCE_UDP_ENCAP_VALID_PORT_MIN``), for
    every QP: a stack that does not vary the port, so 5-tuple ECMP sees one flow per NIC pair; Meta's report that
    5-tuple ECMP saw too little entropy and needed E-ECMP to hash the destination QP ([S2]) describes this case.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.fabric.hashing import splitmix64

MAXCHANNELS = 64                     # src/include/device.h
RING_SEARCH_MAX_CHANNELS = MAXCHANNELS // 2      # src/init.cc: ringGraph->maxChannels
SM90_SPEED_INTER = (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12)
PCIE_GEN5_X16_GBPS = 48.0            # src/graph/topo.cc: 16 lanes x 240 (32 GT/s) / 80
H100_COMPUTE_CAPABILITY = 90
DEFAULT_QPS_PER_CONNECTION = 1       # NCCL_IB_QPS_PER_CONNECTION
MAX_QPS_PER_CONNECTION = 128         # NCCL_IB_MAX_QPS
UDP_SPORT_MODES = ("per_qp", "per_connection", "fixed")
DEFAULT_UDP_SPORT = "per_qp"
FIXED_UDP_SPORT = 0xC000             # IB_ROCE_UDP_ENCAP_VALID_PORT_MIN (include/rdma/ib_verbs.h)
QPN_BITS = 24
QPN_BASE_SPAN = (1 << QPN_BITS) - (1 << 20)     # a seeded base leaves 2^20 numbers for the NIC's QPs


@dataclass(frozen=True)
class ChannelSteps:
    """Each step of NCCL's ring channel count (see the module docstring), for reports and tests."""

    speed: float          # GB/s per channel found by the search
    searched: int
    duplicated: int       # after ncclTopoDupChannels
    postset: int          # after ncclTopoPostset's duplication (and the sm90 doubling)
    final: int            # after NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS


def ring_channel_steps(nics: int, nodes: int = 2, nic_gbps: float = 50.0, pci_gbps: float = PCIE_GEN5_X16_GBPS,
                       cc: int = H100_COMPUTE_CAPABILITY, min_channels: int | None = None,
                       max_channels: int | None = None) -> ChannelSteps:
    """NCCL's ring channels on hosts with ``nics`` NICs in use (one per GPU of the job on a host), ``nodes`` hosts,
    NICs of ``nic_gbps`` GB/s on PCIe links of ``pci_gbps`` GB/s, GPUs of compute capability ``cc`` (90: H100),
    under ``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS`` (``None``: unset). Only sm90-class speeds are modelled.

    >>> [ring_channel_steps(8, **kw).final for kw in ({}, {"max_channels": 4}, {"min_channels": 32})]
    [16, 4, 32]
    """
    if nics < 1:
        raise ValueError(f"a host needs at least one NIC in use, got {nics}")
    path = min(nic_gbps, pci_gbps)
    speed = next((s for s in SM90_SPEED_INTER if s <= path), SM90_SPEED_INTER[-1])
    n = min(nics * max(int(path // speed), 1), RING_SEARCH_MAX_CHANNELS)
    searched, bw = n, speed
    if bw >= 25.0 and not (cc > 80 and bw < 50.0 and n > 4):          # ncclTopoDupChannels
        dup = min(2 * n, RING_SEARCH_MAX_CHANNELS)
        bw /= -(-dup // n)
        n = dup
    duplicated = n
    n = min(MAXCHANNELS, 2 * n)                                        # ncclTopoPostset: ring c + n = ring c
    if cc >= 90 and nodes > 1 and bw > 45.0 and n < 16:                # 4 compute channels per search channel
        n = min(MAXCHANNELS, 2 * n)
    postset = n
    if max_channels is not None:
        n = min(n, max(int(max_channels), 1), MAXCHANNELS)
    if min_channels is not None:
        n = max(n, min(int(min_channels), MAXCHANNELS))
    return ChannelSteps(speed=speed, searched=searched, duplicated=duplicated, postset=postset, final=n)


def ring_channels(nics: int, nodes: int = 2, **kw) -> int:
    """The channel count of :func:`ring_channel_steps` (NCCL's ``comm->nChannels`` for rings and trees)."""
    return ring_channel_steps(nics, nodes, **kw).final


# --------------------------------------------------------------------------------------------------- UDP port
def calc_flow_label(lqpn, rqpn) -> np.ndarray:
    """``rdma_calc_flow_label`` (include/rdma/ib_verbs.h): a 20-bit flow label from the two QP numbers."""
    v = np.asarray(lqpn, dtype=np.uint64) * np.asarray(rqpn, dtype=np.uint64)
    v ^= v >> np.uint64(20)
    v ^= v >> np.uint64(40)
    return v & np.uint64(0xFFFFF)


def flow_label_to_udp_sport(fl) -> np.ndarray:
    """``rdma_flow_label_to_udp_sport``: the low 14 bits xor the high 6, in the range 0xC000..0xFFFF."""
    fl = np.asarray(fl, dtype=np.uint64)
    return ((fl & np.uint64(0x3FFF)) ^ ((fl & np.uint64(0xFC000)) >> np.uint64(14))) | np.uint64(FIXED_UDP_SPORT)


def udp_sport_of_qp(lqpn, rqpn) -> np.ndarray:
    """The UDP source port the kernel gives an RC QP whose flow label is 0 (``rdma_get_udp_sport``).

    >>> int(udp_sport_of_qp(0x1234, 0x5678)[()]) >= 0xC000
    True
    """
    lqpn, rqpn = np.asarray(lqpn, dtype=np.uint64), np.asarray(rqpn, dtype=np.uint64)
    if lqpn.ndim == 0 and rqpn.ndim == 0:
        return flow_label_to_udp_sport(calc_flow_label(lqpn, rqpn))
    # the two steps above fused in place over one scratch array (a connection's QPs: millions of flows)
    v = np.multiply(lqpn, rqpn, dtype=np.uint64)
    t = np.empty_like(v)
    v ^= np.right_shift(v, np.uint64(20), out=t)
    v ^= np.right_shift(v, np.uint64(40), out=t)
    v &= np.uint64(0xFFFFF)                                   # the flow label
    np.right_shift(v, np.uint64(14), out=t)                   # its high 6 bits (it has 20)
    v &= np.uint64(0x3FFF)
    v ^= t
    v |= np.uint64(FIXED_UDP_SPORT)
    return v


# --------------------------------------------------------------------------------------------------- QPs
@dataclass
class ConnectionFlows:
    """The QP flows of a set of connections (transfers): per flow its transfer, QP index in the connection, the
    sender's and receiver's QP numbers and the UDP source port. Ordered transfer-major, QP-minor; the transfer
    of each flow is derived on access (the flow builder does not keep it)."""

    qp: np.ndarray
    sqpn: np.ndarray
    dqpn: np.ndarray
    sport: np.ndarray
    qps: int = 1

    @property
    def transfer(self) -> np.ndarray:
        return np.repeat(np.arange(self.qp.size // max(self.qps, 1), dtype=np.int64), self.qps)


def qpn_bases(nics, seed: int, qpn_base: int | None = None) -> np.ndarray:
    """Each NIC's first QP number: ``qpn_base`` for all, or drawn per NIC from ``seed`` (module docstring)."""
    nics = np.asarray(nics, dtype=np.uint64)
    if qpn_base is not None:
        return np.full(nics.size, int(qpn_base), dtype=np.uint64)
    mix = splitmix64(nics ^ splitmix64(np.array([seed ^ 0x51CE], dtype=np.uint64)))
    return np.uint64(2) + mix % np.uint64(QPN_BASE_SPAN)


def connection_flows(src_nic, dst_nic, channel, qps: int, udp_sport: str = DEFAULT_UDP_SPORT, seed: int = 0,
                     qpn_base: int | None = None) -> ConnectionFlows:
    """The ``qps`` QP flows of each connection ``t`` from NIC ``src_nic[t]`` to ``dst_nic[t]`` on ``channel[t]``,
    with QP numbers and UDP source ports as the module docstring states. Vectorized: O(T log T)."""
    if udp_sport not in UDP_SPORT_MODES:
        raise ValueError(f"udp_sport {udp_sport!r} is not one of {', '.join(UDP_SPORT_MODES)}")
    qps = int(qps)
    if not 1 <= qps <= MAX_QPS_PER_CONNECTION:
        raise ValueError(f"qps must lie in 1..{MAX_QPS_PER_CONNECTION}, got {qps}")
    src_nic = np.asarray(src_nic, dtype=np.int64)
    dst_nic = np.asarray(dst_nic, dtype=np.int64)
    channel = np.asarray(channel, dtype=np.int64)
    T = src_nic.size
    # Endpoints: the send side of every connection on its NIC, then the receive side; numbered per NIC in the
    # order (channel, send before receive, transfer).
    nic = np.concatenate([src_nic, dst_nic])
    order = endpoint_order(nic, channel, T)
    sorted_nic = nic[order]
    first = np.r_[True, sorted_nic[1:] != sorted_nic[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(2 * T), 0))
    rank = np.empty(2 * T, dtype=np.int64)
    rank[order] = np.arange(2 * T) - group_start
    base = qpn_bases(nic, seed, qpn_base)
    q = np.arange(qps, dtype=np.uint64)
    mask = np.uint64((1 << QPN_BITS) - 1)
    first_qpn = base + rank.astype(np.uint64) * np.uint64(qps)
    sqpn = (first_qpn[:T, None] + q[None, :]) & mask                 # (T, qps)
    dqpn = (first_qpn[T:, None] + q[None, :]) & mask
    if udp_sport == "fixed":
        sport = np.full((T, qps), FIXED_UDP_SPORT, dtype=np.uint64)
    elif udp_sport == "per_connection":
        sport = np.repeat(udp_sport_of_qp(sqpn[:, 0], dqpn[:, 0])[:, None], qps, axis=1)
    else:
        sport = udp_sport_of_qp(sqpn, dqpn)
    return ConnectionFlows(qp=np.tile(np.arange(qps, dtype=np.int64), T), sqpn=sqpn.ravel(), dqpn=dqpn.ravel(),
                           sport=sport.ravel(), qps=qps)


def endpoint_order(nic: np.ndarray, channel: np.ndarray, T: int) -> np.ndarray:
    """The order of the ``2 T`` endpoints (send sides ``0..T-1``, then receive sides) by (NIC, channel, send before
    receive, transfer): one sort of packed 64-bit keys whose low bits are the endpoint itself, or a lexsort when the
    fields do not fit in 63 bits."""
    e = np.arange(2 * T, dtype=np.int64)            # role x T + transfer: its order is (role, transfer)
    if T == 0:
        return e
    c = np.concatenate([channel, channel]) - int(channel.min())
    lo, cw = max(1, (2 * T - 1).bit_length()), max(1, int(c.max()).bit_length())
    n0 = int(nic.min())
    if lo + cw + max(1, int(nic.max()) - n0).bit_length() > 63:
        return np.lexsort((e, c, nic))
    key = (((nic - n0) << cw | c) << lo | e).astype(np.uint64)
    _sort_distinct(key)
    return (key & np.uint64((1 << lo) - 1)).astype(np.int64)


RUNS_PER_MERGE_SORT = 1 / 64     # at most this many ascending runs per key: merge them (see _sort_distinct)


def _sort_distinct(key: np.ndarray) -> None:
    """Sort distinct keys in place. A ring's connections come channel by channel, each channel's mostly in NIC
    order, so the endpoint keys are a few long ascending runs: timsort (``kind="stable"``) merges them in a few
    passes, 20x faster than numpy's quicksort on 2.4M keys at 600k GPUs; on keys in many short runs quicksort is the
    faster (by 20 %, measured on this machine). Keys being distinct, both give the same order."""
    runs = 1 + np.count_nonzero(key[1:] < key[:-1])
    key.sort(kind="stable" if runs <= RUNS_PER_MERGE_SORT * key.size else "quicksort")
