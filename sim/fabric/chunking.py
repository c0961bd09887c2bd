"""NCCL's chunk sizes, and what they cost a pipelined algorithm: the pipeline's fill.

NCCL moves a channel's data through its algorithm in chunks (``calcCollChunking`` in ``src/enqueue.cc`` of NCCL
2.30.7, docs/sources.md [S6] [S147]). With the Simple protocol a GPU forwards a chunk only once all of it has arrived
(a step of the connection's buffer is handed over whole: the receiver waits for the step's flag, then reads it),
so a pipeline of ``D`` stages that carries ``n`` chunks takes ``sum_h c / r_h + (n - 1) max_h c / r_h``: the steady
state the flow core solves (the slowest stage, every chunk) plus the *fill*, each chunk crossing the other stages
once, ``c x (sum_h 1 / r_h - max_h 1 / r_h)``. LL and LL128 hand over 8-byte and 128-byte lines, each with its own
flag, so they stream with no fill at chunk scale. Rings have no fill at all: every rank sends its own data in the
first step, so all the ring's hops work from the start (docs/engine.md "Chunks and the pipeline's fill").

Chunk sizes, by algorithm (``nBytes`` the collective's bytes, ``stepSize = NCCL_BUFFSIZE / NCCL_STEPS``, 4 MiB / 8
by default, ``NCCL_STEPS = 8``, ``src/include/device.h``, ``src/init.cc``):

* Tree, and the Broadcast / Reduce chains: one step (``chunkSteps = 1``, ``BROADCAST_CHUNKSTEPS = 1``).
* NVLS: ``NCCL_NVLS_CHUNKSIZE`` (128 KiB), 32 KiB across nodes when NCCL's NVLS bandwidth is under 150 GB/s,
  then halved while the message is small beside ``concurrentOps = nvlsChannels x nHeads`` chunks: 64 KiB below
  64 x, 32 KiB below 8 x, 16 KiB below 2 x ``concurrentOps x chunk``.
* NVLS-Tree: ``min(NVLS chunk, NCCL_NVLSTREE_MAX_CHUNKSIZE)`` (the latter 64 KiB on 4 nodes or more, else the NVLS
  chunk, ``ncclNvlsTuning`` in ``src/transport/nvls.cc``), then 256 KiB below 32 x, 128 KiB below 16 x, 64 KiB
  below 4 x, 32 KiB below 1 x ``concurrentOps x chunk``.
* ``nvlsChannels``: 16 on Hopper (``NVLS_NCHANNELS_SM90``), 32 on Blackwell.

NVLS inside one node (:func:`nvls_one_node_fill`)
    NCCL's one-node NVLS kernels without registered buffers (``RunWorkColl<..., NCCL_ALGO_NVLS, ...>`` with
    ``work->oneNode`` in ``src/device/all_reduce.h``, ``all_gather.h``, ``reduce_scatter.h``, docs/sources.md
    [S160]) split each channel's CTA into warp groups that hand the data on through the NVLS buffers, step by step:
    AllReduce *scatter* (the user's buffer into each head's unicast buffer), *reduce* (``multimem.ld_reduce`` of its
    head's chunk, ``multimem.st`` of the sum) and *gather* (the heads' buffers into the user's buffer): 3 stages;
    ReduceScatter scatter and reduce, AllGather multicast and gather: 2. A step is one chunk per head, ``nHeads x
    chunk`` of the channel's data (``loopCount``), or all of it when the channel holds less (``lastChunkSize``). The
    stages run at the steady rate the flow core solves, so the first step leaves the last stage ``stages - 1`` step
    times late: the fill is ``(stages - 1) x min(nHeads x chunk, S / nvlsChannels)`` over one channel's rate.
    With user buffers registered (``regUsed``; nccl-tests does not register them unless asked, ``-R``) the scatter
    and gather groups move no data: not modelled (the twin takes nccl-tests' default).

A net plugin may set ``NCCL_BUFFSIZE`` and the NVLS chunk sizes (aws-ofi-nccl: 8 MiB and 512 KiB on p4d / p5,
:mod:`sim.fabric.netplugin`).
"""
from __future__ import annotations

from dataclasses import dataclass

NCCL_STEPS = 8                          # src/include/device.h
DEFAULT_BUFFSIZE = 1 << 22              # src/init.cc: Simple's buffer per connection, 4 MiB
NVLS_CHUNKSIZE = 128 * 1024             # src/transport/nvls.cc NCCL_NVLS_CHUNKSIZE default
NVLS_TREE_MAX_CHUNK_MANY_NODES = 65536  # nvls.cc: the NVLS-Tree chunk cap from 4 nodes on
NVLS_CHANNELS = {90: 16, 100: 32}       # NVLS_NCHANNELS_SM90 / _SM100
PIPELINED = ("tree", "nvls", "nvls_tree", "chain")   # algorithms whose Simple pipeline fills chunk by chunk
# Warp-group stages of NCCL's one-node NVLS kernels (all_reduce.h: scatter, reduce, gather; reduce_scatter.h:
# scatter, reduce; all_gather.h: multicast, gather), [S160].
NVLS_ONE_NODE_STAGES = {"allreduce": 3, "reducescatter": 2, "allgather": 2}


@dataclass(frozen=True)
class ChunkConfig:
    """What sets the chunk sizes: Simple's buffer per connection (``NCCL_BUFFSIZE``), the NVLS chunk
    (``NCCL_NVLS_CHUNKSIZE``), NVLS-Tree's cap (``NCCL_NVLSTREE_MAX_CHUNKSIZE``, ``None``: NCCL's default by node
    count), NVLS channels per GPU, nodes, and NCCL's NVLS bandwidth estimate (GB/s; under 150 across nodes NCCL
    takes 32 KiB chunks)."""

    buffsize: int = DEFAULT_BUFFSIZE
    nvls_chunk: int = NVLS_CHUNKSIZE
    nvls_tree_max_chunk: int | None = None
    nvls_channels: int = NVLS_CHANNELS[90]
    n_nodes: int = 1
    nvls_bw: float = float("inf")


def nvls_channels(compute_capability: int) -> int:
    """NCCL's NVLS channels (CTAs) by GPU generation."""
    return NVLS_CHANNELS[100] if compute_capability >= 100 else NVLS_CHANNELS[90]


def chunk_size(algorithm: str, nbytes: int, heads: int, cfg: ChunkConfig = ChunkConfig()) -> int:
    """NCCL's Simple chunk (bytes) for ``nbytes`` with ``algorithm`` (``chain``: Broadcast / Reduce), ``heads`` NVLS
    heads (GPUs per node). 0 for an algorithm without a chunk pipeline (ring, PAT, AllToAll).

    >>> [chunk_size("nvls", s, 8) for s in (1 << 22, 1 << 24, 1 << 26, 1 << 30)]
    [16384, 32768, 65536, 131072]
    >>> chunk_size("tree", 1 << 30, 8), chunk_size("tree", 1 << 30, 8, ChunkConfig(buffsize=1 << 23))
    (524288, 1048576)
    """
    step = cfg.buffsize // NCCL_STEPS
    if algorithm in ("tree", "chain"):
        return step
    ops = cfg.nvls_channels * max(int(heads), 1)
    if algorithm == "nvls":
        chunk = min(step, cfg.nvls_chunk)
        if cfg.n_nodes > 1 and cfg.nvls_bw < 150:
            chunk = min(chunk, 32768)
        for mult, size in ((64, 65536), (8, 32768), (2, 16384)):
            if nbytes < mult * ops * chunk and chunk > size:
                chunk = size
        return chunk
    if algorithm == "nvls_tree":
        cap = cfg.nvls_tree_max_chunk
        if cap is None:
            cap = NVLS_TREE_MAX_CHUNK_MANY_NODES if cfg.n_nodes >= 4 else cfg.nvls_chunk
        chunk = min(cfg.nvls_chunk, cap)
        for mult, size in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
            if nbytes < mult * ops * chunk and chunk > size:
                chunk = size
        return chunk
    return 0


# LL and LL128 buffers per connection (src/include/device.h, src/init.cc DEFAULT_LL_BUFFSIZE /
# DEFAULT_LL128_BUFFSIZE, NCCL 2.27.7 [S210]): NCCL_STEPS steps of 8 lines x 512 threads x 16 bytes (LL) and of
# 120 eight-byte words x 640 threads (LL128); LL carries 8 data bytes a 16-byte line, LL128 15 of 16 words.
LL_STEP = 8 * 512 * 16                  # NCCL_LL_LINES_PER_THREAD x NCCL_LL_MAX_NTHREADS x sizeof(ncclLLFifoLine)
LL128_STEP = 120 * 640 * 8              # NCCL_LL128_ELEMS_PER_THREAD x NCCL_LL128_MAX_NTHREADS x sizeof(uint64_t)
LL128_LINE_ELEMS, LL128_DATA_ELEMS = 16, 15


def ll_chunk_size(algorithm: str, protocol: str, nbytes: int, nchannels: int, n_nodes: int, ppn: int) -> int:
    """NCCL's LL / LL128 chunk (data bytes of one step) for ``nbytes`` (``calcCollChunking``, src/enqueue.cc
    [S210]): LL half its step, LL128 15/16 of it; tree LL128 halves it while the message is small beside the tree's
    steps (``nstepsLL128 = 1 + log2(nodes) + 0.1 ppn``: under ``nsteps x 64 / ppn`` chunks per channel down to
    128 KiB, under ``nsteps x 16 / ppn`` down to 32 KiB). ``nchannels``: NCCL's channels (a twin tree channel runs
    two of them). 0 for Simple (:func:`chunk_size`).

    >>> ll_chunk_size("tree", "LL128", 1 << 28, 32, 16, 8), ll_chunk_size("tree", "LL", 1 << 28, 32, 16, 8)
    (144000, 32768)
    """
    if protocol == "LL":
        return LL_STEP // 2
    if protocol != "LL128":
        return 0
    chunk = LL128_STEP // LL128_LINE_ELEMS * LL128_DATA_ELEMS
    if algorithm == "tree":
        nodes, ppn = max(int(n_nodes), 1), max(int(ppn), 1)
        nsteps = 1 + (nodes.bit_length() - 1) + 0.1 * ppn
        nc = max(int(nchannels), 1)
        while nbytes // (nc * chunk) < nsteps * 64 / ppn and chunk > 131072:
            chunk //= 2
        while nbytes // (nc * chunk) < nsteps * 16 / ppn and chunk > 32768:
            chunk //= 2
    return chunk


def nvls_one_node_fill(collective: str, heads: int, unit_time: float, max_share: float,
                       cfg: ChunkConfig = ChunkConfig()) -> tuple[float, float]:
    """The fill of one-node NVLS (module docstring) as :meth:`sim.fabric.results.CollectiveResult.fill` takes it:
    ``(seconds per chunk byte, chunk streams)``. ``unit_time``: the phase's solved seconds per byte of message;
    ``max_share``: its largest transfer's bytes per byte of message (the streams are counted in those bytes, so
    ``size x max_share / streams`` is one head's share of one channel, ``S / (nvlsChannels x heads)``).

    A channel moves ``1 / (nvlsChannels x unit_time)`` message bytes a second; a step of ``heads`` chunks waits
    ``stages - 1`` step times before its last stage starts.

    >>> fill, streams = nvls_one_node_fill("allreduce", 8, 1e-12, 1.0)
    >>> round(fill * 1e12), streams                  # 2 stages x 8 heads x 16 channels, 16 x 8 streams
    (256, 128.0)
    """
    stages = NVLS_ONE_NODE_STAGES.get(collective, 1)
    heads = max(int(heads), 1)
    return (stages - 1) * heads * cfg.nvls_channels * float(unit_time), cfg.nvls_channels * heads * float(max_share)
