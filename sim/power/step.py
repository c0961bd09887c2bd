"""A training step's power per GPU: each pipeline stage's phase timeline, as the job's simulated schedule has it
(:func:`sim.jobs.step.timeline`), turned into watts on a regular time grid (docs/power.md "Over a step").

Every GPU of one pipeline stage runs the same operations at the same times (its TP, CP and DP peers are in step
with it), so a stage has one waveform, shared by all its GPUs: the engine works on ``pp`` waveforms, never per GPU.
On a stage, an operation (a micro-batch's forward, backward or weight pass through a chunk) lasts its compute plus
its exposed TP and CP; those collectives alternate with the GEMMs layer by layer, well below a millisecond each
(Llama 3 405B at TP 8, PP 16: a layer's forward on a stage about 9 ms, each of its four TP collectives a
fraction of a millisecond), so the operation draws the time-weighted mean of
compute and communication power. Between operations (the pipeline's bubble, and sends not yet arrived) the GPU
waits. The step's exposed DP falls where the job engine puts it: its front part (FSDP's first weight gathers) on
every stage before the pipeline starts, and each stage's gradient collectives after its last operation, until they
end (``dp_front``, ``dp_end`` of :func:`sim.jobs.step.step_breakdown`). Each bin's watts are the exact mean over
the bin (the integral of the piecewise-constant power, so energy is conserved at any resolution).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.jobs.layout import parse_order, rank_grid
from sim.jobs.step import compute_times
from sim.power.devices import GPUPower

OP_KINDS = ("f", "b", "w")        # TIMELINE_COLUMNS kind: 0 forward, 1 backward, 2 weight pass


@dataclass(frozen=True)
class Levels:
    """A GPU's watts in each phase under a cap and a floor: ``compute`` (GEMMs and attention, held at the cap),
    ``comm`` (a communication kernel), ``wait`` (no kernel); the floor lifts ``comm`` and ``wait`` (filler work),
    the cap bounds all three."""

    compute: float
    comm: float
    wait: float

    def to_dict(self) -> dict:
        return {"compute_w": self.compute, "comm_w": self.comm, "wait_w": self.wait}


def levels(gpu: GPUPower, cap: float, floor: float | None) -> Levels:
    f = 0.0 if floor is None else floor
    return Levels(compute=min(cap, gpu.at_cap), comm=min(cap, max(gpu.comm, f)), wait=min(cap, max(gpu.wait, f)))


def capped_job(p: dict, cap: float) -> dict:
    """The job's parameters under a power cap of ``cap`` W: the job engine slows its compute-bound kernels (GEMMs,
    attention) by the cap's clock share (:mod:`sim.jobs.clocks`, the relation :func:`sim.power.devices.throughput_share`
    uses), so the step model (overlap, bubble, exposed DP) recomputes everything from it."""
    return {**p, "power_cap_w": float(cap)}


@dataclass
class StepPower:
    """Per-stage waveforms: ``watts`` (pp, T) the mean W of one GPU of each stage in each bin, ``edges`` (T + 1,)
    the bins' bounds (s; the last bin may be shorter), ``energy`` (pp,) J of one GPU of each stage over the step,
    ``phase_s`` (pp, 3) seconds of compute, communication and waiting of each stage."""

    watts: np.ndarray
    edges: np.ndarray
    energy: np.ndarray
    phase_s: np.ndarray
    step_s: float

    @property
    def widths(self) -> np.ndarray:
        return np.diff(self.edges)


def stage_waveforms(breakdown: dict, model, p: dict, lv: Levels, dt: float) -> StepPower:
    """The step's per-stage waveforms at ``dt`` seconds from ``breakdown`` (:func:`sim.jobs.step.step_breakdown`
    of the job ``p``, resolved, with its timeline and where its exposed DP falls) and the phase watts ``lv``."""
    ct = compute_times(model, p)
    comp = np.stack([ct[k] for k in OP_KINDS])                     # (3, pp, v) seconds of compute per operation
    return waveforms(breakdown["timeline"], comp, float(breakdown["step"]), int(p["pp"]), lv, dt,
                     front=float(breakdown["dp_front"]), dp_end=np.asarray(breakdown["dp_end"], float),
                     optimizer=float(breakdown.get("optimizer", 0.0)))


def waveforms(tl: np.ndarray, comp: np.ndarray, step: float, pp: int, lv: Levels, dt: float, front: float = 0.0,
              dp_end=None, optimizer: float = 0.0) -> StepPower:
    """Per-stage waveforms from a slot table ``tl`` (:data:`sim.jobs.step.TIMELINE_COLUMNS` rows, times from the
    pipeline's start), each operation's compute seconds ``comp`` ((3, pp, v): by kind F, B, W, stage, chunk; the
    rest of an operation is its exposed communication) and the step's length. Exposed DP: ``front`` seconds of it
    on every stage before the pipeline starts, and each stage's after its last operation until ``dp_end[s]`` (on
    the pipeline's clock; None: none); then ``optimizer`` seconds of the optimizer step's kernels, drawn as
    compute; the rest of the step, waiting."""
    T = max(1, int(np.ceil(step / dt - 1e-9)))
    edges = np.minimum(np.arange(T + 1) * dt, step)
    edges[-1] = step
    watts = np.zeros((pp, T))
    energy = np.zeros(pp)
    phase = np.zeros((pp, 3))
    for s in range(pp):
        rows = tl[tl[:, 0] == s]
        rows = rows[np.argsort(rows[:, 4], kind="stable")]
        n = len(rows)
        start, end = front + rows[:, 4], front + rows[:, 5]
        dur = end - start
        c = comp[rows[:, 1].astype(int), s, rows[:, 3].astype(int)]
        frac = np.where(dur > 0, np.minimum(1.0, c / np.where(dur > 0, dur, 1.0)), 1.0)
        last = float(end[-1]) if n else front
        tail = max(last, front + float(dp_end[s])) if dp_end is not None else last
        b = np.empty(2 * n + 5)                    # 0, front, (start, end) per operation, tail's end, optimizer's, step
        b[0], b[1] = 0.0, front
        b[2:2 * n + 2:2] = start
        b[3:2 * n + 3:2] = end
        b[2 * n + 2], b[2 * n + 3], b[2 * n + 4] = min(tail, step), min(tail + optimizer, step), step
        if n == 0:
            b[2] = front
        pw = np.full(2 * n + 4, lv.wait)
        pw[0] = lv.comm                            # exposed DP before the pipeline
        pw[2:2 * n + 1:2] = frac * lv.compute + (1 - frac) * lv.comm
        pw[2 * n + 1] = lv.comm                    # this stage's exposed DP after its last operation
        pw[2 * n + 2] = lv.compute                 # the optimizer step
        b = np.maximum.accumulate(b)
        cum = np.concatenate([[0.0], np.cumsum(pw * np.diff(b))])
        e = np.interp(edges, b, cum)
        watts[s] = np.diff(e) / np.maximum(np.diff(edges), 1e-300)
        energy[s] = cum[-1]
        computing = float((frac * dur).sum()) + (min(tail + optimizer, step) - min(tail, step))
        comm = float(dur.sum()) - float((frac * dur).sum()) + front + (min(tail, step) - last)
        phase[s] = (computing, comm, step - computing - comm)
    return StepPower(watts=watts, edges=edges, energy=energy, phase_s=phase, step_s=step)


def rank_stages(p: dict) -> np.ndarray:
    """(ranks,) the pipeline stage of each rank of the job ``p`` (its rank grid, :func:`sim.jobs.layout.rank_grid`)."""
    grid = rank_grid({d: p[d] for d in ("tp", "cp", "pp", "dp")}, parse_order(p["order"]))
    out = np.empty(grid.size, dtype=np.int64)
    out[grid.ravel()] = np.broadcast_to(np.arange(p["pp"])[None, :, None, None], grid.shape).ravel()
    return out
