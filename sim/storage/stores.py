"""Storage models as flow models: Tectonic through its FUSE client, Hammerspace parallel NFS.

Each model says which resources (:mod:`sim.storage.topology`) a client's bytes and metadata operations cross; the
rates come from the one max-min solve of :mod:`sim.core.flowcore`. Nothing here is a throughput constant.

Tectonic (Pan et al., FAST 2021, docs/sources.md [S10]; Meta 2024 [S1])
    A file is a list of *blocks*; a block is stored as *chunks* on different storage servers, either replicated
    (``n`` identical chunks) or Reed-Solomon encoded (RS(9,6): 6 data chunks and 3 parity chunks, 1.5x) [S10].
    The client library is thick: it encodes and sends every chunk to its storage server itself, so the client's
    NIC, the fabric, the server's NIC, CPU and SSDs all carry the *amplified* bytes (``n/k`` x the file), while a
    read fetches the ``k`` data chunks only (1x). Metadata lives in layered services (Name, File and Block layers
    over ZippyDB) [S10]: creating and writing a file costs operations per file (create, open for append, seal)
    before its data moves, and per block (allocate, commit) while it moves; reading costs lookups per file first
    and a block lookup per block while reading. The metadata
    service is one resource of ``metadata_kops`` thousand operations/s; each client's operations are serial, so a
    client issues at most one per ``metadata_latency_us`` (a rate cap on its metadata flow).
Hammerspace (Meta 2024 [S1]; pNFS flexible files, RFC 8435 and RFC 8881, docs/sources.md [S17])
    Clients get a layout from the metadata service, then move data directly to and from the data servers. Per file
    opened: ``OPEN``/``LOOKUP``, ``LAYOUTGET``, ``GETATTR``, ``CLOSE`` (4 operations, ours from the NFSv4.1/pNFS
    operation sequence). Data is not amplified by the client (protection inside the data servers: assumption).

Placement (the aggregation that keeps the flow count small). Blocks of a file go to many servers (a 4 GB file is
dozens of blocks of 9 chunks each); in the fluid limit every writer's bytes are spread evenly over the servers.
The model keeps that limit with few flows: the writers' (amplified) bytes are laid end to end and cut into
``rounds x servers`` equal segments; segment ``i`` goes to server ``perm[i mod servers]`` (``perm``: a seeded
permutation of the usable servers). Each server receives exactly the same bytes, each writer's bytes reach about
``spread`` consecutive distinct servers, and a writer with ``B`` bytes has at most ``spread + 2`` flows; the total
is about ``writers x spread + rounds x servers`` flows. ``rounds = ceil(spread x writers / servers)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sim.core.units import IDX


# Redundancy schemes: (chunks stored, chunks of data) per block. Amplification of a write = stored / data.
REDUNDANCY = {"rs-9-6": (9, 6), "replicate-3": (3, 1), "replicate-2": (2, 1), "none": (1, 1)}


@dataclass(frozen=True)
class StoreModel:
    """The defaults of one store kind; every field is a parameter of the runs (``sim.core.params``)."""

    redundancy: str               # key of REDUNDANCY
    block_size: int               # bytes per block (one block-layer entry each)
    metadata_kops: float          # thousand operations/s the metadata service serves
    metadata_latency_us: float    # one operation's round trip, microseconds
    write_ops_per_file: int       # metadata operations to create, open and seal a file
    write_ops_per_block: int      # per block written
    read_ops_per_file: int        # metadata operations to open a file for reading
    read_ops_per_block: int       # per block read


STORES = {
    # Tectonic: RS(9,6) is the paper's encoding for full blocks [S10]; the block size, metadata capacity and
    # latency are assumptions (the paper gives no number the twin can use): 64 MiB blocks, a metadata service of
    # 1,000 kops/s (horizontally sharded over ZippyDB [S10]) and 1 ms per operation.
    "tectonic": StoreModel(redundancy="rs-9-6", block_size=64 << 20, metadata_kops=1000.0,
                           metadata_latency_us=1000.0, write_ops_per_file=3, write_ops_per_block=2,
                           read_ops_per_file=2, read_ops_per_block=1),
    # Hammerspace: 4 NFS operations per file (RFC 8435 sequence above); no per-block operations (one layout per
    # file); 200 kops/s and 500 us are assumptions (no public figure for Meta's deployment).
    "hammerspace": StoreModel(redundancy="none", block_size=1 << 40, metadata_kops=200.0,
                              metadata_latency_us=500.0, write_ops_per_file=4, write_ops_per_block=0,
                              read_ops_per_file=4, read_ops_per_block=0),
}


def store_model(kind: str) -> StoreModel:
    try:
        return STORES[kind]
    except KeyError:
        raise ValueError(f"unknown store {kind!r}: choose one of {', '.join(STORES)}") from None


def amplification(redundancy: str) -> float:
    n, k = REDUNDANCY[redundancy]
    return n / k


def metadata_ops(model: StoreModel, file_bytes: np.ndarray, read: bool, block_size: int | None = None):
    """``(file_ops, block_ops)``: metadata operations per file of ``file_bytes`` (0 bytes: no file) to open it
    and for its blocks (allocated or looked up while the data moves)."""
    bs = block_size or model.block_size
    size = np.asarray(file_bytes, dtype=np.float64)
    blocks = np.ceil(size / bs)
    per_file, per_block = ((model.read_ops_per_file, model.read_ops_per_block) if read
                           else (model.write_ops_per_file, model.write_ops_per_block))
    has = size > 0
    return np.where(has, float(per_file), 0.0), np.where(has, per_block * blocks, 0.0)


def spread_segments(writer_bytes: np.ndarray, n_servers: int, spread: int, seed: int = 0):
    """Placement of the writers' bytes over ``n_servers`` (see the module docstring).

    Returns ``(writer, server, nbytes)`` arrays, one entry per flow: ``server`` indexes the usable servers
    ``0..n_servers-1``. Every server gets the same total; the sum per writer is its bytes.

    >>> w, s, b = spread_segments(np.array([6.0, 2.0]), 4, 2)
    >>> np.bincount(s, b, minlength=4).tolist(), np.bincount(w, b).tolist()
    ([2.0, 2.0, 2.0, 2.0], [6.0, 2.0])
    """
    writer_bytes = np.asarray(writer_bytes, dtype=np.float64)
    W = writer_bytes.size
    total = float(writer_bytes.sum())
    if W == 0 or total <= 0 or n_servers < 1:
        return np.zeros(0, IDX), np.zeros(0, IDX), np.zeros(0)
    active = np.flatnonzero(writer_bytes > 0)
    rounds = max(1, math.ceil(spread * active.size / n_servers))
    n_seg = rounds * n_servers
    seg = total / n_seg
    w_end = np.cumsum(writer_bytes)
    w_start = w_end - writer_bytes
    s_edges = np.arange(n_seg + 1) * seg
    s_edges[-1] = total
    # Merge the two partitions of [0, total): every boundary of either starts a piece.
    cuts = np.unique(np.concatenate([w_start[active], w_end[active], s_edges]))
    lo, hi = cuts[:-1], cuts[1:]
    keep = hi - lo > total * 1e-12
    lo, hi = lo[keep], hi[keep]
    mid = (lo + hi) / 2
    writer = np.searchsorted(w_end, mid, side="right").astype(IDX)
    segment = np.minimum((mid // seg).astype(IDX), n_seg - 1)
    perm = np.random.default_rng(seed).permutation(n_servers).astype(IDX)
    server = perm[segment % n_servers]
    nbytes = hi - lo
    # Pieces of one writer on one server (a writer spanning a whole round) are one flow.
    key = writer * n_servers + server
    uniq, inv = np.unique(key, return_inverse=True)
    return (uniq // n_servers).astype(IDX), (uniq % n_servers).astype(IDX), np.bincount(inv, nbytes)
