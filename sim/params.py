"""One declaration of each simulation's parameters: type, range, default and help, from which the command line
(:func:`add_arguments`), the REST API's serializers and the browser's form (``twin.runs.params``) are all built, and
one validation (:meth:`ParamSet.validate`) that every one of them calls. A parameter is therefore refused for the
same reason, with the same words, wherever it comes from.

>>> COLLECTIVE.validate({"gpus": "128", "sizes": "1M:4M", "collective": "All-Gather"})["collective"]
'allgather'
>>> COLLECTIVE.validate({"qps": 0})
Traceback (most recent call last):
...
sim.errors.ParamError: qps: must be at least 1
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from sim.collectives import ALGORITHMS, COLLECTIVES, DTYPES, INTRA_ORDERS, CollectiveError, canonical
from sim.errors import ParamError, UsageError
from sim.figures import DEFAULT_SEEDS
from sim.hostlist import MAX_LIST_BYTES
from sim.nccl_tuning import PROTOCOL_CHOICES
from sim.hashing import HASHES
from sim.nccl import DEFAULT_UDP_SPORT, MAX_QPS_PER_CONNECTION, MAXCHANNELS, UDP_SPORT_MODES
from sim.placement import PLACEMENTS
from sim.routing import ROUTINGS
from sim.units import parse_size, parse_sizes

TYPES = ("int", "float", "bool", "choice", "text", "size", "sizes", "int_list")
MAX_SEED = 2**32 - 1              # numpy's legacy seeding range; every seed the engine takes fits it
MAX_GPUS = 1 << 20                # more ranks than any cluster the twin models (roadmap: 600k GPUs)
MAX_QPS = MAX_QPS_PER_CONNECTION  # NCCL's NCCL_IB_QPS_PER_CONNECTION upper bound (docs/sources.md [S6])
MAX_CHANNELS = MAXCHANNELS        # NCCL's MAXCHANNELS (docs/sources.md [S6])
DEFAULT_GPUS = 64                 # a collective's job size when neither gpus nor a host or GPU list is given
GIVEN = "given"                   # the placement of a job whose host or GPU list was given (sim.hostlist)
LISTED_PLACEMENTS = PLACEMENTS + (GIVEN,)   # a collective's placements: a policy, or the list it was given


@dataclass(frozen=True)
class Param:
    """One parameter. ``type`` is one of :data:`TYPES`; ``min``/``max`` bound numbers (inclusive) and the length of
    lists; ``choices`` the accepted values of a ``choice`` (``normalize`` may map aliases onto them); ``nullable``
    lets ``None`` mean "the engine's default" (said in ``help``); ``flag``/``short`` name the CLI option
    (default ``--name`` with dashes)."""

    name: str
    type: str
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    normalize: Callable[[str], str] | None = None
    nullable: bool = False
    flag: str | None = None
    short: str | None = None
    metavar: str | None = None

    def __post_init__(self):
        assert self.type in TYPES, self.type

    @property
    def option(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def parse(self, value):
        """``value`` (from JSON, a form or the command line, so strings are accepted for numbers) converted and
        checked; raises :class:`ParamError` naming this parameter."""
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")
                             and self.nullable):
            if self.nullable:
                return None
            raise ParamError(self.name, "may not be null")
        try:
            return getattr(self, "_parse_" + self.type)(value)
        except (ValueError, TypeError, OverflowError, UsageError, CollectiveError) as e:
            if isinstance(e, ParamError):
                raise
            raise ParamError(self.name, str(e)) from None

    def _bounds(self, v, what: str = ""):
        if self.min is not None and v < self.min:
            raise ParamError(self.name, f"{what}must be at least {_num(self.min)}")
        if self.max is not None and v > self.max:
            raise ParamError(self.name, f"{what}must be at most {_num(self.max)}")
        return v

    def _parse_int(self, value) -> int:
        if isinstance(value, bool) or isinstance(value, float) and not value.is_integer():
            raise ParamError(self.name, f"must be a whole number, got {value!r}")
        if isinstance(value, str):
            text = value.strip()
            if not text.lstrip("+-").isdigit() or len(text) > 40:
                raise ParamError(self.name, f"must be a whole number, got {value!r}")
            value = int(text)
        if not isinstance(value, (int, float)):
            raise ParamError(self.name, f"must be a whole number, got {type(value).__name__}")
        return self._bounds(int(value))

    def _parse_float(self, value) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ParamError(self.name, f"must be a number, got {value!r}")
        if isinstance(value, str) and len(value) > 40:
            raise ParamError(self.name, "must be a number")
        v = float(value)
        if not math.isfinite(v):
            raise ParamError(self.name, f"must be a finite number, got {value!r}")
        return self._bounds(v)

    def _parse_bool(self, value) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ParamError(self.name, f"must be true or false, got {value!r}")

    def _parse_choice(self, value) -> str:
        if not isinstance(value, str):
            raise ParamError(self.name, f"must be one of {', '.join(self.choices)}")
        v = self.normalize(value) if self.normalize else value
        if v not in self.choices:
            raise ParamError(self.name, f"unknown value {value!r}: choose one of {', '.join(self.choices)}")
        return v

    def _parse_text(self, value) -> str:
        if not isinstance(value, str):
            raise ParamError(self.name, "must be text")
        if self.max is not None and len(value) > self.max:
            raise ParamError(self.name, f"must be at most {_num(self.max)} characters, got {len(value):,}")
        return value

    def _parse_size(self, value) -> int:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ParamError(self.name, f"must be a size such as 4G, got {value!r}")
        return self._bounds(parse_size(value if isinstance(value, str) else str(int(value))))

    def _parse_sizes(self, value) -> str:
        if not isinstance(value, str) or len(value) > 1000:
            raise ParamError(self.name, "must be sizes as text, e.g. 1M:1G or 8M,64M")
        parse_sizes(value)
        return value.strip()

    def _parse_int_list(self, value) -> list[int]:
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)) or not value:
            raise ParamError(self.name, "must be a non-empty list of whole numbers, e.g. 512,1024")
        item = Param(self.name, "int", None, "", min=self.min, max=self.max)
        out = sorted({item.parse(v) for v in value})
        if self.choices is None and len(out) > MAX_LIST:
            raise ParamError(self.name, f"at most {MAX_LIST} values")
        return out


MAX_LIST = 16                     # values an int_list parameter may hold


def _num(x) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class ParamSet:
    """The parameters of one simulation kind, and the rules that tie several of them (``check(values)`` raises
    :class:`ParamError`)."""

    name: str
    params: tuple[Param, ...]
    check: Callable[[dict], None] | None = None
    doc: str = ""
    by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "by_name", {p.name: p for p in self.params})

    def __iter__(self):
        return iter(self.params)

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def validate(self, values: dict | None) -> dict:
        """``values`` with every parameter parsed and checked and the defaults filled in. Raises
        :class:`ParamError` with every bad field (unknown names included) and the reason for each."""
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ParamError("params", "expected an object of parameters")
        errors: dict[str, list[str]] = {}
        for name in sorted(set(values) - set(self.by_name)):
            errors[str(name)[:64]] = [f"unknown parameter of {self.name}"]
        out = {}
        for p in self.params:
            try:
                out[p.name] = p.parse(values.get(p.name, p.default))
            except ParamError as e:
                for k, v in e.errors.items():
                    errors.setdefault(k, []).extend(v)
        if errors:
            raise ParamError(errors)
        if self.check is not None:
            self.check(out)
        return out


# ------------------------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser, params: ParamSet, skip: tuple[str, ...] = ()) -> None:
    """One option per parameter of ``params`` (all taken as text: :meth:`ParamSet.validate` converts them, so the
    command line refuses exactly what the API refuses). Booleans get ``--name/--no-name``."""
    for p in params:
        if p.name in skip:
            continue
        names = [p.option] + ([p.short] if p.short else [])
        help_text = f"{p.help} (default {_default_text(p)})"
        if p.type == "bool":
            parser.add_argument(*names, dest=p.name, action=argparse.BooleanOptionalAction, default=None,
                                help=help_text)
        else:
            parser.add_argument(*names, dest=p.name, default=None, metavar=p.metavar or _metavar(p), help=help_text)


def values_from_args(args: argparse.Namespace, params: ParamSet) -> dict:
    """The parameters given on the command line (those left out take their defaults in ``validate``)."""
    return {p.name: getattr(args, p.name) for p in params if getattr(args, p.name, None) is not None}


def _metavar(p: Param) -> str:
    if p.choices:
        return "{" + ",".join(p.choices) + "}"
    return {"int": "N", "float": "X", "size": "SIZE", "sizes": "SIZES", "int_list": "N,N,..."}.get(p.type, "TEXT")


def _default_text(p: Param) -> str:
    if p.default is None:
        return "see above" if p.nullable else "none"
    if isinstance(p.default, bool):
        return "on" if p.default else "off"
    if isinstance(p.default, list):
        return ",".join(map(str, p.default))
    return str(p.default)


# ------------------------------------------------------------------------------------------ declarations
def _canonical_collective(name: str) -> str:
    try:
        return canonical(name)
    except CollectiveError:
        return name


def _canonical_protocol(name: str) -> str:
    """NCCL_PROTO's spelling, case-insensitive as NCCL reads it (``ll128`` -> ``LL128``, ``simple`` -> ``Simple``)."""
    return {p.lower(): p for p in PROTOCOL_CHOICES}.get(name.strip().lower(), name)


def _check_collective(v: dict) -> None:
    """Rules across parameters. A host or GPU list places the job (``placement`` becomes ``given``; ``gpus`` stays
    null until the list is read against the cluster, :func:`sim.hostlist.placement_of`); without one, a null
    ``gpus`` is :data:`DEFAULT_GPUS`."""
    if v["algorithm"] == "tree" and v["collective"] != "allreduce":
        raise ParamError("algorithm", "tree is for allreduce only")
    if v["channels"] is not None and (v["min_channels"] is not None or v["max_channels"] is not None):
        raise ParamError("channels", "give channels, or min_channels / max_channels (NCCL's bounds on its own "
                                     "count), not both")
    listed = [k for k in ("hosts", "gpu_list") if v.get(k) and v[k].strip()]
    if len(listed) > 1:
        raise ParamError("gpu_list", "give a host list (hosts) or a GPU list (gpu_list), not both")
    if listed:
        if v["placement"] not in ("topology", GIVEN):            # topology: the default, so not chosen
            raise ParamError("placement", f"a host or GPU list ({listed[0]}) places the job: leave placement "
                                          f"out, or give {GIVEN}, not {v['placement']}")
        v["placement"] = GIVEN
    elif v["placement"] == GIVEN:
        raise ParamError("placement", "given needs a host list (hosts) or a GPU list (gpu_list)")
    if v["gpus"] is None and not listed:
        v["gpus"] = DEFAULT_GPUS
    if v["collective"] == "alltoall" and v["protocol"] == "LL128":
        raise ParamError("protocol", "alltoall runs on NCCL's point-to-point path, which has no LL128: choose auto, "
                                     "LL or Simple")
    if v["gpus"] is not None and v["root"] >= v["gpus"]:
        raise ParamError("root", f"must be a rank of the job (below gpus, {v['gpus']:,})")


SEED = Param("seed", "int", 0, "seed of the placement and of the routing hash", min=0, max=MAX_SEED)
ROUTING = Param("routing", "choice", None, "routing; null: the fabric's default (ecmp on RoCE, dmodk on InfiniBand)",
                choices=ROUTINGS, nullable=True)
QPS = Param("qps", "int", 1, "queue pairs per NCCL connection (NCCL_IB_QPS_PER_CONNECTION); a GPU pair joined by "
                             "several channels has one connection per channel", min=1, max=MAX_QPS)
HASH = Param("hash", "choice", "uniform", "the switches' ECMP hash: uniform (ideal random), crc32 or crc16 (CRC over "
                                          "the RoCEv2 header, per-switch seed)", choices=HASHES)
UDP_SPORT = Param("udp_sport", "choice", DEFAULT_UDP_SPORT, "RoCEv2 UDP source port of each QP: per_qp (the Linux "
                  "stack's, from the QP numbers), per_connection, or fixed (one port: 5-tuple ECMP sees one flow "
                  "per NIC pair)", choices=UDP_SPORT_MODES)
HOTTEST = Param("hottest", "int", 5, "hottest links to list", min=0, max=100)

COLLECTIVE = ParamSet("collective", (
    Param("collective", "choice", "allgather", "the collective", choices=COLLECTIVES,
          normalize=_canonical_collective, short="-c"),
    Param("gpus", "int", None, f"GPUs (ranks) in the job; null: {DEFAULT_GPUS}, or all the ranks of the host or "
                               f"GPU list (with a list: its first gpus ranks)", min=2, max=MAX_GPUS, nullable=True,
          short="-n"),
    Param("placement", "choice", "topology", f"how the job's GPUs are chosen ({GIVEN}: by the host or GPU list, "
                                             f"which sets it)", choices=LISTED_PLACEMENTS),
    Param("hosts", "text", None, "host list, one host per line as mpirun and torchrun take it ('host', "
                                 "'host slots=N' or 'host:N'; # comments): ranks in its order, a host's GPUs in slot "
                                 "order", max=MAX_LIST_BYTES, nullable=True),
    Param("gpu_list", "text", None, "GPU list, one GPU per line (a GPU id, 'host:slot' or '<host>.gpuN'): rank r on "
                                    "the GPU of line r", max=MAX_LIST_BYTES, nullable=True),
    Param("intra_order", "choice", "gpu", "order of a host's GPUs in the rings: gpu (GPU order, as NCCL's topology "
                                          "search) or rank (the ranks' order, as an NCCL_GRAPH_FILE)",
          choices=INTRA_ORDERS),
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    Param("sizes", "sizes", "1M:1G", "message sizes: 1M:1G (doubling), 1K:1G:4, or 8M,64M,1G"),
    Param("algorithm", "choice", "ring", "algorithm (tree: allreduce only)", choices=ALGORITHMS),
    SEED,
    Param("seeds", "int", 1, "run with the seeds seed .. seed+seeds-1 and report the median run and the spread "
                             "(ECMP's outcome depends on the hash seed)", min=1, max=100),
    Param("type", "choice", "float", "element type", choices=DTYPES),
    Param("channels", "int", None, "NCCL channels; null: NCCL's own count (16 on 8-NIC H100 hosts)", min=1,
          max=MAX_CHANNELS, nullable=True),
    Param("min_channels", "int", None, "NCCL_MIN_NCHANNELS: at least this many channels (NCCL copies channels); "
                                       "null: unset", min=1, max=MAX_CHANNELS, nullable=True),
    Param("max_channels", "int", None, "NCCL_MAX_NCHANNELS: at most this many channels; null: unset", min=1,
          max=MAX_CHANNELS, nullable=True),
    Param("root", "int", 0, "root rank of broadcast and reduce", min=0, max=MAX_GPUS),
    Param("base_rtt_us", "float", None, "NIC-to-NIC base RTT in microseconds, over the fabric's longest path on "
                                       "RoCE (5 switches) and through one switch on InfiniBand; null: 22 on RoCE, "
                                       "5 on InfiniBand", min=0.0, max=10_000.0, nullable=True),
    Param("protocol", "choice", "auto", "NCCL protocol: auto (NCCL's choice per size by its tuning model) or LL, "
                                        "LL128, Simple (forced, as NCCL_PROTO)", choices=PROTOCOL_CHOICES,
          normalize=_canonical_protocol),
    HOTTEST,
), check=_check_collective, doc="A collective over the backend fabric, as nccl-tests measures it.")

FABRIC_HEALTH = ParamSet("fabric_health", (
    Param("gpus", "int", None, "GPUs in the AllGather; null: every usable GPU of the cluster", min=2, max=MAX_GPUS,
          nullable=True),
    Param("sizes", "sizes", "1G", "message sizes"),
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    SEED,
    Param("hottest", "int", 10, HOTTEST.help, min=0, max=100),
    Param("threshold", "float", 0.8, "normalized busbw under which the fabric is reported unhealthy", min=0.0,
          max=1.0),
), doc="The nightly check: a ring AllGather over every usable GPU under the current inventory.")

FIGURES = ("allgather-scale",)
MAX_FIGURE_SEEDS = 16

FIGURE = ParamSet("figure", (
    Param("figure", "choice", "allgather-scale", "the published figure", choices=FIGURES),
    Param("jobs", "int_list", None, "job sizes in GPUs, e.g. 512,1024,4096; null: the figure's defaults that fit "
                                    "the cluster", min=2, max=MAX_GPUS, nullable=True),
    Param("seeds", "int", DEFAULT_SEEDS, "placement and hash seeds per configuration", min=1, max=MAX_FIGURE_SEEDS),
    Param("size", "size", "1G", "message size reported beside the large-message limit"),
    Param("background", "bool", True, "include the busy-cluster series (other jobs filling the rest of the "
                                      "cluster)"),
    HASH,
), doc="The published AllGather figure: normalized busbw against job size, per routing and placement series.")


# ------------------------------------------------------------------------------ storage and checkpoints
MAX_CHECKPOINT_BYTES = 1 << 40    # 1 TiB per GPU: far above the 1 MB..4 GB per GPU Meta reports (docs/sources.md [S1])
MAX_FILE_BYTES = 1 << 30          # a fan-out file: "small files" (code), at most 1 GiB each
MAX_FILES = 100_000               # files every fan-out client opens
MAX_SPREAD = 256                  # storage servers one host's data is spread over in the flow model
MAX_SAMPLES = 1000                # points of a result's time series


def _store_choices():
    from sim.spec import STORAGE_KINDS
    return STORAGE_KINDS


def _redundancy_choices():
    from sim.storage import REDUNDANCY
    return tuple(REDUNDANCY)


def _check_checkpoint(v: dict) -> None:
    if v["writers"] is not None and v["writers"] > v["gpus"]:
        raise ParamError("writers", f"must be at most gpus ({v['gpus']:,})")


STORE = Param("store", "choice", "tectonic", "the storage cluster (by its kind in the spec)",
              choices=_store_choices())
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
    Param("gpus", "int", 1024, "GPUs (ranks) in the job", min=1, max=MAX_GPUS, short="-n"),
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
    Param("data_loading_gbps", "float", 0.0, "training-data reads per job host in Gb/s, running beside the "
                                             "checkpoint (0: none)", min=0.0, max=10_000.0),
    Param("redundancy", "choice", None, "write amplification: rs-9-6 (Reed-Solomon, 9 chunks per 6 of data), "
                                        "replicate-3, replicate-2, none; null: the store's default",
          choices=_redundancy_choices(), nullable=True),
    Param("block_size", "size", None, "bytes per block (one metadata entry per block); null: the store's default",
          min=1, max=MAX_CHECKPOINT_BYTES, nullable=True),
    Param("spread", "int", 16, "storage servers each host's data is spread over in the flow model (an "
                               "aggregation: docs/storage.md)", min=1, max=MAX_SPREAD),
    SERVERS,
    Param("pcie_gbps", "float", None, "GPU<->host PCIe in Gb/s each way; null: the GPU's (catalog)",
          min=1e-3, max=1e6, nullable=True),
    Param("host_memcpy_gbps", "float", None, "a host's memory copy bandwidth in Gb/s; null: the platform's "
                                             "(catalog)", min=1e-3, max=1e6, nullable=True),
    Param("server_cpu_gbps", "float", None, "bytes a storage server's CPU moves, in Gb/s; null: the server's "
                                            "(catalog)", min=1e-3, max=1e6, nullable=True),
    METADATA_KOPS,
    METADATA_LATENCY,
    Param("samples", "int", 100, "points of the time series", min=2, max=MAX_SAMPLES),
    Param("hottest", "int", 10, "bottleneck resources to list", min=0, max=100),
), check=_check_checkpoint, doc="A checkpoint (or restore) of a job to a storage cluster over the frontend fabric.")

STORAGE_FANOUT = ParamSet("storage_fanout", (
    Param("store", "choice", "hammerspace", STORE.help, choices=_store_choices()),
    Param("clients", "int", 1024, "clients (processes) opening and reading the same files", min=1, max=MAX_GPUS),
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


# ------------------------------------------------------------------------------------------- training jobs
def _model_choices():
    from sim.models import CUSTOM, MODELS
    return tuple(MODELS) + (CUSTOM,)


DIMENSIONS = ("tp", "cp", "pp", "dp")
SCHEDULES = ("1f1b", "interleaved")
PRECISIONS = ("bf16", "fp8")
RECOMPUTE = ("none", "full", "auto")
MAX_DIM = 1 << 17                 # any parallel dimension: at most 131,072 ways
MAX_JOBS_TEXT = 4 << 20           # a schedule's jobs file: at most 4 MiB
MAX_SHARED_JOBS = 64              # jobs sharing the fabric in one ``jobs`` simulation (each may need a solve alone)


def _canonical_order(text: str) -> str:
    return ",".join(p.strip().lower() for p in str(text).split(",") if p.strip())


def _check_job(v: dict) -> None:
    """Rules across the job's parameters (layout against the GPU count and the model; the memory check needs the
    model's shape and is :func:`sim.job.check_job`)."""
    from sim.job import check_job
    check_job(v)


JOB_PARAMS = (
    Param("model", "choice", "llama3-8b", "model preset (Llama 3 shapes), or custom (give layers, dim, ffn_dim, "
                                            "heads, kv_heads)", choices=_model_choices()),
    Param("layers", "int", None, "transformer layers; null: the preset's", min=1, max=10_000, nullable=True),
    Param("dim", "int", None, "model dimension; null: the preset's", min=1, max=1 << 20, nullable=True),
    Param("ffn_dim", "int", None, "FFN (SwiGLU) dimension; null: the preset's", min=1, max=1 << 22, nullable=True),
    Param("heads", "int", None, "attention heads; null: the preset's", min=1, max=65_536, nullable=True),
    Param("kv_heads", "int", None, "key/value heads (GQA); null: the preset's", min=1, max=65_536, nullable=True),
    Param("vocab", "int", None, "vocabulary; null: the preset's (128,256)", min=1, max=1 << 24, nullable=True),
    Param("gpus", "int", None, "GPUs of the job; null: tp x cp x pp x dp", min=1, max=MAX_GPUS, nullable=True,
          short="-n"),
    Param("tp", "int", 8, "tensor-parallel ways (Megatron TP with sequence parallelism)", min=1, max=MAX_DIM),
    Param("cp", "int", 1, "context-parallel ways (all-gather of K and V, as Llama 3)", min=1, max=MAX_DIM),
    Param("pp", "int", 1, "pipeline stages", min=1, max=MAX_DIM),
    Param("dp", "int", None, "data-parallel ways (FSDP); null: gpus / (tp x cp x pp)", min=1, max=MAX_GPUS,
          nullable=True),
    Param("order", "text", "tp,cp,pp,dp", "rank order of the dimensions, innermost first (tp,cp,pp,dp: TP on "
                                          "consecutive ranks, as Llama 3)", max=64),
    Param("seq", "int", 8192, "sequence length in tokens", min=1, max=1 << 24),
    Param("batch_tokens", "size", "16M", "global batch in tokens (K/M: powers of 1024; 16M = 2,048 x 8,192)",
          min=1, max=1 << 40),
    Param("micro_batch", "int", 1, "sequences per micro-batch", min=1, max=1 << 20),
    Param("schedule", "choice", "1f1b", "pipeline schedule: 1f1b, or interleaved (virtual stages)",
          choices=SCHEDULES),
    Param("virtual_stages", "int", 1, "model chunks per pipeline stage (interleaved: at least 2)", min=1, max=1024),
    Param("precision", "choice", "bf16", "GEMM precision: bf16, or fp8 (weights, gradients and collectives stay "
                                         "BF16/FP32)", choices=PRECISIONS),
    Param("recompute", "choice", "auto", "activation recomputation: none, full (every layer's forward again), "
                                         "auto (none if the job fits HBM, else full)", choices=RECOMPUTE),
    Param("fsdp", "bool", True, "data parallelism as FSDP (all-gather weights, reduce-scatter gradients, sharded "
                                "optimizer); off: DDP (all-reduce of gradients, replicated optimizer)"),
    Param("overlap", "bool", True, "overlap data-parallel communication with compute (off: all of it exposed)"),
    Param("gemm_efficiency", "float", None, "achieved share of the GPU's dense peak in GEMMs; null: 0.75 "
                                            "(assumption, docs/jobs.md)", min=0.01, max=1.0, nullable=True),
    Param("attention_efficiency", "float", None, "achieved share of the dense peak in attention; null: "
                                                 "FlashAttention-3's (0.75 BF16, 0.61 FP8)", min=0.01, max=1.0,
          nullable=True),
    Param("hbm_gb", "float", None, "GPU memory in GB; null: the GPU's (80 on H100)", min=1.0, max=1e6,
          nullable=True),
    Param("placement", "choice", "topology", "how the job's GPUs are chosen", choices=PLACEMENTS),
    SEED,
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    HOTTEST,
)

JOB = ParamSet("job", JOB_PARAMS, check=_check_job,
               doc="One training step of a 4D-parallel job: compute, every parallel group's traffic on the fabric, "
                   "pipeline bubble.")

POLICIES = ("topology", "first-fit", "random")

SCHEDULE = ParamSet("schedule", (
    Param("policy", "choice", "topology", "placement policy: topology (pack racks then zones), first-fit (lowest "
                                          "GPU ids), random (whole hosts anywhere: fragmented)", choices=POLICIES),
    Param("jobs", "text", None, "the job queue: a JSON list or TOML [[job]] tables (docs/jobs.md); null: "
                                "synthetic arrivals", max=MAX_JOBS_TEXT, nullable=True),
    Param("arrivals", "int", 200, "synthetic jobs when no jobs file is given", min=1, max=100_000),
    Param("days", "float", 30.0, "simulated span of the synthetic arrivals, days", min=0.001, max=3650.0),
    Param("max_gpus", "int", None, "largest synthetic job in GPUs; null: two thirds of the cluster", min=8,
          max=MAX_GPUS, nullable=True),
    SEED,
    ROUTING,
    Param("qps", "int", 16, QPS.help, min=1, max=MAX_QPS),
    HASH,
), doc="A job queue over simulated time on one cluster under a placement policy.")


def _check_jobs(v: dict) -> None:
    """The jobs file parses, each entry a valid JOB (errors name ``jobs[i].field``), and holds at most
    :data:`MAX_SHARED_JOBS` jobs."""
    from sim.scheduler import parse_jobs
    parse_jobs(v["jobs"], timed=False, max_jobs=MAX_SHARED_JOBS)


JOBS = ParamSet("jobs", (
    Param("jobs", "text", None, "the jobs sharing the fabric: a JSON list or TOML [[job]] tables, each a job's "
                                "parameters (docs/jobs.md); placed one after the other on what the previous left",
          max=MAX_JOBS_TEXT),
    ROUTING,
    QPS,
    HASH,
    UDP_SPORT,
    HOTTEST,
), check=_check_jobs, doc="Several training jobs at once on one fabric: each one's step together and alone.")


# ------------------------------------------------------------------------------------------ failures over time
MAX_DAYS = 3650.0                 # ten years of a job's wall clock
MAX_FAILURE_SEEDS = 1000          # seeds of one Monte Carlo (the twin fans them out over its workers)
MAX_INJECT_TEXT = 64 << 10        # chosen failures: at most 64 KiB of text


def _failure_store_choices():
    from sim.spec import STORAGE_KINDS
    from sim.failures import NO_STORE
    return STORAGE_KINDS + (NO_STORE,)


def _check_failures(v: dict) -> None:
    """Rules across the parameters (the job's layout as JOB checks it; the interval against the run; rates, repair
    times, injected failures and the sweep parse): :func:`sim.failures.check_failures`."""
    from sim.failures import check_failures
    check_failures(v)


def _failure_job_param(p: Param) -> Param:
    """JOB's parameter, with the defaults of the job Meta's interruption table counts (Llama 3 405B on 16,384 GPUs,
    TP 8, PP 16, DP 128 [S3])."""
    from dataclasses import replace
    return replace(p, default={"model": "llama3-405b", "gpus": 16384, "pp": 16}.get(p.name, p.default))


FAILURES = ParamSet("failures", tuple(_failure_job_param(p) for p in JOB_PARAMS if p.name != "hottest") + (
    Param("days", "float", 54.0, "wall-clock days the job runs (Meta's table spans 54)", min=0.001, max=MAX_DAYS),
    Param("checkpoint_interval", "text", "30m", "training time between checkpoints (s, m, h, d: 30m, 2h)", max=40),
    Param("seeds", "int", 1, "failure seeds (timelines) to simulate: seed, seed+1, ...", min=1,
          max=MAX_FAILURE_SEEDS),
    Param("spares", "int", None, "hot spare hosts a crashed job may restart on (a used spare comes back when the "
                                 "failed host is repaired); null: every usable host the job does not use", min=0,
          max=MAX_GPUS, nullable=True),
    Param("store", "choice", None, "storage cluster whose simulated checkpoint and restore times the timeline uses "
                                   "(sim.checkpoint, run once each); off: no storage simulation, the "
                                   "checkpoint_* and restore_s parameters; null: tectonic if the cluster has it, "
                                   "else off",
          choices=_failure_store_choices(), nullable=True),
    Param("checkpoint_mode", "choice", "async", "sync: training waits until the checkpoint is durable; async: it "
                                                "waits for the copy to host memory", choices=("sync", "async")),
    Param("bytes_per_gpu", "size", None, "checkpoint bytes per GPU; null: the model's state (BF16 weights + FP32 "
                                         "master weights and Adam moments, 14 bytes per parameter) over the GPUs",
          min=1, max=MAX_CHECKPOINT_BYTES, nullable=True),
    Param("checkpoint_blocked_s", "float", None, "seconds training waits per checkpoint; null: the storage "
                                                 "model's (store off: the bytes at 2 TB/s)", min=0.0, max=1e6,
          nullable=True),
    Param("checkpoint_durable_s", "float", None, "seconds from a checkpoint's start until it is durable; null: the "
                                                 "storage model's (store off: as blocked)", min=0.0, max=1e6,
          nullable=True),
    Param("restore_s", "float", None, "seconds to load the last checkpoint on restart; null: the storage model's "
                                      "restore (store off: the bytes at 2 TB/s)", min=0.0, max=1e6, nullable=True),
    Param("detection_s", "float", 600.0, "seconds from a crash until it is detected (NCCL watchdog / heartbeat "
                                         "timeout; PyTorch's NCCL default is 10 min)", min=0.0, max=1e6),
    Param("restart_s", "float", 300.0, "seconds to relaunch the job and start its process groups (assumption: "
                                       "Meta cut this from hours to minutes)", min=0.0, max=1e6),
    Param("planned_down_s", "float", 900.0, "seconds a planned maintenance keeps the job stopped, before its "
                                            "restart (assumption)", min=0.0, max=1e7),
    Param("thermal_speed", "float", 0.7, "share of its compute speed a thermally throttled GPU keeps (assumption); "
                                         "the slowest rank paces the synchronous job", min=0.01, max=1.0),
    Param("reroute", "bool", True, "a failed fabric cable or switch with other paths is routed around (the job "
                                   "slows for the repair time); off: every network failure crashes the job"),
    Param("fabric_states", "choice", "by_class", "the step under failed fabric items: exact (re-solved for each "
                                                 "set of failed cables and switches), or by_class (for as many "
                                                 "failed items of each class: leaf-spine cable, spine-core cable, "
                                                 "spine, core; a few solves shared by every seed)",
          choices=("by_class", "exact")),
    Param("rates", "text", None, "failure rates per unit-hour replacing the table's, e.g. gpu=2e-6,hbm=1e-6 "
                                 "(categories: docs/reliability.md; 0 switches one off); null: Meta's table",
          max=4096, nullable=True),
    Param("rate_scale", "float", 1.0, "factor on every unexpected failure rate (planned maintenance stays)",
          min=0.0, max=1e4),
    Param("repair_h", "text", None, "repair hours per category replacing the defaults, e.g. gpu=48,network=2",
          max=4096, nullable=True),
    Param("inject", "text", None, "chosen failures, comma-separated KIND:NAME@TIME: gpu:<GPU name>@10h, "
                                  "link:<link name>@20h, switch:<switch name>@20h, host:<host name>@5h, or any "
                                  "category (thermal:<GPU name>@3h, software@2h)", max=MAX_INJECT_TEXT,
          nullable=True),
    Param("sweep_interval", "text", None, "checkpoint intervals to sweep for the optimum: MIN:MAX (12 points, log "
                                          "spaced), MIN:MAX:N or a list; null: no sweep", max=1000, nullable=True),
), check=_check_failures, doc="A training job's wall clock over days: failures, restarts, re-routing, checkpoints, "
                             "and the share of time it trains.")
# ------------------------------------------------------------------------------- debugging a job (issue 16)
FR_BUFFER_ENTRIES = 2000          # PyTorch's default flight recorder ring size (TORCH_FR_BUFFER_SIZE) [S32]
FR_TIMEOUT_S = 600.0              # ProcessGroupNCCL's default collective timeout, 10 minutes [S32]
MAX_FR_ENTRIES = 100_000          # ring entries per rank the rehearsal writes
MAX_STARTUP_SCALES = 16           # job sizes of one start-up table
MAX_FAULT_TEXT = 200              # a rehearsal's fault: one short spec


def _check_debug(v: dict) -> None:
    """The job's own rules (:func:`sim.job.check_job`), then the fault against the job (its rank exists, ...)."""
    from sim.flight_recorder import check_debug
    check_debug(v)


DEBUG = ParamSet("debug", tuple(p for p in JOB_PARAMS if p.name != "hottest") + (
    Param("inject", "text", None, "the fault: hang:rank=R[,op=K] (rank R never enters its K-th collective of the "
                                  "last step), desync:rank=R[,op=K][,what=size|op], slow:rank=R[,factor=X] (its "
                                  "GPU X times slower), link:id=L[,factor=X] (a backend link X times slower; "
                                  "factor=inf: failed), host:rank=R[,op=K] (R's host dies); null: a clean job",
          max=MAX_FAULT_TEXT, nullable=True),
    Param("entries", "int", FR_BUFFER_ENTRIES, "flight recorder ring entries per rank (TORCH_FR_BUFFER_SIZE)",
          min=1, max=MAX_FR_ENTRIES),
    Param("timeout_s", "float", FR_TIMEOUT_S, "collective timeout of the watchdog in seconds (init_process_group's "
                                              "timeout)", min=0.001, max=86_400.0),
    Param("steps_before", "int", 10, "training steps the job completed before the recorded ones (they set the "
                                     "record and sequence ids' offsets)", min=0, max=1_000_000),
), check=_check_debug, doc="A fault rehearsal: a training job's collectives, a fault, the flight recorder dumps.")


def _check_startup(v: dict) -> None:
    from sim.startup import check_startup
    check_startup(v)


STARTUP = ParamSet("startup", (
    Param("gpus", "text", "1024:32768", "job sizes in ranks: A:B (doubling from A to B) or A,B,C", max=200),
    JOB.by_name["tp"],
    JOB.by_name["cp"],
    Param("pp", "int", 16, JOB.by_name["pp"].help, min=1, max=MAX_DIM),
    Param("gpus_per_host", "int", 8, "ranks per host (one per GPU)", min=1, max=64),
    Param("store_ops_per_s", "float", None, "requests per second the TCPStore server's single thread serves; null: "
                                            "the backend's (docs/debugging.md)", min=1.0, max=1e9, nullable=True),
    Param("store_backend", "choice", "libuv", "TCPStore server: libuv (event loop, PyTorch >= 2.4 default) or "
                                              "legacy (one thread polling every socket)",
          choices=("libuv", "legacy")),
    Param("creation", "choice", "lazy", "communicator creation: eager (every group's NCCL communicator at "
                                        "new_group) or lazy (at its first collective)", choices=("eager", "lazy")),
    Param("split", "bool", True, "create sub-communicators with ncclCommSplit from the world communicator "
                                 "(no store round for their unique ids)"),
    Param("local_sync", "bool", True, "new_group(use_local_synchronization=True): only the group's members take "
                                      "part in its store barrier"),
), check=_check_startup, doc="Process-group start-up of a 4D job: store, NCCL bootstrap, groups, over scale.")
