"""The least-squares fit of named parameters to measurements (docs/calibration.md), and the calibration's result.
The parts live beside it: :mod:`sim.calibrate.fittable` (what may be fitted), :mod:`sim.calibrate.predict` (the
Predictor), :mod:`sim.calibrate.solve` (least_squares and the Jacobian), :mod:`sim.calibrate.holdout` (the
held-out error); their names used elsewhere are imported here too.

* **Predictions** (:class:`Predictor`): each entry's observations from its kind's engine entry point (the one a
  user's run of that kind calls), with the fitted parameters set in every entry whose kind declares them, on the
  entry's own cluster (a preset, loaded once) or the run's. The error of an observation is
  ``predicted / measured - 1``. Expensive parts are computed once per entry and reused: a job's placement,
  transfers and max-min solve (:func:`sim.jobs.job.solve_job`) while only :data:`sim.jobs.job.STEP_ONLY` parameters
  change (the closed-form step is re-run); a collective's run covers every row of its log at once (one routing and
  solve; the rows are its sizes); any entry is re-run only when a parameter its kind declares changes.
* **Fittable parameters** (:func:`fittable`): the float parameters of the entries' ParamSets with a finite min and
  max, starting from their default, or for a nullable one from the named constant its null stands for
  (:func:`null_means`: :data:`NULL_MEANS` and every fitted factor of :mod:`sim.core.fitted`, with its bounds);
  :data:`CONDITIONS` (what a measurement was taken under, and numerical resolutions) are not fitted.
* **Fit** (:func:`fit`): :func:`scipy.optimize.least_squares` (trust-region reflective, bounds) on
  ``log(predicted / measured)``, in a transformed coordinate (log of a parameter with a positive lower bound,
  ``asinh`` of the distance from a zero one), with a forward-difference Jacobian through the Predictor (so its
  reuse holds). At the optimum: the rank of the Jacobian (SVD of its unit-norm columns, :data:`RANK_TOL`), 95 %
  intervals ``value +- t sqrt(diag(s^2 (J^T J)^-1))``, and the parameters the data cannot determine (no
  measurement moves them, they move with others along a direction the data do not see, or their interval is
  wider than their bounds) are **refused**: kept at their start, named with the measurement that would determine
  them, and the rest re-fitted without them.
* **Held-out error**: K folds (or one random hold-out fraction) of the observations, each fitted on the rest and
  predicted; the median absolute relative error of the held-out predictions.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sim.calibrate.fittable import (CONDITIONS, NULL_MEANS, Fittable, choose_fit, factor_bounds,  # noqa: F401
                                    fittable, fittable_names, null_means, would)
from sim.calibrate.holdout import holdout_error, splits  # noqa: F401
from sim.calibrate.measurements import KINDS, Entry
from sim.calibrate.predict import Predictor, label
from sim.calibrate.solve import SENSITIVITY_TOL, entries_of, jacobian, log_residuals, solve
from sim.core.progress import silent

RANK_TOL = 1e-3                   # singular values of J's unit-norm columns below this x the largest: not seen
WEIGHT_TOL = 0.1                  # a parameter weighing more than this in an unseen direction is undetermined
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(dof: int) -> float:
    """Student's t 97.5 % quantile (two-sided 95 %): the table to 30 degrees of freedom, then the Cornish-Fisher
    expansion around the normal's 1.96."""
    if dof <= len(T975):
        return T975[dof - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)


# -------------------------------------------------------------------------------------------------------- fit
@dataclass
class FitResult:
    """What :func:`fit` found. ``values``: what to apply (the fitted value of each determined parameter, fitted
    again with the refused ones at their start; a refused one is not in it); ``start``; ``optimum`` (every
    candidate's value at the joint fit of all those that move a prediction, refused ones included); ``ci`` (name ->
    (low, high) 95 %, or None), ``identifiable`` (names), ``refused`` (``{name, reason, would}``), ``rank`` (of the
    joint fit's Jacobian, of ``rank_of`` parameters), ``singular_values`` (of its unit-norm columns, largest
    first), ``holdout`` (the held-out error, :func:`holdout_error`), ``before`` and ``after``
    (observations,) predictions at the start and with ``values``, ``measured``."""

    names: list[str]
    values: dict[str, float]
    start: dict[str, float]
    optimum: dict[str, float]
    bounds: dict[str, tuple[float, float]]
    kinds: dict[str, list[str]]
    ci: dict[str, tuple[float, float] | None]
    identifiable: list[str]
    refused: list[dict]
    rank: int
    rank_of: int
    singular_values: list[float]
    holdout: dict
    before: np.ndarray
    after: np.ndarray
    measured: np.ndarray
    warnings: list[str] = field(default_factory=list)
    iterations: int = 0
    evaluations: int = 0
    runs: int = 0
    seconds: float = 0.0

    @property
    def errors(self) -> np.ndarray:
        """(observations,) ``after / measured - 1``."""
        return self.after / self.measured - 1

    def parameters(self) -> dict:
        """Per candidate: ``value`` (applied: the start when refused), ``optimum``, ``start``, ``low``/``high`` (95 %;
        none for a refused one, whose value is not fitted), ``bounds``, ``kinds``, ``identifiable``, ``refused`` (the
        reason, or None), ``would``."""
        refused = {r["name"]: r for r in self.refused}
        out = {}
        for n in self.names:
            ci = self.ci.get(n) if n not in refused else None      # a refused one's value is its start: no interval
            out[n] = {"value": self.values.get(n, self.start[n]), "optimum": self.optimum.get(n, self.start[n]),
                      "start": self.start[n], "low": ci[0] if ci else None, "high": ci[1] if ci else None,
                      "bounds": list(self.bounds[n]), "kinds": self.kinds[n],
                      "identifiable": n in self.identifiable,
                      "refused": refused[n]["reason"] if n in refused else None,
                      "would": refused[n]["would"] if n in refused else None}
        return out


def fit(entries: list[Entry], names: list[str] | None = None, *, cluster=None,
        bounds: dict[str, tuple[float, float]] | None = None, start: dict[str, float] | None = None,
        holdout: float | None = None, folds: int | None = None, seed: int = 0, progress=None,
        predictor: Predictor | None = None) -> FitResult:
    """Fit ``names`` to ``entries`` (from one file or a corpus of many: an entry with its own ``cluster`` runs on
    that preset; the others on ``cluster``, a Topology). ``names`` None: the fittable parameters the entries'
    kinds declare that move a prediction at the start. ``bounds``/``start``: per name, replacing the declared ones
    (a fitted factor's are the factor's). ``holdout`` (a fraction) or ``folds`` (K): the held-out error (default:
    :func:`default_split`); ``seed`` draws the split. Progress: the first prediction (0..0.4), the fit (0.4..0.8),
    the held-out fits (0.8..1)."""
    t0 = time.perf_counter()
    say = progress or silent
    pred = predictor or Predictor(cluster, entries)
    table = fittable(KINDS, pred.start_cluster())
    chosen = choose_fit(names, table) if names is not None else None
    present = {e.kind for e in entries}
    before = pred.predict({}, say=lambda f, m: say(0.4 * f, m))
    candidates = chosen if chosen is not None else sorted(n for n, p in table.items() if present & set(p.kinds))
    params = []
    for n in candidates:
        p = table[n]
        lo, hi = (bounds or {}).get(n, (p.low, p.high))
        s0 = (start or {}).get(n, p.start)
        params.append(Fittable(n, float(lo), float(hi), min(max(float(s0), float(lo)), float(hi)),
                               tuple(k for k in p.kinds if k in present) or p.kinds))
    warnings: list[str] = []
    refused: list[dict] = []
    all_obs = _positive(before, pred, warnings)
    kind_of = np.array([pred.entries[k].kind for k in pred.obs_entry])      # (observations,) each one's kind
    budget = [0, len(params) + 4 * (len(params) + 1)]

    def evaluate(theta, what, mask):
        budget[0] += 1
        say(0.4 + 0.4 * min(1.0, budget[0] / max(budget[1], 1)), what)
        return pred.predict(theta, only=entries_of(pred, mask))

    # who moves at all: a forward-difference sensitivity at the start (on every observation)
    z0 = np.array([p.to_z(p.start) for p in params])
    r0 = log_residuals(evaluate({p.name: p.start for p in params}, "residuals at the start", None), pred, all_obs)
    J0 = jacobian(params, z0, r0, lambda th: evaluate(th, "sensitivity", None), pred, all_obs)
    moves = np.linalg.norm(J0, axis=0) > SENSITIVITY_TOL
    for p, ok in zip(params, moves):
        if not ok and chosen is not None:
            refused.append({"name": p.name, "reason": "no measurement moves it", "would": would(p.name)})
    live = [p for p, ok in zip(params, moves) if ok] if all_obs.any() else []
    if chosen is None:
        params = live
    optimum: dict[str, float] = {}
    ci: dict = {}
    rank, sv, iterations, rank_of = 0, [], 0, 0
    # fit; refuse what the data cannot determine; fit the rest again without it (at most once per parameter)
    first = True
    while live:
        z, r, J, its = solve(live, {p.name: p.start for p in params}, pred, all_obs, evaluate)
        iterations += its
        fitted_now = {p.name: p.from_z(float(zi)) for p, zi in zip(live, z)}
        why, ci_live, rank_now, sv_now = _determined(live, z, r, J, warnings, kind_of[all_obs])
        if first:                     # the joint fit of every parameter that moves: its optimum and rank
            optimum, rank, sv, rank_of, first = fitted_now, rank_now, sv_now, len(live), False
        ci.update(ci_live)
        out = [p for p in live if why[p.name]]
        for p in out:
            refused.append({"name": p.name, "reason": why[p.name], "would": would(p.name, p.kinds)})
        if not out:
            break
        live = [p for p in live if not why[p.name]]
    values = {p.name: fitted_now[p.name] for p in live} if live else {}
    for r_ in refused:
        warnings.append(f"{r_['name']}: refused ({r_['reason']}): kept at its start; {r_['would']} would "
                        f"determine it")
    if not params:
        warnings.append("no parameter to fit: the measurements inform none of the chosen ones")
    starts = {p.name: p.start for p in params}
    after = pred.predict({**starts, **values}) if values else before
    split = holdout_error(pred, live, {**starts, **values}, starts, holdout=holdout, folds=folds, seed=seed,
                          progress=lambda f, m: say(0.8 + 0.2 * f, m), usable=all_obs)
    say(1.0, f"fitted {', '.join(values) or 'nothing'}" + (f"; refused {', '.join(r['name'] for r in refused)}"
                                                            if refused else ""))
    return FitResult(
        names=[p.name for p in params], values=values, start=starts, optimum=optimum,
        bounds={p.name: (p.low, p.high) for p in params}, kinds={p.name: list(p.kinds) for p in params}, ci=ci,
        identifiable=[p.name for p in live], refused=refused, rank=rank, rank_of=rank_of, singular_values=sv,
        holdout=split, before=before, after=after, measured=pred.measured, warnings=warnings, iterations=iterations,
        evaluations=pred.evaluations, runs=pred.runs, seconds=time.perf_counter() - t0)


def _positive(predicted: np.ndarray, pred: Predictor, warnings: list[str]) -> np.ndarray:
    """(observations,) the ones the fit can use: predicted above 0 and finite at the start (a log error needs it;
    e.g. no interruption over a short period). The others are said and left out of the fit and the held-out
    error; their error is still reported."""
    ok = (predicted > 0) & np.isfinite(predicted)
    for i in np.flatnonzero(~ok):
        e = pred.entries[pred.obs_entry[i]]
        warnings.append(f"{label(e)} ({e.kind}, {e.name}): the twin predicts {predicted[i]:g} for "
                        f"{_quantity(pred, i)}: left out of the fit (its log error is undefined)")
    return ok


def _quantity(pred: Predictor, i: int) -> str:
    k = pred.obs_entry[i]
    first = int(np.flatnonzero(pred.obs_entry == k)[0])
    return pred.entries[k].observations[i - first].label


def _determined(params, z, r, J, warnings, kinds=None):
    """At the optimum: per parameter the reason it is not determined (None if it is), its 95 % interval in its own
    units, the Jacobian's rank and the singular values of its unit-norm columns. ``kinds`` (per residual): the
    measurement kind of each; the residuals' variance is taken per kind (:func:`covariance`)."""
    n, k = J.shape
    Jv = J / np.array([p.dv_dz(float(zi)) for p, zi in zip(params, z)])
    norms = np.linalg.norm(J, axis=0)
    zero = norms <= SENSITIVITY_TOL
    why: dict[str, str | None] = {p.name: ("no measurement moves it at the value reached" if zero[j] else None)
                                  for j, p in enumerate(params)}
    live = np.flatnonzero(~zero)
    sv = np.zeros(0)
    rank = 0
    if live.size:
        cols = J[:, live] / norms[live]
        # full_matrices: with fewer observations than parameters the directions past the observations' count are
        # unseen too (their singular values are 0)
        _, sv, vt = np.linalg.svd(cols, full_matrices=True)
        rank = int(np.count_nonzero(sv > RANK_TOL * sv[0]))
        for d in range(rank, live.size):                      # the directions the data do not see
            weigh = np.flatnonzero(np.abs(vt[d]) > WEIGHT_TOL)
            for j in weigh:
                others = [params[live[i]].name for i in weigh if i != j]
                name = params[live[j]].name
                if why[name] is None:
                    why[name] = (f"the measurements move it together with {', '.join(others)} (Jacobian rank "
                                 f"{rank} of {k}): they cannot tell them apart" if others else
                                 f"the measurements hardly move it (Jacobian rank {rank} of {k})")
    dof = n - k
    ci: dict = {p.name: None for p in params}
    if dof > 0:
        cov = covariance(Jv, r, dof, kinds)
        q = t975(dof)
        for j, p in enumerate(params):
            if zero[j]:
                continue
            v = p.from_z(float(z[j]))
            half = q * math.sqrt(max(float(cov[j, j]), 0.0))
            ci[p.name] = (v - half, v + half)
            if why[p.name] is None and 2 * half > p.high - p.low:
                why[p.name] = "its 95 % interval is wider than its bounds"
    else:
        warnings.append(f"{n} observations for {k} parameters: no interval (need more observations than "
                        f"parameters)")
    for j, p in enumerate(params):
        side = at_bound(p, float(z[j]))
        if why[p.name] is None and side:
            why[p.name] = (f"its optimum is at its {side} bound {p.from_z(float(z[j])):g}: the bound sets it, not "
                           f"the measurements (they would take it beyond)")
    return why, ci, rank, [float(x) for x in sv]

def at_bound(p, z: float) -> str | None:
    """``"lower"``/``"upper"`` when ``z`` (the transformed coordinate) sits on that bound of ``p``, else None."""
    lo, hi = p.z_bounds
    tol = 1e-6 * (hi - lo)
    return "lower" if z - lo < tol else "upper" if hi - z < tol else None


def covariance(Jv: np.ndarray, r: np.ndarray, dof: int, kinds=None) -> np.ndarray:
    """The parameters' covariance at the optimum of the unweighted log-space fit, with the residuals' variance
    estimated per measurement kind: ``A Jv' S Jv A``, ``A = (Jv' Jv)^-1``, ``S`` the diagonal of each residual's
    kind's mean square (scaled by ``n / dof`` for the parameters fitted). Why per kind: a corpus mixes kinds whose
    scatter differs by an order (nccl-tests rows against a node's power meter), and a factor read by one kind
    alone (``host_power_scale``) is informed by that kind's residuals only; a pooled variance would let the
    scatter of kinds it does not touch widen its interval. With one kind (a user's calibration, as a rule) this is
    the classical ``s^2 (Jv' Jv)^-1``, ``s^2 = r'r / dof`` (the sandwich estimator of White, 1980, grouped)."""
    n = r.size
    A = np.linalg.pinv(Jv.T @ Jv)
    if kinds is None or len(set(kinds.tolist())) <= 1:
        return float(r @ r) / dof * A
    s2 = np.empty(n)
    for k in set(kinds.tolist()):
        at = kinds == k
        s2[at] = float(r[at] @ r[at]) / int(at.sum())
    s2 *= n / dof
    return A @ (Jv.T * s2) @ Jv @ A


# ---------------------------------------------------------------------------------------- the calibration
@dataclass
class Calibration:
    """The outcome on one cluster's measurements: per observation the measured value and the predictions before
    and after the fit, and the fit (:class:`FitResult`)."""

    cluster: str
    entries: list[Entry]
    result: FitResult

    @property
    def fit(self) -> list[str]:
        """The names applied (fitted and determined)."""
        return list(self.result.values)

    @property
    def parameters(self) -> dict:
        return self.result.parameters()

    @property
    def warnings(self) -> list[str]:
        return self.result.warnings

    @property
    def runs(self) -> int:
        return self.result.runs

    @property
    def evaluations(self) -> int:
        return self.result.evaluations

    @property
    def iterations(self) -> int:
        return self.result.iterations

    def rows(self) -> list[dict]:
        out, k = [], 0
        res = self.result
        for e in self.entries:
            for o in e.observations:
                b, a = _finite(res.before[k]), _finite(res.after[k])
                ea = None if a is None else a / o.measured - 1
                eb = None if b is None else b / o.measured - 1
                out.append({"entry": e.index, "name": e.name, "kind": e.kind, "cluster": e.cluster,
                            "quantity": o.quantity, "label": o.label, "measured": o.measured, "predicted": a,
                            "error": ea, "before": {"predicted": b, "error": eb},
                            "after": {"predicted": a, "error": ea}})
                k += 1
        return out

    def to_dict(self) -> dict:
        rows, r = self.rows(), self.result
        return {"cluster": self.cluster, "fit": list(r.values), "entries": rows, "parameters": r.parameters(),
                "refused": r.refused, "rank": {"rank": r.rank, "parameters": r.rank_of,
                                               "singular_values": r.singular_values},
                "holdout": r.holdout, "before": summary(rows, "before"), "after": summary(rows, "after"),
                "warnings": r.warnings, "iterations": r.iterations, "evaluations": r.evaluations,
                "engine_runs": r.runs, "seconds": round(r.seconds, 3)}


def _finite(x) -> float | None:
    """A prediction as JSON keeps it: None when infinite or not a number (e.g. an MTBF with no interruption)."""
    x = float(x)
    return x if math.isfinite(x) else None


def summary(rows: list[dict], when: str) -> dict:
    """Median and worst absolute relative error by kind (and ``all``), and how many observations (``count``; the
    errors over those with a finite prediction, ``infinite`` the others)."""
    out = {}
    kinds = ["all"] + list(dict.fromkeys(r["kind"] for r in rows))
    for kind in kinds:
        errs = [r[when]["error"] for r in rows if kind == "all" or r["kind"] == kind]
        err = np.abs([x for x in errs if x is not None])
        out[kind] = {"count": len(errs), "median_abs_error": float(np.median(err)) if err.size else None,
                     "worst_abs_error": float(err.max()) if err.size else None}
        if err.size < len(errs):
            out[kind]["infinite"] = len(errs) - int(err.size)
    return out


def calibrate(cluster, entries: list[Entry], fit_names: list[str] | None = None, progress=None, *,
              holdout: float | None = None, folds: int | None = None, seed: int = 0) -> Calibration:
    """Predict every entry on ``cluster`` (an entry naming its own preset runs there), fit ``fit_names`` (None:
    the fittable parameters the entries inform) with the held-out error, and predict again (:func:`fit`)."""
    name = cluster.layout.spec.name
    return Calibration(name, entries, fit(entries, fit_names, cluster=cluster, holdout=holdout, folds=folds,
                                          seed=seed, progress=progress))
