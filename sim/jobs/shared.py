"""Several jobs sharing one fabric as a ``jobs`` run declares them (:data:`sim.jobs.params.JOBS`): its jobs file read
into job parameters on its one fabric, then :func:`sim.jobs.job.run_jobs`. It reads each job with the job
parameters' declaration, so it sits above :mod:`sim.jobs.params`.
"""
from __future__ import annotations

from sim.jobs.job import JobsResult, run_jobs
from sim.jobs.params import JOB
from sim.jobs.queue import MAX_SHARED_JOBS, read_jobs


def shared_jobs(params: dict) -> tuple[list[str], list[dict]]:
    """The jobs of a validated :data:`sim.jobs.params.JOBS` (names, JOB parameter dicts), each on the one fabric the
    set declares: its ``routing``, ``qps``, ``hash`` and ``udp_sport`` replace the jobs' own (the first job's seed
    seeds the routing hash, each job's its own placement)."""
    fabric = {k: params[k] for k in ("routing", "qps", "hash", "udp_sport")}
    queued = read_jobs(params["jobs"], JOB.validate, timed=False, max_jobs=MAX_SHARED_JOBS)
    jobs = [{**q.params, **fabric, "hottest": 0} for q in queued]
    jobs[0]["hottest"] = params["hottest"]
    return [q.name for q in queued], jobs


def run_shared(topo, params: dict, progress=None, placements=None) -> JobsResult:
    """:func:`sim.jobs.job.run_jobs` of a validated :data:`sim.jobs.params.JOBS` (its jobs file, on its fabric), the
    result named."""
    names, jobs = shared_jobs(params)
    out = run_jobs(topo, jobs, progress=progress, placements=placements)
    out.names = names
    return out
