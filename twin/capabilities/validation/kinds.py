"""The ``validate`` run kind: the twin against the public validation corpus (``sim/validation/corpus/``, one TOML file
per public source), every observation run through the capability a user would run and its error measured, the error
by kind before and after the fitted factors, and optionally their cross-validated error
(:func:`sim.validation.entry.run_validate`, what ``python -m sim validate --json`` runs). Its parameters are the
engine's own declaration (:data:`sim.validation.params.VALIDATE`: ``kind``, ``cross_validate``); the corpus is the
repository's, not a parameter. The run reads nothing of its cluster (the corpus names the presets its observations
ran on); a run has one all the same, as every run does (the Validation page starts it on the header's cluster).

- **Summary**: the engine's document (CONTRACTS.md, docs/validation.md): ``overall`` and ``kinds`` (count, median,
  p90, max absolute relative error), ``before`` (the fitted factors at their priors), ``cross_validated``,
  ``factors``, ``sources``, ``observations`` (measured, predicted, signed error, source and where in it),
  ``thresholds``, ``passed``, ``broken``. No arrays: a few hundred observations are kept in the summary.
- **Headline**: the overall median |error| after and before the fitted factors, the p90, the cross-validated
  median (format ``error``) and the observations counted.
- **Cost and estimate**: the corpus's entries of the asked kind, once, and once more per fold of a cross-validation
  (``observations``), over ``TWIN_RUNS_VALIDATION_OBSERVATIONS_PER_SECOND``. A refusal names ``cross_validate``: the
  whole corpus once is within issue 39's budget of 2 minutes, the folds are what multiply it.
- **Progress**: the engine's own fractions; live, one ``validation_stats`` row at the start (running) and at the end
  (the errors, :mod:`twin.capabilities.validation.live`).
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Callable

import numpy as np

from sim.validation.corpus import CORPUS_DIR, EXCUSED_FILE
from sim.validation.params import VALIDATE
from twin.capabilities.failures.kinds import json_safe
from twin.capabilities.validation import live
from twin.runs import limits
from twin.runs.registry import Kind, register

KIND = "validate"
# The repository's corpus (sim/validation/corpus/*.toml, the engine's default directory).
CORPUS: Path = CORPUS_DIR
OBSERVATIONS_PER_SECOND = "TWIN_RUNS_VALIDATION_OBSERVATIONS_PER_SECOND"


def corpus_entries(kind: str | None = None, corpus: Path | None = None) -> int:
    """How many ``[[entry]]`` tables of the corpus's source files are of ``kind`` (None: all): the run's work,
    counted at submit without validating the entries (the engine's parser, :func:`sim.validation.corpus.load_corpus`,
    checks them when it runs). A file that does not parse counts nothing here: the run fails on it naming the
    file."""
    n = 0
    for path in sorted((corpus or CORPUS).glob("*.toml")):
        if path.name == EXCUSED_FILE:
            continue
        try:
            entries = tomllib.loads(path.read_text()).get("entry", [])
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        n += sum(1 for e in entries if isinstance(e, dict) and (kind is None or e.get("kind") == kind))
    return n


def cost(values: dict, cluster) -> dict:
    """The corpus's entries of ``kind`` predicted once, and once more per fold of a cross-validation."""
    return {"observations": corpus_entries(values.get("kind")) * (1 + (values.get("cross_validate") or 0))}


def estimate(values: dict, cluster) -> float:
    return limits.per_second(cost(values, cluster)["observations"], OBSERVATIONS_PER_SECOND)


def plain(obj):
    """``obj`` as JSON holds it: numpy scalars and arrays as Python numbers and lists, non-finite floats as None
    (:func:`twin.capabilities.failures.kinds.json_safe`), so that the stored summary is what ``--json`` prints."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    return json_safe(obj)


def validate(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The corpus against the twin as ``python -m sim validate --json`` runs it (the cluster's layout is not read)."""
    from sim.validation.entry import run_validate
    progress(0.0, "reading the corpus", validation_stats=[live.stats_row(live.PHASE_RUNNING)], force=True)
    out = run_validate({p.name: params.get(p.name) for p in VALIDATE},
                       progress=lambda f, message="": progress(0.99 * f, message))
    doc = plain(out.to_dict() if hasattr(out, "to_dict") else out)
    overall = doc.get("overall") or {}
    median = overall.get("median")
    progress(1.0, f"{overall.get('count', 0)} observations, median |error| "
                  + ("–" if median is None else f"{100 * median:.1f} %"),
             validation_stats=[live.stats_row(live.PHASE_DONE, doc)], force=True)
    return doc, {}


def headline(summary: dict) -> list[dict]:
    """The overall median |error| after and before the fitted factors, its p90, the cross-validated median and the
    number of observations."""
    overall = summary.get("overall") or {}
    before = (summary.get("before") or {}).get("overall") or {}
    cv = summary.get("cross_validated") or {}
    return [{"key": "median", "label": "median |error|", "format": "error", "value": overall.get("median")},
            {"key": "median_before", "label": "before the fitted factors", "format": "error",
             "value": before.get("median")},
            {"key": "p90", "label": "p90 |error|", "format": "error", "value": overall.get("p90")},
            {"key": "cv_median", "label": "cross-validated median", "format": "error", "value": cv.get("median")},
            {"key": "count", "label": "observations", "format": "int", "value": overall.get("count")}]


register(Kind(KIND, "Validation (the twin against the public corpus of measurements)", VALIDATE, validate,
              view="validation", form=False, brief=("kind", "cross_validate"), cost=cost, estimate=estimate,
              drives="cross_validate", throughputs=(OBSERVATIONS_PER_SECOND,), headline_of=headline,
              main=("kind", "cross_validate")))
