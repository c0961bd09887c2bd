"""The training-job run kinds: ``job`` (one job's step model, :mod:`sim.job`, on the cluster's inventory as it is)
and ``schedule`` (a job queue under a placement policy over simulated time, :mod:`sim.scheduler`). Their parameters
are the engine's own declarations (:data:`sim.params.JOB`, :data:`sim.params.SCHEDULE`): the API, the CLI and the
form refuse the same inputs in the same words.

A ``job`` run has a :class:`twin.runs.models.Job` from the moment it is queued (``Kind.on_create``); the run places
it (``running``), simulates its step and records the results (``finished``), or fails it with the run's error.
Every stage goes out on the cluster's live stream as the ``gpu_job`` and ``job_stats`` sections (what runs where,
and the job's phase, step time and throughput: :mod:`twin.live.frames`), so the GPU page and the Jobs page follow
it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.errors import ParamError
from sim.topology import topology_from_layout
from twin.runs import job_actions, limits
from twin.runs.kinds import gpu_states
from twin.runs.models import Job
from twin.runs.registry import Headline, Kind, register

JOB_HEADLINE = (Headline("mfu", "MFU", "pct"), Headline("tokens_per_s", "tokens/s", "int"),
                Headline("step_time", "step time (s)", "text"))
SCHEDULE_HEADLINE = (Headline("utilization", "GPU utilization", "pct"),)
# The figures a Job keeps of its run's summary (sim.job.JobResult.to_dict(): what the queue, the live frames and
# the what-if table show); ``step_time`` is kept as ``step_time_s``, the breakdown without its total.
JOB_FIGURES = ("tokens_per_s", "tflops_per_gpu", "mfu", "memory_gb", "hottest", "routing", "placement")


def job_results(doc: dict) -> dict:
    """What a Job keeps of :meth:`sim.job.JobResult.to_dict`: step time (s), tokens/s, TFLOPs per GPU, MFU, the
    step's parts in seconds (compute, exposed tp/cp/pp/dp, bubble), each dimension's exposed and total
    communication, memory and the hottest links."""
    out = {k: doc[k] for k in JOB_FIGURES if k in doc}
    out["step_time_s"] = doc["step_time"]
    out["breakdown"] = {k: v for k, v in doc["breakdown"].items() if k != "step"}
    out["comm"] = {d: {"ranks": c["ranks"], "time": c["time"], "exposed": c["exposed"]}
                   for d, c in doc.get("comm", {}).items()}
    return out


def job_name(params: dict) -> str:
    """A job's name from its parameters: model, GPUs and 4D layout (``llama3-405b 16384 GPUs tp8 cp1 pp16 dp128``)."""
    layout = " ".join(f"{k}{params[k]}" for k in ("tp", "cp", "pp", "dp") if params.get(k) is not None)
    gpus = params.get("gpus")
    return f"{params.get('model', 'job')} {'' if gpus is None else f'{gpus} GPUs '}{layout}".strip()


def _create_job(run) -> None:
    """The queued Job of a ``job`` run (called by :func:`twin.runs.actions.create_run` in its transaction)."""
    p = run.params
    job_actions.create_job(cluster=run.cluster, name=job_name(p), model=p.get("model", ""), params=p, run=run,
                           user=run.created_by)


def _job_of(run) -> Job:
    job = Job.objects.filter(run=run).order_by("id").first()
    if job is None:
        job_actions.create_job(cluster=run.cluster, name=job_name(run.params), model=run.params.get("model", ""),
                               params=run.params, run=run, user=run.created_by)
        job = Job.objects.filter(run=run).order_by("id").first()
    return job


# ----------------------------------------------------------------------------------------- engine (sim.job)
def place(topo, params: dict) -> np.ndarray:
    """The job's GPUs (rank -> GPU) as :func:`sim.job.run_job` places them on its own (:func:`sim.placement.place`
    with the job's policy and seed), so the twin can record and publish the placement before the step is solved."""
    from sim.placement import place as engine_place
    try:
        return np.asarray(engine_place(topo, params["gpus"], params["placement"], params["seed"]))
    except ValueError as e:
        raise ParamError("gpus", str(e)) from None


# ----------------------------------------------------------------------------------------------------- kinds
def job(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """One training job on the cluster as it is: placed (failed and drained GPUs excluded), its step simulated
    (compute, every parallel group's traffic on the fabric, bubble). Its Job row follows: placing -> running
    (placement recorded) -> finished (results), each stage published on the cluster's stream."""
    topo = topology_from_layout(layout)
    cluster, n = run.cluster, int(topo.n_gpus)
    the_job = _job_of(run)
    job_actions.publish_jobs(progress, cluster, n, the_job, "placing", 0.0)
    gpus = place(topo, params)
    job_actions.place_job(the_job, gpus)
    job_actions.publish_jobs(progress, cluster, n, the_job, "simulating", 0.01)
    progress(None, gpu_state=gpu_states(topo, gpus))
    from sim.job import run_job
    doc = run_job(topo, params, progress=progress, gpus=gpus).to_dict()
    job_actions.finish_job(the_job, job_results(doc))
    arrays = {"gpu_state": gpu_states(topo, gpus)}
    job_actions.publish_jobs(progress, cluster, n, None, None, 1.0)
    progress(1.0, gpu_state=arrays["gpu_state"])
    doc["step_time_s"] = doc["step_time"]
    return {**doc, "job": the_job.pk, "job_name": the_job.name}, arrays


def schedule(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """A scheduler simulation on the cluster's inventory (jobs never land on failed or drained GPUs): utilization,
    fragmentation, waits and each job's throughput under the policy."""
    topo = topology_from_layout(layout)
    progress(0.0, "scheduling", gpu_state=gpu_states(topo))
    from sim.scheduler import run_schedule
    return run_schedule(topo, params, progress=progress).to_dict(), {}


# ------------------------------------------------------------------------------------- checks and cost
def _check_job(values: dict, cluster) -> None:
    """The job's GPUs (tp x cp x pp x dp when ``gpus`` is left out) against the cluster's usable GPUs."""
    n = values.get("gpus")
    if n is None and all(values.get(k) for k in ("tp", "cp", "pp", "dp")):
        n = values["tp"] * values["cp"] * values["pp"] * values["dp"]
    if n is not None and n > (usable := limits.usable_gpus(cluster)):
        raise ParamError("gpus", f"{n:,} GPUs asked, {cluster.name} has {usable:,} usable")


def _job_gpus(values: dict) -> int:
    n = values.get("gpus")
    if n is None:
        n = 1
        for k in ("tp", "cp", "pp", "dp"):
            n *= values.get(k) or 1
    return int(n)


def _job_cost(values: dict, cluster) -> int:
    """Flows of one step: every GPU in a ring per parallel group it is in (TP, CP, PP, DP: four), times the queue
    pairs (an upper bound of the engine's flows; TP inside a host routes none on the fabric)."""
    return _job_gpus(values) * 4 * values.get("qps", 1)


def _schedule_cost(values: dict, cluster) -> int:
    """The scheduler simulates each job's step once per placement: arrivals x the cluster's usable GPUs bounds it
    loosely; counted as the usable GPUs times the queue pairs per arrival batch of 8 (jobs share solves)."""
    return max(1, values.get("arrivals", 1) // 8) * limits.usable_gpus(cluster) * values.get("qps", 1)


def register_kinds() -> bool:
    """Register ``job`` and ``schedule`` when the engine declares them (``sim.params.JOB`` and ``SCHEDULE``, and
    ``sim.scheduler`` for the latter)."""
    try:
        from sim.params import JOB, SCHEDULE
    except ImportError:
        return False
    import importlib.util
    register(Kind("job", "Training job (one step of a 4D-parallel job on the fabric)", JOB, job,
                  headline=JOB_HEADLINE, best="mfu", arrays={"gpu_state": "uint8"}, view="job", form=False,
                  brief=("model", "gpus", "tp", "cp", "pp", "dp", "placement", "routing"), check=_check_job,
                  cost=_job_cost, on_create=_create_job, wants_run=True))
    if importlib.util.find_spec("sim.scheduler") is None:
        return True
    register(Kind("schedule", "Scheduler (a job queue over simulated time under a placement policy)", SCHEDULE,
                  schedule, headline=SCHEDULE_HEADLINE, view="summary", brief=("policy", "arrivals", "days"),
                  cost=_schedule_cost, wants_run=True))
    return True


register_kinds()
