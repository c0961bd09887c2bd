"""A step's power from the stages' waveforms up: racks, zones, buildings, the job and the cluster, and the budgets
(docs/power.md "From GPUs to the building"). GPUs of one stage share a waveform, so every level is a count matrix
(GPUs of each stage per rack, zone, building) times the (pp, T) waveforms, plus that level's constant draws; racks
with the same counts share a row (:func:`numpy.unique`), so a 16,384-GPU job is a few matrix products.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import ParamError
from sim.power import devices
from sim.power.places import Places
from sim.power.step import StepPower


@dataclass
class Budgets:
    """Per rack power budget and cooling rating (W), per zone and per building budgets (W or None)."""

    rack_w: float
    cooling_w: float
    zone_w: float | None
    building_w: float | None


def budgets(values: dict) -> Budgets:
    rack = values["rack_budget_kw"] * 1e3 if values["rack_budget_kw"] is not None else \
        devices.SHELVES_PER_RACK * devices.POWER_SHELF_W
    cool = values["rack_cooling_kw"] * 1e3 if values["rack_cooling_kw"] is not None else devices.RACK_COOLING_W
    mw = (lambda x: None if x is None else x * 1e6)
    return Budgets(rack, cool, mw(values["zone_budget_mw"]), mw(values["building_budget_mw"]))


@dataclass
class JobPlaces:
    """The job's GPUs counted by place and stage, and each place's constant draw while it runs (W): ``rack_n``
    (R, pp), ``zone_n`` (Z, pp), ``building_n`` (B, pp), ``stage_n`` (pp,); ``rack_const`` (R,) busy or idle
    hosts, idle GPUs and the rack's fixed devices; ``zone_const`` (Z,), ``building_const`` (B,),
    ``cluster_const``; ``job_const``: the job's hosts' non-GPU draw; all of them with the job's hosts at full load
    (what a budget must hold), ``*_follow`` the part of it that follows the GPUs' load (:func:`draw` lowers it by
    the step's load)."""

    rack_n: np.ndarray
    host_n: np.ndarray
    host_const: np.ndarray
    host_follow: np.ndarray
    zone_n: np.ndarray
    building_n: np.ndarray
    stage_n: np.ndarray
    rack_const: np.ndarray
    zone_const: np.ndarray
    building_const: np.ndarray
    cluster_const: float
    job_const: float
    job_hosts: int
    gpu_tdp: float
    rack_follow: np.ndarray
    zone_follow: np.ndarray
    building_follow: np.ndarray
    job_follow: float


def job_places(pl: Places, gpus: np.ndarray, stage: np.ndarray, pp: int) -> JobPlaces:
    """Count the job's GPUs (``gpus[rank]``, ``stage[rank]``) by place and add up the constant draws."""
    R, Z, B = pl.n_racks, pl.n_zones, pl.n_buildings
    rack_n = np.bincount(pl.gpu_rack[gpus] * pp + stage, minlength=R * pp).reshape(R, pp).astype(float)
    hosts = np.unique(pl.layout.gpu_host[gpus])
    busy = np.zeros(pl.host_rack.size, bool)
    busy[hosts] = True
    host_w = np.where(busy, pl.host_busy_w, pl.host_idle_w)
    idle_gpus = np.bincount(pl.gpu_rack, minlength=R) - rack_n.sum(axis=1)
    rack_const = np.bincount(pl.host_rack, weights=host_w, minlength=R) + idle_gpus * pl.gpu.idle + pl.rack_fixed_w
    zone_n = np.zeros((Z, pp))
    np.add.at(zone_n, pl.rack_zone, rack_n)
    zone_const = np.bincount(pl.rack_zone, weights=rack_const, minlength=Z) + pl.zone_fixed_w
    inb = pl.zone_building >= 0
    building_n = np.zeros((B, pp))
    np.add.at(building_n, pl.zone_building[inb], zone_n[inb])
    building_const = np.bincount(pl.zone_building[inb], weights=zone_const[inb], minlength=B)
    rack_follow = np.bincount(pl.host_rack, weights=np.where(busy, pl.host_follow_w, 0.0), minlength=R)
    zone_follow = np.bincount(pl.rack_zone, weights=rack_follow, minlength=Z)
    job_host = pl.layout.gpu_host[gpus]
    host_n = np.bincount(job_host * pp + stage, minlength=len(host_w) * pp).reshape(-1, pp).astype(float)
    host_gpus = np.bincount(pl.layout.gpu_host, minlength=len(host_w))
    return JobPlaces(rack_n=rack_n, host_n=host_n,
                     host_const=host_w + (host_gpus - host_n.sum(axis=1)) * pl.gpu.idle,
                     host_follow=np.where(busy, pl.host_follow_w, 0.0), zone_n=zone_n, building_n=building_n, stage_n=rack_n.sum(axis=0),
                     rack_const=rack_const, zone_const=zone_const, building_const=building_const,
                     cluster_const=float(zone_const.sum() + pl.cluster_fixed_w),
                     job_const=float(pl.host_busy_w[hosts].sum()), job_hosts=int(hosts.size),
                     gpu_tdp=pl.gpu.at_cap, rack_follow=rack_follow, zone_follow=zone_follow,
                     building_follow=np.bincount(pl.zone_building[inb], weights=zone_follow[inb], minlength=B),
                     job_follow=float(rack_follow.sum()))


def derived_cap(pl: Places, jp: JobPlaces, b: Budgets, where: str) -> float:
    """The highest GPU cap that keeps every rack (``where`` = rack) or building of the job within its budget with
    all of its job's GPUs at the cap at once (a GPU never draws above its cap, so no phase alignment can exceed
    it), in whole watts (rounded down); the GPU's own limit when the budget allows more. :class:`ParamError` when even the lowest cap cannot."""
    if where == "rack":
        n, const, budget, field_name = jp.rack_n.sum(axis=1), jp.rack_const, b.rack_w, "rack_budget_kw"
    else:
        n, const, budget, field_name = jp.building_n.sum(axis=1), jp.building_const, b.building_w, \
            "building_budget_mw"
    used = n > 0
    cap = float(np.min((budget - const[used]) / n[used])) if used.any() else pl.gpu.max_cap
    if cap < pl.gpu.min_cap:
        raise ParamError(field_name, f"cannot be met: the {where}'s other devices and its GPUs at their lowest "
                                     f"cap ({pl.gpu.min_cap:g} W) draw more")
    return float(min(np.floor(cap), pl.gpu.max_cap))      # whole watts, as nvidia-smi -pl sets a limit


def stats(series: np.ndarray, widths: np.ndarray, step: float) -> dict:
    """Peak, mean (energy over the step), min, swing (peak - min) in W and the steepest ramp (W/s: the largest
    change between consecutive bins over the grid's step) of a waveform repeated step after step (the last bin
    runs into the next step's first)."""
    # per the grid's step (the widest bin): the last bin of a step may be a sliver, whose change is not faster
    ramp = np.abs(np.diff(np.append(series, series[:1]))) / max(float(widths.max()), 1e-300) \
        if series.size > 1 else np.zeros(1)
    peak, low = float(series.max()), float(series.min())
    return {"peak": peak, "mean": float(series @ widths / step), "min": low, "swing": peak - low,
            "ramp": float(ramp.max())}


@dataclass
class Draw:
    """One step's power: the cluster's and the job's waveforms (W), per rack peak/mean (W), per zone and building
    waveforms, the job's energy over the step (J: its GPUs and hosts) and its GPUs per stage."""

    sp: StepPower
    cluster: np.ndarray
    job: np.ndarray
    job_energy: float
    stage_n: np.ndarray
    load: float
    zone: np.ndarray
    building: np.ndarray
    rack_peak: np.ndarray = field(default=None)
    rack_mean: np.ndarray = field(default=None)
    host_peak: np.ndarray = field(default=None)
    host_mean: np.ndarray = field(default=None)


def draw(jp: JobPlaces, sp: StepPower, racks: bool = True) -> Draw:
    """The step's power at every level from the stages' waveforms ``sp``; ``racks``: also each rack's peak and
    mean (one waveform per distinct row of stage counts). The job's hosts' load-following part at the step's
    load: its GPUs' mean draw over their TDP."""
    W, w = sp.watts, sp.widths
    n = float(jp.stage_n.sum())
    load = float(jp.stage_n @ sp.energy) / (n * sp.step_s * jp.gpu_tdp) if n else 0.0
    adj = load - 1.0                                 # the following part at the load instead of full load
    job_const = jp.job_const + adj * jp.job_follow
    cluster = jp.stage_n @ W + jp.cluster_const + adj * jp.job_follow
    job = jp.stage_n @ W + job_const
    d = Draw(sp=sp, cluster=cluster, job=job, job_energy=float(jp.stage_n @ sp.energy + job_const * sp.step_s),
             stage_n=jp.stage_n, load=load,
             zone=jp.zone_n @ W + (jp.zone_const + adj * jp.zone_follow)[:, None],
             building=jp.building_n @ W + (jp.building_const + adj * jp.building_follow)[:, None])
    if racks:
        d.rack_peak, d.rack_mean = _peaks(jp.rack_n, W, w, sp.step_s, jp.rack_const + adj * jp.rack_follow)
        d.host_peak, d.host_mean = _peaks(jp.host_n, W, w, sp.step_s, jp.host_const + adj * jp.host_follow)
    return d


def _peaks(counts: np.ndarray, W: np.ndarray, widths: np.ndarray, step: float, const: np.ndarray):
    """Each place's peak and mean (W) over the step: its job GPUs by stage (``counts``, places x stages) times the
    stages' waveforms, one product per distinct row, plus its constant draw."""
    uniq, inv = np.unique(counts, axis=0, return_inverse=True)
    wu = uniq @ W
    inv = inv.ravel()
    return wu.max(axis=1)[inv] + const, (wu @ widths / step)[inv] + const
