"""The corpus's predictions and the fit of the fitted factors, through the calibration engine (one fit for a
user's measurements and for the public corpus: :mod:`sim.calibrate.fit`).

The fitted factors (:data:`sim.core.fitted.FACTORS`) are parameters of the run kinds like any other: the fit sets
them in every entry whose kind declares them, minimizes the log of predicted over measured across every entry at
once, and applies only the factors the data determine (the others keep their prior, and the fit says why).
"""
from __future__ import annotations

from functools import lru_cache


from sim.calibrate.fit import fit
from sim.core import fitted
from sim.fabric.spec import load_spec


def factor_names(entries) -> list[str]:
    """The fitted factors some entry's kind reads."""
    kinds = {e.kind for e in entries}
    return [f.name for f in fitted.FACTORS if kinds & set(f.kinds)]


def fit_factors(entries, names: list[str], folds: int | None = None, progress=None) -> dict:
    """Fit ``names`` across ``entries`` at once, from their priors, by the calibration's fit (its held-out error
    over ``folds`` folds, default its own split): ``{"factors": {name: {"value", "applied", "low", "high",
    "why"}}, "holdout": the fit's held-out error}``. A factor the data cannot determine keeps its prior
    (``applied`` False, ``why`` the fit's reason)."""
    start = {n: fitted.factor(n).prior for n in names}
    result = fit(entries, names, start=start, folds=folds, progress=progress)
    refused = {r["name"]: r["reason"] for r in result.refused}
    out = {}
    for name in names:
        applied = name in result.values and name not in refused
        ci = result.ci.get(name) if applied else None
        out[name] = {"value": float(result.values[name]) if applied else start[name], "applied": applied,
                     "low": ci[0] if ci else None, "high": ci[1] if ci else None, "why": refused.get(name)}
    return {"factors": out, "holdout": result.holdout}


@lru_cache(maxsize=64)
def gpu_of(preset: str) -> str:
    """The catalog slug of a preset's GPU."""
    return load_spec(preset).layout.gpu


def write_fitted(values: dict, summary: dict, path=None) -> None:
    """``sim/core/fitted.toml``: each applied factor's fitted value (and its interval), the fit's summary
    (observations, sources, corpus median before and after). Written by ``python -m sim validate --fit``; read by
    :mod:`sim.core.fitted`. Plain ``key = value`` lines: nothing of the file is executed when read."""
    path = path or fitted.FITTED_PATH
    lines = ["# The fitted factors' values, fitted across the whole public validation corpus by",
             "# `python -m sim validate --fit` (docs/validation.md). Do not edit by hand: refit.", "", "[fit]"]
    for key, v in summary.items():
        lines.append(f"{key} = {v!r}" if not isinstance(v, str) else f'{key} = "{v}"')
    for name, v in values.items():
        if not v["applied"]:
            lines += ["", f"# {name}: not applied ({v['why']}): its prior holds"]
            continue
        lines += ["", f"[factor.{name}]", f"value = {v['value']:.6g}"]
        if v.get("low") is not None and v.get("high") is not None:
            lines.append(f"interval_95 = [{v['low']:.6g}, {v['high']:.6g}]")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    fitted.fitted_file.cache_clear()
