"""What one request may make the workers do. Every bound is a setting (:mod:`twin.runs.constants` DEFAULTS),
checked before a run is queued, and every refusal names its field (a 400) and its setting:

- seeds (the kind's own bound, which ``TWIN_RUNS_MAX_SEEDS`` may only lower), by :func:`check_run`;
- a run's cost, which every kind declares (``Kind.cost``: named amounts of work, each in a unit of :data:`UNITS`:
  ``flows``, ``timelines``, ``arrivals``, ``scales``,
  ``observations``, ``rows``), each amount against its unit's cap per run, by
  :func:`check_run`, and summed over a sweep's children against its cap per sweep, by :func:`check_sweep_cost`;
- a run's time: its kind's estimate of its longest task's seconds (``Kind.estimate``, from its cost over a
  throughput setting measured by bench/bench_limits.py) against ``TWIN_RUNS_SOFT_TIME_LIMIT`` (where the worker
  stops it), by :func:`check_run`;
- a sweep's children (``TWIN_RUNS_MAX_SWEEP_CHILDREN``), by :func:`check_sweep_size`;
- GPUs against the cluster's usable GPUs (:func:`twin.inventory.gpu_grid.usable_gpus`; each kind's ``check``);
- active runs that do work, per user (``TWIN_RUNS_MAX_ACTIVE_PER_USER``) and over all users
  (``TWIN_RUNS_MAX_ACTIVE``), by :func:`check_active` in the transaction that creates the run;
- a failures run's days (``TWIN_FAILURES_MAX_DAYS``), by :func:`check_failures`.

A refusal of a run's cost or time names the kind's ``drives`` parameter (``cost`` unless the kind says which of its
parameters to lower); a sweep's, ``sweep``.
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import ParamError
from twin.runs.constants import setting


@dataclass(frozen=True)
class Unit:
    """A unit of work a kind's cost is counted in, with the setting that caps one run's amount and the one that
    caps a sweep's (its children's summed)."""

    name: str
    what: str
    run_cap: str
    sweep_cap: str | None       # None: runs of its kinds are never swept


UNITS = {u.name: u for u in (
    Unit("flows", "simulated flows", "TWIN_RUNS_MAX_RUN_FLOWS", "TWIN_RUNS_MAX_SWEEP_FLOWS"),
    Unit("timelines", "failures timelines (seeds x checkpoint intervals)", "TWIN_FAILURES_MAX_TIMELINES",
         "TWIN_RUNS_MAX_SWEEP_TIMELINES"),
    Unit("arrivals", "scheduled jobs", "TWIN_RUNS_MAX_RUN_ARRIVALS", "TWIN_RUNS_MAX_SWEEP_ARRIVALS"),
    Unit("scales", "modelled job sizes", "TWIN_RUNS_MAX_RUN_SCALES", "TWIN_RUNS_MAX_SWEEP_SCALES"),
    Unit("observations", "validation observations predicted (each fold of a cross-validation again)",
         "TWIN_RUNS_MAX_RUN_OBSERVATIONS", "TWIN_RUNS_MAX_SWEEP_OBSERVATIONS"),
    Unit("rows", "inventory rows written and deleted", "TWIN_RUNS_MAX_RUN_ROWS", None),
)}
TIME_LIMIT = "TWIN_RUNS_SOFT_TIME_LIMIT"     # the worker stops a run after this many seconds (twin.runs.tasks)
FLOWS_PER_SECOND = "TWIN_RUNS_FLOWS_PER_SECOND"


def per_second(amount: float, throughput: str) -> float:
    """Seconds to do ``amount`` of work at the setting ``throughput`` (so much per second on one worker)."""
    return amount / setting(throughput)


def flows_estimate(values: dict, cluster, cost) -> float:
    """The estimate of a kind whose cost is flows: its flows over TWIN_RUNS_FLOWS_PER_SECOND."""
    return per_second(cost(values, cluster)["flows"], FLOWS_PER_SECOND)


def cost_of(kind, values: dict, cluster) -> dict[str, int]:
    """``kind``'s cost of a run of ``values``: its named amounts, each unit one of :data:`UNITS`."""
    cost = kind.cost(values, cluster)
    unknown = set(cost) - set(UNITS)
    if unknown:
        raise ValueError(f"kind {kind.name}: cost in unknown units {sorted(unknown)} (known: {', '.join(UNITS)})")
    return {unit: int(amount) for unit, amount in cost.items()}


def seconds_of(kind, values: dict, cluster, *, alone: bool = False) -> float:
    """The estimated seconds of the longest task of a run of ``kind``: of the run itself, or when its kind fans it
    out (``Kind.fan_out``) and it is not a child (``alone``: a sweep's child computes all its work itself), of its
    longest child."""
    parts = [] if alone else kind.children_params(values)
    return max(float(kind.estimate(p, cluster)) for p in (parts or [values]))


def check_run(kind, values: dict, cluster, *, alone: bool = False) -> None:
    """The seeds, the cost and the time of one run of ``kind``; raises :class:`ParamError` naming ``seeds`` or the
    kind's ``drives`` parameter. The engine's bound on seeds (the kind's ``seeds`` parameter, checked by its
    validation) is the limit; ``TWIN_RUNS_MAX_SEEDS`` may only lower it. ``alone``: the run is a sweep's child."""
    cap, seeds = setting("TWIN_RUNS_MAX_SEEDS"), values.get("seeds") or 0
    engine = kind.params.by_name.get("seeds") if kind.params is not None else None
    bound = engine.max if engine is not None else None          # the engine's own (its validation checks it)
    limit = cap if bound is None else bound if cap is None else min(cap, bound)
    if limit is not None and seeds > limit:
        raise ParamError("seeds", f"{seeds:,} seeds, at most {limit:,} ("
                                  + ("TWIN_RUNS_MAX_SEEDS" if limit == cap else "the engine's bound")
                                  + (f"; the engine allows {bound:,}" if bound is not None and bound > limit else "") + ")")
    if kind.cost is None:
        return
    for unit, amount in cost_of(kind, values, cluster).items():
        u = UNITS[unit]
        if amount > (cap := setting(u.run_cap)):
            raise ParamError(kind.drives, f"costs {amount:,} {u.what}, at most {cap:,} ({u.run_cap}): lower "
                                          f"{kind.drives if kind.drives != 'cost' else 'its GPUs, seeds or queue pairs'}")
    check_time(kind, values, cluster, alone=alone)


def check_time(kind, values: dict, cluster, *, alone: bool = False) -> None:
    """The run's estimated seconds (:func:`seconds_of`) within TWIN_RUNS_SOFT_TIME_LIMIT, naming ``drives``."""
    seconds, cap = seconds_of(kind, values, cluster, alone=alone), setting(TIME_LIMIT)
    if seconds > cap:
        raise ParamError(kind.drives, f"would run about {seconds:,.0f} s on a worker, more than the time limit of "
                                      f"{cap:,} s ({TIME_LIMIT}; the estimate divides its cost by "
                                      f"{' and '.join(kind.throughputs) or 'its throughput'}): lower "
                                      f"{kind.drives if kind.drives != 'cost' else 'its GPUs, seeds or queue pairs'}")


def check_sweep_size(n: int) -> None:
    """A sweep of ``n`` combinations (checked before any is validated)."""
    cap = setting("TWIN_RUNS_MAX_SWEEP_CHILDREN")
    if n > cap:
        raise ParamError("sweep", f"{n} combinations, at most {cap} (TWIN_RUNS_MAX_SWEEP_CHILDREN)")


def check_sweep_cost(kind, children: list[dict], cluster) -> None:
    """A sweep of ``kind`` whose children have the validated parameters ``children``: their summed cost, unit by
    unit, against each unit's cap per sweep."""
    total: dict[str, int] = {}
    for c in children:
        for unit, amount in cost_of(kind, c, cluster).items():
            total[unit] = total.get(unit, 0) + amount
    for unit, amount in total.items():
        u = UNITS[unit]
        if u.sweep_cap is not None and amount > (cap := setting(u.sweep_cap)):
            raise ParamError("sweep", f"{amount:,} {u.what} over its {len(children)} runs, at most {cap:,} "
                                      f"({u.sweep_cap})")


def check_failures(days: float) -> None:
    """A failures run of ``days`` wall-clock days; raises :class:`ParamError` naming ``days``."""
    cap = setting("TWIN_FAILURES_MAX_DAYS")
    if days > cap:
        raise ParamError("days", f"{days:g} days, at most {cap:g} (TWIN_FAILURES_MAX_DAYS)")


def check_active(mine: int, everyone: int, adding: int) -> None:
    """Room for a run that adds ``adding`` runs doing work, with ``mine`` of its user's and ``everyone``'s
    (all users') already active (:func:`twin.runs.actions.active_load`); raises :class:`ParamError` naming
    ``active_runs``."""
    for have, name, whose in ((mine, "TWIN_RUNS_MAX_ACTIVE_PER_USER", "you have"),
                              (everyone, "TWIN_RUNS_MAX_ACTIVE", "the twin has")):
        cap = setting(name)
        if have + adding > cap:
            raise ParamError("active_runs", f"{whose} {have:,} runs queued or running, this one adds {adding:,}, "
                                            f"at most {cap:,} ({name}; a sweep counts as its children, a fanned-out "
                                            f"run as its chunks): wait for some to end, or cancel some")
