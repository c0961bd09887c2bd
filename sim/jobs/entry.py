"""The training-job capability's entry points (docs/engine.md "Entry points"): ``run_<name>(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.jobs.params.JOB`, :data:`sim.jobs.params.JOBS` or :data:`sim.jobs.params.SCHEDULE`. Each returns a
:class:`sim.core.entry.ClusterResult` whose ``to_dict()`` is what ``python -m sim job|jobs|schedule --json`` prints
(``schedule``: ``to_dict(gpus=True)`` with ``--gpu-ids``).
"""
from __future__ import annotations

from sim.core.entry import ClusterResult, cluster_name
from sim.jobs import job


def run_job(cluster, values: dict, progress=None) -> ClusterResult:
    """One training step (:func:`sim.jobs.job.run_job`; ``.result`` is its :class:`sim.jobs.job.JobResult`)."""
    return ClusterResult(cluster_name(cluster), job.run_job(cluster, values, progress=progress))


def run_jobs(cluster, values: dict, progress=None) -> ClusterResult:
    """The jobs of a jobs file sharing the fabric (:func:`sim.jobs.shared.run_shared`)."""
    from sim.jobs import shared                 # imported by the command that runs it (one job's start-up)
    return ClusterResult(cluster_name(cluster), shared.run_shared(cluster, values, progress=progress))


def run_schedule(cluster, values: dict, progress=None) -> ClusterResult:
    """A job queue over simulated time (:func:`sim.jobs.scheduler.run_schedule`)."""
    from sim.jobs import scheduler              # imported by the command that runs it (one job's start-up)
    return ClusterResult(cluster_name(cluster), scheduler.run_schedule(cluster, values, progress=progress))
