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

Costs (docs/storage.md, "Costs of a real store", has each number's source or argument)
    Every byte also costs CPU on both ends and more than itself on the SSDs. A CPU is a resource of ``cores``
    (CPU-seconds per second); a flow's *usage* of it (:func:`sim.core.maxmin.solve_max_min`) is the CPU-seconds
    one of its bytes costs there. The host's storage client (Tectonic's FUSE daemon, which also runs the thick
    client library [S10]) copies each byte through the kernel (FUSE [S60]), RS-encodes each block and checksums
    each chunk; the storage server receives, checksums and writes each chunk; the chunk store's file system writes
    its own metadata for each chunk file beside the data (SSD write amplification). With per-core rates ``fuse``,
    ``encode``, ``checksum`` and ``server`` (bytes/s; 0: not done by this store) and ``a = n/k`` the redundancy's
    amplification, per byte a flow carries (stored bytes for a write, data bytes for a read):

    - client, write: ``(1/fuse + 1/encode) / a + 1/checksum`` (copy and encode see the data once, checksums
      every chunk); client, read: ``1/fuse + 1/checksum``;
    - server, either way: ``1/server + 1/checksum``;
    - SSD write: ``1 + chunk_meta / chunk`` with ``chunk = block / k`` (one file per chunk).

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


# Redundancy schemes: (chunks stored, chunks of data) per block (an erasure code's stripe). Amplification of a write =
# stored / data. rs-3-2: one parity chunk per two of data, a stripe over 3 servers (a 3-server cluster that survives
# the loss of one: 2/3 of the raw capacity usable, as UBIX's submission states [S128]).
REDUNDANCY = {"rs-9-6": (9, 6), "rs-3-2": (3, 2), "replicate-3": (3, 1), "replicate-2": (2, 1), "none": (1, 1)}


CORE_COPY = 10e9        # bytes/s one core copies (memcpy of large buffers, DDR5 server core; assumption)
CRC32C_CORE = 20e9      # bytes/s one core checksums with the CRC32 instruction (8 bytes/cycle at 2.5 GHz; argued)
RS_ENCODE_CORE = 5e9    # bytes/s of data one core RS(9,6)-encodes with SIMD GF(2^8) arithmetic (assumption)
FUSE_THREADS = 10       # libfuse's multi-threaded loop serves requests on at most 10 threads by default [S61]
SERVER_CORES = 16       # cores a storage server gives its chunk store (assumption: a 1-socket server)
CHUNK_META_BYTES = 16 << 10   # file-system metadata written per chunk file (inode, extent, dirent, journal; argued)


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
    client_core: float            # bytes/s one client core moves through the file-system client (copies)
    encode_core: float            # bytes/s of data one client core erasure-codes (0: the client does not)
    checksum_core: float          # bytes/s one core checksums, client and server (0: no end-to-end checksum)
    server_core: float            # bytes/s one server core moves (network receive/send and file-system copy)
    chunk_meta_bytes: int         # file-system metadata bytes a storage server writes per chunk (or file) stored


STORES = {
    # Tectonic: RS(9,6) is the paper's encoding for full blocks [S10]; the block size, metadata capacity and
    # latency are assumptions (the paper gives no number the twin can use): 64 MiB blocks, a metadata service of
    # 1,000 kops/s (horizontally sharded over ZippyDB [S10]) and 1 ms per operation.
    "tectonic": StoreModel(redundancy="rs-9-6", block_size=64 << 20, metadata_kops=1000.0,
                           metadata_latency_us=1000.0, write_ops_per_file=3, write_ops_per_block=2,
                           read_ops_per_file=2, read_ops_per_block=1,
                           # FUSE: the data crosses the kernel twice (writer -> kernel, kernel -> daemon) [S60];
                           # the thick client encodes and checksums [S10]; the chunk server receives the bytes
                           # from its socket and writes them through XFS's page cache: two copies.
                           client_core=CORE_COPY / 2, encode_core=RS_ENCODE_CORE, checksum_core=CRC32C_CORE,
                           server_core=CORE_COPY / 2, chunk_meta_bytes=CHUNK_META_BYTES),
    # Hammerspace: 4 NFS operations per file (RFC 8435 sequence above); no per-block operations (one layout per
    # file); 200 kops/s and 500 us are assumptions (no public figure for Meta's deployment).
    "hammerspace": StoreModel(redundancy="none", block_size=1 << 40, metadata_kops=200.0,
                              metadata_latency_us=500.0, write_ops_per_file=4, write_ops_per_block=0,
                              read_ops_per_file=4, read_ops_per_block=0,
                              # the kernel NFS client copies once (writer -> page cache, then the NIC); no client
                              # encoding or end-to-end checksum (RFC 8881 leaves integrity to the transport).
                              client_core=CORE_COPY, encode_core=0.0, checksum_core=0.0,
                              server_core=CORE_COPY / 2, chunk_meta_bytes=CHUNK_META_BYTES),
}


def store_model(kind: str) -> StoreModel:
    try:
        return STORES[kind]
    except KeyError:
        raise ValueError(f"unknown store {kind!r}: choose one of {', '.join(STORES)}") from None


def amplification(redundancy: str) -> float:
    n, k = REDUNDANCY[redundancy]
    return n / k


@dataclass(frozen=True)
class Costs:
    """What one byte a flow carries costs beyond the links, resolved for one run: CPU-seconds per byte on the
    host's storage client (write, read) and on a storage server, and SSD bytes written per byte stored."""

    client_write: float
    client_read: float
    server: float
    ssd_write_amp: float
    service_write: float = 1.0    # file bytes per stored byte written: 1 / amplification (the service rate's unit)


def _inv(rate: float) -> float:
    return 1.0 / rate if rate > 0 else 0.0


def costs(model: StoreModel, redundancy: str, block_size: int | None = None, *, client_core: float | None = None,
          encode_core: float | None = None, checksum_core: float | None = None, server_core: float | None = None,
          ssd_write_amp: float | None = None) -> Costs:
    """The per-byte costs of the module docstring; ``None``: the store model's default. Rates in bytes/s per
    core. Encoding is charged only for an erasure code (``k > 1``).

    >>> c = costs(STORES["tectonic"], "rs-9-6")
    >>> round(c.client_write * 1e9, 4), round(c.server * 1e9, 4), round(c.ssd_write_amp, 5)
    (0.3167, 0.25, 1.00146)
    """
    n, k = REDUNDANCY[redundancy]
    amp = n / k
    fuse = model.client_core if client_core is None else client_core
    enc = (model.encode_core if encode_core is None else encode_core) if k > 1 else 0.0
    ck = model.checksum_core if checksum_core is None else checksum_core
    srv = model.server_core if server_core is None else server_core
    if ssd_write_amp is None:
        chunk = (block_size or model.block_size) / k
        ssd_write_amp = 1.0 + model.chunk_meta_bytes / chunk
    return Costs(client_write=(_inv(fuse) + _inv(enc)) / amp + _inv(ck), client_read=_inv(fuse) + _inv(ck),
                 server=_inv(srv) + _inv(ck), ssd_write_amp=float(ssd_write_amp), service_write=1.0 / amp)


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
