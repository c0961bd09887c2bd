"""How many of NCCL's point-to-point work batches one channel runs one after the other in an AllToAll.

NCCL runs an AllToAll as grouped sends and receives, one *round* per peer distance (``p2pSchedule``). Across
nodes, the rounds to the ``maxLocalRanks`` ranks of one node distance share a channel base
(``ncclP2pChannelBaseForRound``: ``nodeDelta x divUp(maxLocalRanks, 8) + localDelta / 8``, ``src/include/channel.h``)
and each round runs on ``p2pnChannelsPerPeer`` channels from it; a channel packs at most
``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` = 8 rounds into one work batch and runs its batches in sequence
(``addWorkBatchToPlan``, ``src/enqueue.cc``). So with 8 GPUs per node each node distance is one batch on each of
its channels, and a channel runs ``ceil(nodes x perPeer / p2pnChannels)`` batches, each paying the network hop's
latency before its data flows: the AllToAll's latency is that many hops, where the twin's flow model sees one.

The counts (``src/graph/paths.cc``, ``ncclTopoComputeP2pChannels`` / ``ncclTopoGetNchannels``, NCCL 2.27.7):
``p2pnChannels`` = pow2Up(min(nChannels, NCCL_MAX_P2P_NCHANNELS = 64)); per network peer 2 channels, halved while
``2 x nRanks > 4 x p2pnChannels`` (down to 1), but at least the GPU's NICs needed for its bandwidth
(``getLocalNetCountByBw``: the twin takes the NIC model's ports, 4 on p5's per-GPU EFA, 1 elsewhere); NVLink peers
take more, so the network peers' count is the minimum, rounded up to a power of 2 (``p2pnChannelsPerPeer``).
Sources: docs/sources.md [S153].
"""
from __future__ import annotations

MAX_P2P_PER_BATCH = 8          # NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h)
MAX_P2P_CHANNELS = 64          # NCCL_MAX_P2P_NCHANNELS' default, MAXCHANNELS
NCHANNELS_PER_NET_PEER = 2     # NCCL_NCHANNELS_PER_NET_PEER's default: channels per network peer [S153, S180]


def pow2_up(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def p2p_channels(channels: int) -> int:
    """``p2pnChannels``: NCCL's collective channels, at most 64, rounded up to a power of 2."""
    return pow2_up(min(max(int(channels), 1), MAX_P2P_CHANNELS))


def per_peer_channels(n_ranks: int, p2p_nchannels: int, nics_per_gpu: int = 1) -> int:
    """``p2pnChannelsPerPeer`` for a communicator with network peers: 2, halved while ``2 x nRanks`` exceeds
    ``4 x p2pnChannels``, at least ``nics_per_gpu``; a power of 2, at most ``p2pnChannels``."""
    n = NCHANNELS_PER_NET_PEER
    while n * n_ranks > p2p_nchannels * 4 and n > 1:
        n //= 2
    return min(pow2_up(max(nics_per_gpu, n)), p2p_nchannels)


def alltoall_batches(n_ranks: int, n_nodes: int, channels: int, nics_per_gpu: int = 1) -> int:
    """Work batches one channel runs in sequence in an AllToAll over ``n_nodes`` nodes of ``n_ranks / n_nodes``
    ranks each (1 inside one node: NCCL spreads a node's rounds over all channels)."""
    if n_nodes <= 1:
        return 1
    local = -(-int(n_ranks) // int(n_nodes))
    per_distance = -(-local // MAX_P2P_PER_BATCH)             # batches per node distance on one channel
    p2p = p2p_channels(channels)
    per_peer = per_peer_channels(n_ranks, p2p, nics_per_gpu)
    return max(1, -(-int(n_nodes) * per_distance * per_peer // p2p))
