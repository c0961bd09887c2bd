"""The ``power`` run kind: a training job's power from each GPU to its rack, zone, building and the cluster over its
step (and over days under failures), a GPU power cap's cost and savings, and the racks and buildings over their
budgets (:func:`sim.power.entry.run_power`, docs/power.md), on the cluster as the inventory holds it (failed and
drained GPUs, links and switches as the ``job`` kind reads them). Its parameters are the engine's own declaration
(:data:`sim.power.params.POWER`): the API, the form and ``python -m sim power`` refuse the same inputs in the same
words. A power run is a what-if: its job is placed as ``python -m sim power`` places it (GPUs that running jobs hold
are not left out) and holds no GPUs.

Summary: :meth:`sim.power.run.PowerResult.to_dict` (docs/power.md "Result") and ``gpu_w`` (the GPU's idle watts and
TDP, which the browser scales by). Arrays (the Power page and the result view draw them):

- ``gpu_power``, ``rack_power`` (G,) uint8: the live sections' values (:mod:`twin.capabilities.power.live`), G =
  every GPU by GPU.index: the GPU page colours a finished run by them (``?color=power&run=<id>``).
- ``step_edges_s`` (T + 1,) float64, ``cluster_mw`` (T,), ``job_mw`` (T,), ``building_mw`` (B, T) float32 and
  ``stage_w`` (pp, T) float32: the step's waveforms (each bin the exact mean), at the run's resolution, or on a
  coarser grid of at most :data:`STORED_BINS` bins (exact means too) when the step has more.
- ``rack_peak_kw``, ``rack_mean_kw`` (R,) float32 and ``rack_gpus`` (R,) uint16: every rack's peak and mean over
  the step and the job's GPUs in it (R: the layout's racks).
- ``timeline_edges_s``, ``timeline_mw`` float32 (with ``days``): the cluster's draw over days, at most
  :data:`sim.power.days.SERIES_POINTS` exact means.

``power_schedule``: the cluster's draw over a job queue's schedule as jobs come and go
(:func:`sim.power.entry.run_power_schedule`), its checks, cost and estimate the ``schedule`` kind's (the scheduler's
work is the same); see :func:`power_schedule`.

Live frames: ``power_stats`` (phase solving) and ``gpu_state`` at the start; the engine's progress fractions as the
run's percentage; at the end ``gpu_state`` (the job's GPUs), ``gpu_power``, ``rack_power`` and ``power_stats``.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.core.errors import ParamError
from sim.power.params import POWER
from twin.capabilities.failures.kinds import json_safe
from twin.capabilities.jobs.kinds import job_gpus
from twin.capabilities.power import live
from twin.inventory import gpu_grid
from twin.runs import limits
from twin.runs.kinds import gpu_states
from twin.runs.registry import Headline, Kind, register

KIND = "power"
MW = 1e6
STORED_BINS = 30_000          # a step's waveforms kept at most on this many bins (1 ms over 30 s)
HEADLINE = (Headline("cluster_peak_mw", "cluster peak over the step (MW)", "num"),
            Headline("cluster_swing_mw", "swing within a step (MW)", "num"),
            Headline("cluster_ramp_mw_per_s", "steepest ramp (MW/s)", "num"),
            Headline("energy_per_token_j", "energy per token (J)", "num"),
            Headline("step_s", "step", "s"))
ARRAYS = {"gpu_power": "uint8", "rack_power": "uint8", "step_edges_s": "float64", "cluster_mw": "float32",
          "job_mw": "float32", "building_mw": "float32", "stage_w": "float32", "rack_peak_kw": "float32",
          "rack_mean_kw": "float32", "rack_gpus": "uint16", "timeline_edges_s": "float32",
          "timeline_mw": "float32"}


def stats_row(phase: int, doc: dict | None = None) -> dict:
    """The ``power_stats`` row of a result document (None: nothing known yet)."""
    d = doc or {}
    racks = d.get("racks") or {}
    row = {f: d.get(f) for f in live.POWER_FIELDS}
    row.update(phase=phase, cap_w=d.get("cap_w"), tdp_w=(d.get("gpu_w") or {}).get("tdp"),
               rack_budget_kw=racks.get("budget_kw"), racks_over_budget=racks.get("over_budget"))
    return row


def per_gpu(res) -> tuple[np.ndarray, np.ndarray]:
    """Each GPU's mean draw over the step as a share of its TDP and its rack's peak as a share of the rack budget,
    quantized as the live sections, from the engine's per-GPU figures (:meth:`sim.power.run.PowerResult.gpu_mean_w`,
    ``gpu_rack_headroom_kw``: the job's GPUs their stage's draw, the others idle, as the engine counts them)."""
    gpu, budget_kw = res.places.gpu, res.budgets.rack_w / 1e3
    rack_share = (budget_kw - res.gpu_rack_headroom_kw()) / budget_kw
    return (live.quantize(res.gpu_mean_w() / gpu.at_cap, live.GPU_SCALE),
            live.quantize(rack_share, live.RACK_SCALE))


def waveform_arrays(res) -> dict:
    """The step's waveforms (see the module docstring), resampled to at most STORED_BINS exact means."""
    from sim.power.days import resample
    d = res.case.draw
    sp = d.sp
    edges = sp.edges
    rows = {"cluster_mw": d.cluster / MW, "job_mw": d.job / MW}
    out: dict[str, np.ndarray] = {}
    for name, series in rows.items():
        e, out[name] = resample(edges, series, STORED_BINS)
    out["building_mw"] = np.stack([resample(edges, b / MW, STORED_BINS)[1] for b in d.building]) \
        if len(d.building) else np.zeros((0, len(out["cluster_mw"])))
    out["stage_w"] = np.stack([resample(edges, w, STORED_BINS)[1] for w in sp.watts])
    out["step_edges_s"] = resample(edges, d.cluster, STORED_BINS)[0]
    return out


def power(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The job's power on the cluster as it is (``python -m sim power`` on the inventory's layout: the same engine
    call, the same progress fractions); see the module docstring for the summary, arrays and frames."""
    from sim.fabric.topology import topology_from_layout
    from sim.power.days import SERIES_POINTS, resample
    from sim.power.entry import run_power
    topo = topology_from_layout(layout)
    progress(0.0, "placing the job and solving its step", gpu_state=gpu_states(topo),
             power_stats=[stats_row(live.PHASE_SOLVING)], force=True)
    out = run_power(topo, params, progress=lambda f, message="": progress(0.99 * f, message))
    res, doc = out.result, out.to_dict(series=False)
    doc["gpu_w"] = {"idle": res.places.gpu.idle, "tdp": res.places.gpu.at_cap, "min_cap": res.places.gpu.min_cap,
                    "max_cap": res.places.gpu.max_cap}
    gpu_power, rack_power = per_gpu(res)
    gpus_of_job = np.asarray(res.case.job.gpus)
    d = res.case.draw
    arrays = {"gpu_power": gpu_power, "rack_power": rack_power, **waveform_arrays(res),
              "rack_peak_kw": d.rack_peak / 1e3, "rack_mean_kw": d.rack_mean / 1e3,
              "rack_gpus": res.jplaces.rack_n.sum(axis=1)}
    if res.timeline is not None:
        edges, mw = resample(res.timeline["edges"], res.timeline["series"], SERIES_POINTS)
        arrays["timeline_edges_s"], arrays["timeline_mw"] = edges, mw
    doc["stored_bins"] = int(arrays["cluster_mw"].size)
    doc = json_safe(doc)
    progress(1.0, f"cluster peak {doc['cluster_peak_mw']:.2f} MW, swing {doc['cluster_swing_mw']:.2f} MW",
             gpu_state=gpu_states(topo, gpus_of_job), gpu_power=gpu_power, rack_power=rack_power,
             power_stats=[stats_row(live.PHASE_DONE, doc)], force=True)
    return doc, arrays


# ------------------------------------------------------------------------------------- checks and cost
def check_power(values: dict, cluster) -> None:
    """The job's GPUs (tp x cp x pp x dp when ``gpus`` is left out) against the cluster's usable GPUs; the cap,
    floor and sweep within the power limits of the cluster's GPU (the engine's own check,
    :func:`sim.power.params.check_gpu_limits`, here before the run is queued); days within the failures' limit
    (TWIN_FAILURES_MAX_DAYS)."""
    from sim.fabric.spec import parse_spec
    from sim.power.devices import gpu_power
    from sim.power.params import check_gpu_limits
    n = job_gpus(values)
    if n > (usable := gpu_grid.usable_gpus(cluster)):
        raise ParamError("gpus", f"{n:,} GPUs asked, {cluster.name} has {usable:,} usable")
    check_gpu_limits(values, gpu_power(parse_spec(cluster.spec).layout.gpu))
    if values["days"] is not None:
        limits.check_failures(values["days"])


GPU_DAYS = "TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND"
# The failures preparation (the job placed, its step and its checkpoint solved) costs about as much as four
# timelines (twin.capabilities.failures.kinds.PREPARE_WEIGHT): a power run over days runs one timeline after it.
TIMELINE_WEIGHT = 5.0


def cost(values: dict, cluster) -> dict:
    """Flows of the job's step (every GPU in a ring per parallel group it is in, times the queue pairs: as the
    ``job`` kind counts them), solved once whatever the cap sweep (a cap changes no transfer); with ``days``, the
    one failures timeline, which solves the step and the checkpoint again."""
    flows = job_gpus(values) * 4 * values.get("qps", 1) * (2 if values["days"] is not None else 1)
    out = {"flows": flows}
    if values["days"] is not None:
        out["timelines"] = 1
    return out


def estimate(values: dict, cluster) -> float:
    """Seconds: the flows over TWIN_RUNS_FLOWS_PER_SECOND, and with ``days`` the timeline and its preparation,
    the job's GPUs x days x TIMELINE_WEIGHT over TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND (as the failures kind)."""
    seconds = limits.flows_estimate(values, cluster, cost)
    if values["days"] is not None:
        seconds += limits.per_second(TIMELINE_WEIGHT * job_gpus(values) * values["days"], GPU_DAYS)
    return seconds


# ------------------------------------------------------------------------------------------------ over a schedule
SCHEDULE_KIND = "power_schedule"
SCHEDULE_HEADLINE = (Headline("peak_mw", "cluster peak over the schedule (MW)", "num"),
                     Headline("swing_mw", "swing over the schedule (MW)", "num"),
                     Headline("jump_mw", "largest change between two bins (MW)", "num"),
                     Headline("utilization", "GPU utilization", "pct"))
SCHEDULE_ARRAYS = {"schedule_edges_s": "float64", "schedule_mw": "float32"}


def power_schedule(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The cluster's draw over a job queue's schedule as jobs come and go (``python -m sim power-schedule``:
    :func:`sim.power.entry.run_power_schedule`, docs/power.md "Over a schedule"), on the cluster as it is. Summary:
    its ``to_dict()`` (peak, mean, swing, jumps, energy, utilization, each started job's draw); arrays: the draw
    over time, ``schedule_edges_s`` and ``schedule_mw`` (at most :data:`sim.power.days.SERIES_POINTS` exact means)."""
    from sim.fabric.topology import topology_from_layout
    from sim.power.days import SERIES_POINTS, resample
    from sim.power.entry import run_power_schedule
    topo = topology_from_layout(layout)
    progress(0.0, "scheduling the jobs", gpu_state=gpu_states(topo), force=True)
    out = run_power_schedule(topo, params, progress=lambda f, message="": progress(0.99 * f, message))
    res, doc = out.result, json_safe(out.to_dict(series=False))
    edges, mw = resample(res.edges, res.watts / MW, SERIES_POINTS)
    progress(1.0, f"{doc['jobs_run']} jobs, peak {doc['peak_mw']:.2f} MW", force=True)
    return doc, {"schedule_edges_s": edges, "schedule_mw": mw}


def _schedule_kind():
    """The jobs capability's ``schedule`` kind, whose checks, cost and estimate a power schedule shares (its
    scheduler's work is the same; the draw over time adds one pass over the bins)."""
    from twin.capabilities.jobs import kinds as job_kinds   # noqa: F401 (registers the schedule kind)
    from twin.runs import registry
    return registry.get("schedule")


def check_schedule(values: dict, cluster) -> None:
    _schedule_kind().check(values, cluster)


def schedule_cost(values: dict, cluster) -> dict:
    return _schedule_kind().cost(values, cluster)


def schedule_estimate(values: dict, cluster) -> float:
    return _schedule_kind().estimate(values, cluster)


def register_schedule() -> None:
    """Register ``power_schedule`` when the engine declares it (``sim.power.params.POWER_SCHEDULE``)."""
    try:
        from sim.power.params import POWER_SCHEDULE
        from twin.capabilities.jobs.kinds import SCHEDULE_PAIRS
    except ImportError:
        return
    register(Kind(SCHEDULE_KIND, "Power over a schedule (the cluster's draw as jobs come and go)", POWER_SCHEDULE,
                  power_schedule, headline=SCHEDULE_HEADLINE, best="utilization", arrays=SCHEDULE_ARRAYS,
                  view="power_schedule", form=False, brief=("policy", "arrivals", "days", "timeline_step_s"),
                  check=check_schedule, cost=schedule_cost, estimate=schedule_estimate, drives="arrivals",
                  throughputs=(SCHEDULE_PAIRS,), main=("policy", "arrivals", "days", "max_gpus", "timeline_step_s")))


register_schedule()
register(Kind(KIND, "Power and heat (a training job's draw from GPU to building, caps and budgets)", POWER, power,
              headline=HEADLINE, best="tokens_per_s", arrays=ARRAYS, view="power", form=False,
              brief=("model", "gpus", "tp", "pp", "dp", "power_cap", "days"), check=check_power, cost=cost,
              estimate=estimate, throughputs=(limits.FLOWS_PER_SECOND, GPU_DAYS),
              main=("model", "gpus", "tp", "cp", "pp", "dp", "power_cap", "cap_from", "power_floor",
                    "rack_budget_kw", "building_budget_mw", "cap_sweep", "days", "failures")))
