"""The GPU a job runs on, as the step model reads it: dense tensor-core peaks, HBM bandwidth, SMs, boost clock and
TDP, from the cluster's catalog entry (``topo.gpu_model``, ``sim/presets/catalog.toml``).

A job's resolved parameters carry the entry as ``p["gpu"]`` (:meth:`sim.jobs.job.JobSolve.result` sets it from
the topology); a caller without a topology (the scheduler's synthetic arrivals, the power engine's schedule) gets
H100 SXM. A catalog entry lacking a key (an older catalog) takes H100 SXM's value for it (:data:`H100`).
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import ParamError

# H100 SXM5 80GB [S4, S62]: the fallbacks for keys a catalog entry lacks (the catalog's own H100 entry)
H100 = {"slug": "h100-sxm-80gb", "name": "H100 SXM5 80GB", "arch": "hopper", "bf16_tflops": 989.0,
        "fp8_tflops": 1979.0, "memory_bandwidth_gbps": 26800.0, "memory_gb": 80.0, "sms": 132,
        "boost_clock_mhz": 1980.0, "power_w": 700.0}


@dataclass(frozen=True)
class GPU:
    """``peak``: dense FLOP/s by precision (``bf16``, ``fp8``; 0 where the GPU has none), ``hbm``: HBM bytes/s
    (peak), ``sms``, ``boost_mhz``, ``tdp`` (W), ``arch`` (``hopper``, ``ampere``), ``slug``, ``name``."""

    slug: str
    name: str
    arch: str
    peak: dict
    hbm: float
    sms: int
    boost_mhz: float
    tdp: float

    def peak_flops(self, precision: str) -> float:
        """Dense FLOP/s of ``precision``; a ParamError naming ``precision`` where the GPU has no such tensor core."""
        got = self.peak.get(precision, 0.0)
        if got <= 0:
            raise ParamError("precision", f"the {self.name} has no {precision.upper()} tensor cores: use bf16")
        return got


def gpu_of(p: dict) -> GPU:
    """The GPU of the resolved job ``p`` (its ``gpu`` catalog entry; H100 SXM without one)."""
    spec = p.get("gpu") or {}
    g = {k: (spec.get(k) if spec.get(k) is not None else v) for k, v in H100.items()}
    return GPU(slug=str(g["slug"]), name=str(g["name"]), arch=str(g["arch"]),
               peak={"bf16": float(g["bf16_tflops"]) * 1e12, "fp8": float(g["fp8_tflops"]) * 1e12},
               hbm=float(g["memory_bandwidth_gbps"]) * 1e9 / 8, sms=int(g["sms"]),
               boost_mhz=float(g["boost_clock_mhz"]), tdp=float(g["power_w"]))
