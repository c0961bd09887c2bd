"""Achievable bandwidth of the links a collective crosses (not their line rate), and the host-side floor of a call.

The flow core (:mod:`sim.fabric.netsim`) solves rates over link capacities; this module says what those capacities
are, each from documented facts (docs/engine.md "Achievable bandwidth", docs/sources.md), with what must be assumed
beyond them named as fitted factors (:mod:`sim.core.fitted`: ``nvlink_efficiency``, ``nic_efficiency``,
``pcie_efficiency``, ``host_latency_us``; each also a nullable parameter of the collective, null = fitted value).

NVLink per GPU
    NCCL models a GPU's NVLink as ``links x`` a per-link rate of the GPU's generation (``src/graph/topo.h``:
    ``SM80_NVLINK_BW`` 20.0 GB/s, ``SM90_NVLINK_BW`` 20.6, ``SM100_NVLINK_BW`` 40.1 per link and direction [S6]),
    below the links' signalling rate (25 GB/s per link and direction on NVLink 3 and 4 [S94]). The twin takes the
    GPU's line rate (``nvlink_gbps``, both directions) times NCCL's per-link share (20.6 / 25 on Hopper: H100 370.8
    GB/s per direction, A100 240) times ``nvlink_efficiency``.
The NVSwitch (NVLink SHARP)
    NVLS runs its reductions and multicasts in the NVSwitch. NCCL scales NVLS's bandwidth by ``nvlsEfficiency``
    (``src/graph/tuning.cc``: 0.85 on Hopper, 0.74 on Blackwell, 0 before Hopper [S6]). The twin makes each host's
    NVSwitch a resource of the flow core: one virtual link into it (the GPUs' reads it reduces, their stores it
    multicasts) and one out of it, each of the host's GPUs that run NVLS x the achievable NVLink rate x
    ``nvlsEfficiency`` (a rate per GPU port: :func:`sim.fabric.flows.link_capacity`).
The GPU-NIC PCIe path
    A NIC reads what it sends from GPU memory (GPUDirect RDMA), through a PCIe switch on hosts that have one, so
    the path's rate is the slower of the GPU's and the NIC's PCIe links (catalog keys ``pcie_gen``,
    ``pcie_lanes``; default Gen5 x16, the H100 SXM and ConnectX-7 [S90] [S94]): lanes x transfer rate (16 GT/s on
    Gen4, 32 on Gen5) x 128/130 (encoding) / 8, times ``pcie_efficiency`` (TLP overhead; a PCIe switch forwards at
    its ports' rate, so it adds no limit of its own). Every byte of a NIC crosses it, exactly the flows of the NIC's
    own link to its leaf, so the resource is that link: its capacity is the lesser of the two (per port when a NIC
    has several, balanced over them).
The NIC
    (On EFA also ``efa_efficiency``: the share NCCL reaches through aws-ofi-nccl over SRD, not published.)
    Line rate less the transport's framing at a 4 KiB MTU: InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2 bytes per
    packet [S91]; RoCEv2 adds Ethernet (preamble and gap 20, header 14, FCS 4), IPv4 20 and UDP 8 to BTH and ICRC
    [S92]. Every link of the fabric carries the same packets, so the framing applies to every fabric link; the NIC's
    links also take ``nic_efficiency``.
SHARP (CollNet)
    A CollNet head's NIC sends its share up the switches' SHARP aggregation tree and receives the reduced result
    back (:mod:`sim.fabric.algorithms`). Each head's NIC gets two virtual links of the flow core (into the tree and
    out of it), each at the NIC's achievable rate x ``sharp_efficiency``: the rate at which the switches' streaming
    aggregation takes and returns a stream, which NVIDIA does not publish (docs/engine.md "CollNet").
Host floor
    ``host_latency_us`` per collective call (one kernel launch and the proxy's wake-up, not in NCCL's own model).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.core import fitted
from sim.core.units import GB, US
from sim.fabric.layout import LINK_NIC_LEAF

# NCCL's per-link NVLink bandwidth by compute capability (src/graph/topo.h), GB/s per link and direction.
NCCL_NVLINK_LINK_GBPS = {70: 20.0, 80: 20.0, 90: 20.6, 100: 40.1}
NVLINK_LINK_LINE_GBPS = {2: 25.0, 3: 25.0, 4: 25.0, 5: 50.0}   # signalling rate per link and direction [S94]
NVLS_EFFICIENCY = {70: 0.0, 80: 0.0, 90: 0.85, 100: 0.74}       # tuning.cc nvlsEfficiency
PCIE_GTPS = {3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}                 # transfer rate per lane [S90]
PCIE_ENCODING = 128 / 130                                       # Gen3 to Gen5 [S90]
MTU = 4096                                                       # payload bytes per packet
FRAMING_BYTES = {"infiniband": 8 + 12 + 4 + 2,                   # LRH, BTH, ICRC, VCRC [S91]
                 "roce": 20 + 14 + 4 + 20 + 8 + 12 + 4}          # preamble+IFG, Ethernet, FCS, IPv4, UDP, BTH, ICRC
DEFAULT_GPU = {"compute_capability": 90, "nvlink_generation": 4, "pcie_gen": 5, "pcie_lanes": 16}
DEFAULT_NIC = {"pcie_gen": 5, "pcie_lanes": 16}
FACTORS = ("nvlink_efficiency", "nic_efficiency", "pcie_efficiency", "host_latency_us", "sharp_efficiency",
           "efa_efficiency", "efa_latency_scale")


@dataclass(frozen=True)
class Efficiencies:
    """The fitted factors of the collective model in effect (a parameter's value, else the fitted value)."""

    nvlink: float = 1.0
    nic: float = 1.0
    pcie: float = 0.91
    host_latency: float = 2e-6          # seconds
    sharp: float = 1.0                  # SHARP's streaming aggregation rate over the NIC's (CollNet only)
    efa: float = 1.0                    # EFA NICs' achievable share through aws-ofi-nccl (efa_efficiency)
    efa_latency: float = 1.0            # share of aws-ofi-nccl's reported latency a network hop pays (efa_latency_scale)
    ideal: bool = False                 # line rates everywhere (the roofline's reference), no host floor

    @classmethod
    def line_rate(cls) -> "Efficiencies":
        """The ideal reference: every link at its line rate (NVLink, NIC, no framing, no PCIe limit, an NVSwitch
        as fast as its GPUs' links) and no host floor: what the roofline assumes (tests of the flow core's own
        physics run on it)."""
        return cls(nvlink=1.0, nic=1.0, pcie=1.0, host_latency=0.0, ideal=True)

    @classmethod
    def of(cls, values: dict | None = None) -> "Efficiencies":
        """From the collective's parameters (``nvlink_efficiency`` ... ``host_latency_us``; null or missing: the
        fitted value of :mod:`sim.core.fitted`)."""
        values = values or {}
        got = {k: (fitted.value(k) if values.get(k) is None else float(values[k])) for k in FACTORS}
        return cls(nvlink=got["nvlink_efficiency"], nic=got["nic_efficiency"], pcie=got["pcie_efficiency"],
                   host_latency=got["host_latency_us"] * US, sharp=got["sharp_efficiency"],
                   efa=got["efa_efficiency"], efa_latency=got["efa_latency_scale"])


def gpu_spec(topo, key: str):
    return (getattr(topo, "gpu_model", None) or {}).get(key, DEFAULT_GPU.get(key))


def compute_capability(topo) -> int:
    return int(gpu_spec(topo, "compute_capability") or 90)


def arch(topo) -> str:
    """NCCL's row of its per-architecture tables: ``"hopper"`` (sm90+) or ``"ampere"`` (sm80)."""
    a = gpu_spec(topo, "arch")
    return str(a) if a else ("hopper" if compute_capability(topo) >= 90 else "ampere")


def _nccl_link_share(cc: int, generation: int) -> float:
    """NCCL's per-link NVLink rate over the link's signalling rate (20.6 / 25 on Hopper)."""
    key = max((k for k in NCCL_NVLINK_LINK_GBPS if k <= cc), default=80)
    return NCCL_NVLINK_LINK_GBPS[key] / NVLINK_LINK_LINE_GBPS.get(int(generation), 25.0)


def nvlink_links(topo) -> int:
    """NVLink links per GPU: the line rate per direction over the generation's per-link rate (H100 18, A100 12)."""
    per = NVLINK_LINK_LINE_GBPS.get(int(gpu_spec(topo, "nvlink_generation") or 4), 25.0) * GB
    return max(int(round(topo.nvlink_bandwidth / 2 / per)), 0)


def nvlink_rate(topo, eff: Efficiencies | None = None) -> float:
    """Achievable NVLink bytes/s per GPU and direction (module docstring)."""
    eff = eff or Efficiencies.of()
    if eff.ideal:
        return topo.nvlink_bandwidth / 2
    share = _nccl_link_share(compute_capability(topo), int(gpu_spec(topo, "nvlink_generation") or 4))
    return topo.nvlink_bandwidth / 2 * share * eff.nvlink


def nvls_supported(topo) -> bool:
    """NVLink SHARP: an NVSwitch of the 3rd generation with Hopper or later GPUs (catalog key ``nvls``; NCCL's
    search skips NVLS without an NVSwitch or below sm90, ``src/graph/search.cc``)."""
    flag = gpu_spec(topo, "nvls")
    if flag is None:
        flag = compute_capability(topo) >= 90 and topo.nvlink_bandwidth > 0
    return bool(flag) and compute_capability(topo) >= 90


def nvls_efficiency(topo) -> float:
    cc = compute_capability(topo)
    return NVLS_EFFICIENCY[max((k for k in NVLS_EFFICIENCY if k <= cc), default=80)]


def nvswitch_rate(topo, gpus_per_host: int, eff: Efficiencies | None = None) -> float:
    """bytes/s of a host's NVSwitch for NVLS, each way: its GPUs x achievable NVLink x ``nvlsEfficiency``."""
    if not nvls_supported(topo):
        return 0.0
    return gpus_per_host * nvlink_rate(topo, eff) * (1.0 if eff is not None and eff.ideal else nvls_efficiency(topo))


def pcie_rate(topo, eff: Efficiencies | None = None) -> float:
    """bytes/s of the GPU-NIC PCIe path, each way: the slower of the GPU's and the NIC's links."""
    eff = eff or Efficiencies.of()
    nic = getattr(topo, "nic_model", None) or {}
    gen = min(int(gpu_spec(topo, "pcie_gen") or 5), int(nic.get("pcie_gen") or DEFAULT_NIC["pcie_gen"]))
    lanes = min(int(gpu_spec(topo, "pcie_lanes") or 16), int(nic.get("pcie_lanes") or DEFAULT_NIC["pcie_lanes"]))
    return lanes * PCIE_GTPS.get(gen, 32.0) * 1e9 * PCIE_ENCODING / 8 * eff.pcie


def framing(kind: str) -> float:
    """Payload share of a fabric link's line rate: the fabric's framing at a 4 KiB MTU. The fabric's kind says
    which (``topo.kind``): a NIC's catalog ``transport`` may be ``vpi`` (either), so it does not decide; every
    Ethernet fabric (RoCE, and EFA's SRD over Ethernet) pays Ethernet's and RoCEv2's headers."""
    return MTU / (MTU + FRAMING_BYTES["infiniband" if kind == "infiniband" else "roce"])


def fabric_capacity(topo, eff: Efficiencies | None = None) -> np.ndarray:
    """(E,) achievable bytes/s of the fabric's links: line rate x framing; a NIC's link to its leaf also x
    ``nic_efficiency`` and at most its share of the PCIe path."""
    eff = eff or Efficiencies.of()
    if eff.ideal:
        return np.asarray(topo.link_capacity, dtype=np.float64).copy()
    cap = np.asarray(topo.link_capacity, dtype=np.float64) * framing(topo.kind)
    tier = getattr(topo, "link_tier", None)
    if tier is not None and cap.size:
        nic = np.asarray(tier) == LINK_NIC_LEAF
        ports = max(int(getattr(topo, "ports_per_nic", 1) or 1), 1)
        cap[nic] = np.minimum(cap[nic] * eff.nic * nic_transport_share(topo, eff), pcie_rate(topo, eff) / ports)
    return cap


def sharp_rate(topo, eff: Efficiencies | None = None) -> np.ndarray:
    """(G,) bytes/s of each GPU's leg into (and, as much, out of) the SHARP aggregation tree, each way: its NIC
    link's achievable rate x ``sharp_efficiency`` (0 where the NIC's cable is down)."""
    eff = eff or Efficiencies.of()
    up = np.asarray(topo.gpu_uplink)
    cap = fabric_capacity(topo, eff)
    rate = np.where(up >= 0, cap[np.maximum(up, 0)] if cap.size else 0.0, 0.0)
    return rate * (1.0 if eff.ideal else eff.sharp)


def nic_transport_share(topo, eff: Efficiencies) -> float:
    """The transport's own achievable share of the NIC's payload rate: ``efa_efficiency`` on EFA (NCCL through
    aws-ofi-nccl over SRD, :mod:`sim.fabric.netplugin`), 1 for InfiniBand and RoCE (NCCL's own IB plugin)."""
    nic = getattr(topo, "nic_model", None) or {}
    return eff.efa if nic.get("transport") == "efa" else 1.0


def nic_rate(topo, eff: Efficiencies | None = None) -> float:
    """Achievable bytes/s of one GPU's NIC, each way (all its ports): framing, ``nic_efficiency``, PCIe."""
    eff = eff or Efficiencies.of()
    if eff.ideal:
        return topo.nic_bandwidth
    line = topo.nic_bandwidth * framing(topo.kind) * eff.nic * nic_transport_share(topo, eff)
    return min(line, pcie_rate(topo, eff)) if math.isfinite(line) else line
