"""The ``calibrate`` run kind: every entry of a measurements file predicted by the twin on the cluster as the
inventory holds it, the named parameters fitted and every entry predicted again (:func:`sim.calibrate.entry.
run_calibrate`, what ``python -m sim calibrate`` runs). Its parameters are the engine's own declaration
(:data:`sim.calibrate.params.CALIBRATE`: the measurements file's text and the ``fit`` names).

- **Refusals** name the field a form shows: the engine's errors about the file and its entries (``entry[i].field``)
  are given under ``measurements`` (``{"measurements": ["entry[0].step_time_s: must be above 0, got -1"]}``), the
  names under ``fit``; each entry is also checked against the cluster by its own kind's ``check`` (more GPUs than
  usable, a store the cluster lacks) before anything is queued.
- **Cost and estimate**: one prediction of every entry, each entry costed by the twin's kind that runs it alone
  (``job``, ``checkpoint`` for checkpoint and restore entries, ``failures``, ``collective`` for nccl-tests logs),
  summed by unit and in seconds. The fit predicts again, but reuses what it can (docs/calibration.md).
- **Progress**: the engine's own fractions (the first prediction's entries, then the fit's evaluations against the
  most it may take), so the bar counts predictions and fit iterations as the command line's does.
- **Summary**: :meth:`sim.calibrate.fit.Calibration.to_dict` (what ``--json`` prints: ``entries``, ``parameters``
  with ``value``/``low``/``high``, ``refused`` (the parameters the data cannot determine, with the measurement that
  would), ``rank``, ``holdout`` (the held-out error), ``before``/``after``, ``warnings``...). No arrays.
- An entry naming its own ``cluster`` (a preset) runs on that preset, not on the run's cluster: it is not checked
  against the run's cluster.
"""
from __future__ import annotations

from typing import Callable

from sim.calibrate.params import CALIBRATE
from sim.core.errors import ParamError
from twin.capabilities.failures.kinds import GPU_DAYS
from twin.runs import limits, registry
from twin.runs.registry import Kind, register

KIND = "calibrate"
FIELD = "measurements"
# The twin's kind that runs an entry of each measurement kind alone (its cost, estimate and cluster checks).
RUN_KIND = {"job": "job", "checkpoint": "checkpoint", "restore": "checkpoint", "failures": "failures",
            "nccl-tests": "collective", "collective": "collective", "power": "power"}
FIELDS = {p.name for p in CALIBRATE}


def _in_measurements(errors: dict) -> ParamError:
    """The engine's errors with every key that is not a parameter of CALIBRATE (``entry[i].field``) given under
    ``measurements``, as ``entry[i].field: reason``."""
    out: dict[str, list[str]] = {}
    for key, messages in errors.items():
        if key in FIELDS:
            out.setdefault(key, []).extend(messages)
        else:
            out.setdefault(FIELD, []).extend(f"{key}: {m}" for m in messages)
    return ParamError(out)


def entries_of(values: dict):
    """The validated measurements as :class:`sim.calibrate.measurements.Entry` objects."""
    from sim.calibrate.measurements import read_values
    return read_values(values)


def _each_entry(values: dict, cluster, what: Callable, own_cluster: bool = True):
    """``what(kind, entry)`` for every entry with the twin's kind that runs it alone; a ParamError of it names
    ``measurements`` and the entry (``entry[i].gpus: ...``). ``own_cluster`` False: the entries that name their own
    preset (``cluster``: they run there, not on the run's cluster) are left out."""
    kinds = registry.kinds()
    out = []
    for e in entries_of(values):
        if e.cluster is not None and not own_cluster:
            continue
        try:
            kind = kinds[RUN_KIND[e.kind]]
            _ranks(kind, e, cluster)
            out.append(what(kind, e))
        except ParamError as err:
            if e.raw:                 # raw nccl-tests output: the log's first line, the hosts under their own field
                raise ParamError({("hosts" if k in ("hosts", "gpu_list") else FIELD):
                                  [f"the log from line {e.log.first}: {'' if k in ('hosts', 'gpu_list') else k + ': '}"
                                   f"{m}" for m in v] for k, v in err.errors.items()}) from None
            raise _in_measurements({f"{e.where}.{k}": v for k, v in err.errors.items()}) from None
    return out


def _ranks(kind, e, cluster) -> None:
    """An nccl-tests entry's ``gpus`` when its ranks are a host or GPU list: the list read against the inventory
    (the collective kind's check), which must give as many ranks as the log's Rank lines; on its own preset, the
    log's ranks."""
    if e.kind != "nccl-tests" or e.values.get("gpus") is not None:
        return
    if e.cluster is not None or kind.check is None:
        e.values["gpus"] = max(e.log.n_ranks, 2)
        return
    kind.check(e.values, cluster)
    listed = "hosts" if e.values.get("hosts") else "gpu_list"
    if e.log.ranks and e.values["gpus"] != len(e.log.ranks):
        raise ParamError(listed, f"lists {e.values['gpus']:,} ranks but the log's Rank lines {len(e.log.ranks):,}")


def validate(values, cluster=None) -> dict:
    """CALIBRATE's validation with its entry errors under ``measurements`` and the ``fit`` names checked to be
    fittable (:func:`sim.calibrate.fit.choose_fit`, the command line's words); with the cluster, every entry checked
    by its kind's cluster checks, then the run's cost and time (:func:`twin.runs.limits.check_run`)."""
    from sim.calibrate.fit import choose_fit, fittable_names
    from sim.calibrate.params import fit_names
    try:
        out = CALIBRATE.validate(values)
        if out["fit"] is not None:
            choose_fit(fit_names(out["fit"]), fittable_names())
    except ParamError as e:
        raise _in_measurements(e.errors) from None
    if cluster is not None:
        from sim.calibrate.measurements import check_gpu
        gpu = (cluster.spec or {}).get("layout", {}).get("gpu")
        try:
            for e in entries_of(out):
                if e.kind == "nccl-tests" and e.cluster is None:
                    check_gpu(e, gpu, cluster.name)
        except ParamError as e:
            raise _in_measurements(e.errors) from None
        _each_entry(out, cluster, lambda k, e: k.check(e.values, cluster) if k.check is not None else None,
                    own_cluster=False)
        limits.check_run(registry.get(KIND), out, cluster)
    return out


def cost(values: dict, cluster) -> dict:
    """Every entry's cost as its own kind counts it, summed by unit (one prediction of every entry; an entry on its
    own preset counted as its kind counts it from its parameters, the same on any cluster)."""
    total: dict[str, int] = {}
    for c in _each_entry(values, cluster, lambda k, e: limits.cost_of(k, e.values, cluster)):
        for unit, amount in c.items():
            total[unit] = total.get(unit, 0) + amount
    return total


def estimate(values: dict, cluster) -> float:
    """Every entry's estimated seconds as its own kind estimates a run of it, summed (one worker runs them all)."""
    return sum(_each_entry(values, cluster, lambda k, e: float(k.estimate(e.values, cluster))))


def calibrate(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The calibration as ``python -m sim calibrate --json`` runs it, on the cluster's inventory as it is."""
    from sim.calibrate.entry import run_calibrate
    from sim.fabric.topology import topology_from_layout
    progress(0.0, "reading the measurements", force=True)
    result = run_calibrate(topology_from_layout(layout), {n: params[n] for n in FIELDS},
                           progress=lambda f, message="": progress(f, message))
    return result.to_dict(), {}


def headline(summary: dict) -> list[dict]:
    """The median |error| over every observation before and after the fit, and held out."""
    return [{"key": f"error_{when}", "label": f"median |error| {when} the fit", "format": "error",
             "value": (summary.get(when) or {}).get("all", {}).get("median_abs_error")}
            for when in ("before", "after")] + [
        {"key": "error_held_out", "label": "median |error| held out", "format": "error",
         "value": (summary.get("holdout") or {}).get("median_abs_error")}]


def describe(params: dict) -> str:
    """``3 entries · fit gemm_efficiency`` (the file's size, not its text; the runs API adds the profile)."""
    try:
        n = f"{len(entries_of(params)):,} entries"
    except (ParamError, KeyError, TypeError, ValueError):
        n = "measurements"
    return f"{n} · fit {params.get('fit') or 'default'}"


register(Kind(KIND, "Calibration (measurements against the twin's predictions, and a fit of named parameters)",
              CALIBRATE, calibrate, view="calibration", form=False, validate=validate, cost=cost, estimate=estimate,
              drives=FIELD, throughputs=(limits.FLOWS_PER_SECOND, GPU_DAYS), headline_of=headline, describe=describe,
              main=("measurements", "hosts", "fit", "holdout", "folds")))
