"""What one request may make the workers do. Every bound is a setting (:mod:`twin.runs.constants` DEFAULTS),
checked before a run is queued, and every refusal names its field (a 400):

- seeds (the kind's own bound, which ``TWIN_RUNS_MAX_SEEDS`` may only lower) and a run's cost, which its kind
  declares (``Kind.cost``: the flows it routes and solves over all its simulated runs, ``TWIN_RUNS_MAX_RUN_FLOWS``),
  by :func:`check_run` for every kind;
- a sweep's children (``TWIN_RUNS_MAX_SWEEP_CHILDREN``) and their summed cost (``TWIN_RUNS_MAX_SWEEP_FLOWS``), by
  :func:`check_sweep_size` and :func:`check_sweep_cost`;
- GPUs against the cluster's usable GPUs (:func:`twin.inventory.gpu_grid.usable_gpus`; each kind's ``check``);
- active runs per user (``TWIN_RUNS_MAX_ACTIVE_PER_USER``), by :func:`check_active`;
- a failures run's days (``TWIN_FAILURES_MAX_DAYS``) and timelines, seeds x checkpoint intervals
  (``TWIN_FAILURES_MAX_TIMELINES``), by :func:`check_failures`.
"""
from __future__ import annotations


from sim.core.errors import ParamError
from twin.runs.constants import setting


def check_run(kind, values: dict, cluster) -> None:
    """The seeds and the cost of one run of ``kind``; raises :class:`ParamError` naming ``seeds`` or ``cost``. The
    engine's bound on seeds (the kind's ``seeds`` parameter, checked by its validation) is the limit;
    ``TWIN_RUNS_MAX_SEEDS`` may only lower it."""
    cap, seeds = setting("TWIN_RUNS_MAX_SEEDS"), values.get("seeds") or 0
    engine = kind.params.by_name.get("seeds") if kind.params is not None else None
    bound = engine.max if engine is not None else None          # the engine's own (its validation checks it)
    limit = cap if bound is None else bound if cap is None else min(cap, bound)
    if limit is not None and seeds > limit:
        raise ParamError("seeds", f"{seeds:,} seeds, at most {limit:,} ("
                                  + ("TWIN_RUNS_MAX_SEEDS" if limit == cap else "the engine's bound")
                                  + (f"; the engine allows {bound:,}" if bound is not None and bound > limit else "") + ")")
    if kind.cost is not None:
        flows, cap = kind.cost(values, cluster), setting("TWIN_RUNS_MAX_RUN_FLOWS")
        if flows > cap:
            raise ParamError("cost", f"{flows:,} simulated flows, at most {cap:,} (TWIN_RUNS_MAX_RUN_FLOWS): "
                                     f"fewer GPUs, seeds or queue pairs")


def check_sweep_size(n: int) -> None:
    """A sweep of ``n`` combinations (checked before any is validated)."""
    cap = setting("TWIN_RUNS_MAX_SWEEP_CHILDREN")
    if n > cap:
        raise ParamError("sweep", f"{n} combinations, at most {cap} (TWIN_RUNS_MAX_SWEEP_CHILDREN)")


def check_sweep_cost(kind, children: list[dict], cluster) -> None:
    """A sweep of ``kind`` whose children have the validated parameters ``children``: their summed cost."""
    if kind.cost is not None:
        flows, cap = sum(kind.cost(c, cluster) for c in children), setting("TWIN_RUNS_MAX_SWEEP_FLOWS")
        if flows > cap:
            raise ParamError("sweep", f"{flows:,} simulated flows over its {len(children)} runs, at most {cap:,} "
                                      f"(TWIN_RUNS_MAX_SWEEP_FLOWS)")


def check_failures(days: float, seeds: int, intervals: int) -> None:
    """A failures run of ``days`` wall-clock days, ``seeds`` seeds at each of ``intervals`` checkpoint intervals;
    raises :class:`ParamError` naming ``days`` or ``seeds``."""
    cap = setting("TWIN_FAILURES_MAX_DAYS")
    if days > cap:
        raise ParamError("days", f"{days:g} days, at most {cap:g} (TWIN_FAILURES_MAX_DAYS)")
    timelines, cap = seeds * intervals, setting("TWIN_FAILURES_MAX_TIMELINES")
    if timelines > cap:
        raise ParamError("seeds", f"{timelines:,} timelines (seeds x checkpoint intervals), at most {cap:,} "
                                  f"(TWIN_FAILURES_MAX_TIMELINES)")
