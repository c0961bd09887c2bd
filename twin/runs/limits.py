"""What one request may make the workers do. Every bound is a setting (:mod:`twin.runs.constants` DEFAULTS),
checked before a run is queued, and every refusal names its field (a 400):

- seeds (the kind's own bound, which ``TWIN_RUNS_MAX_SEEDS`` may only lower) and a run's cost, which its kind
  declares (``Kind.cost``: the flows it routes and solves over all its simulated runs, ``TWIN_RUNS_MAX_RUN_FLOWS``),
  by :func:`check_run` for every kind;
- a sweep's children (``TWIN_RUNS_MAX_SWEEP_CHILDREN``) and their summed cost (``TWIN_RUNS_MAX_SWEEP_FLOWS``), by
  :func:`check_sweep_size` and :func:`check_sweep_cost`;
- GPUs against the cluster's usable GPUs (:func:`usable_gpus`; each kind's ``check``);
- active runs per user (``TWIN_RUNS_MAX_ACTIVE_PER_USER``), by :func:`check_active`;
- a failures run's days (``TWIN_FAILURES_MAX_DAYS``) and timelines, seeds x checkpoint intervals
  (``TWIN_FAILURES_MAX_TIMELINES``), by :func:`check_failures`.
"""
from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Count
from rest_framework import serializers

from sim.core.errors import ParamError
from sim.fabric.layout import STATUS_ACTIVE
from twin.runs.choices import ACTIVE
from twin.runs.constants import setting


def usable_mask(cluster) -> np.ndarray:
    """Per GPU of ``cluster`` (index order), whether a job can use it: the GPU, its backend NIC, the NIC's port,
    its cable, the leaf's port and the leaf switch all active (the rule of ``sim.fabric.topology`` as the GPU page computes
    it from the inventory, :mod:`twin.web.gpu_data`: its structure cached by fingerprint, the statuses read from
    the non-active rows only, so no topology is built per request)."""
    from twin.web import gpu_data
    structure = gpu_data.structure(cluster)
    fresh = gpu_data.statuses(cluster, structure)
    down = np.asarray(fresh["status"]) != STATUS_ACTIVE
    down[fresh["unusable"]["gpu"]] = True
    return ~down


def usable_gpus(cluster) -> int:
    """GPUs of ``cluster`` a job can use (:func:`usable_mask`)."""
    return int(usable_mask(cluster).sum())


def gpus_per_host(cluster) -> int:
    """The most GPUs one host of ``cluster`` holds (one backend NIC each: the NICs NCCL's channel count starts
    from, :func:`sim.fabric.nccl.ring_channels`)."""
    from twin.inventory.models import GPU
    counts = GPU.objects.filter(cluster=cluster).values("host").annotate(n=Count("id")).values_list("n", flat=True)
    return max(counts, default=1)


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


def check_active(user) -> None:
    """``user``'s active runs (queued or running and not asked to stop; a sweep once, not its children) must leave
    room for one more; called in the transaction that creates the run, the user's row locked."""
    from twin.runs.models import SimulationRun
    if user is None:
        return
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
    cap = setting("TWIN_RUNS_MAX_ACTIVE_PER_USER")
    n = SimulationRun.objects.filter(created_by=user, parent=None, status__in=ACTIVE, cancel_requested=False).count()
    if n >= cap:
        raise serializers.ValidationError({"active_runs": [
            f"you have {n} runs queued or running, at most {cap} (TWIN_RUNS_MAX_ACTIVE_PER_USER): wait for one to "
            f"end, or cancel one"]})


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
