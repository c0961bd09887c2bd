"""Collectives as flows: which GPU sends how many bytes to which GPU, step by step, the way NCCL does it.

Model
-----
A job is its placement: ``gpus[r]`` is the GPU of rank ``r``. A collective of message size ``S`` bytes (the
nccl-tests "size": the whole buffer, i.e. the gathered output of AllGather, the input of ReduceScatter and
AllReduce, the per-rank send buffer of AllToAll, the root's buffer of Broadcast and Reduce) becomes a list of
:class:`Phase`. A phase is a set of concurrent GPU-to-GPU *transfers* (``src``, ``dst``, and ``share``: bytes per
byte of ``S``) repeated ``steps`` times with the same pattern; the network engine (:mod:`sim.fabric.netsim`) splits the
inter-host transfers over queue pairs, routes them, solves their rates once per phase and multiplies.

Channels and hosts (NCCL's rings over a host's NIC rails)
    Hosts are ordered by their lowest rank (NCCL orders nodes by rank). Inside a host the job's GPUs are in GPU
    index order (``intra_order="gpu"``, the default): NCCL's rings take their intra-node order from its topology
    search, not from the rank numbering; on an NVSwitch host the search tries the next GPU index first
    (``ncclTopoSearchNextGpuSort`` in NCCL's ``src/graph/search.cc``, docs/sources.md [S6]).
    ``intra_order="rank"`` keeps the ranks' own order inside each host instead (what an ``NCCL_GRAPH_FILE`` that
    lists the ranks in that order forces). The data is split over ``C`` channels (default: NCCL's own count,
    :func:`sim.fabric.nccl.ring_channels`: 16 on hosts of 8 H100s with a 400G NIC each, i.e. 2 per NIC). Channel ``c``
    visits the GPUs of every host rotated by ``c`` (``L[(c + j) mod m]``, ``j = 0..m-1`` for a host holding ``m``
    job GPUs), so it enters each host at GPU ``c mod m`` and leaves it from the GPU before that: with full hosts each
    NIC sends ``C / m`` channels and receives as many, and channels ``c`` and ``c + m`` run the same ring (NCCL's
    duplicated channels), each with its own connection. Hops inside a host go over NVLink; the hop to the next host
    leaves the
    sending GPU's own NIC. Each channel carries ``S / C`` of the data.

Algorithms (per channel; ``N`` ranks, ``H`` hosts)
    * ring AllGather / ReduceScatter: ``N - 1`` synchronous steps; in every step each rank sends one chunk of
      ``S / (N C)`` bytes to its ring successor. ring AllReduce = ReduceScatter + AllGather: ``2 (N - 1)`` steps
      of the same pattern. All steps of a ring have the same pattern, so one phase with ``steps = N - 1`` (or
      ``2 (N - 1)``).
    * tree AllReduce: NCCL's double binary tree over hosts (``ncclGetDtree``: tree 0 is the binary tree of
      ``ncclGetBtree``, tree 1 its mirror for an even host count and its shift by one for an odd one, so a host is
      interior in at most one of them). Inside a host the job's GPUs form a chain whose head (GPU ``c mod m``) does
      the host's network traffic on its own NIC. Each channel runs both trees (NCCL duplicates every channel, one
      copy per tree), each on half the channel's data. Reduce goes up (chain towards the head, child head to parent
      head) while broadcast comes down, pipelined: one phase in which every tree and chain edge carries its
      ``S / (2 C)`` bytes concurrently, ``steps = 1``. An interior host's NIC thus sends 1 (up) + 2 (down) streams
      of one tree and 1 (up) of the other: the same bytes per NIC as a ring (about ``2 S / C``).
    * Broadcast (Reduce): NCCL's pipelined chain: the channel's ring opened at the root (closed into the root),
      every chain edge carries ``S / C`` concurrently, ``steps = 1``.
    * AllToAll: every rank sends ``S / N`` bytes (times ``weights[i, j]`` for uneven exchanges) to every other rank
      at once, as NCCL posts all its sends and receives in one group: one phase of ``N (N - 1)`` transfers solved
      event-driven (a flow that finishes leaves its bandwidth to the others). ``N^2`` flows: refused above
      ``max_flows`` (default :data:`MAX_ALLTOALL_TRANSFERS`) with a clear error.

Latency (the critical path of each phase, for :mod:`sim.fabric.netsim`): a phase says which of its transfers follow one
another on a pipeline (``lat_next``: the transfer a chunk crosses next, ``-1`` at the end), how many of them one
chunk crosses (``lat_span``, 0: to the end), which pipelines run side by side (``lat_group``: a channel, or a
channel's tree) and which stages of a pipeline follow each other (``lat_stage``). The engine charges each transfer
its own hop latency and takes, per group, the sum over stages of the slowest chain. Ring AllGather/ReduceScatter:
each channel's ring, a chunk crossing ``N - 1`` consecutive hops (``2 (N - 1)`` for AllReduce: ReduceScatter then
AllGather), so the slowest ``N - 1`` consecutive hops of the ring set it. Tree: up the chain and the tree to the
root, then down (two stages per channel and tree). Broadcast / Reduce: the whole chain. AllToAll: one hop (the
slowest pair).

Everything is vectorized over ranks and channels: a 131,072-GPU ring of 8 channels is built in tens of ms.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.fabric.nccl import ring_channels
from sim.core.units import GB, IDX

COLLECTIVES = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "reduce")
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain", "pat")   # NCCL_ALGO's
ALGORITHM_CHOICES = ("auto",) + ALGORITHMS      # auto: NCCL's choice per size (sim.fabric.nccl_tuning.choose_algo)
# Which collectives each algorithm runs (NCCL's ncclTopoTuneModel, src/graph/tuning.cc [S6]).
ALGORITHM_COLLECTIVES = {
    "ring": ("allgather", "reducescatter", "allreduce", "broadcast", "reduce"),
    "tree": ("allreduce",),
    "nvls": ("allgather", "reducescatter", "allreduce"),
    "nvls_tree": ("allreduce",),
    "collnet_direct": ("allgather", "reducescatter", "allreduce"),
    "collnet_chain": ("allreduce",),
    "pat": ("allgather", "reducescatter"),
}
SWITCH_UP, SWITCH_DOWN = 1, 2   # Phase.switch: a GPU's NVLS leg into its host's NVSwitch, or out of it
SHARP_UP, SHARP_DOWN = 3, 4     # Phase.switch: a CollNet head's leg up its NIC into the SHARP tree, or back down
INTRA_ORDERS = ("gpu", "rank")   # a host's GPUs in a ring: GPU index order (NCCL's search) or the ranks' order
# Spellings users type, mapped to the canonical names (nccl-tests binary names without _perf, NCCL API names).
ALIASES = {"all_gather": "allgather", "all-gather": "allgather", "reduce_scatter": "reducescatter",
           "reduce-scatter": "reducescatter", "all_reduce": "allreduce", "all-reduce": "allreduce",
           "alltoall": "alltoall", "all_to_all": "alltoall", "all-to-all": "alltoall", "bcast": "broadcast"}
DTYPES = {"int8": 1, "uint8": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4, "double": 8, "int64": 8}
MAX_ALLTOALL_TRANSFERS = 1_000_000   # N (N - 1) GPU pairs: N of about 1,000 ranks


class CollectiveError(ValueError):
    """A collective that cannot be planned (unknown name or algorithm, too many flows, bad placement)."""


@dataclass
class Phase:
    """Concurrent transfers repeated ``steps`` times with the same pattern.

    ``src``, ``dst``: GPU ids (P,); ``share``: bytes of each transfer per byte of message size (P,); ``channel``:
    the NCCL channel (P,) (``-1`` where channels do not apply). ``mode`` is ``"sync"`` (a step ends when its slowest
    transfer ends) or ``"event"`` (one event-driven makespan). ``lat_next``, ``lat_span``, ``lat_group``,
    ``lat_stage``: the phase's latency pipelines (see the module docstring); ``None`` means every transfer is a
    pipeline of one hop in group 0.
    """

    name: str
    src: np.ndarray
    dst: np.ndarray
    share: np.ndarray
    channel: np.ndarray
    steps: int = 1
    mode: str = "sync"
    lat_next: np.ndarray | None = None
    lat_span: int = 1
    lat_group: np.ndarray | None = None
    lat_stage: np.ndarray | None = None
    switch: np.ndarray | None = None   # (P,) legs: 0 none, SWITCH_UP (GPU -> NVSwitch), SWITCH_DOWN (-> GPU),
    #                                    SHARP_UP (GPU -> its NIC -> the SHARP tree), SHARP_DOWN (tree -> NIC -> GPU)


@dataclass
class CollectivePlan:
    """A collective on a placement: its phases, and the nccl-tests conventions to report it."""

    collective: str
    algorithm: str
    n_ranks: int
    gpus: np.ndarray                  # (N,) GPU of each rank
    n_hosts: int
    channels: int
    phases: list[Phase] = field(default_factory=list)
    root: int = -1                    # rank, for Broadcast and Reduce

    @property
    def busbw_factor(self) -> float:
        return busbw_factor(self.collective, self.n_ranks)

    @property
    def n_transfers(self) -> int:
        return sum(len(p.src) for p in self.phases)


def canonical(collective: str) -> str:
    """The canonical name of a collective (``all_gather`` -> ``allgather``); CollectiveError if unknown."""
    name = ALIASES.get(collective.lower(), collective.lower())
    if name not in COLLECTIVES:
        raise CollectiveError(f"unknown collective {collective!r}: choose one of {', '.join(COLLECTIVES)}")
    return name


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw x factor.

    >>> busbw_factor("allreduce", 4), busbw_factor("allgather", 4), busbw_factor("broadcast", 4)
    (1.5, 0.75, 1.0)
    """
    name = canonical(collective)
    if n < 1:
        raise CollectiveError(f"a collective needs at least one rank, got {n}")
    if name == "allreduce":
        return 2.0 * (n - 1) / n
    if name in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def element_count(collective: str, size: int, n: int, dtype: str = "float") -> int:
    """The ``count`` column of nccl-tests: elements per rank for AllGather, ReduceScatter and AllToAll, else of
    the whole buffer."""
    per = DTYPES[dtype]
    if canonical(collective) in ("allgather", "reducescatter", "alltoall"):
        return int(size) // (per * n)
    return int(size) // per


# ----------------------------------------------------------------------------------------------- hosts & channels
@dataclass
class HostGroups:
    """The job's GPUs grouped by host in NCCL order: ``ordered[offset[h]:offset[h] + size[h]]`` are host ``h``'s
    GPUs (GPU index order, or rank order with ``intra_order="rank"``); hosts in order of their lowest rank."""

    ordered: np.ndarray   # (N,) GPU ids
    offset: np.ndarray    # (H,)
    size: np.ndarray      # (H,)
    host: np.ndarray      # (H,) host ids

    @property
    def n_hosts(self) -> int:
        return len(self.size)


def host_groups(gpus: np.ndarray, gpu_host: np.ndarray, intra_order: str = "gpu") -> HostGroups:
    """Group the ranks' GPUs by host: hosts in order of their lowest rank, GPUs of a host by GPU id
    (``intra_order="gpu"``) or by rank (``"rank"``)."""
    if intra_order not in INTRA_ORDERS:
        raise CollectiveError(f"unknown intra_order {intra_order!r}: choose one of {', '.join(INTRA_ORDERS)}")
    gpus = np.asarray(gpus, dtype=IDX)
    if gpus.ndim != 1 or gpus.size == 0:
        raise CollectiveError("a placement is a non-empty 1-D array of GPU ids (rank -> GPU)")
    if _has_duplicates(gpus):
        raise CollectiveError("a placement may not give one GPU to two ranks")
    hosts = np.asarray(gpu_host)[gpus]
    uniq, first = np.unique(hosts, return_index=True)
    host_pos = np.empty(uniq.size, dtype=IDX)
    host_pos[np.argsort(first, kind="stable")] = np.arange(uniq.size)
    pos = host_pos[np.searchsorted(uniq, hosts)]
    order = np.lexsort((gpus if intra_order == "gpu" else np.arange(gpus.size), pos))
    size = np.bincount(pos, minlength=uniq.size).astype(IDX)
    offset = np.concatenate(([0], np.cumsum(size)[:-1])).astype(IDX)
    host = np.empty(uniq.size, dtype=IDX)
    host[host_pos] = uniq
    return HostGroups(ordered=gpus[order], offset=offset, size=size, host=host)


def _has_duplicates(ids: np.ndarray) -> bool:
    """Whether an id occurs twice: a count per id when they span a range near their number, else a sort."""
    lo, hi = int(ids.min()), int(ids.max())
    if hi - lo < 4 * ids.size:
        return bool(np.bincount(ids - lo).max() > 1)
    s = np.sort(ids)                      # not np.unique: its first call imports numpy.ma (10 ms of a start-up)
    return bool((s[1:] == s[:-1]).any())


def _host_of_position(g: HostGroups) -> np.ndarray:
    return np.repeat(np.arange(g.n_hosts), g.size)


def channel_sequences(g: HostGroups, channels: int) -> np.ndarray:
    """(C, N) GPU sequence of each channel: the hosts in order, each host's GPUs rotated by the channel number.
    Hosts of one size (the usual job) rotate as columns of a (hosts, GPUs per host) table: no per-GPU modulo."""
    n = len(g.ordered)
    m = int(g.size[0])
    if (g.size == m).all():
        table = g.ordered.reshape(-1, m)
        return np.stack([np.take(table, (np.arange(m) + c) % m, axis=1).ravel() for c in range(channels)])
    hpos = _host_of_position(g)
    j = np.arange(n) - g.offset[hpos]
    m = g.size[hpos]
    c = np.arange(channels)[:, None]
    return g.ordered[g.offset[hpos] + (c + j) % m]


def ring_next(channels: int, n: int) -> np.ndarray:
    """(C n,) the transfer after each one on its channel's ring, for transfers laid out channel-major in ring order
    (transfer ``c n + j`` goes from the ``j``-th GPU of channel ``c``'s ring to the ``j+1``-th).

    >>> ring_next(2, 3).tolist()
    [1, 2, 0, 4, 5, 3]
    """
    j = np.arange(n, dtype=IDX)
    return ((np.arange(channels, dtype=IDX) * n)[:, None] + (j + 1) % n).ravel()


# ----------------------------------------------------------------------------------------------- double binary tree
def btree_parents(n: int) -> np.ndarray:
    """Parent of each node ``0..n-1`` in NCCL's binary tree (``ncclGetBtree``); ``-1`` for the root 0.

    A node's parent clears its lowest set bit and sets the next one, or only clears it when that falls outside.

    >>> btree_parents(5).tolist()
    [-1, 2, 4, 2, 0]
    """
    r = np.arange(n, dtype=IDX)
    parent = np.full(n, -1, dtype=IDX)
    if n <= 1:
        return parent
    rr = r[1:]
    bit = rr & -rr
    up = (rr ^ bit) | (bit << 1)
    parent[1:] = np.where(up >= n, rr ^ bit, up)
    return parent


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two trees (``ncclGetDtree``): tree 0 the binary tree, tree 1 its mirror (``n`` even) or
    its shift by one (``n`` odd). Each node is an interior node of at most one of them.

    >>> [t.tolist() for t in dtree_parents(4)]
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    """
    t0 = btree_parents(n)
    r = np.arange(n, dtype=IDX)
    if n % 2 == 1:
        u = btree_parents(n)[(r - 1) % n]
        t1 = np.where(u < 0, -1, (u + 1) % n)
    else:
        u = btree_parents(n)[n - 1 - r]
        t1 = np.where(u < 0, -1, n - 1 - u)
    return t0, t1


def tree_depth(parent: np.ndarray) -> int:
    """Edges on the longest root-leaf path of a tree given by its parent array."""
    depth = np.zeros(len(parent), dtype=IDX)
    cur = parent.copy()
    d = 0
    while (cur >= 0).any():
        d += 1
        alive = cur >= 0
        depth[alive] = d
        cur[alive] = parent[cur[alive]]
    return int(depth.max()) if len(depth) else 0


# ----------------------------------------------------------------------------------------------- planning
def plan_collective(collective: str, gpus, gpu_host, algorithm: str = "ring", *, channels: int | None = None,
                    root: int = 0, weights=None, max_flows: int = MAX_ALLTOALL_TRANSFERS,
                    intra_order: str = "gpu", min_channels: int | None = None, max_channels: int | None = None,
                    nic_bandwidth: float = 50e9) -> CollectivePlan:
    """The phases of ``collective`` over the ranks ``gpus`` (rank -> GPU) on hosts ``gpu_host`` (GPU -> host).

    ``algorithm``: ``"ring"`` for every collective, or ``"tree"`` for AllReduce. ``channels``: NCCL channels
    (default: NCCL's own count, :func:`sim.fabric.nccl.ring_channels`, for hosts using as many NICs as the job has GPUs on
    its fullest host, of ``nic_bandwidth`` bytes/s each, under ``min_channels`` / ``max_channels``: 16 on
    8-GPU H100 hosts, 2 per NIC). ``root``: rank of Broadcast / Reduce. ``weights``
    (N, N): relative sizes of AllToAll's pair transfers (default all 1; pair ``(i, j)`` sends ``weights[i, j] S / N``
    bytes). ``max_flows``: refuse an AllToAll with more pair transfers than this. ``intra_order``: a host's GPUs
    in the rings and chains in GPU order (``"gpu"``, NCCL's topology search) or in rank order (``"rank"``).
    Ring and tree (and AllToAll's direct); NCCL's other algorithms: :func:`sim.fabric.algorithms.plan`.
    """
    name = canonical(collective)
    if name == "alltoall" and algorithm == "direct":
        algorithm = "ring"                                      # AllToAll has one algorithm, whatever it is called
    if algorithm not in ALGORITHMS:
        raise CollectiveError(f"unknown algorithm {algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
    if algorithm == "tree" and name != "allreduce":
        raise CollectiveError(f"the tree algorithm is modelled for allreduce only, not {name}")
    if name not in ALGORITHM_COLLECTIVES[algorithm] and name != "alltoall":
        raise CollectiveError(f"NCCL's {algorithm} algorithm runs {', '.join(ALGORITHM_COLLECTIVES[algorithm])} "
                              f"only, not {name}")
    if algorithm not in ("ring", "tree") and name != "alltoall":
        raise CollectiveError(f"{algorithm} is planned by sim.fabric.algorithms.plan (NVLS, NVLS-Tree, PAT, CollNet)")
    g = host_groups(gpus, gpu_host, intra_order)
    gpus = np.asarray(gpus, dtype=IDX)
    n, h = gpus.size, g.n_hosts
    C = int(channels) if channels else ring_channels(int(g.size.max()), h, nic_gbps=nic_bandwidth / GB,
                                                     min_channels=min_channels, max_channels=max_channels)
    if C < 1:
        raise CollectiveError(f"channels must be at least 1, got {channels}")
    plan = CollectivePlan(collective=name, algorithm=algorithm, n_ranks=n, gpus=gpus, n_hosts=h, channels=C,
                          root=root if name in ("broadcast", "reduce") else -1)
    if n == 1:
        return plan
    if name == "alltoall":
        plan.channels, plan.algorithm = 1, "direct"
        plan.phases.append(_alltoall(gpus, gpu_host, weights, max_flows))
        return plan
    seq = channel_sequences(g, C)                               # (C, N)
    chan = np.repeat(np.arange(C, dtype=IDX), n)
    if name in ("allgather", "reducescatter", "allreduce") and algorithm == "ring":
        src, dst = seq.ravel(), np.roll(seq, -1, axis=1).ravel()
        steps = (2 if name == "allreduce" else 1) * (n - 1)
        plan.phases.append(Phase("ring", src, dst, np.full(src.size, 1.0 / (n * C)), chan, steps=steps,
                                 lat_next=ring_next(C, n), lat_span=steps, lat_group=chan))
    elif name == "allreduce":
        plan.phases.append(_double_tree(g, C, n))
    else:
        if not 0 <= root < n:
            raise CollectiveError(f"root rank {root} is outside 0..{n - 1}")
        src, dst = seq.ravel(), np.roll(seq, -1, axis=1).ravel()
        keep = dst != gpus[root]                                # open each channel's ring at the root
        src, dst, chan = src[keep], dst[keep], chan[keep]
        if name == "reduce":
            src, dst = dst, src                                 # the same chain, data flowing to the root
        # Each kept edge is followed by the next edge of its ring unless that one was cut (the chain ends there);
        # a Reduce crosses the same edges the other way, so the whole chain is its latency path too.
        pos = np.cumsum(keep) - 1
        nxt = ring_next(C, n)
        chain_next = np.where(keep[nxt], pos[nxt], -1)[keep]
        plan.phases.append(Phase("chain", src, dst, np.full(src.size, 1.0 / C), chan, steps=1,
                                 lat_next=chain_next, lat_span=0, lat_group=chan))
    return plan


def _double_tree(g: HostGroups, C: int, n: int) -> Phase:
    """Pipelined double-binary-tree AllReduce (see the module docstring): all edges of both trees of every
    channel, up and down, each carrying ``S / (2 C)``. Latency pipelines: per channel and tree, stage 0 up (a chain
    edge leads to the next one towards the head, the head's edge to its parent's), stage 1 down (the same edges
    reversed, each after the edge into its sender)."""
    h = g.n_hosts
    hpos = _host_of_position(g)
    src_parts, dst_parts, chan_parts, next_parts, group_parts, stage_parts = [], [], [], [], [], []
    trees = dtree_parents(h)
    j = np.arange(len(g.ordered)) - g.offset[hpos]           # position of each GPU in its host's chain
    m = g.size[hpos]
    inner = j > 0
    inner_pos = np.flatnonzero(inner)
    n_inner = inner_pos.size
    inner_index = np.cumsum(inner) - 1                       # index of an inner position among the chain edges
    base = 0
    for c in range(C):
        # Chain inside each host: position j -> GPU L[(c + j) mod m]; head at j = 0.
        gpu_at = g.ordered[g.offset[hpos] + (c + j) % m]
        child, parent_in_host = gpu_at[inner], gpu_at[inner_pos - 1]
        head = g.ordered[g.offset + c % g.size]                   # (H,)
        for t, parent in enumerate(trees):
            kids = np.flatnonzero(parent >= 0)
            kid_index = np.full(h, -1, dtype=IDX)
            kid_index[kids] = np.arange(kids.size)
            up_s = np.concatenate([child, head[kids]])
            up_d = np.concatenate([parent_in_host, head[parent[kids]]])
            # Next edge of a chain edge: the chain edge below it, or at the head the host's edge to its parent.
            below = inner_pos - 1
            chain_next = np.where(j[below] > 0, inner_index[below],
                                  np.where(kid_index[hpos[below]] >= 0, n_inner + kid_index[hpos[below]], -1))
            pk = parent[kids]
            host_next = np.where(kid_index[pk] >= 0, n_inner + kid_index[pk], -1)
            nxt = np.concatenate([chain_next, host_next])
            u = up_s.size
            src_parts += [up_s, up_d]                            # reduce up, broadcast down
            dst_parts += [up_d, up_s]
            chan_parts += [np.full(2 * u, c, dtype=IDX)]
            next_parts += [np.where(nxt >= 0, nxt + base, -1), np.where(nxt >= 0, nxt + base + u, -1)]
            group_parts += [np.full(2 * u, 2 * c + t, dtype=IDX)]
            stage_parts += [np.repeat(np.arange(2, dtype=IDX), u)]
            base += 2 * u
    src, dst = np.concatenate(src_parts), np.concatenate(dst_parts)
    return Phase("double-tree", src, dst, np.full(src.size, 1.0 / (2 * C)), np.concatenate(chan_parts), steps=1,
                 lat_next=np.concatenate(next_parts), lat_span=0, lat_group=np.concatenate(group_parts),
                 lat_stage=np.concatenate(stage_parts))


def _alltoall(gpus: np.ndarray, gpu_host, weights, max_flows: int) -> Phase:
    n = gpus.size
    pairs = n * (n - 1)
    if pairs > max_flows:
        raise CollectiveError(f"alltoall over {n} ranks needs {pairs:,} GPU-pair transfers (N x (N-1)), more than "
                              f"the budget of {max_flows:,}: use at most {int((1 + (1 + 4 * max_flows) ** 0.5) / 2)} "
                              f"ranks, or raise max_flows")
    i = np.repeat(np.arange(n, dtype=IDX), n)
    j = np.tile(np.arange(n, dtype=IDX), n)
    keep = i != j
    i, j = i[keep], j[keep]
    if weights is None:
        share = np.full(i.size, 1.0 / n)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n, n) or not np.isfinite(w).all() or (w < 0).any():
            raise CollectiveError(f"alltoall weights must be a finite non-negative ({n}, {n}) matrix")
        share = w[i, j] / n
    return Phase("alltoall", gpus[i], gpus[j], share, np.zeros(i.size, dtype=IDX), steps=1, mode="event")
