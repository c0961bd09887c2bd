"""The parameters a calibration may fit (docs/calibration.md "The fit"): the float parameters of the measurement
kinds' ParamSets with finite bounds, each with its start (its default, or what its null stands for:
:func:`null_means`, every fitted factor of :mod:`sim.core.fitted` included with the factor's own bounds), in the
coordinate the fit moves it in (:class:`Fittable`), and the words that say which measurement would determine one
(:func:`would`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sim.calibrate.measurements import KINDS
from sim.core import fitted as fitted_factors
from sim.core.errors import ParamError
from sim.fabric.latency import BASE_RTT
from sim.jobs.models import FRAGMENTATION
from sim.jobs.step import ATTENTION_EFFICIENCY, GEMM_EFFICIENCY
from sim.storage.stores import FUSE_THREADS, SERVER_CORES

# What a measurement was taken under, or how finely the engine resolves it: given, never fitted. The training-data
# reads beside a checkpoint (data_loading_gbps) are the load the job put on the store, not a property of the twin: a
# fit moving it would also push a failures entry's job (every host reading it) past what its store sustains.
CONDITIONS = ("days", "resolution_ms", "timeline_step_s", "data_loading_gbps")
# What a nullable parameter's null stands for, as one value (the start of its fit); a nullable parameter not listed
# here has no single default (a store's or a GPU's own) and is not fittable. Every fitted factor of
# sim.core.fitted is added (its null means the factor's value in effect, fitted or prior), with the factor's bounds
# (factor_bounds): null_means() reads sim.core.fitted.FACTORS when asked, so a factor declared there (and as a
# nullable parameter of a kind) is fittable with nothing written here.
NULL_MEANS = {
    "gemm_efficiency": lambda cluster: GEMM_EFFICIENCY,
    "attention_efficiency": lambda cluster: ATTENTION_EFFICIENCY["bf16"],   # BF16's; FP8 entries start from it too
    "fragmentation": lambda cluster: FRAGMENTATION,
    "client_cores": lambda cluster: float(FUSE_THREADS),
    "server_cores": lambda cluster: float(SERVER_CORES),
    "base_rtt_us": lambda cluster: BASE_RTT[cluster.kind] * 1e6,
}


def null_means() -> dict:
    """:data:`NULL_MEANS` and every fitted factor of :mod:`sim.core.fitted` (name -> ``f(cluster)``)."""
    return NULL_MEANS | {f.name: (lambda cluster, _name=f.name: fitted_factors.value(_name))
                         for f in fitted_factors.FACTORS}


def factor_bounds() -> dict[str, tuple[float, float]]:
    """The fit's bounds of each fitted factor: the factor's ``low`` and ``high``."""
    return {f.name: (float(f.low), float(f.high)) for f in fitted_factors.FACTORS}

# What measurement would determine a parameter (the refusal's words): by name where the engine's mechanism says
# which measurement moves it, else from the kinds that declare it (KIND_WOULD).
WOULD = {
    "nvlink_efficiency": "an nccl-tests run inside one host (8 GPUs, sizes >= 64 MiB)",
    "nic_efficiency": "an nccl-tests run across 2 or more hosts at sizes >= 256 MiB (the NIC's rate bound)",
    "pcie_efficiency": "an nccl-tests run across 2 or more hosts at sizes >= 256 MiB on hosts whose GPU-NIC path "
                       "is PCIe-bound",
    "efa_efficiency": "an nccl-tests run across 2 or more hosts of an EFA cluster at sizes >= 1 GiB",
    "efa_latency_scale": "an nccl-tests run across 3 or more hosts of an EFA cluster at sizes of 1 to 256 MiB",
    "host_latency_us": "an nccl-tests run at small sizes (8 B to 64 KiB), inside one host",
    "base_rtt_us": "an nccl-tests run across hosts at small sizes (8 B to 64 KiB)",
    "gemm_efficiency": "a job's step time, tokens/s or MFU",
    "gemm_efficiency_scale": "a job's step time, tokens/s or MFU",
    "attention_efficiency": "a job's step time at a long sequence (attention a large share of the step)",
    "hbm_efficiency": "a job's step time where memory-bound kernels weigh (a small model, short sequences)",
    "launch_overhead_us": "a job's step time of a small model on few GPUs (kernel launches a large share)",
    "fragmentation": "a job near its GPU memory limit (one whose layout must recompute)",
    "storage_efficiency": "a checkpoint's durable_s or write_gbps (or a restore's read_gbps) at the storage's "
                          "full rate",
    "host_power_scale": "a measured node's power in training (node_mean_kw or node_peak_kw: the host's non-GPU "
                        "draw beside its GPUs')",
}
KIND_WOULD = {
    "job": "a job's step_time_s, tokens_per_s or mfu", "collective": "a collective's busbw_gbps or time_us",
    "nccl-tests": "an nccl-tests log", "checkpoint": "a checkpoint's blocked_s, durable_s or write_gbps",
    "restore": "a restore's durable_s or read_gbps",
    "failures": "a failure count (interruptions, effective_ratio or mtbf_hours over days)",
    "power": "a power measurement (gpu_mean_w, gpu_peak_w, cluster_peak_mw, swing_mw, energy_per_token_j, "
             "gpu_energy_per_token_j, node_mean_kw or node_peak_kw)",
}


def would(name: str, kinds=()) -> str:
    """The measurement that would determine ``name`` (declared by ``kinds``)."""
    if name in WOULD:
        return WOULD[name]
    kinds = kinds or [k for k in KINDS if name in KINDS[k].by_name]
    said = list(dict.fromkeys(KIND_WOULD[k] for k in kinds if k in KIND_WOULD))
    return " or ".join(said) if said else "none of the measurement kinds (no kind declares it)"


# ------------------------------------------------------------------------------------------ fittable parameters
@dataclass
class Fittable:
    """A parameter the fit may set: its bounds, its start and the kinds that declare it."""

    name: str
    low: float
    high: float
    start: float
    kinds: tuple[str, ...]

    @property
    def log(self) -> bool:
        return self.low > 0

    @property
    def scale(self) -> float:
        """The asinh transform's scale (zero lower bound): the start's distance from it, else a millionth of the
        range."""
        return max(self.start - self.low, (self.high - self.low) * 1e-6)

    def to_z(self, v: float) -> float:
        return math.log(v) if self.log else math.asinh((v - self.low) / self.scale)

    def from_z(self, z: float) -> float:
        v = math.exp(z) if self.log else self.low + self.scale * math.sinh(z)
        return min(max(v, self.low), self.high)            # rounding at a bound stays within it

    def dv_dz(self, z: float) -> float:
        return math.exp(z) if self.log else self.scale * math.cosh(z)

    @property
    def z_bounds(self) -> tuple[float, float]:
        return self.to_z(self.low), self.to_z(self.high)


def is_fittable(p) -> bool:
    """A float parameter with finite bounds, not a condition, with a start (its default or a NULL_MEANS entry)."""
    if p.type != "float" or p.name in CONDITIONS or p.min is None or p.max is None:
        return False
    if not (math.isfinite(p.min) and math.isfinite(p.max)) or p.max <= p.min:
        return False
    return p.default is not None or p.name in null_means()


def fittable_names(kinds=KINDS) -> set[str]:
    """The names :func:`fittable` gives on any cluster (what a ``fit`` list is checked against before a run)."""
    return {p.name for kind in kinds for p in KINDS[kind] if is_fittable(p)}


def fittable(kinds, cluster) -> dict[str, Fittable]:
    """The fittable parameters of ``kinds`` (measurement kinds) on ``cluster``: name -> :class:`Fittable` (a fitted
    factor's bounds are the factor's; others the parameter's)."""
    out: dict[str, Fittable] = {}
    means, bounds = null_means(), factor_bounds()
    for kind in dict.fromkeys(kinds):
        for p in KINDS[kind]:
            if not is_fittable(p):
                continue
            start = p.default if p.default is not None and p.name not in bounds else means[p.name](cluster)
            if p.name in out:
                out[p.name].kinds += (kind,)
            else:
                low, high = bounds.get(p.name, (float(p.min), float(p.max)))
                out[p.name] = Fittable(p.name, low, high, min(max(float(start), low), high), (kind,))
    return out


def choose_fit(names, table) -> list[str]:
    """The ``--fit`` names checked against ``table`` (every kind's fittable parameters, names -> :class:`Fittable` or
    :func:`fittable_names`: one no entry's kind declares is refused by the fit, naming the measurement that would
    determine it; ParamError naming ``fit`` for one that is not fittable)."""
    out = []
    for name in names:
        if name not in table:
            raise ParamError("fit", f"{str(name)[:64]!r} is not a fittable parameter (fittable: "
                                    f"{', '.join(sorted(table))})")
        if name not in out:
            out.append(name)
    return out
