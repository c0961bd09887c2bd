"""The distribution over seeds of failures timelines (:func:`summarize`): effective ratio, interruptions and
degradations (mean and percentiles) and the mean time lost per phase and per cause.
"""
from __future__ import annotations

import numpy as np

from sim.core.errors import UsageError
from sim.failures.timeline import PHASES


def stats(x) -> dict:
    x = np.asarray(x, float)
    if not x.size:
        return {"mean": None, "p5": None, "p50": None, "p95": None, "min": None, "max": None}
    p5, p50, p95 = np.percentile(x, [5, 50, 95])
    return {"mean": float(x.mean()), "p5": float(p5), "p50": float(p50), "p95": float(p95), "min": float(x.min()),
            "max": float(x.max())}


def summarize(results: list[dict]) -> dict:
    """The distribution over seeds of :func:`sim.failures.timeline.simulate` results: effective ratio and
    interruptions per day (mean, p5, p50, p95, min, max), the mean seconds lost per phase and per cause, and the
    mean seconds of detection per failure class."""
    if not results:
        raise UsageError("summarize needs at least one result")
    n = len(results)
    phases = {k: sum(r["lost"]["by_phase"][k] for r in results) / n for k in PHASES}
    causes: dict[str, float] = {}
    for r in results:
        for k, v in r["lost"]["by_cause"].items():
            causes[k] = causes.get(k, 0.0) + v / n
    detection: dict[str, float] = {}
    for r in results:
        for k, v in r["detection"]["by_class"].items():
            detection[k] = detection.get(k, 0.0) + v / n
    return {"seeds": [r["seed"] for r in results], "count": n,
            "detection_mean": dict(sorted(detection.items(), key=lambda kv: -kv[1])),
            "effective_ratio": stats([r["effective_ratio"] for r in results]),
            "interruptions_per_day": stats([r["interruptions_per_day"] for r in results]),
            "planned_per_day": stats([r["planned_interruptions"] / r["days"] for r in results]),
            "degradations": stats([r["degradations"] for r in results]),
            "lost_mean": {"by_phase": phases, "by_cause": dict(sorted(causes.items(), key=lambda kv: -kv[1]))},
            "wall_s": results[0]["wall_s"], "mtbf_s": results[0]["mtbf_s"], "young_daly_s": results[0]["young_daly_s"]}
