"""A GPU's clock under a power cap: the cap -> clock -> throughput relation (docs/power.md "Device power models",
docs/jobs.md "Clocks under a power cap").

The training step (:mod:`sim.jobs.kernels`) slows its compute-bound kernels by it when a job runs under a power cap
(``power_cap_w``), and the power engine (:mod:`sim.power.devices`, a layer above) draws its caps with the same
relation, so it lives here, below both. Dynamic power ~ f V^2 with V ~ f in the DVFS range: the draw above the part
that does not scale with the SM clock (``static``: leakage, HBM and the rest at the GEMMs' traffic) scales as f^3,
so a kernel that runs power-limited at ``at_cap`` W (dense GEMMs do, at the default cap, the TDP [S4, S76]) keeps
``f / f_0 = ((cap - static) / (at_cap - static)) ** (1/3)`` of its clock under a cap of ``cap`` W. Memory-bound
kernels run at HBM's clock, which the cap does not lower (the model keeps their time).
"""
from __future__ import annotations

# The part of a GEMM's draw at the TDP that does not scale with the SM clock, per catalog GPU (W). H100 SXM's 120 W is
# the power engine's assumption (docs/power.md); a GPU without an entry takes the same share of its TDP.
STATIC_W = {"h100-sxm-80gb": 120.0}
STATIC_SHARE = STATIC_W["h100-sxm-80gb"] / 700.0


def static_w(slug: str, tdp: float) -> float:
    """The clock-independent watts of the GPU ``slug`` of TDP ``tdp`` (:data:`STATIC_W`, else that share)."""
    return STATIC_W.get(slug, STATIC_SHARE * tdp)


def clock_share(cap: float, at_cap: float, static: float) -> float:
    """The share of its default-cap clock (and so of its throughput) a compute-bound kernel keeps under ``cap`` W,
    when it draws ``at_cap`` W uncapped of which ``static`` do not scale with the clock; 1 at or above ``at_cap``,
    0 at or below ``static``."""
    if cap >= at_cap:
        return 1.0
    return ((max(cap, static) - static) / (at_cap - static)) ** (1.0 / 3.0)


def cap_for_share(share: float, at_cap: float, static: float) -> float:
    """The inverse of :func:`clock_share`: the cap at which compute keeps ``share`` of its speed."""
    return static + (at_cap - static) * min(1.0, max(0.0, share)) ** 3
