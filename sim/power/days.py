"""A job's power over days under failures (docs/power.md "Over days"): the failures engine's timeline
(:func:`sim.failures.timeline.simulate`: crashes, detection, restarts, checkpoints) with each of its states drawn at
the job's power in that state, on a coarse regular grid, every bin the exact mean of the piecewise-constant draw.

States -> the job's GPUs and hosts (the rest of the cluster draws its constant): ``training`` and ``degraded`` at
the step's mean (the step's millisecond swing is the step view's; at a grid coarser than the step it averages
out); ``checkpointing`` (training blocked for the checkpoint's cost) with every GPU waiting: the checkpoint dip;
``restarting`` (relaunch, process groups, restore) with the GPUs waiting and hosts busy (their fans as in
training: they follow temperatures over minutes); ``down`` (detection, the
wait for a healthy host, planned maintenance) with the GPUs and hosts idle. A crash drops the draw within a step,
far below the grid, so the grid's steepest ramp understates it: the largest change between two bins
(``jump_mw``) is reported beside it. The job under a cap runs its capped step (the failures engine solves it with
the cap's GEMM speed), so checkpoint cadence and lost work follow the slower step.
"""
from __future__ import annotations

import time

import numpy as np

from sim.core.progress import span
from sim.failures.params import FAILURES
from sim.failures.timeline import STATES, simulate
from sim.power.params import JOB_NAMES
from sim.power.step import capped_job

MW = 1e6
SERIES_POINTS = 5000              # points of the timeline a document carries (--series): exact means over them


def state_watts(case, jp, pl) -> np.ndarray:
    """(len(STATES),) the cluster's draw (W) in each state of the job's timeline, from the step ``case``."""
    sp = case.draw.sp
    n = float(jp.stage_n.sum())
    lv_wait = min(case.cap, max(pl.gpu.wait, case.floor or 0.0))
    other = jp.cluster_const - jp.job_const                    # everything but the job's hosts, its GPUs apart
    idle_hosts = float(pl.host_idle_w[np.unique(pl.layout.gpu_host[case.job.gpus])].sum())
    hosts = jp.job_const + (case.draw.load - 1.0) * jp.job_follow     # at the step's load (fans: seconds)
    training = other + hosts + float(jp.stage_n @ sp.energy) / sp.step_s
    waiting = other + hosts + n * lv_wait
    down = other + idle_hosts + n * pl.gpu.idle
    by = {"training": training, "degraded": training, "checkpointing": waiting, "restarting": waiting,
          "down": down}
    return np.array([by[s] for s in STATES])


def power_timeline(topo, values: dict, case, jp, pl, progress=None) -> dict:
    """The cluster's draw over ``values['days']`` under failures, at ``values['timeline_step_s']``."""
    fv = {k: values[k] for k in JOB_NAMES}
    if case.share < 1.0:
        fv = capped_job(fv, case.cap)
    fv["days"] = values["days"]
    t0 = time.perf_counter()
    tl = simulate(topo, FAILURES.validate(fv), progress=span(progress, 0.0, 0.8))
    t1 = time.perf_counter()
    seg = tl["timeline"]
    start, end, state = (np.asarray(seg[k], float) for k in ("start", "end", "state"))
    watts = state_watts(case, jp, pl)
    wall = float(tl["wall_s"])
    dt = values["timeline_step_s"]
    T = max(1, int(np.ceil(wall / dt - 1e-9)))
    edges = np.minimum(np.arange(T + 1) * dt, wall)
    edges[-1] = wall
    # piecewise constant: the segments in order, gaps (none expected) at the training draw
    b = np.concatenate([[0.0], np.column_stack([start, end]).ravel(), [wall]])
    pw = np.concatenate([[watts[0]], np.column_stack([watts[state.astype(int)],
                                                      np.full(start.size, watts[0])]).ravel()])
    widths = np.maximum(np.diff(b), 0.0)
    cum = np.concatenate([[0.0], np.cumsum(pw * widths)])
    e = np.interp(edges, np.maximum.accumulate(b), cum)
    w = np.diff(edges)
    series = np.diff(e) / np.maximum(w, 1e-300)
    jumps = np.abs(np.diff(series))
    ramp = jumps / np.maximum((w[:-1] + w[1:]) / 2, 1e-300) if T > 1 else np.zeros(1)
    worst = int(np.argmax(ramp)) if ramp.size else 0
    if progress:
        progress(1.0, f"{values['days']:g} days: {tl['interruptions']} interruptions")
    time_in = {s: float(np.sum((end - start)[state == i])) for i, s in enumerate(STATES)}
    return {"days": values["days"], "step_s_grid": dt, "bins": T, "seed": tl["seed"],
            "state_mw": {s: float(watts[i] / MW) for i, s in enumerate(STATES)}, "time_in_state_s": time_in,
            "mean_mw": float(e[-1] / wall / MW), "peak_mw": float(series.max() / MW),
            "min_mw": float(series.min() / MW), "swing_mw": float((series.max() - series.min()) / MW),
            "ramp_mw_per_s": float(ramp.max() / MW) if ramp.size else 0.0,
            "ramp_at_s": float(edges[worst + 1]), "jump_mw": float(jumps.max() / MW) if jumps.size else 0.0,
            "energy_mwh": float(e[-1] / 3.6e9), "interruptions": tl["interruptions"],
            "checkpoints": tl["checkpoint"]["count"], "effective_ratio": tl["effective_ratio"],
            "seconds": {"failures": round(t1 - t0, 3), "power": round(time.perf_counter() - t1, 3)},
            "series": series / MW, "edges": edges}



def resample(edges: np.ndarray, series: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``series`` (mean per bin of ``edges``) on at most ``n`` equal bins, each the exact mean over it."""
    if series.size <= n:
        return edges, series
    cum = np.concatenate([[0.0], np.cumsum(series * np.diff(edges))])
    new = np.linspace(edges[0], edges[-1], n + 1)
    return new, np.diff(np.interp(new, edges, cum)) / np.diff(new)
