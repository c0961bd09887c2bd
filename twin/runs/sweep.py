"""Sweeps: a run of any kind over the cartesian product of some of its parameters, one child run per combination,
merged into one summary (the kind that fans out over the workers, registered like any other).
"""
from __future__ import annotations

import itertools

import numpy as np
from rest_framework import serializers

from sim.core.errors import ParamError
from twin.runs import calibration, limits
from twin.runs.params import validate_params, validated
from twin.runs.registry import SWEEP, Kind, get, median_of, register


def combinations(axes: dict) -> list[dict]:
    """The cartesian product of the sweep's axes, in order (the last axis varies fastest).

    >>> combinations({"routing": ["ecmp", "eecmp"], "qps": [1, 16]})
    [{'routing': 'ecmp', 'qps': 1}, {'routing': 'ecmp', 'qps': 16}, {'routing': 'eecmp', 'qps': 1}, {'routing': 'eecmp', 'qps': 16}]
    """
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def _validate_sweep(values, cluster) -> dict:
    """A sweep: a base ``kind`` (any kind with parameters) with its ``params`` and, in ``sweep``, a list of values
    per parameter; one child run per combination (the cartesian product, at most TWIN_RUNS_MAX_SWEEP_CHILDREN,
    their summed cost within each unit's cap per sweep, :func:`twin.runs.limits.check_sweep_cost`), each
    combination validated as its child run will be (its time estimate of the whole child: a sweep's child does not
    fan out)."""
    if not isinstance(values, dict):
        raise ParamError("params", "expected an object with kind, params and sweep")
    unknown = sorted(set(values) - {"kind", "params", "sweep"})
    if unknown:
        raise ParamError({n: ["unknown parameter of sweep"] for n in unknown})
    try:
        base_kind = get(values.get("kind"))
    except ParamError as e:
        raise ParamError("kind", e.errors["kind"][0]) from None
    if base_kind.params is None:
        raise ParamError("kind", f"a sweep cannot sweep {base_kind.name} runs")
    base, axes = values.get("params") or {}, values.get("sweep")
    if not isinstance(base, dict):
        raise ParamError("params", "expected an object of parameters")
    if not isinstance(axes, dict) or not axes:
        raise ParamError("sweep", "give at least one parameter with a list of values")
    empty = [k for k, v in axes.items() if not isinstance(v, list) or not v]
    if empty:
        raise ParamError("sweep", f"{', '.join(map(str, empty))}: expected a non-empty list of values")
    unknown = sorted(set(axes) - set(base_kind.params.by_name) - {calibration.KEY})   # profiles side by side too
    if unknown:
        raise ParamError("sweep", f"{base_kind.name} has no parameter {', '.join(map(str, unknown))}")
    limits.check_sweep_size(int(np.prod([len(v) for v in axes.values()], dtype=object)))
    validate_params(base_kind.name, base, cluster, field="params")
    children = []
    for combo in combinations(axes):
        try:
            children.append(validated(base_kind, {**base, **combo}, cluster, alone=True))
        except ParamError as e:
            raise serializers.ValidationError({"sweep": {"combination": combo, "errors": e.errors}}) from None
    limits.check_sweep_cost(base_kind, children, cluster)
    return {"kind": base_kind.name, "params": base, "sweep": axes}


def merge_sweep(parent_params: dict, children: list[dict]) -> dict:
    """The sweep's summary from its children (dicts with ``id``, ``params``, ``status``, ``worker``, ``summary``,
    ``error``, in combination order): one row per combination with the base kind's headline figures, counted by
    the children's status, and the best succeeded one by the kind's ``best`` figure (its median)."""
    kind = get(parent_params["kind"])
    axes = parent_params["sweep"]
    rows = []
    for c in children:
        s = c["summary"] or {}
        rows.append({"run": c["id"], **{k: _axis_value(c["params"], k) for k in axes}, "status": c["status"],
                     "worker": c["worker"], **{h.key: s.get(h.key) for h in kind.headline},
                     "error": c["error"] or None})
    succeeded = [r for r in rows if r["status"] == "succeeded"]
    ranked = [r for r in succeeded if kind.best and median_of(r.get(kind.best)) is not None]
    best = max(ranked, key=lambda r: median_of(r[kind.best])) if ranked else None
    return {"kind": kind.name, "axes": axes, "children": rows, "succeeded": len(succeeded),
            "failed": sum(r["status"] == "failed" for r in rows),
            "cancelled": sum(r["status"] == "cancelled" for r in rows),
            "workers": sorted({r["worker"] for r in rows if r["worker"]}),
            "best_by": kind.best, "best": best}


def _axis_value(params: dict, name: str):
    """A child's value of a swept parameter; of ``calibration``, the profile's name (the child keeps the record of
    what it applied, :mod:`twin.runs.calibration`)."""
    value = params.get(name)
    if name == calibration.KEY and isinstance(value, dict):
        return value.get("profile")
    return value


def _sweep_text(p: dict) -> str:
    axes = " × ".join(f"{k} ∈ {{{', '.join('default' if v is None else str(v) for v in vs)}}}"
                      for k, vs in (p.get("sweep") or {}).items())
    return f"{p.get('kind')}: {axes}"


def _sweep_headline(summary: dict) -> list[dict]:
    """A sweep's headline: its base kind's figures of the best child."""
    if not summary.get("kind"):
        return []
    best = summary.get("best") or {}
    return [{**h, "label": f"best: {h['label']}", "value": best.get(h["key"])}
            for h in get(summary["kind"]).headline_values(best)[:1]]



register(Kind(SWEEP, "Sweep (one child run per parameter combination)", None, None, view="sweep", form=True,
              validate=_validate_sweep, describe=_sweep_text, headline_of=_sweep_headline))
