"""A power run (docs/power.md): the job's step solved once on the fabric (:func:`sim.jobs.job.solve_job`), then
for the cap (given, derived from a budget, or the GPU's default) its step re-timed (the cap's clock share on the
GEMMs: :func:`sim.power.step.capped_job`), its stages' waveforms, and the power at every level with the budgets;
the uncapped step beside a capped one; the cap sweep; and the timeline over days under failures."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sim.core.progress import silent, weighted
from sim.jobs.job import solve_job
from sim.power import devices
from sim.power.days import SERIES_POINTS, power_timeline, resample
from sim.power.cluster import budgets, derived_cap, draw, job_places, stats
from sim.power.params import JOB_NAMES, MAX_STEP_BINS, check_bins, check_gpu_limits
from sim.power.places import places
from sim.power.published import published
from sim.power.step import capped_job, levels, rank_stages, stage_waveforms

MW = 1e6


@dataclass
class CapCase:
    """The step under one cap: the job's result (:class:`sim.jobs.job.JobResult`), the clock share, the draw."""

    cap: float
    share: float
    floor: float | None
    job: object
    draw: object

    def figures(self, tokens: int) -> dict:
        d, sp = self.draw, self.draw.sp
        c, j = stats(d.cluster, sp.widths, sp.step_s), stats(d.job, sp.widths, sp.step_s)
        return {"cap_w": self.cap, "floor_w": self.floor, "clock_share": self.share, "step_s": sp.step_s,
                "tokens_per_s": tokens / sp.step_s, "mfu": float(self.job.mfu),
                "cluster_peak_mw": c["peak"] / MW, "cluster_mean_mw": c["mean"] / MW,
                "cluster_swing_mw": c["swing"] / MW, "cluster_ramp_mw_per_s": c["ramp"] / MW,
                "job_peak_mw": j["peak"] / MW, "job_mean_mw": j["mean"] / MW, "job_swing_mw": j["swing"] / MW,
                "energy_per_token_j": d.job_energy / tokens,
                "gpu_energy_per_token_j": float(self.draw.sp.energy @ self.draw.stage_n) / tokens}


@dataclass
class PowerResult:
    """A power run's figures; ``to_dict(series=False)``: the document of docs/power.md ("Result")."""

    params: dict
    cap_source: str
    case: CapCase
    uncapped: CapCase | None
    places: object
    jplaces: object
    budgets: object
    sweep: list = field(default_factory=list)
    timeline: dict | None = None
    seconds: dict = field(default_factory=dict)   # wall: the job's solve, the step's power (sweep included), days

    def gpu_mean_w(self) -> np.ndarray:
        """(GPUs of the cluster,) each GPU's mean draw over the step (W): its stage's for the job's, idle for the
        rest (the GPU page's colour by power)."""
        c, pl = self.case, self.places
        out = np.full(pl.gpu_rack.size, pl.gpu.idle)
        sp = c.draw.sp
        out[c.job.gpus] = (sp.energy / sp.step_s)[rank_stages(c.job.params)]
        return out

    def gpu_rack_headroom_kw(self) -> np.ndarray:
        """(GPUs of the cluster,) the headroom of each GPU's rack: its budget minus its peak over the step (kW)."""
        return ((self.budgets.rack_w - self.case.draw.rack_peak) / 1e3)[self.places.gpu_rack]

    def hosts(self) -> dict:
        """The job's hosts over the step, GPUs included: ``with_job`` (hosts running the job), ``peak_kw`` (the
        highest host's peak at the grid's resolution), ``mean_kw`` (their mean draw), ``idle_kw`` (an idle host).
        What a node-level meter reads (a validation ``power`` entry's ``node_peak_kw`` and ``node_mean_kw``)."""
        d, pl = self.case.draw, self.places
        busy = self.jplaces.host_n.sum(axis=1) > 0
        return {"with_job": int(busy.sum()),
                "peak_kw": float(d.host_peak[busy].max() / 1e3) if busy.any() else 0.0,
                "mean_kw": float(d.host_mean[busy].mean() / 1e3) if busy.any() else 0.0,
                "idle_kw": float((pl.host_idle_w.mean() + pl.layout.spec.layout.gpus_per_host * pl.gpu.idle) / 1e3)}

    def to_dict(self, series: bool = False, gpus: bool = False) -> dict:
        p, c, pl, b = self.params, self.case, self.places, self.budgets
        tokens = int(c.job.params["batch_tokens"])
        sp, d = c.draw.sp, c.draw
        out = {"model": p["model"], "gpus": int(c.job.gpus.size),
               "layout": {k: int(c.job.params[k]) for k in ("tp", "cp", "pp", "dp")},
               "resolution_ms": p["resolution_ms"], "cap_source": self.cap_source,
               "gpu_levels_w": levels(pl.gpu, c.cap, c.floor).to_dict(), "devices": pl.devices(),
               **c.figures(tokens),
               "breakdown": {k: float(c.job.breakdown[k]) for k in ("compute", "tp", "cp", "pp", "dp", "bubble",
                                                                     "step")}}
        if self.uncapped is not None:
            u = self.uncapped.figures(tokens)
            out["uncapped"] = u
            out["step_time_cost"] = out["step_s"] / u["step_s"] - 1.0
            out["energy_saved_per_token_j"] = u["energy_per_token_j"] - out["energy_per_token_j"]
            out["job_mean_saved_mw"] = u["job_mean_mw"] - out["job_mean_mw"]
        out["stages"] = [{"stage": s, "gpus": int(self.jplaces.stage_n[s]),
                          "mean_w": float(sp.energy[s] / sp.step_s), "peak_w": float(sp.watts[s].max()),
                          "compute_s": float(sp.phase_s[s, 0]), "comm_s": float(sp.phase_s[s, 1]),
                          "wait_s": float(sp.phase_s[s, 2])} for s in range(sp.watts.shape[0])]
        out["racks"] = self._racks()
        out["hosts"] = self.hosts()
        if self.uncapped is not None:
            un = self.uncapped.draw
            out["racks"]["over_budget_uncapped"] = int(np.count_nonzero(un.rack_peak > b.rack_w))
            out["racks"]["peak_kw_uncapped"] = float(un.rack_peak.max() / 1e3)
        zn = pl.zone_names()
        zs = [stats(d.zone[z], sp.widths, sp.step_s) for z in range(pl.n_zones)]
        out["zones"] = [{"zone": zn[z], "peak_mw": s["peak"] / MW, "mean_mw": s["mean"] / MW,
                         "swing_mw": s["swing"] / MW, "budget_mw": None if b.zone_w is None else b.zone_w / MW,
                         "over_budget": b.zone_w is not None and s["peak"] > b.zone_w}
                        for z, s in enumerate(zs)]
        bs = [stats(d.building[k], sp.widths, sp.step_s) for k in range(pl.n_buildings)]
        out["buildings"] = [{"building": k, "peak_mw": s["peak"] / MW, "mean_mw": s["mean"] / MW,
                             "swing_mw": s["swing"] / MW, "ramp_mw_per_s": s["ramp"] / MW,
                             "budget_mw": None if b.building_w is None else b.building_w / MW,
                             "over_budget": b.building_w is not None and s["peak"] > b.building_w}
                            for k, s in enumerate(bs)]
        if self.uncapped is not None:
            ub = self.uncapped.draw.building
            for k, row in enumerate(out["buildings"]):
                row["peak_mw_uncapped"] = float(ub[k].max() / MW)
                row["over_budget_uncapped"] = b.building_w is not None and float(ub[k].max()) > b.building_w
        out["sweep"] = self.sweep
        t = self.timeline
        out["timeline"] = None if t is None else {k: v for k, v in t.items() if k not in ("series", "edges")}
        out["published"] = published(swing_mw=out["cluster_swing_mw"],
                                     timeline_swing_mw=(self.timeline or {}).get("swing_mw"), cap_w=c.cap)
        out["seconds"] = {k: round(v, 3) for k, v in self.seconds.items()}
        if gpus:
            out["gpu_mean_w"] = np.round(self.gpu_mean_w(), 1).tolist()
            out["gpu_rack_headroom_kw"] = np.round(self.gpu_rack_headroom_kw(), 3).tolist()
        if series:
            out["series"] = {"edges_s": sp.edges.tolist(), "cluster_mw": (d.cluster / MW).tolist(),
                             "job_mw": (d.job / MW).tolist(), "stage_w": sp.watts.tolist()}
            if t is not None:
                edges, mw = resample(t["edges"], t["series"], SERIES_POINTS)
                out["series"]["timeline_edges_s"], out["series"]["timeline_mw"] = edges.tolist(), mw.tolist()
        return out

    def _racks(self) -> dict:
        c, pl, b, jp = self.case, self.places, self.budgets, self.jplaces
        d = c.draw
        ratio = d.rack_peak / b.rack_w
        order = np.argsort(-ratio, kind="stable")[:self.params["worst"]]
        names = pl.rack_names(order)
        n_job = jp.rack_n.sum(axis=1)
        worst = [{"rack": n, "gpus": int(n_job[r]), "peak_kw": float(d.rack_peak[r] / 1e3),
                  "mean_kw": float(d.rack_mean[r] / 1e3), "budget_kw": b.rack_w / 1e3,
                  "headroom_kw": float((b.rack_w - d.rack_peak[r]) / 1e3), "cooling_kw": b.cooling_w / 1e3,
                  "heat_share": float(d.rack_mean[r] / b.cooling_w)} for r, n in zip(order.tolist(), names)]
        return {"count": int(pl.n_racks), "with_job": int(np.count_nonzero(n_job)),
                "budget_kw": b.rack_w / 1e3, "cooling_kw": b.cooling_w / 1e3,
                "over_budget": int(np.count_nonzero(d.rack_peak > b.rack_w)),
                "over_cooling": int(np.count_nonzero(d.rack_mean > b.cooling_w)),
                "peak_kw": float(d.rack_peak.max() / 1e3), "worst": worst}


def run_power(topo, values: dict, progress=None) -> PowerResult:
    """The power run of ``values`` (validated by :data:`sim.power.params.POWER`) on ``topo``."""
    t0 = time.perf_counter()
    say = progress or silent
    has_sweep, has_days = bool(values["cap_sweep"]), values["days"] is not None
    solve_bar, step_bar, sweep_bar, days_bar = weighted(progress, (4, 1, 1 if has_sweep else 0,
                                                                   4 if has_days else 0))
    pl = places(topo.layout, values["host_power_scale"])
    check_gpu_limits(values, pl.gpu)
    job_values = {k: values[k] for k in JOB_NAMES} | {"hottest": 0}
    solve = solve_job(topo, job_values, progress=solve_bar)
    t_solve = time.perf_counter()
    b = budgets(values)
    base = solve.result(topo, job_values)
    p = base.params
    jp = job_places(pl, solve.gpus, rank_stages(p), int(p["pp"]))
    dt = values["resolution_ms"] / 1e3
    floor = values["power_floor"]
    cap, source = values["power_cap"], "given"
    if values["cap_from"] != "none":
        cap, source = derived_cap(pl, jp, b, values["cap_from"]), f"{values['cap_from']} budget"
    elif cap is None:
        cap, source = pl.gpu.max_cap, "default"

    def case(c: float, fl, racks: bool = True) -> CapCase:
        share = devices.throughput_share(pl.gpu, c)
        job = solve.result(topo, capped_job(job_values, c)) if share < 1.0 else base
        check_bins(job.step_time, dt, MAX_STEP_BINS, "resolution_ms", "the step")
        sp = stage_waveforms(job.breakdown, job.model, job.params, levels(pl.gpu, c, fl), dt)
        return CapCase(c, share, fl, job, draw(jp, sp, racks=racks))

    step_bar(0.0, f"the step's power under a {cap:g} W cap at {values['resolution_ms']:g} ms")
    main = case(cap, floor)
    uncapped = case(pl.gpu.max_cap, None) if cap < pl.gpu.max_cap or floor is not None else None
    step_bar(1.0, f"step {main.draw.sp.step_s:.3f} s, cluster peak {main.draw.cluster.max() / MW:.2f} MW")
    sweep = []
    tokens = int(p["batch_tokens"])
    for i, c in enumerate(values["cap_sweep"] or ()):
        sweep.append(case(float(c), floor, racks=False).figures(tokens))      # a floor above a cap: held at it
        sweep_bar((i + 1) / len(values["cap_sweep"]), f"cap {c} W")
    timeline = None
    t_step = time.perf_counter()
    if has_days:
        timeline = power_timeline(topo, values, main, jp, pl, progress=days_bar)
    res = PowerResult(params=values, cap_source=source, case=main, uncapped=uncapped, places=pl, jplaces=jp,
                      budgets=b, sweep=sweep, timeline=timeline)
    t1 = time.perf_counter()
    res.seconds = {"solve": t_solve - t0, "step_power": t_step - t_solve, "days": t1 - t_step, "all": t1 - t0}
    say(1.0, f"power: peak {res.case.draw.cluster.max() / MW:.2f} MW")
    return res
