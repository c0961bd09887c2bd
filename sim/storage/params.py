"""The checkpoint's and the storage fan-out's parameters."""
from __future__ import annotations

from sim.core.errors import ParamError
from sim.core.params import MAX_GPUS, Param, ParamSet
from sim.fabric.params import SEED
from sim.fabric.placement import PLACEMENTS
from sim.fabric.spec import STORAGE_KINDS
from sim.storage.published import DATA_LOADING_GBPS
from sim.storage.stores import REDUNDANCY


# ------------------------------------------------------------------------------ storage and checkpoints
MAX_CHECKPOINT_BYTES = 1 << 40    # 1 TiB per GPU: far above the 1 MB..4 GB per GPU Meta reports (docs/sources.md [S1])
MAX_FILE_BYTES = 1 << 30          # a fan-out file: "small files" (code), at most 1 GiB each
MAX_FILES = 100_000               # files every fan-out client opens
MAX_SPREAD = 256                  # storage servers one host's data is spread over in the flow model
MAX_SAMPLES = 1000                # points of a result's time series


def _check_checkpoint(v: dict) -> None:
    if v["writers"] is not None and v["writers"] > v["gpus"]:
        raise ParamError("writers", f"must be at most gpus ({v['gpus']:,})")


STORE = Param("store", "choice", "tectonic", "the storage cluster (by its kind in the spec)",
              choices=STORAGE_KINDS)
SERVERS = Param("servers", "int", None, "storage servers of the store to use (the first ones, in layout order); "
                                        "null: every active server", min=1, max=MAX_GPUS, nullable=True)
METADATA_KOPS = Param("metadata_kops", "float", None, "metadata service capacity in thousands of operations per "
                                                      "second; null: the store's default (docs/storage.md)",
                      min=1e-3, max=1e6, nullable=True)
METADATA_LATENCY = Param("metadata_latency_us", "float", None, "one metadata operation's round trip in "
                                                               "microseconds (a client's operations are serial); "
                                                               "null: the store's default", min=0.0, max=1e6,
                         nullable=True)

CHECKPOINT = ParamSet("checkpoint", (
    Param("gpus", "int", 1024, "GPUs (ranks) in the job", min=1, max=MAX_GPUS, short="-n", fits=True),
    Param("bytes_per_gpu", "size", "4G", "checkpoint bytes each writing rank saves (K/M/G/T: powers of 1024)",
          min=1, max=MAX_CHECKPOINT_BYTES),
    Param("writers", "int", None, "ranks that write (ranks 0..writers-1, e.g. one replica of a sharded FSDP "
                                  "state); null: every rank", min=1, max=MAX_GPUS, nullable=True),
    STORE,
    Param("mode", "choice", "async", "sync: training waits until durable; async: it waits for the copy to host "
                                     "memory, an upload drains it", choices=("sync", "async")),
    Param("restore", "bool", False, "load the checkpoint instead (every rank reads its state back: the read path)"),
    Param("placement", "choice", "topology", "how the job's GPUs are chosen", choices=PLACEMENTS),
    SEED,
    Param("data_loading_gbps", "float", DATA_LOADING_GBPS, "training-data reads per job host in Gb/s, running "
          "beside the checkpoint (0: none); default: the store's published sustained 2 TB/s over the 6,144 GPU "
          "hosts it serves (docs/storage.md)", min=0.0, max=10_000.0),
    Param("redundancy", "choice", None, "write amplification: rs-9-6 (Reed-Solomon, 9 chunks per 6 of data), "
                                        "rs-3-2 (3 per 2), replicate-3, replicate-2, none; null: the storage "
                                        "cluster's own (its preset's [[storage]] redundancy), else the store's "
                                        "default",
          choices=tuple(REDUNDANCY), nullable=True),
    Param("block_size", "size", None, "bytes per block (one metadata entry per block); null: the store's default",
          min=1, max=MAX_CHECKPOINT_BYTES, nullable=True),
    Param("spread", "int", 16, "storage servers each host's data is spread over in the flow model (an "
                               "aggregation: docs/storage.md)", min=1, max=MAX_SPREAD),
    SERVERS,
    Param("pcie_gbps", "float", None, "GPU<->host PCIe in Gb/s each way; null: the GPU's (catalog)",
          min=1e-3, max=1e6, nullable=True),
    Param("host_memcpy_gbps", "float", None, "a host's memory copy bandwidth in Gb/s; null: the platform's "
                                             "(catalog)", min=1e-3, max=1e6, nullable=True),
    Param("client_cores", "float", None, "cores of a host's storage client (the FUSE daemon's threads); null: "
                                         "libfuse's default of 10", min=1e-3, max=1024, nullable=True),
    Param("client_core_gbs", "float", None, "GB/s (10^9 bytes/s) one client core moves through the file-system "
                                            "client (FUSE: two copies through the kernel); null: the store's",
          min=1e-3, max=1e4, nullable=True),
    Param("encode_core_gbs", "float", None, "GB/s of data one client core erasure-codes (RS only; 0: free); null: "
                                            "the store's", min=0.0, max=1e4, nullable=True),
    Param("checksum_core_gbs", "float", None, "GB/s one core checksums, on the client and on the server (0: no "
                                              "checksum); null: the store's", min=0.0, max=1e4, nullable=True),
    Param("server_cores", "float", None, "cores a storage server gives its chunk store; null: 16 (assumption)",
          min=1e-3, max=1024, nullable=True),
    Param("server_core_gbs", "float", None, "GB/s one server core moves (socket and file-system copies); null: "
                                            "the store's", min=1e-3, max=1e4, nullable=True),
    Param("ssd_write_amp", "float", None, "SSD bytes written per byte stored (the chunk store's file-system "
                                          "metadata per chunk file); null: the store's, from the chunk size",
          min=1.0, max=100.0, nullable=True),
    METADATA_KOPS,
    METADATA_LATENCY,
    Param("storage_efficiency", "float", None, "achievable share of each storage server's service rate (Tectonic: "
          "its share of the published 7 TB/s peak; else its frontend line rate); null: the fitted factor "
          "(sim/core/fitted.py)", min=0.001, max=1.0, nullable=True),
    Param("samples", "int", 100, "points of the time series", min=2, max=MAX_SAMPLES),
    Param("hottest", "int", 10, "bottleneck resources to list", min=0, max=100),
), check=_check_checkpoint, doc="A checkpoint (or restore) of a job to a storage cluster over the frontend fabric.")

STORAGE_FANOUT = ParamSet("storage_fanout", (
    Param("store", "choice", "hammerspace", STORE.help, choices=STORAGE_KINDS),
    Param("clients", "int", 1024, "clients (processes) opening and reading the same files", min=1, max=MAX_GPUS,
          fits=True),
    Param("clients_per_host", "int", 8, "clients on one host (one per GPU)", min=1, max=64),
    Param("files", "int", 100, "files every client opens and reads", min=1, max=MAX_FILES),
    Param("file_size", "size", "16K", "bytes of each file", min=1, max=MAX_FILE_BYTES),
    Param("ops_per_file", "int", None, "metadata operations per file opened; null: the store's default",
          min=0, max=100, nullable=True),
    SERVERS,
    METADATA_KOPS,
    METADATA_LATENCY,
    Param("sweep", "bool", True, "also time 1,024, 2,048, ... clients up to clients"),
), doc="N clients opening and reading the same small files (a code change seen on every node).")


