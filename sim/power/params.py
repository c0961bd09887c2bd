"""The power run's parameters (one declaration: the command line, and the twin's ``power`` run kind, are built
from :data:`POWER`): the training job's (as :data:`sim.jobs.params.JOB`, with the defaults of Llama 3 405B on
16,384 GPUs [S3]), the cap, the floor, the budgets, the resolution, the cap sweep and the days under failures."""
from __future__ import annotations

from dataclasses import replace

from sim.core.errors import ParamError
from sim.core.params import Param, ParamSet
from sim.jobs.layout import check_job
from sim.jobs.params import JOB_PARAMS, SCHEDULE
from sim.power import devices


def check_bins(seconds: float, step: float, limit: int, field_name: str, what: str) -> None:
    """Refuse a grid of more than ``limit`` bins over ``seconds`` (known once the step or the schedule is)."""
    if seconds / step > limit:
        raise ParamError(field_name, f"{what} ({seconds:,.3f} s) at {step:g} s would take more than {limit:,} points: "
                                     f"take a longer step")

MAX_DAYS = 3650.0
CAP_FROM = ("none", "rack", "building")
MAX_STEP_BINS = 2_000_000       # bins of a step's waveform (a 20 s step at 0.01 ms; memory: stages x bins floats)
MAX_TIMELINE_BINS = 20_000_000  # bins over days or a schedule (54 days at 1 s are 4.7 million)
GPU_W_MIN, GPU_W_MAX = 1.0, 2000.0    # bounds of any GPU watts the declaration accepts (a GPU's own limits apply)


def _job_param(p: Param) -> Param:
    """JOB's parameter with the defaults of Llama 3 405B's pre-training layout (TP 8, PP 16, DP 128 on 16,384
    GPUs [S3]); its GPUs fit a smaller cluster."""
    return replace(p, default={"model": "llama3-405b", "gpus": 16384, "pp": 16}.get(p.name, p.default),
                   fits=p.name == "gpus")


# the job's power cap is the power run's own ``power_cap`` (given or derived from a budget; capped_job sets it)
JOB_NAMES = tuple(p.name for p in JOB_PARAMS if p.name not in ("hottest", "power_cap_w"))


def check_power(v: dict) -> None:
    """Rules across :data:`POWER`: the job's (as JOB); a cap is given or derived from a budget, not both; the
    building budget a building cap needs; the floor not above the cap; the sweep's caps and days' resolution
    fit."""
    check_job(v)
    if v["power_cap"] is not None and v["cap_from"] != "none":
        raise ParamError("cap_from", f"the cap is derived from the {v['cap_from']} budget: leave power_cap empty, "
                                     f"or set cap_from to none")
    if v["cap_from"] == "building" and v["building_budget_mw"] is None:
        raise ParamError("building_budget_mw", "is required to derive the cap from the building budget")
    if v["power_cap"] is not None and v["power_floor"] is not None and v["power_floor"] > v["power_cap"]:
        raise ParamError("power_floor", f"{v['power_floor']:g} W is above the cap ({v['power_cap']:g} W)")
    if v["failures"] and v["days"] is None:
        raise ParamError("days", "is required with failures (the span of the timeline)")
    if v["days"] is not None and not v["failures"]:
        raise ParamError("failures", "the timeline over days is the job's under failures: add failures")
    if v["days"] is not None and v["days"] * 86400 / v["timeline_step_s"] > MAX_TIMELINE_BINS:
        raise ParamError("timeline_step_s", f"{v['days']:g} days at {v['timeline_step_s']:g} s would take more "
                                            f"than {MAX_TIMELINE_BINS:,} points: take a longer step")
    if v["days"] is not None and v["timeline_step_s"] * 10 > v["days"] * 86400:
        raise ParamError("timeline_step_s", f"{v['timeline_step_s']:g} s leaves fewer than 10 points over "
                                            f"{v['days']:g} days")


def check_gpu_limits(v: dict, gpu: devices.GPUPower) -> None:
    """The cap, floor and sweep within the GPU's own power limits (known once the cluster's GPU is)."""
    for name in ("power_cap", "power_floor"):
        if v[name] is not None and not gpu.min_cap <= v[name] <= gpu.max_cap and not (
                name == "power_floor" and 0 <= v[name] <= gpu.max_cap):
            raise ParamError(name, f"{v[name]:g} W is outside the GPU's power limits ({gpu.min_cap:g}.."
                                   f"{gpu.max_cap:g} W)")
    for c in v["cap_sweep"] or ():
        if not gpu.min_cap <= c <= gpu.max_cap:
            raise ParamError("cap_sweep", f"{c} W is outside the GPU's power limits ({gpu.min_cap:g}.."
                                          f"{gpu.max_cap:g} W)")


POWER_PARAMS = tuple(_job_param(p) for p in JOB_PARAMS if p.name in JOB_NAMES) + (
    Param("power_cap", "float", None, "GPU power limit in W (nvidia-smi -pl): GEMMs slow by the cap/clock relation "
                                      "(docs/power.md); null: the GPU's default limit, its TDP (700 W on H100 SXM)",
          min=GPU_W_MIN, max=GPU_W_MAX, nullable=True),
    Param("cap_from", "choice", "none", "derive the cap from a budget: rack (the rack budget), building (the "
                                        "building budget): the highest cap that keeps every rack (building) of "
                                        "the job within it with all its GPUs at the cap at once",
          choices=CAP_FROM),
    Param("power_floor", "float", None, "a floor on GPU power while it waits or communicates (filler work, W): "
                                        "a smaller swing for more energy; null: none", min=0.0, max=GPU_W_MAX,
          nullable=True),
    Param("rack_budget_kw", "float", None, "power a rack may draw in kW; null: its power shelves' at N+1 (2 Open "
                                           "Rack V3 shelves of 15 kW: 30 kW, docs/power.md)", min=0.1, max=10_000.0,
          nullable=True),
    Param("rack_cooling_kw", "float", None, "heat a rack's cooling removes in kW; null: 30 (assumption, "
                                            "docs/power.md)", min=0.1, max=10_000.0, nullable=True),
    Param("zone_budget_mw", "float", None, "power a zone (row) may draw in MW; null: no zone budget", min=0.001,
          max=100_000.0, nullable=True),
    Param("building_budget_mw", "float", None, "power a building may draw in MW; null: no building budget",
          min=0.001, max=100_000.0, nullable=True),
    Param("host_power_scale", "float", None, "scale on each GPU host's non-GPU draw (CPUs, memory, NICs, fans "
          "and the rest, busy and idle), anchored on DGX H100's rated maximum system power (docs/power.md "
          "\"Hosts\"); null: the fitted factor (sim/core/fitted.py)", min=0.01, max=2.0, nullable=True),
    Param("resolution_ms", "float", 1.0, "time step of the step's waveform in milliseconds", min=0.01,
          max=10_000.0),
    Param("cap_sweep", "int_list", None, "GPU caps in W to sweep (the trade-off curve), e.g. 400,500,600,700; "
                                         "null: no sweep", min=1, max=int(GPU_W_MAX), nullable=True),
    Param("days", "float", None, "days of the power timeline under failures; null: the step only", min=0.001,
          max=MAX_DAYS, nullable=True),
    Param("failures", "bool", False, "over days: the job's timeline under failures (sim.failures: crashes, "
                                     "restarts, checkpoints); off: the job trains throughout"),
    Param("timeline_step_s", "float", 1.0, "time step of the timeline over days in seconds", min=0.01,
          max=86_400.0),
    Param("worst", "int", 10, "worst racks to list", min=0, max=1000),
)

POWER = ParamSet("power", POWER_PARAMS, check=check_power,
                 doc="A training job's power from GPU to building over its step and over days: peak, mean, swing, "
                     "ramp, energy per token, caps and budgets.")


POWER_SCHEDULE = ParamSet("power_schedule", SCHEDULE.params + (
    Param("timeline_step_s", "float", 60.0, "time step of the draw over the schedule in seconds", min=0.01,
          max=86_400.0),
), check=SCHEDULE.check, doc="The cluster's power over a job queue's schedule, as jobs come and go.")
