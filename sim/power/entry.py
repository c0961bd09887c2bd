"""The power capability's entry point (docs/engine.md "Entry points"): ``run_power(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.power.params.POWER`. Its ``to_dict()`` is what ``python -m sim power --json`` prints (``to_dict(
series=True)``: with ``--series``, the waveforms too); the keys are documented in docs/power.md ("Result").
"""
from __future__ import annotations

from sim.core.entry import ClusterResult, cluster_name
from sim.power import run


def run_power(cluster, values: dict, progress=None) -> ClusterResult:
    """A job's power over its step (and over days), caps and budgets (:func:`sim.power.run.run_power`; ``.result``
    is its :class:`sim.power.run.PowerResult`)."""
    return ClusterResult(cluster_name(cluster), run.run_power(cluster, values, progress=progress))
