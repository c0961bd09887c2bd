"""The collective's and the figure's parameters (:class:`sim.core.params.ParamSet` declarations)."""
from __future__ import annotations

from sim.core import fitted
from sim.fabric.collectives import (ALGORITHM_CHOICES, ALGORITHM_COLLECTIVES, COLLECTIVES, DTYPES, INTRA_ORDERS,
                                    CollectiveError, canonical)
from sim.core.errors import ParamError
from sim.fabric.figures import DEFAULT_SEEDS
from sim.fabric.preset_figure import DEFAULT_MAX_GPUS
from sim.fabric.hostlist import MAX_LIST_BYTES
from sim.fabric.nccl_tuning import PROTOCOL_CHOICES
from sim.fabric.hashing import HASHES
from sim.fabric.nccl import DEFAULT_UDP_SPORT, MAX_QPS_PER_CONNECTION, MAXCHANNELS, UDP_SPORT_MODES
from sim.fabric.placement import PLACEMENTS
from sim.fabric.routing import ROUTINGS
from sim.core.params import MAX_GPUS, MAX_SEED, Param, ParamSet

MAX_QPS = MAX_QPS_PER_CONNECTION  # NCCL's NCCL_IB_QPS_PER_CONNECTION upper bound (docs/sources.md [S6])
MAX_CHANNELS = MAXCHANNELS        # NCCL's MAXCHANNELS (docs/sources.md [S6])
# Meta's QP scaling: 16 QPs per GPU pair for LLM training (docs/sources.md [S2]), NCCL's 2 connections per pair on
# these hosts x 8 QPs each (docs/engine.md "Connections and QPs"); NCCL's own default is 1 [S11].
META_QPS = 8
DEFAULT_GPUS = 64                 # a collective's job size when neither gpus nor a host or GPU list is given
GIVEN = "given"                   # the placement of a job whose host or GPU list was given (sim.fabric.hostlist)
LISTED_PLACEMENTS = PLACEMENTS + (GIVEN,)   # a collective's placements: a policy, or the list it was given


# ------------------------------------------------------------------------------------------ declarations
def _canonical_collective(name: str) -> str:
    try:
        return canonical(name)
    except CollectiveError:
        return name


def _canonical_protocol(name: str) -> str:
    """NCCL_PROTO's spelling, case-insensitive as NCCL reads it (``ll128`` -> ``LL128``, ``simple`` -> ``Simple``)."""
    return {p.lower(): p for p in PROTOCOL_CHOICES}.get(name.strip().lower(), name)


def _canonical_algorithm(name: str) -> str:
    """NCCL_ALGO's spellings, case-insensitive (``NVLSTree`` -> ``nvls_tree``, ``CollNetDirect`` ->
    ``collnet_direct``, ``Ring`` -> ``ring``)."""
    key = name.strip().lower().replace("_", "").replace("-", "")
    spelled = {a.replace("_", ""): a for a in ALGORITHM_CHOICES}
    return spelled.get(key, name)


def _factor_param(name: str) -> Param:
    """A fitted factor of :mod:`sim.core.fitted` as a nullable parameter: null = its fitted value."""
    f = fitted.factor(name)
    return Param(name, "float", None, f"{f.doc}; null: the fitted value ({fitted.value(name):g})", min=f.low,
                 max=f.high, nullable=True)


def _check_collective(v: dict) -> None:
    """Rules across parameters. A host or GPU list places the job (``placement`` becomes ``given``; ``gpus`` stays
    null until the list is read against the cluster, :func:`sim.fabric.hostlist.placement_of`); without one, a null
    ``gpus`` is :data:`DEFAULT_GPUS`."""
    if v["algorithm"] == "tree" and v["collective"] != "allreduce":
        raise ParamError("algorithm", "tree is for allreduce only")
    algo = v["algorithm"]
    if algo != "auto" and v["collective"] != "alltoall" and v["collective"] not in ALGORITHM_COLLECTIVES[algo]:
        raise ParamError("algorithm", f"{algo} runs {', '.join(ALGORITHM_COLLECTIVES[algo])} only (NCCL's tuning "
                                      f"model), not {v['collective']}")
    if algo not in ("auto", "ring", "tree") and v["protocol"] not in ("auto", "Simple"):
        raise ParamError("protocol", f"NCCL runs {algo} with the Simple protocol only: choose auto or Simple")
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
QPS = Param("qps", "int", META_QPS, "queue pairs per NCCL connection (NCCL_IB_QPS_PER_CONNECTION; default: Meta's "
                                    "16 per GPU pair = 8 on its 2 connections, NCCL's own is 1); a GPU pair joined "
                                    "by several channels has one connection per channel", min=1, max=MAX_QPS)
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
          short="-n", shown=str(DEFAULT_GPUS)),
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
    Param("algorithm", "choice", "auto", "NCCL algorithm: auto (NCCL's choice per size by its tuning model) or one "
                                         "forced, as NCCL_ALGO: ring, tree (allreduce), nvls (NVLink SHARP in one "
                                         "host), nvls_tree (allreduce across hosts), collnet_direct / collnet_chain "
                                         "(allreduce reduced in the network by InfiniBand SHARP switches; forcing "
                                         "one enables CollNet), pat (allgather, reducescatter, one GPU per node)",
          choices=ALGORITHM_CHOICES, normalize=_canonical_algorithm, short="--algo"),
    Param("collnet", "bool", False, "NCCL_COLLNET_ENABLE: NCCL's CollNet plugin is loaded (the NCCL-SHARP plugin "
                                    "of HPC-X), so algorithm auto may choose collnet_direct / collnet_chain where the "
                                    "fabric's switches have SHARP; off: NCCL's default, CollNet never chosen"),
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
    *(_factor_param(n) for n in ("nvlink_efficiency", "nic_efficiency", "pcie_efficiency", "host_latency_us",
                                 "sharp_efficiency", "efa_efficiency", "efa_latency_scale")),
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



PRESET_FIGURE = ParamSet("preset_figure", (
    Param("jobs", "int_list", None, "job sizes in GPUs, e.g. 256,4096; null: one leaf group, one zone and the whole "
                                    "cluster, each at most max_gpus", min=2, max=MAX_GPUS, nullable=True),
    Param("max_gpus", "int", DEFAULT_MAX_GPUS, "the largest default job (jobs null): the whole cluster is capped "
                                               "there so that the page takes seconds", min=2, max=MAX_GPUS),
    Param("sizes", "sizes", "64K:16G", "message sizes of the busbw curves: 64K:16G (doubling), or 8M,64M,1G"),
    SEED,
    HASH,
), doc="A preset's page of figures: AllReduce, AllGather and ReduceScatter busbw by message size against the "
       "roofline, and the share of their bytes that stays on a leaf (rail) or crosses the spine.")
