"""Device power models, declared once: each number's public source (docs/sources.md) or the word "assumption" with
the argument for it in docs/power.md ("Device power models"). Keyed by the hardware catalog's slugs
(``sim/presets/catalog.toml``): the catalog holds what the inventory stores (a GPU's ``power_w``, its TDP), this
module what only the power engine reads, so the inventory's tables are unchanged.

* **GPU** (:class:`GPUPower`): watts by activity and the power-cap -> clock -> throughput relation
  (:func:`throughput_share`, declared in :mod:`sim.jobs.clocks`): dynamic power ~ f V^2 with V ~ f in the DVFS
  range, so a GEMM held at a cap ``C`` runs at clock share ``((C - static) / (at_cap - static)) ** (1/3)`` of its
  clock at the default cap.
* **Host** (:class:`HostPower`): the non-GPU parts of a GPU host (CPUs, memory, NICs, fans and the rest), busy
  (its GPUs run a job) or idle, anchored on DGX H100's published maximum system power, times the fitted factor
  ``host_power_scale`` (that maximum is a rating, not a measured draw).
* **Switches**, **storage servers** and **SSDs**: constant watts (their draw varies little with traffic against a
  GPU's; docs/power.md).
* **Racks** (:data:`POWER_SHELF_W`): Open Rack V3 power shelves and the heat a rack's cooling removes.
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import ParamError
from sim.jobs import clocks


@dataclass(frozen=True)
class GPUPower:
    """A GPU's draw by activity (W). ``at_cap``: dense GEMMs (and attention) run power-limited, at the default
    cap, the TDP [S4, S76]; ``comm``: a communication kernel (NCCL moving data over NVLink and the NIC, few SMs);
    ``memory``: memory-bound kernels (HBM at full bandwidth, SMs partly idle); ``wait``: the process holds the GPU
    at its clocks but no kernel runs (a pipeline bubble, a wait on a collective's peer); ``idle``: no job.
    ``static``: the part of the GEMMs' draw that does not scale with the SM clock (leakage, HBM and the rest at
    the GEMMs' traffic). ``min_cap``/``max_cap``: the power limits the driver accepts."""

    at_cap: float
    comm: float
    memory: float
    wait: float
    idle: float
    static: float
    min_cap: float
    max_cap: float


# H100 SXM: TDP 700 W [S4] (the catalog's power_w); the rest are assumptions argued in docs/power.md.
H100_POWER = GPUPower(at_cap=700.0, comm=300.0, memory=450.0, wait=110.0, idle=70.0,
                      static=clocks.STATIC_W["h100-sxm-80gb"],
                      min_cap=200.0, max_cap=700.0)


def _scaled(tdp: float) -> GPUPower:
    """H100's activity watts scaled to a GPU of TDP ``tdp`` (assumption: no public per-activity figures for the
    other generations; docs/power.md)."""
    return GPUPower(**{k: v * tdp / H100_POWER.max_cap for k, v in H100_POWER.__dict__.items()})


# The other Hopper parts (the same GH100 at the same 700 W TDP [S73, S80, S83]) take H100's figures (assumption);
# A100 SXM (TDP 400 W [S82]) takes them scaled to its TDP (assumption).
GPU_POWER = {
    "h100-sxm-80gb": H100_POWER, "h100-sxm-96gb": H100_POWER, "h800-sxm-80gb": H100_POWER,
    "h200-sxm-141gb": H100_POWER, "a100-sxm-40gb": _scaled(400.0), "a100-sxm-80gb": _scaled(400.0),
}


@dataclass(frozen=True)
class HostPower:
    """A GPU host's non-GPU draw (W): ``cpus`` x ``cpu_tdp`` at ``cpu_busy`` / ``cpu_idle`` of their TDP,
    ``memory``, ``nic`` per NIC (backend and frontend), and ``other`` (fans, NVSwitches, retimers, BMC, power
    conversion losses) at full load, ``other_idle`` of it when the GPUs idle; between the two it follows the
    GPUs' load (their mean draw over the step as a share of their TDP): fans follow temperatures over seconds,
    not a step's milliseconds, and conversion losses follow the load. ``scale``: the fitted factor
    ``host_power_scale`` (:mod:`sim.core.fitted`) on all of it, busy and idle: the parts' watts are anchored on a
    rated maximum, not a measured draw (docs/power.md "Hosts"); set per run (:func:`sim.power.places.places`)."""

    cpu_tdp: float
    cpu_busy: float
    cpu_idle: float
    memory: float
    nic: float
    other: float
    other_idle: float
    scale: float = 1.0

    def watts(self, cpus: int, nics: int, busy: bool, load: float = 1.0) -> float:
        """The host's non-GPU draw: its GPUs running a job (``busy``) at ``load`` of their TDP, or idle."""
        cpu = cpus * self.cpu_tdp * (self.cpu_busy if busy else self.cpu_idle)
        return self.scale * (cpu + self.memory + nics * self.nic) + self.following(load if busy else 0.0)

    def following(self, load: float) -> float:
        """``other`` at the GPUs' ``load`` (0 idle .. 1 at their TDP), times ``scale``."""
        return self.scale * self.other * (self.other_idle + (1.0 - self.other_idle) * load)


DGX_H100_MAX_W = 10_200.0        # DGX H100's maximum system power, 8 x H100 SXM included [S77]
XEON_8480_TDP_W = 350.0          # Xeon Platinum 8480+/8480C TDP [S78]


DGX_A100_MAX_W = 6_500.0         # DGX A100's maximum system power, 8 x A100 SXM included [S85]
EPYC_7742_TDP_W = 225.0          # AMD EPYC 7742 TDP, DGX A100's CPUs [S85]


def _anchored(cpus: int, nics: int, gpus: int, gpu_tdp: float, memory: float, nic: float,
              max_w: float = DGX_H100_MAX_W, cpu_tdp: float = XEON_8480_TDP_W) -> float:
    """``other`` at full load so that a host at full load (CPUs at TDP) draws its published maximum ``max_w`` (DGX
    H100's by default): what the published total leaves after the GPUs, the CPUs, memory and NICs (derived,
    docs/power.md)."""
    return max_w - gpus * gpu_tdp - cpus * cpu_tdp - memory - nics * nic


# Grand Teton publishes no power figure: the same HGX H100 class as DGX H100 (8 x H100 SXM, 2 Xeon), so the same
# anchor (assumption). CPU shares, memory and NIC watts are assumptions (docs/power.md).
HOST_POWER = {
    slug: HostPower(cpu_tdp=XEON_8480_TDP_W, cpu_busy=0.6, cpu_idle=0.3, memory=300.0, nic=20.0,
                    other=_anchored(2, 10, 8, 700.0, 300.0, 20.0), other_idle=1 / 3)
    for slug in ("grand-teton", "dgx-h100", "hgx-h800", "hgx-h200", "aws-p5")
}
# The HGX H800 / H200 hosts and p5.48xlarge publish no power figure either: DGX H100's anchor (assumption). DGX A100
# is anchored on its own published maximum and CPUs [S85]; p4d.24xlarge (8 x A100 SXM, 2 Xeon) on DGX A100's
# (assumption).
HOST_POWER.update({
    slug: HostPower(cpu_tdp=EPYC_7742_TDP_W, cpu_busy=0.6, cpu_idle=0.3, memory=300.0, nic=20.0,
                    other=_anchored(2, 10, 8, 400.0, 300.0, 20.0, DGX_A100_MAX_W, EPYC_7742_TDP_W),
                    other_idle=1 / 3)
    for slug in ("dgx-a100", "aws-p4d")
})

# Switches: constant watts per model, all assumptions (docs/power.md): no vendor datasheet figure is adopted.
SWITCH_POWER = {"minipack2": 800.0, "wedge400": 600.0, "arista-7800r3": 12_000.0, "qm9700": 1_000.0,
                "sn4700": 500.0, "qm8700": 600.0, "ethernet-100g-128": 500.0}
STORAGE_SERVER_POWER = {"yv3-sierra-point": 250.0}      # without its SSDs; assumption
SSD_POWER = {"e1s-7680gb": 12.0}                        # a mix of reads and writes; assumption (E1.S allows 25 W)

# Open Rack V3 power shelf [S79]: six 3 kW 48 V PSUs, 18 kW, 15 kW with one PSU redundant (N+1).
POWER_SHELF_W = 15_000.0
SHELVES_PER_RACK = 2             # assumption: two shelves per GPU rack of two 10 kW hosts (docs/power.md)
RACK_COOLING_W = 30_000.0        # assumption: heat a rack's cooling removes, equal to its two shelves' delivery


def gpu_power(slug: str) -> GPUPower:
    return _get(GPU_POWER, slug, "gpu")


def host_power(slug: str) -> HostPower:
    return _get(HOST_POWER, slug, "host_platform")


def switch_power(slug: str) -> float:
    return _get(SWITCH_POWER, slug, "switch")


def storage_server_power(slug: str) -> float:
    return _get(STORAGE_SERVER_POWER, slug, "storage_server")


def ssd_power(slug: str) -> float:
    return _get(SSD_POWER, slug, "ssd")


def _get(table: dict, slug: str, kind: str):
    try:
        return table[slug]
    except KeyError:
        raise ParamError("preset", f"no power model for the {kind} {slug!r} (sim/power/devices.py has "
                                   f"{', '.join(sorted(table))})") from None


def throughput_share(gpu: GPUPower, cap: float) -> float:
    """The share of its default-cap clock (and so of its GEMM throughput) a compute-bound kernel keeps under
    ``cap`` W: the relation of :func:`sim.jobs.clocks.clock_share` (declared there, below the job engine, which
    slows a capped job's kernels by it) with this GPU's ``at_cap`` and ``static``."""
    return clocks.clock_share(cap, gpu.at_cap, gpu.static)


def cap_for_share(gpu: GPUPower, share: float) -> float:
    """The inverse of :func:`throughput_share`: the cap at which compute keeps ``share`` of its speed."""
    return clocks.cap_for_share(share, gpu.at_cap, gpu.static)
