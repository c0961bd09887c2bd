"""Every write of training jobs (:class:`twin.runs.models.Job`) goes through these functions, each in one
transaction; the runs of the ``job`` and ``schedule`` kinds call them (:mod:`twin.capabilities.jobs.kinds`).

A job's life: :func:`create_job` (queued, with its run) -> :func:`place_job` (running: its GPUs recorded) ->
:func:`finish_job` (its step model's results) or :func:`fail_job` (the reason).

What runs where (:func:`gpu_jobs`): the placed jobs of a cluster (running or finished, the newest
``JOBS_SHOWN``), newest first; a GPU held by several belongs to the newest. It is what the GPU page colours by
and what the live ``gpu_job`` / ``job_stats`` sections carry (:mod:`twin.capabilities.jobs.live`).
"""
from __future__ import annotations

import numpy as np
from django.db import transaction
from django.utils import timezone

from twin.runs.choices import JobState
from twin.runs.models import Job

# The placed jobs a cluster's GPU -> job index holds (newest first): at most a uint16 row number, and what a
# legend can show.
JOBS_SHOWN = 256
PLACED = (JobState.RUNNING, JobState.FINISHED)
_PHASE = {JobState.QUEUED: "queued", JobState.RUNNING: "simulating", JobState.FINISHED: "finished",
          JobState.FAILED: "failed"}


def create_job(*, cluster, name: str, model: str, params: dict, run=None, user=None) -> Job:
    with transaction.atomic():
        return Job.objects.create(cluster=cluster, name=name[:100], model=model[:64], params=params, run=run,
                                  created_by=user)


def place_job(job: Job, gpus) -> Job:
    """The job runs on ``gpus`` (rank -> GPU index)."""
    with transaction.atomic():
        job.set_gpus(gpus)
        job.state, job.started_at = JobState.RUNNING, timezone.now()
        job.save(update_fields=["placement", "n_gpus", "gpu_min", "gpu_max", "state", "started_at"])
    return job


def finish_job(job: Job, results: dict) -> Job:
    with transaction.atomic():
        job.results, job.state, job.finished_at = results, JobState.FINISHED, timezone.now()
        job.save(update_fields=["results", "state", "finished_at"])
    return job


def fail_job(job: Job, error: str) -> Job:
    with transaction.atomic():
        job.error, job.state, job.finished_at = error, JobState.FAILED, timezone.now()
        job.save(update_fields=["error", "state", "finished_at"])
    return job


def fail_jobs_of_run(run, error: str) -> int:
    """The run's jobs not finished yet end failed with ``error`` (a run that failed or was cancelled)."""
    with transaction.atomic():
        return Job.objects.filter(run=run, state__in=(JobState.QUEUED, JobState.RUNNING)).update(
            state=JobState.FAILED, error=error[:2000], finished_at=timezone.now())


# ------------------------------------------------------------------------------------------------ what runs where
def stats_row(job: Job, phase: str | None = None) -> dict:
    """A job's row of the live ``job_stats`` section (:data:`twin.capabilities.jobs.live.JOB_FIELDS`)."""
    r = job.results or {}
    return {"job": job.pk, "phase": phase or _PHASE[job.state], "step_time_s": r.get("step_time_s"),
            "tokens_per_s": r.get("tokens_per_s"), "tflops_per_gpu": r.get("tflops_per_gpu"), "mfu": r.get("mfu"),
            "gpus": job.n_gpus}


def gpu_jobs(cluster, n_gpus: int, *, extra: list[tuple[Job, str]] = ()) -> tuple[np.ndarray, list[Job], list[dict]]:
    """Per GPU of ``cluster`` (``n_gpus``, index order) the 1-based row of the job holding it (0: none), the jobs
    of those rows and their ``job_stats`` rows. The placed jobs (newest ``JOBS_SHOWN``) and ``extra`` (a job and
    its phase, e.g. the one a run is simulating: it wins over the others) are drawn oldest first, so the newest
    holder of a GPU wins."""
    extra = list(extra)
    skip = [j.pk for j, _ in extra]
    placed = list(Job.objects.filter(cluster=cluster, state__in=PLACED).exclude(pk__in=skip)
                  .order_by("-id")[:max(0, JOBS_SHOWN - len(extra))])
    jobs = [(j, None) for j in placed] + [(j, p) for j, p in extra]
    index = np.zeros(n_gpus, dtype=np.uint16)
    order = list(range(len(placed) - 1, -1, -1)) + list(range(len(placed), len(jobs)))   # oldest, then extra
    for i in order:
        g = jobs[i][0].gpus
        index[g[(g >= 0) & (g < n_gpus)]] = i + 1
    return index, [j for j, _ in jobs], [stats_row(j, p) for j, p in jobs]


def gpu_job_lookup(cluster, gpu: int) -> Job | None:
    """The job a GPU (by index) runs: the newest placed job of the cluster holding it, or None."""
    candidates = (Job.objects.filter(cluster=cluster, state__in=PLACED, gpu_min__lte=gpu, gpu_max__gte=gpu)
                  .order_by("-id")[:JOBS_SHOWN])
    for job in candidates:
        if np.any(job.gpus == gpu):
            return job
    return None


def publish_jobs(reporter, cluster, n_gpus: int, job: Job | None = None, phase: str | None = None,
                 fraction=None) -> None:
    """Send the cluster's GPU -> job index and job rows (with ``job`` in ``phase``) through a run's reporter."""
    index, _, rows = gpu_jobs(cluster, n_gpus, extra=[(job, phase)] if job is not None else [])
    reporter(fraction, gpu_job=index, job_stats=rows, force=True)

