"""What NCCL's network plugin changes in NCCL's behaviour, by the NIC's transport (catalog key ``transport``).

NCCL talks to the network through a plugin (its own IB plugin for InfiniBand and RoCE; on AWS EFA the
aws-ofi-nccl plugin over libfabric). What the plugin decides changes which algorithm and protocol NCCL runs and what
each network hop costs (docs/engine.md "The network plugin"; docs/sources.md [S145] [S146] [S150] [S151]):

Protocols (``NCCL_PROTO``)
    NCCL's LL and LL128 protocols put flags in the data and rely on the network delivering each 8-byte (LL) or
    128-byte (LL128) line in order. aws-ofi-nccl asks the EFA endpoint for in-order delivery of aligned 128-byte
    writes (``FI_OPT_EFA_*_IN_ORDER_ALIGNED_128_BYTES``) and, where the device does not give it, sets
    ``NCCL_PROTO=simple`` for the process ("byte delivery ordering", ``src/platform-aws.cpp``). A NIC model that
    does deliver them in order says so with ``ordered_128b = true`` (it keeps LL and LL128): p5's EFA, where the
    plugin has kept LL and LL128 since v1.7.3-aws (its RDMA-write transport) [S150]. Without the key (p4d's first
    EFA generation, the send/recv transport: an assumption) multi-host collectives over EFA run Simple only, and
    NCCL chooses with Simple. A user's ``protocol`` forced to LL or LL128 still runs (``NCCL_PROTO`` set by the
    user wins over the plugin).
Network latency (``latencyInter``)
    A plugin reports a latency per device (``ncclNetProperties_t.latency``, us); NCCL's topology search keeps it as
    the graph's ``latencyInter`` and its tuning model adds it to every inter-node hop of its latency estimate, and
    once more for Simple (the GPUDirect flush, ``src/graph/tuning.cc``). NCCL's IB plugin reports 0. aws-ofi-nccl
    reports 75 us on p4d, p4de, p5 and p5e (35 us on p5en and later) (``platform_data_map``), figures AWS sets per
    platform from measurements [S150]. It moves NCCL's *choice* (towards fewer network hops on the critical path:
    trees and NVLS-Tree over rings at mid sizes), and the twin charges it in time too (:func:`plugin_hop`): each
    network hop of the critical path pays ``efa_latency_scale`` (a fitted factor, prior 1) x the latency, twice
    with Simple, as NCCL's model does.
Tuner
    The plugin's tuner (:mod:`sim.fabric.ofi_tuner`) picks NCCL's algorithm and protocol from measured regions on
    the platforms it knows (NIC key ``ofi_tuner``: p5), above 2 nodes [S151].
Buffers and chunks
    aws-ofi-nccl sets, where the user has not, ``NCCL_BUFFSIZE=8388608`` (Simple's buffer per connection: 1 MiB
    steps instead of 512 KiB) on p4d / p4de / p5 / p5e, and ``NCCL_NVLS_CHUNKSIZE`` and
    ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` of 524288 on p5 / p5e (``platform_data_map``'s ``env``): the chunks of
    :mod:`sim.fabric.chunking`, so the pipeline's fill.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from sim.core.units import US
from sim.fabric.chunking import DEFAULT_BUFFSIZE, NVLS_CHUNKSIZE, ChunkConfig, nvls_channels
from sim.fabric.nccl_tuning import PROTOCOLS, SIMPLE

# aws-ofi-nccl's platform latency (us) for the EFA generations of p4d / p4de / p5 / p5e (platform-aws.cpp).
EFA_PLUGIN_LATENCY_US = 75.0
EFA_BUFFSIZE = 8388608                  # NCCL_BUFFSIZE the plugin sets on p4d / p4de / p5 / p5e
EFA_NVLS_CHUNKSIZE = 524288             # NCCL_NVLS_CHUNKSIZE and NCCL_NVLSTREE_MAX_CHUNKSIZE it sets on p5 / p5e


@dataclass(frozen=True)
class NetPlugin:
    """The plugin's effect on NCCL: ``name``, the protocols NCCL may use across hosts, the latency (us) it reports
    to NCCL's tuning model per inter-node hop, the ``NCCL_BUFFSIZE``, ``NCCL_NVLS_CHUNKSIZE`` and
    ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` it sets (``None``: NCCL's default)."""

    name: str
    protocols: tuple[str, ...] = PROTOCOLS
    latency_us: float = 0.0
    buffsize: int = DEFAULT_BUFFSIZE
    nvls_chunk: int = NVLS_CHUNKSIZE
    nvls_tree_max_chunk: int | None = None
    tuner: str | None = None            # the plugin's tuner's platform regions (sim.fabric.ofi_tuner); None: NCCL's


NCCL_IB = NetPlugin("nccl-ib")
AWS_OFI_EFA = NetPlugin("aws-ofi-nccl", protocols=(SIMPLE,), latency_us=EFA_PLUGIN_LATENCY_US,
                        buffsize=EFA_BUFFSIZE, nvls_chunk=EFA_NVLS_CHUNKSIZE, nvls_tree_max_chunk=EFA_NVLS_CHUNKSIZE)


def transport(topo) -> str:
    """The backend NIC's transport (``ib``, ``roce``, ``efa``, ...; ``vpi`` or missing: the fabric's kind)."""
    t = str(((getattr(topo, "nic_model", None) or {}).get("transport")) or "")
    return t if t and t != "vpi" else ("ib" if getattr(topo, "kind", "") == "infiniband" else "roce")


def net_plugin(topo) -> NetPlugin:
    """The network plugin NCCL loads for the topology's backend NIC: aws-ofi-nccl on EFA, NCCL's IB plugin else.
    A NIC entry may state its plugin latency (catalog key ``net_latency_us``) where it differs from the default,
    and its platform's tuner regions (``ofi_tuner``, :mod:`sim.fabric.ofi_tuner`)."""
    nic = getattr(topo, "nic_model", None) or {}
    if transport(topo) != "efa":
        return NCCL_IB
    plugin = AWS_OFI_EFA if not nic.get("ordered_128b") else replace(AWS_OFI_EFA, protocols=PROTOCOLS)
    lat = nic.get("net_latency_us")
    plugin = plugin if lat is None else replace(plugin, latency_us=float(lat))
    return replace(plugin, tuner=nic.get("ofi_tuner") or None)


def chunk_config(topo, n_nodes: int, plugin: NetPlugin | None = None) -> ChunkConfig:
    """NCCL's chunking on this topology (:class:`sim.fabric.chunking.ChunkConfig`): the plugin's buffer and NVLS
    chunk sizes where it runs (across nodes), NCCL's NVLS channels for the GPU's generation."""
    plugin = plugin or net_plugin(topo)
    cc = int(((getattr(topo, "gpu_model", None) or {}).get("compute_capability")) or 90)
    if n_nodes <= 1:
        plugin = NCCL_IB
    return ChunkConfig(buffsize=plugin.buffsize, nvls_chunk=plugin.nvls_chunk,
                       nvls_tree_max_chunk=plugin.nvls_tree_max_chunk, nvls_channels=nvls_channels(cc),
                       n_nodes=int(n_nodes))


def plugin_hop(plugin: NetPlugin, proto: str, scale: float = 1.0) -> float:
    """Seconds the plugin adds to each network hop of a collective's critical path with ``proto``: ``scale`` (the
    fitted ``efa_latency_scale``) x its reported latency, twice for Simple, as NCCL's tuning model charges it (it
    adds ``latencyInter`` to each inter-node step and once more for Simple, "the flush extra latency",
    ``src/graph/tuning.cc``); 0 for NCCL's IB plugin (it reports 0)."""
    return scale * plugin.latency_us * (2 if proto == SIMPLE else 1) * US
