"""Predictions against measurements and the least-squares fit of named parameters (docs/calibration.md).

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
from scipy.optimize import least_squares

from sim.calibrate.measurements import KINDS, Entry
from sim.core import fitted as fitted_factors
from sim.core.errors import ParamError, UsageError
from sim.core.progress import silent
from sim.fabric.entry import run_collective
from sim.fabric.latency import BASE_RTT
from sim.failures.entry import run_failures
from sim.jobs.job import STEP_ONLY, solve_job
from sim.jobs.models import FRAGMENTATION
from sim.jobs.step import ATTENTION_EFFICIENCY, GEMM_EFFICIENCY
from sim.power.entry import run_power
from sim.storage.entry import run_checkpoint
from sim.storage.stores import FUSE_THREADS, SERVER_CORES

GB = 1e9                          # the measurements' GB/s are decimal (nccl-tests' convention)
# What a measurement was taken under, or how finely the engine resolves it: given, never fitted.
CONDITIONS = ("days", "resolution_ms", "timeline_step_s")
# What a nullable parameter's null stands for, as one value (the start of its fit); a nullable parameter not listed
# here has no single default (a store's or a GPU's own) and is not fittable. Every fitted factor of
# sim.core.fitted is added (its null means the factor's value in effect, fitted or prior), with the factor's bounds
# (factor_bounds): null_means() reads sim.core.fitted.FACTORS when asked, so a factor declared there (and as a
# nullable parameter of a kind) is fittable with nothing written here.
NULL_MEANS = {
    "gemm_efficiency": lambda cluster: GEMM_EFFICIENCY,
    "attention_efficiency": lambda cluster: ATTENTION_EFFICIENCY["bf16"],   # BF16's; FP8 entries start from it too
    "fragmentation": lambda cluster: FRAGMENTATION,
    "client_cores": lambda cluster: float(FUSE_THREADS),
    "server_cores": lambda cluster: float(SERVER_CORES),
    "base_rtt_us": lambda cluster: BASE_RTT[cluster.kind] * 1e6,
}


def null_means() -> dict:
    """:data:`NULL_MEANS` and every fitted factor of :mod:`sim.core.fitted` (name -> ``f(cluster)``)."""
    return NULL_MEANS | {f.name: (lambda cluster, _name=f.name: fitted_factors.value(_name))
                         for f in fitted_factors.FACTORS}


def factor_bounds() -> dict[str, tuple[float, float]]:
    """The fit's bounds of each fitted factor: the factor's ``low`` and ``high``."""
    return {f.name: (float(f.low), float(f.high)) for f in fitted_factors.FACTORS}

FD_STEP = 1e-3                    # forward-difference step in the transformed coordinate (0.1 % of a log parameter)
MAX_NFEV = 60                     # evaluations of the residuals least_squares may take (its Jacobians apart)
TOLERANCE = 1e-10                 # least_squares' ftol, xtol and gtol
SENSITIVITY_TOL = 1e-6            # a Jacobian column (log error per unit of transformed parameter) below this: 0
RANK_TOL = 1e-3                   # singular values of J's unit-norm columns below this x the largest: not seen
WEIGHT_TOL = 0.1                  # a parameter weighing more than this in an unseen direction is undetermined
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
DEFAULT_FOLDS = 5                 # held-out error by default: 5 folds from this many observations up
MIN_FOLDS_OBS = 10

# What measurement would determine a parameter (the refusal's words): by name where the engine's mechanism says
# which measurement moves it, else from the kinds that declare it (KIND_WOULD).
WOULD = {
    "nvlink_efficiency": "an nccl-tests run inside one host (8 GPUs, sizes >= 64 MiB)",
    "nic_efficiency": "an nccl-tests run across 2 or more hosts at sizes >= 256 MiB (the NIC's rate bound)",
    "pcie_efficiency": "an nccl-tests run across 2 or more hosts at sizes >= 256 MiB on hosts whose GPU-NIC path "
                       "is PCIe-bound",
    "host_latency_us": "an nccl-tests run at small sizes (8 B to 64 KiB), inside one host",
    "base_rtt_us": "an nccl-tests run across hosts at small sizes (8 B to 64 KiB)",
    "gemm_efficiency": "a job's step time, tokens/s or MFU",
    "gemm_efficiency_scale": "a job's step time, tokens/s or MFU",
    "attention_efficiency": "a job's step time at a long sequence (attention a large share of the step)",
    "hbm_efficiency": "a job's step time where memory-bound kernels weigh (a small model, short sequences)",
    "launch_overhead_us": "a job's step time of a small model on few GPUs (kernel launches a large share)",
    "fragmentation": "a job near its GPU memory limit (one whose layout must recompute)",
    "storage_efficiency": "a checkpoint's durable_s or write_gbps (or a restore's read_gbps) at the storage's "
                          "full rate",
}
KIND_WOULD = {
    "job": "a job's step_time_s, tokens_per_s or mfu", "collective": "a collective's busbw_gbps or time_us",
    "nccl-tests": "an nccl-tests log", "checkpoint": "a checkpoint's blocked_s, durable_s or write_gbps",
    "restore": "a restore's durable_s or read_gbps",
    "failures": "a failure count (interruptions, effective_ratio or mtbf_hours over days)",
    "power": "a power measurement (gpu_mean_w, gpu_peak_w, cluster_peak_mw, swing_mw or energy_per_token_j)",
}


def t975(dof: int) -> float:
    """Student's t 97.5 % quantile (two-sided 95 %): the table to 30 degrees of freedom, then the Cornish-Fisher
    expansion around the normal's 1.96."""
    if dof <= len(T975):
        return T975[dof - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * dof) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * dof ** 2)


def would(name: str, kinds=()) -> str:
    """The measurement that would determine ``name`` (declared by ``kinds``)."""
    if name in WOULD:
        return WOULD[name]
    kinds = kinds or [k for k in KINDS if name in KINDS[k].by_name]
    said = list(dict.fromkeys(KIND_WOULD[k] for k in kinds if k in KIND_WOULD))
    return " or ".join(said) if said else "none of the measurement kinds (no kind declares it)"


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
    return p.default is not None or p.name in null_means()


def fittable_names(kinds=KINDS) -> set[str]:
    """The names :func:`fittable` gives on any cluster (what a ``fit`` list is checked against before a run)."""
    return {p.name for kind in kinds for p in KINDS[kind] if _is_fittable(p)}


def fittable(kinds, cluster) -> dict[str, Fittable]:
    """The fittable parameters of ``kinds`` (measurement kinds) on ``cluster``: name -> :class:`Fittable` (a fitted
    factor's bounds are the factor's; others the parameter's)."""
    out: dict[str, Fittable] = {}
    means, bounds = null_means(), factor_bounds()
    for kind in dict.fromkeys(kinds):
        for p in KINDS[kind]:
            if not _is_fittable(p):
                continue
            start = p.default if p.default is not None and p.name not in bounds else means[p.name](cluster)
            if p.name in out:
                out[p.name].kinds += (kind,)
            else:
                low, high = bounds.get(p.name, (float(p.min), float(p.max)))
                out[p.name] = Fittable(p.name, low, high, min(max(float(start), low), high), (kind,))
    return out


def choose_fit(names, table) -> list[str]:
    """The ``--fit`` names checked against ``table`` (every kind's fittable parameters, names -> :class:`Fittable` or
    :func:`fittable_names`: one no entry's kind declares is refused by the fit, naming the measurement that would
    determine it; ParamError naming ``fit`` for one that is not fittable)."""
    out = []
    for name in names:
        if name not in table:
            raise ParamError("fit", f"{str(name)[:64]!r} is not a fittable parameter (fittable: "
                                    f"{', '.join(sorted(table))})")
        if name not in out:
            out.append(name)
    return out


# ------------------------------------------------------------------------------------------------- predictions
def _job(topo, solved, values, e: Entry) -> list[float]:
    r = solved.result(topo, values)
    got = {"step_time_s": r.step_time, "tokens_per_s": r.tokens_per_s,
           "tokens_per_s_per_gpu": r.tokens_per_s / r.gpus.size, "tflops_per_gpu": r.tflops_per_gpu, "mfu": r.mfu}
    return [float(got[o.quantity]) for o in e.observations]


def _checkpoint(topo, values, e: Entry) -> list[float]:
    r = run_checkpoint(topo, values).result
    rate = r.bytes / r.durable_seconds / GB if r.durable_seconds > 0 else math.inf
    got = {"blocked_s": r.blocked_seconds, "durable_s": r.durable_seconds, "write_gbps": rate, "read_gbps": rate}
    return [float(got[o.quantity]) for o in e.observations]


def _failures(topo, values, e: Entry) -> list[float]:
    s = run_failures(topo, values).doc["summary"]
    per_day = s["interruptions_per_day"]["mean"]
    got = {"interruptions": per_day * values["days"], "effective_ratio": s["effective_ratio"]["mean"],
           "mtbf_hours": 24.0 / per_day if per_day > 0 else math.inf}
    return [float(got[o.quantity]) for o in e.observations]


def _power(topo, values, e: Entry) -> list[float]:
    r = run_power(topo, values).result
    case = r.case
    sp, draw = case.draw.sp, case.draw
    figures = case.figures(int(case.job.params["batch_tokens"]))
    n = float(draw.stage_n.sum())
    got = {"gpu_mean_w": float(draw.stage_n @ sp.energy) / (n * sp.step_s),
           "gpu_peak_w": float(sp.watts[draw.stage_n > 0].max()),
           "cluster_peak_mw": figures["cluster_peak_mw"], "swing_mw": figures["cluster_swing_mw"],
           "energy_per_token_j": figures["energy_per_token_j"]}
    return [float(got[o.quantity]) for o in e.observations]


def _collective(topo, values, e: Entry) -> list[float]:
    row = run_collective(topo, values).seeded.median.result.rows[0]
    got = {"busbw_gbps": row.busbw / GB, "algbw_gbps": row.algbw / GB, "time_us": row.time * 1e6}
    return [float(got[o.quantity]) for o in e.observations]


class Predictor:
    """The entries' predictions for given parameter values, each engine run at most once per set of the values its
    kind declares (and a job's solve once per set of its non-:data:`STEP_ONLY` values). An entry with its own
    ``cluster`` (a preset) runs there, each preset's topology loaded once; the others on ``cluster``.
    ``runs``: engine runs done, ``evaluations``: predictions asked for."""

    def __init__(self, cluster, entries: list[Entry], progress=None):
        self.cluster, self.entries = cluster, entries
        self.progress = progress or silent
        self.runs = self.evaluations = 0
        self._cache: dict = {}
        self._solves: dict = {}
        self._presets: dict = {}
        self.n_obs = sum(len(e.observations) for e in entries)
        self.measured = np.array([o.measured for e in entries for o in e.observations])
        # (observations,) the position of each observation's entry
        self.obs_entry = np.array([k for k, e in enumerate(entries) for _ in e.observations], dtype=int)
        if cluster is None and any(e.cluster is None for e in entries):
            missing = next(e for e in entries if e.cluster is None)
            raise UsageError(f"{_label(missing)}: names no cluster and the fit was given none")

    def topology(self, e: Entry):
        """The cluster ``e`` runs on: its preset (loaded once), else the run's."""
        if e.cluster is None:
            return self.cluster
        if e.cluster not in self._presets:
            from sim.fabric.topology import load_topology
            self._presets[e.cluster] = load_topology(e.cluster)[1]
        return self._presets[e.cluster]

    def start_cluster(self):
        """The cluster a parameter's start is taken on (NULL_MEANS): the run's, else the first entry's."""
        return self.cluster if self.cluster is not None else self.topology(self.entries[0])

    def predict(self, theta: dict[str, float], say=None, only=None) -> np.ndarray:
        """(observations,) every entry's predictions with ``theta`` (name -> value) set where declared; ``only``
        (entry positions): those entries alone, the others' observations NaN."""
        self.evaluations += 1
        out = np.full(self.n_obs, np.nan)
        k0 = 0
        for k, e in enumerate(self.entries):
            n = len(e.observations)
            if only is None or k in only:
                out[k0:k0 + n] = self.entry(k, theta)
            k0 += n
            if say is not None:
                say((k + 1) / len(self.entries), f"predicted {_label(e)} ({e.kind}, {e.name})")
        return out

    def entry(self, k: int, theta: dict[str, float]) -> list[float]:
        e = self.entries[k]
        own = tuple(sorted((n, v) for n, v in theta.items() if n in KINDS[e.kind].by_name))
        key = (k, own)
        if key not in self._cache:
            try:
                self._cache[key] = self._run(k, e, dict(own))
            except ParamError as err:
                raise ParamError({f"{_label(e)}.{f}": v for f, v in err.errors.items()}) from None
            except (UsageError, ValueError) as err:
                raise UsageError(f"{_label(e)} ({e.kind}, {e.name}): {err}") from None
        return self._cache[key]

    def _run(self, k: int, e: Entry, own: dict) -> list[float]:
        values = {**e.values, **own}
        topo = self.topology(e)
        if e.kind == "job":
            solved = {n: v for n, v in own.items() if n not in STEP_ONLY}
            skey = (k, tuple(sorted(solved.items())))
            if skey not in self._solves:
                self.runs += 1
                self._solves[skey] = solve_job(topo, values)
            return _job(topo, self._solves[skey], values, e)
        self.runs += 1
        if e.kind in ("checkpoint", "restore"):
            return _checkpoint(topo, values, e)
        if e.kind == "failures":
            return _failures(topo, values, e)
        if e.kind == "power":
            return _power(topo, values, e)
        if e.kind == "collective":
            return _collective(topo, values, e)
        run = run_collective(topo, values, source=("hosts" if values.get("hosts") else "gpu_list"))
        if e.log.ranks and (values.get("hosts") or values.get("gpu_list")) and run.values["gpus"] != len(e.log.ranks):
            field_name = "hosts" if values.get("hosts") else "gpu_list"
            raise ParamError(field_name, f"lists {run.values['gpus']:,} ranks but the log's Rank lines "
                                         f"{len(e.log.ranks):,}")
        times = {r.size: r.time for r in run.seeded.median.result.rows}
        return [times[o.size] for o in e.observations]


def _label(e: Entry) -> str:
    """``entry[i]``, after the file's name when the entry came from a named file (a corpus)."""
    return f"{e.origin}: {e.where}" if e.origin else e.where


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
        """Per candidate: ``value`` (applied: the start when refused), ``optimum``, ``start``, ``low``/``high`` (95 %),
        ``bounds``, ``kinds``, ``identifiable``, ``refused`` (the reason, or None), ``would``."""
        refused = {r["name"]: r for r in self.refused}
        out = {}
        for n in self.names:
            ci = self.ci.get(n)
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
    budget = [0, len(params) + 4 * (len(params) + 1)]

    def evaluate(theta, what, mask):
        budget[0] += 1
        say(0.4 + 0.4 * min(1.0, budget[0] / max(budget[1], 1)), what)
        return pred.predict(theta, only=_entries_of(pred, mask))

    # who moves at all: a forward-difference sensitivity at the start (on every observation)
    z0 = np.array([p.to_z(p.start) for p in params])
    r0 = _log_residuals(evaluate({p.name: p.start for p in params}, "residuals at the start", None), pred, all_obs)
    J0 = _jacobian(params, z0, r0, lambda th: evaluate(th, "sensitivity", None), pred, all_obs)
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
        z, r, J, its = _least_squares(live, {p.name: p.start for p in params}, pred, all_obs, evaluate)
        iterations += its
        fitted_now = {p.name: p.from_z(float(zi)) for p, zi in zip(live, z)}
        why, ci_live, rank_now, sv_now = _determined(live, z, r, J, warnings)
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
    for p in live:
        lo, hi = p.z_bounds
        zi = p.to_z(values[p.name])
        if abs(zi - lo) < 1e-9 or abs(zi - hi) < 1e-9:
            side = "lower" if abs(zi - lo) < 1e-9 else "upper"
            warnings.append(f"{p.name}: at its {side} bound {values[p.name]:g} (the measurements would take it "
                            f"beyond)")
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
        identifiable=[p.name for p in live], refused=refused, rank=rank, rank_of=rank_of, singular_values=sv, holdout=split,
        before=before, after=after, measured=pred.measured, warnings=warnings, iterations=iterations,
        evaluations=pred.evaluations, runs=pred.runs, seconds=time.perf_counter() - t0)


def _entries_of(pred: Predictor, mask) -> set | None:
    return None if mask is None else set(np.unique(pred.obs_entry[mask]).tolist())


def _positive(predicted: np.ndarray, pred: Predictor, warnings: list[str]) -> np.ndarray:
    """(observations,) the ones the fit can use: predicted above 0 and finite at the start (a log error needs it;
    e.g. no interruption over a short period). The others are said and left out of the fit and the held-out
    error; their error is still reported."""
    ok = (predicted > 0) & np.isfinite(predicted)
    for i in np.flatnonzero(~ok):
        e = pred.entries[pred.obs_entry[i]]
        warnings.append(f"{_label(e)} ({e.kind}, {e.name}): the twin predicts {predicted[i]:g} for "
                        f"{_quantity(pred, i)}: left out of the fit (its log error is undefined)")
    return ok


def _quantity(pred: Predictor, i: int) -> str:
    k = pred.obs_entry[i]
    first = int(np.flatnonzero(pred.obs_entry == k)[0])
    return pred.entries[k].observations[i - first].label


def _log_residuals(predicted: np.ndarray, pred: Predictor, mask: np.ndarray) -> np.ndarray:
    """log(predicted / measured) of the observations in ``mask`` (a prediction <= 0 is taken as tiny)."""
    return np.log(np.maximum(predicted[mask], 1e-300) / pred.measured[mask])


def _theta(params: list[Fittable], z: np.ndarray, fixed: dict) -> dict:
    return fixed | {p.name: p.from_z(float(zi)) for p, zi in zip(params, z)}


def _jacobian(params, z, r, evaluate, pred, mask, fixed=None) -> np.ndarray:
    """(observations in mask, parameters) d log(predicted/measured)/dz by forward differences (backward at an
    upper bound)."""
    J = np.zeros((r.size, len(params)))
    for j, p in enumerate(params):
        h = FD_STEP if z[j] + FD_STEP <= p.z_bounds[1] else -FD_STEP
        zj = z.copy()
        zj[j] += h
        J[:, j] = (_log_residuals(evaluate(_theta(params, zj, fixed or {})), pred, mask) - r) / h
    return J


def _least_squares(params, fixed, pred, mask, evaluate, z_start=None):
    """least_squares over ``params`` (the others at ``fixed``) on the observations in ``mask``: the optimum in the
    transformed coordinate, its residuals and Jacobian, and the iterations (Jacobians) taken."""
    fixed = {k: v for k, v in fixed.items() if k not in {p.name for p in params}}
    lo = np.array([p.z_bounds[0] for p in params])
    hi = np.array([p.z_bounds[1] for p in params])
    z0 = np.array([p.to_z(p.start) for p in params]) if z_start is None else np.asarray(z_start, float)
    z0 = np.clip(z0, lo, hi)
    only = None if mask.all() else mask
    last: dict = {}

    def fun(z):
        r = _log_residuals(evaluate(_theta(params, z, fixed), "fit", only), pred, mask)
        last["z"], last["r"] = z.copy(), r
        return r

    def jac(z):
        r = last["r"] if "z" in last and np.array_equal(last["z"], z) else fun(z)
        return _jacobian(params, z, r, lambda th: evaluate(th, "fit: Jacobian", only), pred, mask, fixed)

    sol = least_squares(fun, z0, jac=jac, bounds=(lo, hi) if len(params) else (-np.inf, np.inf), method="trf",
                        x_scale="jac", ftol=TOLERANCE, xtol=TOLERANCE, gtol=TOLERANCE, max_nfev=MAX_NFEV)
    z = sol.x
    r = fun(z)
    return z, r, jac(z), int(sol.njev or 0)


def _determined(params, z, r, J, warnings):
    """At the optimum: per parameter the reason it is not determined (None if it is), its 95 % interval in its own
    units, the Jacobian's rank and the singular values of its unit-norm columns."""
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
        _, sv, vt = np.linalg.svd(cols, full_matrices=False)
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
        s2 = float(r @ r) / dof
        cov = s2 * np.linalg.pinv(Jv.T @ Jv)
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
    return why, ci, rank, [float(x) for x in sv]


# -------------------------------------------------------------------------------------------- held-out error
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
        z, _, _, _ = _least_squares(fold_params, values, pred, train,
                                    lambda th, what, mask: pred.predict(th, only=_entries_of(pred, mask)))
        theta = _theta(fold_params, z, values)
        held_pred[held] = pred.predict(theta, only=_entries_of(pred, _mask(pred.n_obs, held)))[held]
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
