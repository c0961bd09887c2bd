"""Every write of training jobs (:class:`twin.runs.models.Job`) goes through these functions, each in one
transaction; the runs of the ``job`` and ``schedule`` kinds call them (:mod:`twin.capabilities.jobs.kinds`).

A job's life: :func:`create_job` (queued, with its run) -> :func:`place_job` (running: it holds its GPUs) ->
:func:`step_simulated` (its step model's results; a real job keeps running, holding its GPUs, a what-if ends) ->
:func:`release_job` (finished: its GPUs free again), or :func:`fail_job` (the reason). :func:`finish_job` records a
study's jobs (the ``jobs`` kind) as finished at once: they hold nothing either.

Occupancy has one rule, :func:`holding`: a job holds GPUs while it is running and is not a what-if. Everything that
counts or draws held GPUs reads it: :func:`occupancy` (the Jobs page's count, the API's ``occupancy``),
:func:`held_mask` (the GPUs a new job may not be placed on), :func:`gpu_jobs` (what runs where: what the GPU page
colours by and what the live ``gpu_job`` / ``job_stats`` sections carry, :mod:`twin.capabilities.jobs.live`) and
:func:`gpu_job_lookup`.
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
# What a what-if may vary (each a parameter of the job kind; "cluster" runs the same job on another cluster, e.g. the
# InfiniBand twin beside the RoCE one), and how many variants one asks for at most.
WHATIF_AXES = ("placement", "routing", "qps", "cluster")
WHATIF_MAX_VARIANTS = 16
_PHASE = {JobState.QUEUED: "queued", JobState.RUNNING: "running", JobState.FINISHED: "finished",
          JobState.FAILED: "failed"}


class NotRunning(ValueError):
    """A release of a job that holds no GPUs (queued, finished, failed, or a what-if)."""


# ------------------------------------------------------------------------------------------------ occupancy
def holding(cluster=None):
    """The jobs that hold GPUs (of ``cluster``, or of every cluster): running ones that are not what-ifs. The one
    rule of occupancy."""
    q = Job.objects.filter(state=JobState.RUNNING, whatif="")
    return q if cluster is None else q.filter(cluster=cluster)


def holds_gpus(job: Job) -> bool:
    """Whether ``job`` holds its GPUs (:func:`holding`, for one row)."""
    return job.state == JobState.RUNNING and not job.whatif


def held_mask(cluster, n_gpus: int, *, exclude=()) -> np.ndarray:
    """Per GPU of ``cluster`` (index order) whether a job holds it, the jobs of ``exclude`` (ids) left out."""
    mask = np.zeros(n_gpus, dtype=bool)
    for job in holding(cluster).exclude(pk__in=list(exclude)).only("placement"):
        g = job.gpus
        mask[g[(g >= 0) & (g < n_gpus)]] = True
    return mask


def occupancy(cluster, n_gpus: int | None = None) -> dict:
    """What the cluster's jobs hold: ``{"jobs": running jobs, "held_gpus": GPUs they hold, "gpus": the cluster's}``."""
    if n_gpus is None:
        from twin.inventory.models import GPU
        n_gpus = GPU.objects.filter(cluster=cluster).count()
    return {"jobs": holding(cluster).count(), "held_gpus": int(held_mask(cluster, n_gpus).sum()), "gpus": n_gpus}


def create_job(*, cluster, name: str, model: str, params: dict, run=None, user=None) -> Job:
    with transaction.atomic():
        return Job.objects.create(cluster=cluster, name=name[:100], model=model[:64], params=params, run=run,
                                  created_by=user)


def whatif_name(original: Job, what: str) -> str:
    """A what-if's own name: the original's, saying what it varies (``llama3-8b 64 GPUs tp8 (what-if: placement
    random)``), within the name's 100 characters."""
    tail = f" (what-if: {what})"
    return original.name[:max(0, 100 - len(tail))] + tail[:100]


def make_whatif(job: Job, original: Job, what: str) -> Job:
    """``job`` (queued, made by its run) becomes a what-if of ``original`` varying ``what``: named for it, never
    holding GPUs."""
    with transaction.atomic():
        job.whatif, job.whatif_of, job.name = what[:200], original, whatif_name(original, what[:200])
        job.save(update_fields=["whatif", "whatif_of", "name"])
    return job


def place_job(job: Job, gpus) -> Job:
    """The job runs on ``gpus`` (rank -> GPU index)."""
    with transaction.atomic():
        job.set_gpus(gpus)
        job.state, job.started_at = JobState.RUNNING, timezone.now()
        job.save(update_fields=["placement", "n_gpus", "gpu_min", "gpu_max", "state", "started_at"])
    return job


def step_simulated(job: Job, results: dict) -> Job:
    """The job's step model's ``results`` recorded: a real job keeps running (it holds its GPUs until released), a
    what-if is finished (it was only simulated)."""
    if job.whatif:
        return finish_job(job, results)
    with transaction.atomic():
        job.results = results
        job.save(update_fields=["results"])
    return job


def finish_job(job: Job, results: dict) -> Job:
    """The job ends with ``results`` (a what-if, a study's job): it holds no GPUs."""
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


def release_job(job: Job) -> Job:
    """End the running ``job``: finished, its GPUs free again, published on its cluster's stream after the commit
    (:func:`publish_released`). Raises :class:`NotRunning` when it holds none (the row is locked and read again, so
    two releases racing end it once)."""
    with transaction.atomic():
        locked = Job.objects.select_for_update().get(pk=job.pk)
        if not holds_gpus(locked):
            what = "a what-if, which holds no GPUs" if locked.whatif else locked.state
            raise NotRunning(f"job {locked.pk} is {what}: only a running job can be released")
        locked.state, locked.finished_at = JobState.FINISHED, timezone.now()
        locked.save(update_fields=["state", "finished_at"])
        publish_released(locked)
    return locked


# ------------------------------------------------------------------------------------------------ what runs where
def stats_row(job: Job, phase: str | None = None) -> dict:
    """A job's row of the live ``job_stats`` section (:data:`twin.capabilities.jobs.live.JOB_FIELDS`)."""
    r = job.results or {}
    return {"job": job.pk, "phase": phase or _PHASE[job.state], "step_time_s": r.get("step_time_s"),
            "tokens_per_s": r.get("tokens_per_s"), "tflops_per_gpu": r.get("tflops_per_gpu"), "mfu": r.get("mfu"),
            "gpus": job.n_gpus}


def gpu_jobs(cluster, n_gpus: int, *, extra: list[tuple[Job, str]] = ()) -> tuple[np.ndarray, list[Job], list[dict]]:
    """Per GPU of ``cluster`` (``n_gpus``, index order) the 1-based row of the job holding it (0: none), the jobs
    of those rows and their ``job_stats`` rows. The jobs holding GPUs (:func:`holding`, newest ``JOBS_SHOWN``)
    and ``extra`` (a job and its phase, e.g. the one a run is placing: it wins over the others) are drawn oldest
    first, so the newest holder of a GPU wins. A what-if in ``extra`` has its row, and no GPU: it holds none."""
    extra = list(extra)
    skip = [j.pk for j, _ in extra]
    placed = list(holding(cluster).exclude(pk__in=skip).order_by("-id")[:max(0, JOBS_SHOWN - len(extra))])
    jobs = [(j, None) for j in placed] + [(j, p) for j, p in extra]
    index = np.zeros(n_gpus, dtype=np.uint16)
    order = list(range(len(placed) - 1, -1, -1)) + list(range(len(placed), len(jobs)))   # oldest, then extra
    for i in order:
        if jobs[i][0].whatif or jobs[i][0].state in (JobState.FINISHED, JobState.FAILED):
            continue
        g = jobs[i][0].gpus
        index[g[(g >= 0) & (g < n_gpus)]] = i + 1
    return index, [j for j, _ in jobs], [stats_row(j, p) for j, p in jobs]


def gpu_job_lookup(cluster, gpu: int) -> Job | None:
    """The job a GPU (by index) runs: the newest job of the cluster holding it (:func:`holding`), or None."""
    candidates = holding(cluster).filter(gpu_min__lte=gpu, gpu_max__gte=gpu).order_by("-id")[:JOBS_SHOWN]
    for job in candidates:
        if np.any(job.gpus == gpu):
            return job
    return None


def publish_jobs(reporter, cluster, n_gpus: int, job: Job | None = None, phase: str | None = None,
                 fraction=None) -> None:
    """Send the cluster's GPU -> job index and job rows (with ``job`` in ``phase``) through a run's reporter."""
    index, _, rows = gpu_jobs(cluster, n_gpus, extra=[(job, phase)] if job is not None else [])
    reporter(fraction, gpu_job=index, job_stats=rows, force=True)



def publish_released(job: Job) -> None:
    """Send the job's cluster's GPU -> job index and job rows (the released ``job``'s row saying ``finished``) on its
    stream once the transaction commits (no run reports a release), so the GPU page and the Jobs page drop its
    GPUs."""
    from twin.inventory.models import GPU
    from twin.live.publish import publish_cluster_sections
    index, _, rows = gpu_jobs(job.cluster, GPU.objects.filter(cluster_id=job.cluster_id).count(), extra=[(job, None)])
    publish_cluster_sections(job.cluster_id, gpu_job=index, job_stats=rows)
