"""The fitted factors: what the model must assume, fitted across the whole public validation corpus.

A mechanism is built from documented facts (docs/sources.md). Where a fact is not published (how close NCCL's copy
kernels come to NVLink's line rate on a given GPU, say) the model names the gap as a *fitted factor*: declared once
here with its prior (the value the model would assume without the corpus, with its argument in ``doc``) and its
bounds, fitted by ``python -m sim validate --fit`` across every observation of the corpus at once (never to one
published figure), and kept with the corpus error before and after in ``sim/core/fitted.toml``.

Each factor is also a nullable parameter of the same name of the run kinds that use it (``kinds``): null means the
fitted value (:func:`value`), a number overrides it, and calibration fits it to a user's own measurements the same
way (docs/calibration.md). The public corpus's fitted values are therefore the default calibration profile.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FITTED_PATH = Path(__file__).parent / "fitted.toml"


@dataclass(frozen=True)
class Factor:
    """A fitted factor: ``prior`` (the model's value without the corpus), ``low``/``high`` (the fit's bounds),
    ``kinds`` (the measurement kinds whose engines read it), ``doc`` (what it scales and why it must be assumed)."""

    name: str
    prior: float
    low: float
    high: float
    kinds: tuple[str, ...]
    doc: str


# Every fitted factor of the engine, in one table (docs/validation.md lists them with their fitted values).
FACTORS: tuple[Factor, ...] = (
    # --- the training step per kernel (sim/jobs/kernels.py; docs/jobs.md "Compute, per kernel") ---
    Factor("gemm_efficiency_scale", 0.849, 0.6, 1.25, ("job",),
           "scales the GEMM efficiency curve's ceiling (the best-shape Maximum Achievable Matmul FLOPS measured per "
           "GPU [S100], a boost-clock burst): training GEMMs run sustained, at the clock the power limit holds "
           "[S76]; prior 0.849: the same benchmark's sustained figure over its burst figure on H200 BF16 (702.9 of "
           "828.0 TFLOPS alone, 698.6 of 823.9 with all 8 GPUs busy [S139]; the H100's die, tensor cores and 700 W)"),
    Factor("hbm_efficiency", 0.84, 0.6, 1.0, ("job",),
           "achievable share of HBM's peak bandwidth for streaming (memory-bound) kernels: norms, activations, "
           "rotary, the loss, the optimizer step; prior 0.84: 2.8 of 3.35 TB/s measured on H100 for coalesced "
           "streaming loads [S104]"),
    Factor("launch_overhead_us", 4.0, 0.0, 50.0, ("job",),
           "microseconds the GPU loses per kernel it runs (launch latency, the gap between back-to-back kernels); "
           "prior 4 us, the lower end of the 4-6 us a kernel launch costs [S105]"),
    # --- storage (issue 39: the storage path's real limits; docs/storage.md, "The store's service rate") ---
    Factor("storage_efficiency", 1.0, 0.05, 1.0, ("checkpoint", "restore"),
           "achievable share of a store's service rate (Tectonic: its servers' share of the store's published "
           "7 TB/s peak [S1, S3]; a store with no published aggregate: the server's frontend line rate) that a "
           "checkpoint or restore burst gets; prior 1: the published peak was measured under such bursts, which "
           "saturate the store [S3]; the share left to other tenants, throttling and mixed load is not public"),
    # --- power (sim/power/devices.py HostPower; docs/power.md "Hosts") ---
    Factor("host_power_scale", 1.0, 0.3, 1.2, ("power",),
           "scales a GPU host's whole non-GPU draw (CPUs, memory, NICs and `other`: fans, NVSwitches, retimers, the "
           "BMC, conversion losses), busy and idle alike, as the model derives it from DGX H100's (DGX A100's) "
           "rated maximum system power [S77, S85], a power-supply sizing figure, not a measured draw; prior 1: the "
           "rated-maximum anchor as it stands; what a host's non-GPU parts draw in training is not published per "
           "part. Idle scales too: the idle draw is the same parts at the same assumed shares of the same anchored "
           "watts, so an anchor too high is too high for both"),
    # --- collectives (issue 39 item 3: sim/fabric/achievable.py; docs/engine.md "Achievable bandwidth") ---
    Factor("nvlink_efficiency", 1.0, 0.5, 1.2, ("collective", "nccl-tests"),
           "share of NCCL's own achievable NVLink rate per GPU (links x NCCL's per-link constant of the GPU's "
           "generation, 20.6 GB/s on Hopper, 20.0 on Ampere, src/graph/topo.h) that NCCL's copy kernels reach; "
           "prior 1: NCCL's constant is already its measured achievable rate [S6]"),
    Factor("nic_efficiency", 1.0, 0.5, 1.1, ("collective", "nccl-tests"),
           "share of the NIC's payload rate (line rate less IB / RoCEv2 framing at a 4 KiB MTU, [S91] [S92]) that "
           "NCCL's network transport reaches; prior 1: framing is the documented loss, the rest is unknown"),
    Factor("pcie_efficiency", 0.91, 0.6, 1.0, ("collective", "nccl-tests"),
           "share of the GPU-NIC PCIe link's rate after 128b/130b encoding that DMA payload reaches; prior 0.91: "
           "TLPs of 256 B payload carry about 24 B of header, sequence number, LCRC and framing [S90]"),
    Factor("host_latency_us", 2.0, 0.0, 20.0, ("collective", "nccl-tests"),
           "host-side floor of one collective call, microseconds: the kernel launch (NCCL launches one kernel per "
           "collective) and the proxy thread's wake-up, not in NCCL's own latency model; prior 2 us, the order of "
           "a CUDA kernel launch [S93]"),
    # --- CollNet (in-network reduction through InfiniBand SHARP; sim/fabric/algorithms.py, docs/engine.md "CollNet") ---
    Factor("sharp_efficiency", 1.0, 0.3, 1.0, ("collective", "nccl-tests"),
           "rate at which the switches' SHARP streaming aggregation takes a CollNet head's stream and returns the "
           "result, as a share of the NIC link's achievable rate; prior 1: the aggregation runs in the switch's "
           "port pipeline, one streaming tree per port on Quantum-2 and one per switch on Quantum [S140], one flow "
           "per NIC rail [S142], and no lower rate is published"),
    # --- EFA (issue 39, branch nccl2: sim/fabric/netplugin.py; docs/engine.md "The network plugin") ---
    Factor("efa_efficiency", 1.0, 0.5, 1.1, ("collective", "nccl-tests"),
           "share of an EFA NIC's payload rate (line rate less framing) that NCCL reaches through aws-ofi-nccl over "
           "SRD, on top of nic_efficiency, for NICs of transport efa only; prior 1: AWS publishes the line rate "
           "(3,200 Gb/s per p5, 400 per p4d [S88]) and no achievable share"),
    Factor("efa_latency_scale", 1.0, 0.0, 2.0, ("collective", "nccl-tests"),
           "share of the latency aws-ofi-nccl reports to NCCL (75 us on p4d and p5, platform-aws.cpp [S145]) that "
           "each network hop of a collective's critical path over EFA pays in time, once per hop and once more "
           "for Simple as NCCL's tuning model charges it (src/graph/tuning.cc [S146]); prior 1: AWS sets the "
           "figure per platform from measurements (its p5en and p6 values 'based on empirical results' [S150])"),
)


def factor(name: str) -> Factor:
    """The factor declared as ``name``; KeyError naming the known ones otherwise."""
    for f in FACTORS:
        if f.name == name:
            return f
    raise KeyError(f"{name!r} is not a fitted factor (known: {', '.join(f.name for f in FACTORS) or 'none'})")


@lru_cache(maxsize=1)
def fitted_file() -> dict:
    """``sim/core/fitted.toml`` as data (``{}`` when absent): ``[factor.NAME] value = ...`` and the fit's
    summary (``[fit]``: date, observations, corpus error before and after)."""
    try:
        with open(FITTED_PATH, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}


def value(name: str) -> float:
    """The factor's fitted value, or its prior where the corpus fit has none yet."""
    f = factor(name)
    got = fitted_file().get("factor", {}).get(name, {}).get("value")
    return float(got) if got is not None else f.prior


def values() -> dict[str, float]:
    """Every factor's value in effect (fitted, else prior)."""
    return {f.name: value(f.name) for f in FACTORS}


def priors() -> dict[str, float]:
    """Every factor's prior: the model as it stands without the corpus."""
    return {f.name: f.prior for f in FACTORS}
