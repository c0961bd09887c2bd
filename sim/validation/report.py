"""The validation report: every corpus observation predicted with the fitted factors at their priors ("before")
and at their fitted values ("after"), the errors summarized per kind and overall, optionally cross-validated, and
held against the thresholds (:mod:`sim.validation.thresholds`).

Cross-validation (``folds`` = K): the calibration's held-out fits (:func:`sim.calibrate.holdout.holdout_error`): the
observations dealt into K folds in a fixed random order (seed 0); for each fold the factors are fitted on the other
K-1 and the fold predicted with those values, so each held-out error comes from factors that never saw it. The
report's ``cross_validated.median`` is the median of those held-out errors.
"""
from __future__ import annotations

from sim.core import fitted
from sim.core.progress import silent
from sim.validation import thresholds
from sim.calibrate.fit import Predictor
from sim.validation.fitting import factor_names, fit_factors, gpu_of
from sim.validation.stats import by_kind

# The unit each measured quantity is given in (the corpus's keys say it too).
UNITS = {"busbw_gbps": "GB/s", "algbw_gbps": "GB/s", "time_us": "us", "time": "s", "step_time_s": "s",
         "tokens_per_s": "tokens/s", "tokens_per_s_per_gpu": "tokens/s/GPU", "tflops_per_gpu": "TFLOP/s/GPU",
         "mfu": "share of peak", "blocked_s": "s", "durable_s": "s", "write_gbps": "GB/s", "read_gbps": "GB/s",
         "interruptions": "count", "effective_ratio": "share", "mtbf_hours": "h", "gpu_mean_w": "W",
         "gpu_peak_w": "W", "cluster_peak_mw": "MW", "swing_mw": "MW", "energy_per_token_j": "J",
         "gpu_energy_per_token_j": "J", "node_mean_kw": "kW", "node_peak_kw": "kW"}


def observation_rows(corpus) -> list[dict]:
    """One row per observation, in the predictor's order: its id, source, kind, GPU, quantity and measurement."""
    rows = []
    for e in corpus.entries:
        src = e.source
        for o in e.observations:
            oid = e.id + (f"#{o.label}" if len(e.observations) > 1 else "")
            rows.append({"id": oid, "source": src["id"], "kind": e.kind, "gpu": gpu_of(e.cluster),
                         "cluster": e.cluster, "label": o.label, "quantity": o.quantity,
                         "unit": UNITS.get(o.quantity, ""), "measured": float(o.measured), "url": src["url"],
                         "title": src["title"], "where": e.provenance.get("where"),
                         "hardware": e.provenance.get("hardware"), "note": e.provenance.get("note"),
                         "excused": corpus.excused.get(oid), "entry": e})
    return rows


def validate(corpus, folds: int | None = None, factors: dict[str, float] | None = None, progress=None) -> dict:
    """The report (CONTRACTS: overall, kinds, before, cross_validated, factors, sources, observations): the
    corpus predicted with ``factors`` (default: the fitted values in effect, :func:`sim.core.fitted.value`) and
    with the priors; ``folds``: cross-validate with that many folds."""
    say = progress or silent
    names = factor_names(corpus.entries)
    after_theta = {n: (factors or {}).get(n, fitted.value(n)) for n in names}
    before_theta = {n: fitted.factor(n).prior for n in names}
    rows = observation_rows(corpus)
    share = 0.3 if folds else 0.5
    pred = Predictor(None, corpus.entries)                      # each entry on its own preset
    after = pred.predict(after_theta, say=lambda f, m: say(share * f, m))
    before = pred.predict(before_theta, say=lambda f, m: say(share * (1 + f), m))
    for r, a, b in zip(rows, after, before):
        r["predicted"], r["error"] = float(a), float(a) / r["measured"] - 1
        r["before"] = {"predicted": float(b), "error": float(b) / r["measured"] - 1}
    overall, kinds = by_kind(rows)
    b_overall, b_kinds = by_kind([{"kind": r["kind"], "error": r["before"]["error"]} for r in rows])
    cross = None
    if folds:
        cross = cross_validate(corpus, names, folds, lambda f, m: say(2 * share + (1 - 2 * share) * f, m))
    report = {
        "overall": overall, "kinds": kinds, "before": {"overall": b_overall, "kinds": b_kinds},
        "cross_validated": cross,
        "factors": [{"name": f.name, "prior": f.prior, "value": after_theta.get(f.name, fitted.value(f.name)),
                     "low": f.low, "high": f.high, "kinds": list(f.kinds), "doc": f.doc} for f in fitted.FACTORS],
        "fit": fitted.fitted_file().get("fit", {}),
        "sources": [{**{k: s.get(k) for k in ("id", "title", "url", "date", "publisher", "kind")},
                     "count": sum(1 for r in rows if r["source"] == sid)} for sid, s in corpus.sources.items()],
        "observations": [{k: v for k, v in r.items() if k != "entry"} for r in rows],
        "thresholds": [{"what": w, "value": v} for w, v in thresholds.table()],
    }
    say(1.0, f"validated {overall['count']} observations: median {overall['median']:.1%}")
    return report


def cross_validate(corpus, names: list[str], k: int, progress) -> dict:
    """K-fold held-out error of the fitted factors (the calibration's held-out fits, module docstring):
    ``{"folds", "median", "count", "before_median"}``."""
    h = fit_factors(corpus.entries, names, folds=k, progress=progress)["holdout"]
    return {"folds": k, "median": h["median_abs_error"], "count": h["count"],
            "before_median": h["before_median_abs_error"], "reason": h["reason"]}


def fit_corpus(corpus, progress=None) -> dict:
    """The fitted factors across the whole corpus and the fit's held-out error (:func:`fit_factors`)."""
    return fit_factors(corpus.entries, factor_names(corpus.entries), progress=progress)
