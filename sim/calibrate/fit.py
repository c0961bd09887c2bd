"""Predictions against measurements and the least-squares fit of named parameters (docs/calibration.md).

* **Predictions** (:class:`Predictor`): each entry's observations from its kind's engine entry point, with the
  fitted parameters set in every entry whose kind declares them. The error of an observation is
  ``predicted / measured - 1``. Expensive parts are computed once per entry and reused: a job's placement,
  transfers and max-min solve (:func:`sim.jobs.job.solve_job`) while only :data:`sim.jobs.job.STEP_ONLY` parameters
  change (the closed-form step is re-run); a collective's run covers every row of its log at once (one routing and
  solve; the rows are its sizes); any entry is re-run only when a parameter its kind declares changes.
* **Fittable parameters** (:func:`fittable`): the float parameters of the entries' ParamSets with a finite min and
  max, starting from their default, or for a nullable one from the named constant its null stands for
  (:data:`NULL_MEANS`); :data:`CONDITIONS` (what a measurement was taken under) are not fitted.
* **Fit** (:func:`calibrate`): Levenberg-Marquardt on the relative errors, projected onto the bounds, in a
  transformed coordinate (log for a positive lower bound, ``asinh`` of the distance from a zero lower bound), with a
  forward-difference Jacobian; 95 % intervals ``value +- t sqrt(diag(s^2 (J^T J)^-1))`` at the optimum; a parameter
  is not identifiable when its Jacobian column is about 0, when ``J^T J`` is ill-conditioned along it, or when its
  interval is wider than its bounds.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sim.calibrate.measurements import KINDS, Entry
from sim.core.errors import ParamError, UsageError
from sim.core.progress import silent
from sim.fabric.entry import run_collective
from sim.fabric.latency import BASE_RTT
from sim.failures.entry import run_failures
from sim.jobs.job import STEP_ONLY, solve_job
from sim.jobs.models import FRAGMENTATION
from sim.jobs.step import ATTENTION_EFFICIENCY, GEMM_EFFICIENCY
from sim.storage.entry import run_checkpoint
from sim.storage.stores import FUSE_THREADS, SERVER_CORES

CONDITIONS = ("days",)            # the period a failures measurement covers: given, never fitted
# What a nullable parameter's null stands for, as one value (the start of its fit); a nullable parameter not listed
# here has no single default (a store's or a GPU's own) and is not fittable.
NULL_MEANS = {
    "gemm_efficiency": lambda cluster: GEMM_EFFICIENCY,
    "attention_efficiency": lambda cluster: ATTENTION_EFFICIENCY["bf16"],   # BF16's; FP8 entries start from it too
    "fragmentation": lambda cluster: FRAGMENTATION,
    "client_cores": lambda cluster: float(FUSE_THREADS),
    "server_cores": lambda cluster: float(SERVER_CORES),
    "base_rtt_us": lambda cluster: BASE_RTT[cluster.kind] * 1e6,
}
FD_STEP = 1e-3                    # forward-difference step in the transformed coordinate (0.1 % of a log parameter)
MAX_ITERATIONS = 30               # Levenberg-Marquardt iterations at most
TOLERANCE = 1e-10                 # stop when the relative decrease of the squared error is below this
SENSITIVITY_TOL = 1e-6            # a Jacobian column (relative error per unit of transformed parameter) below this: 0
MAX_CONDITION = 1e10              # J^T J (columns scaled to unit norm) more ill-conditioned than this: not identifiable
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(dof: int) -> float:
    """Student's t 97.5 % quantile (two-sided 95 %): the table to 30 degrees of freedom, then the Cornish-Fisher
    expansion around the normal's 1.96."""
    if dof <= len(T975):
        return T975[dof - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)


# ------------------------------------------------------------------------------------------ fittable parameters
@dataclass
class Fittable:
    """A parameter the fit may set: its bounds, its start and the kinds that declare it."""

    name: str
    low: float
    high: float
    start: float
    kinds: tuple[str, ...]

    @property
    def log(self) -> bool:
        return self.low > 0

    @property
    def scale(self) -> float:
        """The asinh transform's scale (zero lower bound): the start's distance from it, else a millionth of the
        range."""
        return max(self.start - self.low, (self.high - self.low) * 1e-6)

    def to_z(self, v: float) -> float:
        return math.log(v) if self.log else math.asinh((v - self.low) / self.scale)

    def from_z(self, z: float) -> float:
        v = math.exp(z) if self.log else self.low + self.scale * math.sinh(z)
        return min(max(v, self.low), self.high)            # rounding at a bound stays within it

    def dv_dz(self, z: float) -> float:
        return math.exp(z) if self.log else self.scale * math.cosh(z)

    @property
    def z_bounds(self) -> tuple[float, float]:
        return self.to_z(self.low), self.to_z(self.high)


def _is_fittable(p) -> bool:
    """A float parameter with finite bounds, not a condition, with a start (its default or a NULL_MEANS entry)."""
    if p.type != "float" or p.name in CONDITIONS or p.min is None or p.max is None:
        return False
    if not (math.isfinite(p.min) and math.isfinite(p.max)) or p.max <= p.min:
        return False
    return p.default is not None or p.name in NULL_MEANS


def fittable_names(kinds=KINDS) -> set[str]:
    """The names :func:`fittable` gives on any cluster (what a ``fit`` list is checked against before a run)."""
    return {p.name for kind in kinds for p in KINDS[kind] if _is_fittable(p)}


def fittable(kinds, cluster) -> dict[str, Fittable]:
    """The fittable parameters of ``kinds`` (measurement kinds) on ``cluster``: name -> :class:`Fittable`."""
    out: dict[str, Fittable] = {}
    for kind in dict.fromkeys(kinds):
        for p in KINDS[kind]:
            if not _is_fittable(p):
                continue
            start = p.default if p.default is not None else NULL_MEANS[p.name](cluster)
            if p.name in out:
                out[p.name].kinds += (kind,)
            else:
                out[p.name] = Fittable(p.name, float(p.min), float(p.max), float(start), (kind,))
    return out


def choose_fit(names, table) -> list[str]:
    """The ``--fit`` names checked against ``table`` (every kind's fittable parameters, names -> :class:`Fittable` or
    :func:`fittable_names`: one no entry's kind declares
    is reported as not identifiable, not refused; ParamError naming ``fit`` for one that is not fittable)."""
    out = []
    for name in names:
        if name not in table:
            raise ParamError("fit", f"{str(name)[:64]!r} is not a fittable parameter (fittable: "
                                    f"{', '.join(sorted(table))})")
        if name not in out:
            out.append(name)
    return out


# ------------------------------------------------------------------------------------------------- predictions
class Predictor:
    """The entries' predictions for given parameter values, each engine run at most once per set of the values its
    kind declares (and a job's solve once per set of its non-:data:`STEP_ONLY` values). ``runs``: engine runs done,
    ``evaluations``: predictions asked for."""

    def __init__(self, cluster, entries: list[Entry], progress=None):
        self.cluster, self.entries = cluster, entries
        self.progress = progress or silent
        self.runs = self.evaluations = 0
        self._cache: dict = {}
        self._solves: dict = {}
        self.n_obs = sum(len(e.observations) for e in entries)
        self.measured = np.array([o.measured for e in entries for o in e.observations])

    def predict(self, theta: dict[str, float], say=None) -> np.ndarray:
        """(observations,) every entry's predictions with ``theta`` (name -> value) set where declared."""
        self.evaluations += 1
        out = []
        for k, e in enumerate(self.entries):
            out.extend(self.entry(e, theta))
            if say is not None:
                say((k + 1) / len(self.entries), f"predicted {e.where} ({e.kind}, {e.name})")
        return np.asarray(out, dtype=float)

    def entry(self, e: Entry, theta: dict[str, float]) -> list[float]:
        own = tuple(sorted((n, v) for n, v in theta.items() if n in KINDS[e.kind].by_name))
        key = (e.index, own)
        if key not in self._cache:
            try:
                self._cache[key] = self._run(e, dict(own))
            except ParamError as err:
                raise ParamError({f"{e.where}.{k}": v for k, v in err.errors.items()}) from None
            except (UsageError, ValueError) as err:
                raise UsageError(f"{e.where} ({e.kind}, {e.name}): {err}") from None
        return self._cache[key]

    def _run(self, e: Entry, own: dict) -> list[float]:
        values = {**e.values, **own}
        if e.kind == "job":
            solved = {n: v for n, v in own.items() if n not in STEP_ONLY}
            skey = (e.index, tuple(sorted(solved.items())))
            if skey not in self._solves:
                self.runs += 1
                self._solves[skey] = solve_job(self.cluster, values)
            r = self._solves[skey].result(self.cluster, values)
            return [{"step_time_s": r.step_time, "tokens_per_s": r.tokens_per_s,
                     "tflops_per_gpu": r.tflops_per_gpu}[o.quantity] for o in e.observations]
        self.runs += 1
        if e.kind in ("checkpoint", "restore"):
            r = run_checkpoint(self.cluster, values).result
            return [{"blocked_s": r.blocked_seconds, "durable_s": r.durable_seconds}[o.quantity]
                    for o in e.observations]
        if e.kind == "failures":
            s = run_failures(self.cluster, values).doc["summary"]
            return [{"interruptions": s["interruptions_per_day"]["mean"] * values["days"],
                     "effective_ratio": s["effective_ratio"]["mean"]}[o.quantity] for o in e.observations]
        run = run_collective(self.cluster, values, source=("hosts" if values.get("hosts") else "gpu_list"))
        if e.log.ranks and (values.get("hosts") or values.get("gpu_list")) and run.values["gpus"] != len(e.log.ranks):
            field_name = "hosts" if values.get("hosts") else "gpu_list"
            raise ParamError(field_name, f"lists {run.values['gpus']:,} ranks but the log's Rank lines "
                                         f"{len(e.log.ranks):,}")
        times = {r.size: r.time for r in run.seeded.median.result.rows}
        return [times[o.size] for o in e.observations]


# -------------------------------------------------------------------------------------------------------- fit
@dataclass
class Calibration:
    """The outcome: per observation the measured value and the predictions before and after the fit, the fitted
    parameters, the summaries and warnings."""

    cluster: str
    entries: list[Entry]
    fit: list[str]
    before: np.ndarray
    after: np.ndarray
    parameters: dict
    warnings: list[str] = field(default_factory=list)
    iterations: int = 0
    evaluations: int = 0
    runs: int = 0
    seconds: float = 0.0

    def rows(self) -> list[dict]:
        out, k = [], 0
        for e in self.entries:
            for o in e.observations:
                b, a = float(self.before[k]), float(self.after[k])
                out.append({"entry": e.index, "name": e.name, "kind": e.kind, "quantity": o.quantity,
                            "label": o.label, "measured": o.measured, "predicted": a,
                            "error": a / o.measured - 1,
                            "before": {"predicted": b, "error": b / o.measured - 1},
                            "after": {"predicted": a, "error": a / o.measured - 1}})
                k += 1
        return out

    def to_dict(self) -> dict:
        rows = self.rows()
        return {"cluster": self.cluster, "fit": self.fit, "entries": rows, "parameters": self.parameters,
                "before": summary(rows, "before"), "after": summary(rows, "after"), "warnings": self.warnings,
                "iterations": self.iterations, "evaluations": self.evaluations, "engine_runs": self.runs,
                "seconds": round(self.seconds, 3)}


def summary(rows: list[dict], when: str) -> dict:
    """Median and worst absolute relative error by kind (and ``all``), and how many observations."""
    out = {}
    kinds = ["all"] + list(dict.fromkeys(r["kind"] for r in rows))
    for kind in kinds:
        err = np.abs([r[when]["error"] for r in rows if kind == "all" or r["kind"] == kind])
        out[kind] = {"count": int(err.size), "median_abs_error": float(np.median(err)),
                     "worst_abs_error": float(err.max())}
    return out


def calibrate(cluster, entries: list[Entry], fit: list[str] | None = None, progress=None) -> Calibration:
    """Predict every entry, fit ``fit`` (names; None: the fittable parameters the entries inform, by a
    forward-difference sensitivity at the start) and predict again. Progress: the first prediction's entries
    (0..0.4), then the fit's evaluations, each one entries' worth, against the most it may take (0.4..1)."""
    t0 = time.perf_counter()
    say = progress or silent
    name = cluster.layout.spec.name
    table = fittable(KINDS, cluster)
    chosen = choose_fit(fit, table) if fit is not None else None
    present = {e.kind for e in entries}
    pred = Predictor(cluster, entries)
    before = pred.predict({}, say=lambda f, m: say(0.4 * f, m))
    warnings: list[str] = []
    candidates = chosen if chosen is not None else sorted(n for n, p in table.items() if present & set(p.kinds))
    budget = len(candidates) + MAX_ITERATIONS * (len(candidates) + 2) + 1
    done = [0]

    def evaluate(theta: dict, what: str) -> np.ndarray:
        done[0] += 1
        say(0.4 + 0.6 * min(1.0, done[0] / budget), what)
        return pred.predict(theta)

    params = [table[n] for n in candidates]
    z0 = np.array([p.to_z(p.start) for p in params])
    theta0 = {p.name: p.start for p in params}
    r0 = evaluate(theta0, "residuals at the start") / pred.measured - 1
    J0 = _jacobian(params, z0, r0, lambda th: evaluate(th, "sensitivity"), pred.measured)
    informed = np.linalg.norm(J0, axis=0) > SENSITIVITY_TOL
    parameters = {}
    for p, ok in zip(params, informed):
        if not ok and chosen is not None:
            warnings.append(f"{p.name}: not identifiable from these measurements (they do not change with it): "
                            f"kept at {p.start:g}")
        parameters[p.name] = {"value": p.start, "start": p.start, "low": None, "high": None,
                              "bounds": [p.low, p.high], "kinds": list(p.kinds), "identifiable": False}
    fitted = [p for p, ok in zip(params, informed) if ok]
    if chosen is None:
        parameters = {p.name: parameters[p.name] for p in fitted}
    if not fitted:
        warnings.append("no parameter to fit: the measurements inform none of the chosen ones")
        say(1.0, "nothing to fit")
        return Calibration(name, entries, [], before, before, parameters, warnings, 0, pred.evaluations,
                           pred.runs, time.perf_counter() - t0)
    z, r, J, iterations = _levenberg_marquardt(fitted, z0[informed], r0, J0[:, informed], pred, evaluate)
    theta = {p.name: p.from_z(zi) for p, zi in zip(fitted, z)} | {p.name: p.start for p, ok in zip(params, informed)
                                                                   if not ok}
    after = pred.predict(theta)
    _intervals(fitted, z, r, J, parameters, warnings)
    say(1.0, f"fitted {', '.join(p.name for p in fitted)} in {iterations} iterations")
    return Calibration(name, entries, [p.name for p in fitted], before, after, parameters, warnings, iterations,
                       pred.evaluations, pred.runs, time.perf_counter() - t0)


def _theta(params: list[Fittable], z: np.ndarray) -> dict:
    return {p.name: p.from_z(float(zi)) for p, zi in zip(params, z)}


def _jacobian(params: list[Fittable], z: np.ndarray, r: np.ndarray, evaluate, measured) -> np.ndarray:
    """(observations, parameters) d(relative error)/dz by forward differences (backward at an upper bound)."""
    J = np.zeros((r.size, len(params)))
    for j, p in enumerate(params):
        hi = p.z_bounds[1]
        h = FD_STEP if z[j] + FD_STEP <= hi else -FD_STEP
        zj = z.copy()
        zj[j] += h
        J[:, j] = (evaluate(_theta(params, zj)) / measured - 1 - r) / h
    return J


def _levenberg_marquardt(params, z, r, J, pred, evaluate):
    """Minimize ``sum(r^2)`` over ``z`` within the bounds (steps projected onto them); Marquardt's scaling by
    ``diag(J^T J)``. Returns the optimum, its residuals and Jacobian and the iterations taken."""
    lo = np.array([p.z_bounds[0] for p in params])
    hi = np.array([p.z_bounds[1] for p in params])
    z = np.clip(z, lo, hi)
    cost, lam, it = float(r @ r), 1e-3, 0
    for it in range(1, MAX_ITERATIONS + 1):
        A, g = J.T @ J, J.T @ r
        D = np.diag(A).copy() + 1e-12
        improved = False
        while lam < 1e12:
            step = np.linalg.solve(A + lam * np.diag(D), -g)
            z_new = np.clip(z + step, lo, hi)
            if np.allclose(z_new, z, rtol=0, atol=1e-12):
                break
            r_new = evaluate(_theta(params, z_new), f"fit iteration {it}") / pred.measured - 1
            c_new = float(r_new @ r_new)
            if c_new < cost:
                improved = True
                break
            lam *= 4
        if not improved:
            break
        decrease = (cost - c_new) / max(cost, 1e-300)
        z, r, cost, lam = z_new, r_new, c_new, max(lam / 3, 1e-9)
        J = _jacobian(params, z, r, lambda th: evaluate(th, f"fit iteration {it}: Jacobian"), pred.measured)
        if decrease < TOLERANCE or cost < 1e-24:
            break
    return z, r, J, it


def _intervals(params, z, r, J, parameters: dict, warnings: list[str]) -> None:
    """95 % intervals in the parameters' own units from ``s^2 (J^T J)^-1`` (J by the chain rule through the
    transform), and identifiability: a Jacobian column about 0 (the measurements do not change with it), ``J^T J``
    ill-conditioned along it (they cannot tell it from the other fitted parameters), or an interval wider than its
    bounds. A value at a bound is said too (the data would take it beyond)."""
    n, k = J.shape
    Jv = J / np.array([p.dv_dz(float(zi)) for p, zi in zip(params, z)])
    zero = np.linalg.norm(J, axis=0) <= SENSITIVITY_TOL
    weak = np.zeros(k, bool)
    live = np.flatnonzero(~zero)
    if live.size > 1:
        cols = Jv[:, live] / np.linalg.norm(Jv[:, live], axis=0)
        sv, vt = np.linalg.svd(cols, full_matrices=False)[1:]
        if sv[-1] <= 0 or (sv[0] / sv[-1]) ** 2 > MAX_CONDITION:
            weak[live] = np.abs(vt[-1]) > 0.1   # the parameters along the direction the data do not see
    dof = n - k
    cov = None
    if dof > 0:
        cov = float(r @ r) / dof * np.linalg.pinv(Jv.T @ Jv)
    else:
        warnings.append(f"{n} observations for {k} parameters: no interval (need more observations than "
                        f"parameters)")
    q = t975(dof) if dof > 0 else None
    for j, p in enumerate(params):
        v = p.from_z(float(z[j]))
        out = parameters[p.name]
        out["value"] = v
        why = ("the measurements do not change with it at the value reached" if zero[j] else
               "the measurements cannot tell it from the other fitted parameters" if weak[j] else None)
        if cov is not None and not zero[j]:
            half = q * math.sqrt(max(float(cov[j, j]), 0.0))
            out["low"], out["high"] = v - half, v + half
            if why is None and 2 * half > p.high - p.low:
                why = "its interval is wider than its bounds"
        out["identifiable"] = why is None
        if why is not None:
            warnings.append(f"{p.name}: not identifiable ({why})")
        lo, hi = p.z_bounds
        if abs(z[j] - lo) < 1e-9 or abs(z[j] - hi) < 1e-9:
            side = "lower" if abs(z[j] - lo) < 1e-9 else "upper"
            warnings.append(f"{p.name}: at its {side} bound {v:g} (the measurements would take it beyond)")
