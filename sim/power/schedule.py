"""The cluster's draw over a schedule, as jobs come and go (docs/power.md "Over a schedule"): the scheduler's run
(:func:`sim.jobs.scheduler.run_schedule`: each job placed, its step solved on the fabric, its start and end) with
every running job drawing its GPUs' and hosts' mean over its step on top of the idle cluster.

A scheduled job's step is known by its length only (the scheduler keeps its step time, not its breakdown), so its
GPUs' mean draw is taken from the parts the step model gives without the fabric: its busiest stage's compute
(:func:`sim.jobs.step.compute_times`) at the compute power and its pipeline bubble (the schedule simulated on the
compute alone, :func:`sim.jobs.pipeline.simulate`) waiting; the rest of the step, its exposed communication, at the
communication power. The step view (:mod:`sim.power.step`) has a job's millisecond waveform; this view what moves
over hours and days: a job's start or end changes the draw at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.core.progress import span
from sim.jobs.layout import model_of, on_gpu, resolve_job
from sim.jobs.pipeline import simulate
from sim.jobs.scheduler import host_ok, parse_jobs, run_schedule, synthetic_jobs
from sim.jobs.step import compute_times, job_chunk_layers, optimizer_step
from sim.power.cluster import job_places
from sim.power.days import SERIES_POINTS, resample
from sim.power.params import MAX_TIMELINE_BINS, check_bins
from sim.power.places import places

MW = 1e6


def job_mean_gpu_w(params: dict, step_s: float, gpu) -> float:
    """A job's GPUs' mean draw (W) over a step of ``step_s`` seconds (module docstring)."""
    p = resolve_job(params)
    model = model_of(p)
    ct = compute_times(model, p)
    busy = p["micro_batches"] * max(ct["per_stage"]) + optimizer_step(model, p, job_chunk_layers(model, p))
    bubble = simulate(p["pipeline"], ct["f"], ct["b"], ct["w"]).bubble
    step = max(step_s, busy + bubble)
    comm = step - busy - bubble
    return (busy * gpu.at_cap + comm * gpu.comm + bubble * gpu.wait) / step


@dataclass
class SchedulePower:
    """The cluster's draw over the schedule: ``edges`` (s) and ``watts`` per bin, the idle cluster's ``idle_w``,
    each started job's figures, the scheduler's result."""

    edges: np.ndarray
    watts: np.ndarray
    idle_w: float
    jobs: list
    schedule: object
    step_s: float
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_dict(self, series: bool = False) -> dict:
        w, e = self.watts, self.edges
        widths = np.diff(e)
        jumps = np.abs(np.diff(w)) if w.size > 1 else np.zeros(1)
        out = {"policy": self.schedule.policy, "jobs_run": len(self.jobs), "makespan_s": float(e[-1]),
               "grid_s": self.step_s, "bins": int(w.size), "idle_mw": self.idle_w / MW,
               "mean_mw": float(w @ widths / max(e[-1], 1e-300) / MW), "peak_mw": float(w.max() / MW),
               "min_mw": float(w.min() / MW), "swing_mw": float((w.max() - w.min()) / MW),
               "ramp_mw_per_s": float(jumps.max() / self.step_s / MW), "jump_mw": float(jumps.max() / MW),
               "energy_mwh": float(w @ widths / 3.6e9), "utilization": self.schedule.utilization,
               "jobs": self.jobs}
        if series:
            edges, mw = resample(e, w / MW, SERIES_POINTS)
            out["series"] = {"edges_s": edges.tolist(), "cluster_mw": mw.tolist()}
        return out


def power_schedule(topo, values: dict, progress=None) -> SchedulePower:
    """The schedule ``values`` (:data:`sim.power.params.POWER_SCHEDULE`) run on ``topo`` and its draw over time."""
    if values["jobs"]:
        queue = parse_jobs(values["jobs"])
    else:
        usable = int(host_ok(topo).sum())
        queue = synthetic_jobs(values["arrivals"], values["days"], values["max_gpus"] or max(8, usable * 2 // 3),
                               values["seed"])
    sched = run_schedule(topo, {k: v for k, v in values.items() if k != "timeline_step_s"},
                         progress=span(progress, 0.0, 0.9), jobs=queue)
    pl = places(topo.layout)
    idle = job_places(pl, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 1).cluster_const
    gpu = pl.gpu
    at, delta, rows = [], [], []
    for q, s in zip(queue, sched.jobs):
        if s.gpus is None or not np.isfinite(s.start):
            continue
        mean = job_mean_gpu_w(on_gpu(topo, {**q.params, "order": s.order}), s.step_time, gpu)
        hosts = np.unique(pl.layout.gpu_host[s.gpus])
        load = mean / gpu.at_cap
        host_w = float((pl.host_busy_w[hosts] + (load - 1.0) * pl.host_follow_w[hosts] - pl.host_idle_w[hosts]).sum())
        d = s.gpus.size * (mean - gpu.idle) + host_w
        at += [s.start, s.end]
        delta += [d, -d]
        rows.append({"name": s.name, "gpus": int(s.gpus.size), "model": s.model, "start": float(s.start),
                     "end": float(s.end), "gpu_mean_w": float(mean), "draw_mw": d / MW})
    wall = float(max(sched.makespan, max(at, default=0.0)))
    dt = values["timeline_step_s"]
    check_bins(wall, dt, MAX_TIMELINE_BINS, "timeline_step_s", "the schedule")
    T = max(1, int(np.ceil(wall / dt - 1e-9)))
    edges = np.minimum(np.arange(T + 1) * dt, wall)
    edges[-1] = wall
    order = np.argsort(at, kind="stable")
    t = np.concatenate([[0.0], np.asarray(at, float)[order], [wall]])
    level = idle + np.concatenate([[0.0], np.cumsum(np.asarray(delta, float)[order])])   # from each t on
    cum = np.concatenate([[0.0], np.cumsum(level * np.diff(t))])
    e = np.interp(edges, t, cum)
    watts = np.diff(e) / np.maximum(np.diff(edges), 1e-300)
    if progress:
        progress(1.0, f"{len(rows)} jobs, peak {watts.max() / MW:.2f} MW")
    return SchedulePower(edges=edges, watts=watts, idle_w=idle, jobs=rows, schedule=sched, step_s=dt)
