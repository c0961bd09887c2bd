"""The validation capability's live section, sent by the ``validate`` kind (:mod:`twin.capabilities.validation.kinds`):
one row of the run's figures (``validation_stats``), its phase (running, then done) and, once the corpus has been
predicted, the absolute relative errors over every observation (count, median, p90, max), the cross-validated median
and whether the thresholds hold. The Validation page shows it while a run computes."""
from __future__ import annotations

from twin.live.sections import Section, register

PHASE_RUNNING, PHASE_DONE = 0, 1
PHASES = {PHASE_RUNNING: "running", PHASE_DONE: "done"}
# One row: phase; observations; median, p90 and max |error| (fractions, 0.08 = 8 %) after the fitted factors; the
# same median before them (the factors at their priors); the cross-validated median; passed (1 / 0).
FIELDS = ("phase", "count", "median", "p90", "max", "median_before", "cv_median", "passed")

VALIDATION_STATS = register(Section(
    30, "validation_stats", "float32", "rows", fields=FIELDS, codes={"phase": PHASES}, ints=("count", "passed"),
    doc="one row: the validate run's phase and its errors (NaN while not known)"))


def stats_row(phase: int, doc: dict | None = None) -> dict:
    """The ``validation_stats`` row of a result document (None: nothing known yet)."""
    d = doc or {}
    overall = d.get("overall") or {}
    before = (d.get("before") or {}).get("overall") or {}
    cv = d.get("cross_validated") or {}
    passed = d.get("passed")
    return {"phase": phase, "count": overall.get("count"), "median": overall.get("median"), "p90": overall.get("p90"),
            "max": overall.get("max"), "median_before": before.get("median"), "cv_median": cv.get("median"),
            "passed": None if passed is None else int(bool(passed))}
