"""The power capability's entry point (docs/engine.md "Entry points"): ``run_power(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.power.params.POWER`. Its ``to_dict()`` is what ``python -m sim power --json`` prints (``to_dict(
series=True)``: with ``--series``, the waveforms too; ``gpus=True``: per GPU, for the twin's GPU page); the keys
are documented in docs/power.md ("Result").
"""
from __future__ import annotations

from sim.core.entry import ClusterResult, cluster_name
from sim.power import run, schedule


def run_power(cluster, values: dict, progress=None) -> ClusterResult:
    """A job's power over its step (and over days), caps and budgets (:func:`sim.power.run.run_power`; ``.result``
    is its :class:`sim.power.run.PowerResult`)."""
    return ClusterResult(cluster_name(cluster), run.run_power(cluster, values, progress=progress))


def run_power_schedule(cluster, values: dict, progress=None) -> ClusterResult:
    """The cluster's draw over a job queue's schedule (:func:`sim.power.schedule.power_schedule`; ``.result`` is its
    :class:`sim.power.schedule.SchedulePower`), ``values`` validated by :data:`sim.power.params.POWER_SCHEDULE`."""
    return ClusterResult(cluster_name(cluster), schedule.power_schedule(cluster, values, progress=progress))
