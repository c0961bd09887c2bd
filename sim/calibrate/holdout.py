"""The held-out error of a calibration (docs/calibration.md "The fit"): the observations split at random (K folds,
leave-one-out, or one held-out fraction), each held-out set predicted with the parameters fitted on the rest; the
median absolute relative error of those predictions.
"""
from __future__ import annotations

import numpy as np

from sim.calibrate.fittable import Fittable
from sim.calibrate.predict import Predictor
from sim.calibrate.solve import entries_of, solve, theta_of
from sim.core.progress import silent

DEFAULT_FOLDS = 5                 # held-out error by default: 5 folds from this many observations up
MIN_FOLDS_OBS = 10


def default_split(n_obs: int) -> tuple[str | None, int | None, str | None]:
    """The held-out scheme when none is asked: K = 5 folds from 10 observations, leave-one-out from 2, else none
    (``(method, folds, why none)``)."""
    if n_obs >= MIN_FOLDS_OBS:
        return "folds", DEFAULT_FOLDS, None
    if n_obs >= 2:
        return "leave-one-out", n_obs, None
    return None, None, f"{n_obs} observation: too few to hold any out (2 or more needed)"


def splits(n_obs: int, holdout: float | None, folds: int | None, seed: int) -> tuple[str | None, list, str | None]:
    """The held-out index sets: one random ``holdout`` fraction, ``folds`` random folds, or :func:`default_split`."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_obs)
    if holdout is not None:
        k = min(max(int(round(holdout * n_obs)), 1), n_obs - 1)
        if n_obs < 2:
            return None, [], f"{n_obs} observation: too few to hold any out"
        return "holdout", [np.sort(order[:k])], None
    if folds is not None:
        if n_obs < folds:
            return None, [], f"{n_obs} observations: fewer than {folds} folds"
        return "folds", [np.sort(f) for f in np.array_split(order, folds)], None
    method, k, why = default_split(n_obs)
    if method is None:
        return None, [], why
    return method, [np.sort(f) for f in np.array_split(order, k)], None


def holdout_error(pred: Predictor, params: list[Fittable], values: dict, starts: dict, *, holdout=None, folds=None,
                  seed: int = 0, progress=None, usable: np.ndarray | None = None) -> dict:
    """Fit ``params`` (from their fitted ``values``) on all but each held-out set and predict it: the median
    absolute relative error of the held-out predictions (``median_abs_error``), beside the same observations at
    the start (``before_median_abs_error``) and in-sample (``in_sample_median_abs_error``)."""
    say = progress or silent
    usable = np.ones(pred.n_obs, bool) if usable is None else usable
    index = np.flatnonzero(usable)                 # the observations the fit can use: split these
    method, sets, why = splits(index.size, holdout, folds, seed)
    sets = [index[h] for h in sets]
    out = {"method": method, "folds": len(sets) if method in ("folds", "leave-one-out") else None,
           "fraction": holdout if method == "holdout" else None, "seed": seed, "count": 0,
           "median_abs_error": None, "before_median_abs_error": None, "in_sample_median_abs_error": None,
           "reason": why}
    if method is None:
        return out
    if not params:
        out["reason"] = "no parameter fitted: the held-out error is the error at the start"
    held_pred = np.full(pred.n_obs, np.nan)
    full = pred.predict(values)
    start = pred.predict(starts)
    for i, held in enumerate(sets):
        say(i / len(sets), f"held-out fit {i + 1} of {len(sets)}")
        train = usable.copy()
        train[held] = False
        if not params or not train.any():
            held_pred[held] = start[held]
            continue
        fold_params = [Fittable(p.name, p.low, p.high, values[p.name], p.kinds) for p in params]
        z, _, _, _ = solve(fold_params, values, pred, train,
                                    lambda th, what, mask: pred.predict(th, only=entries_of(pred, mask)))
        theta = theta_of(fold_params, z, values)
        held_pred[held] = pred.predict(theta, only=entries_of(pred, _mask(pred.n_obs, held)))[held]
    idx = np.concatenate(sets)
    m = pred.measured[idx]
    out["count"] = int(idx.size)
    out["median_abs_error"] = float(np.median(np.abs(held_pred[idx] / m - 1)))
    out["before_median_abs_error"] = float(np.median(np.abs(start[idx] / m - 1)))
    out["in_sample_median_abs_error"] = float(np.median(np.abs(full[idx] / m - 1)))
    say(1.0, "held-out error")
    return out


def _mask(n: int, idx) -> np.ndarray:
    m = np.zeros(n, bool)
    m[idx] = True
    return m
