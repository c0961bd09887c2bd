"""The training-job run kinds: ``job`` (one job's step model, :mod:`sim.jobs.job`, on the cluster's inventory as it is),
``jobs`` (several jobs sharing the fabric: each one's step together and alone, :func:`sim.jobs.shared.run_shared`) and
``schedule`` (a job queue under a placement policy over simulated time, :mod:`sim.jobs.scheduler`). Their parameters
are the engine's own declarations (:data:`sim.jobs.params.JOB`, :data:`sim.jobs.params.JOBS`, :data:`sim.jobs.params.SCHEDULE`): the API, the CLI and the
form refuse the same inputs in the same words.

A ``job`` run has a :class:`twin.runs.models.Job` from the moment it is queued (``Kind.on_create``); the run places
it on GPUs no running job holds (``running``), simulates its step and records the results: the job keeps running,
holding its GPUs, until a user releases it (:func:`twin.runs.job_actions.release_job`). A what-if
(:func:`twin.runs.job_actions.make_whatif`) is placed as its original would be (the original's GPUs counted free),
simulated, and finished: it never holds GPUs. A run that fails fails its job.
Every stage goes out on the cluster's live stream as the ``gpu_job`` and ``job_stats`` sections (what runs where,
and the job's phase, step time and throughput: :mod:`twin.capabilities.jobs.live`), so the GPU page and the Jobs
page follow it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.core.errors import ParamError
from sim.fabric.catalog import load_catalog
from sim.jobs.layout import resolve_job
from sim.jobs.params import JOB, JOB_PARAMS
from sim.fabric.topology import topology_from_layout
from twin.inventory import gpu_grid
from twin.runs import job_actions, job_layouts, limits
from twin.runs.kinds import gpu_states
from twin.runs.models import Job
from twin.runs.registry import Headline, Kind, get, register

JOB_KIND = "job"
JOB_HEADLINE = (Headline("mfu", "MFU", "pct"), Headline("tokens_per_s", "tokens/s", "int"),
                Headline("step_time", "step time (s)", "text"))
JOBS_HEADLINE = (Headline("worst_slowdown", "worst slowdown (together / alone - 1)", "pct"),)
SCHEDULE_HEADLINE = (Headline("utilization", "GPU utilization", "pct"),)
# The figures a Job keeps of its run's summary (sim.jobs.job.JobResult.to_dict(): what the queue, the live frames and
# the what-if table show); ``step_time`` is kept as ``step_time_s``, the breakdown without its total.
JOB_PARAM_NAMES = tuple(p.name for p in JOB_PARAMS)       # what a Job row keeps of a job's parameters
JOB_FIGURES = ("tokens_per_s", "tflops_per_gpu", "mfu", "memory_gb", "hottest", "routing", "placement", "published",
               "schedule")


def job_results(doc: dict) -> dict:
    """What a Job keeps of :meth:`sim.jobs.job.JobResult.to_dict`: step time (s), tokens/s, TFLOPs per GPU, MFU, the
    step's parts in seconds (compute, exposed tp/cp/pp/dp, bubble), each dimension's exposed and total
    communication, memory, the hottest links, the pipeline schedule as simulated and the nearest published figures
    (``published``: :func:`sim.jobs.published.published_beside`)."""
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


# ----------------------------------------------------------------------------------------- engine (sim.jobs.job)
def place(topo, params: dict, held=None) -> np.ndarray:
    """The job's GPUs (rank -> GPU) as :func:`sim.jobs.job.run_job` places them on its own (:func:`sim.fabric.placement.place`
    with the job's policy and seed) on the usable GPUs not ``held`` (bool per GPU: held by running jobs), so the
    twin can record and publish the placement before the step is solved."""
    from dataclasses import replace

    from sim.fabric.placement import place as engine_place
    free = topo if held is None else replace(topo, gpu_usable=topo.gpu_usable & ~held)
    n = int(params["gpus"])
    if held is not None and n > (left := int(free.gpu_usable.sum())) and n <= int(topo.gpu_usable.sum()):
        raise ParamError("gpus", f"{n:,} GPUs asked, {left:,} free: running jobs hold "
                                 f"{int((held & topo.gpu_usable).sum()):,} (release one on the Jobs page)")
    try:
        return np.asarray(engine_place(free, n, params["placement"], params["seed"]))
    except ValueError as e:
        raise ParamError("gpus", str(e)) from None


# ----------------------------------------------------------------------------------------------------- kinds
def job(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """One training job on the cluster as it is: placed (failed and drained GPUs and those running jobs hold
    excluded), its step simulated (compute, every parallel group's traffic on the fabric, bubble). Its Job row
    follows: placing -> running (placement recorded, then results; a what-if ends finished), each stage published
    on the cluster's stream."""
    topo = topology_from_layout(layout)
    cluster, n = run.cluster, int(topo.n_gpus)
    the_job = _job_of(run)
    job_actions.publish_jobs(progress, cluster, n, the_job, "placing", 0.0)
    held = job_actions.held_mask(cluster, n, exclude=[the_job.pk, the_job.whatif_of_id])
    gpus = place(topo, params, held)
    job_actions.place_job(the_job, gpus)
    job_actions.publish_jobs(progress, cluster, n, the_job, "simulating", 0.01)
    progress(None, gpu_state=gpu_states(topo, gpus))
    from sim.jobs.job import run_job
    result = run_job(topo, params, progress=progress, gpus=gpus)
    doc = result.to_dict()
    job_actions.step_simulated(the_job, job_results(doc))
    # the pipeline's slot table as simulated (sim.jobs.step.timeline): the Jobs page and the run view draw it
    arrays = {"gpu_state": gpu_states(topo, gpus), "pipeline": result.breakdown["timeline"]}
    job_actions.publish_jobs(progress, cluster, n, None, None, 1.0)
    progress(1.0, gpu_state=arrays["gpu_state"])
    doc["step_time_s"] = doc["step_time"]
    return {**doc, "job": the_job.pk, "job_name": the_job.name}, arrays


def jobs(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """Several jobs on the cluster as it is (failed and drained GPUs excluded), placed one after the other, their
    traffic solved together and each alone; summary :meth:`sim.jobs.job.JobsResult.to_dict`. Each placed job is then
    recorded as a finished Job (its placement, its figures together plus ``alone_step_time_s`` and ``slowdown``):
    a study of the fabric shared, its jobs hold no GPUs."""
    topo = topology_from_layout(layout)
    cluster, n = run.cluster, int(topo.n_gpus)
    progress(0.0, "placing the jobs", gpu_state=gpu_states(topo))
    from sim.jobs.entry import run_jobs
    result = run_jobs(topo, params, progress=progress).result
    doc = result.to_dict()
    for name, r, d in zip(result.names, result.together, doc["jobs"]):
        row = job_actions.create_job(cluster=cluster, name=f"{name}: {job_name(r.params)}", model=d["model"]["name"],
                                     params={k: r.params[k] for k in JOB_PARAM_NAMES}, run=run, user=run.created_by)
        job_actions.place_job(row, r.gpus)
        job_actions.finish_job(row, {**job_results(d), "alone_step_time_s": d["alone_step_time"],
                                     "slowdown": d["slowdown"]})
        d["job"] = row.pk
    placed = np.concatenate([r.gpus for r in result.together])
    arrays = {"gpu_state": gpu_states(topo, placed)}
    job_actions.publish_jobs(progress, cluster, n, None, None, 1.0)
    progress(1.0, gpu_state=arrays["gpu_state"])
    return doc, arrays


def schedule(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """A scheduler simulation on the cluster's inventory (jobs never land on failed or drained GPUs): utilization,
    fragmentation, waits and each job's throughput under the policy."""
    topo = topology_from_layout(layout)
    progress(0.0, "scheduling", gpu_state=gpu_states(topo))
    from sim.jobs.entry import run_schedule
    return run_schedule(topo, params, progress=progress).result.to_dict(), {}


# ------------------------------------------------------------------------------------- checks and cost
def check_job(values: dict, cluster) -> None:
    """The job's GPUs (tp x cp x pp x dp when ``gpus`` is left out) against the cluster's usable GPUs, and its
    memory against the cluster's GPU (``hbm_gb`` null: the GPU's catalog memory; the parameters alone were checked
    against the catalog's largest GPU, :func:`sim.jobs.layout.unplaced_hbm_gb`)."""
    n = values.get("gpus")
    if n is None and all(values.get(k) for k in ("tp", "cp", "pp", "dp")):
        n = values["tp"] * values["cp"] * values["pp"] * values["dp"]
    if n is not None and n > (usable := gpu_grid.usable_gpus(cluster)):
        raise ParamError("gpus", f"{n:,} GPUs asked, {cluster.name} has {usable:,} usable")
    gpu = (cluster.spec or {}).get("layout", {}).get("gpu")
    if values.get("hbm_gb") is None and gpu in load_catalog().models.get("gpu", {}):
        resolve_job({**values, "hbm_gb": float(load_catalog().models["gpu"][gpu]["memory_gb"])})


def _validate_job(values, cluster) -> dict:
    """JOB's validation; with the cluster, :func:`check_job` and the twin's limits, as every kind. A refusal of the
    job's layout (its GPUs, parallel degrees, batch, memory) also names the layouts nearest it that fit the cluster
    (:func:`twin.runs.job_layouts.refused`), never a layout for more GPUs than it has."""
    try:
        out = JOB.validate(values)
        if cluster is not None:
            check_job(out, cluster)
            limits.check_run(get(JOB_KIND), out, cluster)
    except ParamError as e:
        if cluster is None or not isinstance(values, dict):
            raise
        raise job_layouts.refused(e, values, cluster) from None
    return out


def job_gpus(values: dict) -> int:
    """The job's GPUs: ``gpus``, else tp x cp x pp x dp (an absent dimension counts 1)."""
    n = values.get("gpus")
    if n is None:
        n = 1
        for k in ("tp", "cp", "pp", "dp"):
            n *= values.get(k) or 1
    return int(n)


def job_cost(values: dict, cluster) -> int:
    """Flows of one step: every GPU in a ring per parallel group it is in (TP, CP, PP, DP: four), times the queue
    pairs (an upper bound of the engine's flows; TP inside a host routes none on the fabric)."""
    return job_gpus(values) * 4 * values.get("qps", 1)


def _check_jobs(values: dict, cluster) -> None:
    """Each job's GPUs, and all of them together, against the cluster's usable GPUs (the file itself was checked
    by :data:`sim.jobs.params.JOBS`)."""
    from sim.jobs.shared import shared_jobs
    usable = gpu_grid.usable_gpus(cluster)
    _, specs = shared_jobs(values)
    for i, p in enumerate(specs):
        if p["gpus"] > usable:
            raise ParamError(f"jobs[{i}].gpus", f"{p['gpus']:,} GPUs asked, {cluster.name} has {usable:,} usable")
    total = sum(p["gpus"] for p in specs)
    if total > usable:
        raise ParamError("jobs", f"the jobs ask for {total:,} GPUs together, {cluster.name} has {usable:,} usable")


def _check_queue(values: dict, cluster) -> None:
    """Each queued job's GPUs against the cluster's usable GPUs (the file itself was read by
    :data:`sim.jobs.params.SCHEDULE`'s check): a job that could never start is refused here, naming its entry and
    line, rather than failing the run in the worker."""
    if values.get("jobs") is None:
        return
    from sim.jobs.scheduler import parse_jobs
    usable = gpu_grid.usable_gpus(cluster)
    for i, j in enumerate(parse_jobs(values["jobs"])):
        if j.params["gpus"] > usable:
            at = f" (line {j.line})" if j.line else ""
            raise ParamError(f"jobs[{i}].gpus", f"{j.params['gpus']:,} GPUs asked, {cluster.name} has "
                                                f"{usable:,} usable{at}")


def _jobs_cost(values: dict, cluster) -> int:
    """Every job's flows (:func:`job_cost` on the set's fabric), twice: once solved together, once alone (an upper
    bound: a job that shares no link with another is not solved again)."""
    from sim.jobs.shared import shared_jobs
    _, specs = shared_jobs(values)
    return 2 * sum(job_cost(p, cluster) for p in specs)


def _flows(values: dict, cluster) -> dict:
    return {"flows": job_cost(values, cluster)}


def _jobs_flows(values: dict, cluster) -> dict:
    return {"flows": _jobs_cost(values, cluster)}


def _seconds(cost):
    """A flows kind's time estimate (:func:`twin.runs.limits.flows_estimate`)."""
    return lambda values, cluster: limits.flows_estimate(values, cluster, cost)


def _schedule_cost(values: dict, cluster) -> dict:
    """The jobs the scheduler places: its jobs file's, else its synthetic arrivals (a bad file is refused here,
    naming ``jobs``, as the engine would refuse it)."""
    if values.get("jobs"):
        from sim.jobs.scheduler import parse_jobs
        return {"arrivals": len(parse_jobs(values["jobs"]))}
    return {"arrivals": values["arrivals"]}


SCHEDULE_PAIRS = "TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND"


def _schedule_seconds(values: dict, cluster) -> float:
    """At every arrival and end the scheduler scans its queue of waiting jobs, so its work grows as the arrivals
    squared (bench/bench_limits.py: 1,000 arrivals on demo-256 took 13 s, 4,000 took 117 s): arrivals^2 over
    TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND."""
    return limits.per_second(_schedule_cost(values, cluster)["arrivals"] ** 2, SCHEDULE_PAIRS)


def register_kinds() -> bool:
    """Register ``job``, ``jobs`` and ``schedule`` when the engine declares them (``sim.jobs.params.JOB``, ``JOBS`` and
    ``SCHEDULE``, and ``sim.jobs.scheduler`` for the latter two)."""
    try:
        from sim.jobs.params import JOB, JOBS, SCHEDULE
    except ImportError:
        return False
    import importlib.util
    register(Kind(JOB_KIND, "Training job (one step of a 4D-parallel job on the fabric)", JOB, job,
                  headline=JOB_HEADLINE, best="mfu", arrays={"gpu_state": "uint8", "pipeline": "float64"}, view="job", form=False,
                  brief=("model", "gpus", "tp", "cp", "pp", "dp", "placement", "routing"), check=check_job,
                  validate=_validate_job,
                  cost=_flows, estimate=_seconds(_flows), throughputs=(limits.FLOWS_PER_SECOND,),
                  on_create=_create_job, wants_run=True,
                  main=("model", "gpus", "tp", "cp", "pp", "dp", "seq", "batch_tokens", "placement", "routing", "qps")))
    if importlib.util.find_spec("sim.jobs.scheduler") is None:
        return True
    register(Kind("jobs", "Jobs sharing the fabric (each one's step together and alone)", JOBS, jobs,
                  headline=JOBS_HEADLINE, arrays={"gpu_state": "uint8"}, view="jobs", brief=("routing", "qps"),
                  check=_check_jobs, cost=_jobs_flows, estimate=_seconds(_jobs_flows),
                  throughputs=(limits.FLOWS_PER_SECOND,), wants_run=True))
    register(Kind("schedule", "Scheduler (a job queue over simulated time under a placement policy)", SCHEDULE,
                  schedule, headline=SCHEDULE_HEADLINE, view="summary", brief=("policy", "arrivals", "days"),
                  check=_check_queue, cost=_schedule_cost, estimate=_schedule_seconds, drives="arrivals",
                  throughputs=(SCHEDULE_PAIRS,), wants_run=True))
    return True


register_kinds()
