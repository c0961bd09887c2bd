"""Summaries of absolute relative errors: count, median, 90th percentile and maximum (the figures peers publish)."""
from __future__ import annotations

import numpy as np


def summarize(errors) -> dict:
    """``{"count", "median", "p90", "max"}`` of ``|errors|`` (fractions); zeros when there are none."""
    e = np.abs(np.asarray(list(errors), dtype=float))
    if e.size == 0:
        return {"count": 0, "median": 0.0, "p90": 0.0, "max": 0.0}
    return {"count": int(e.size), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
            "max": float(e.max())}


def by_kind(rows: list[dict], key: str = "error") -> tuple[dict, dict]:
    """``(overall, {kind: summary})`` over ``rows`` (each with ``kind`` and ``key``), kinds in first-seen order."""
    kinds = {}
    for r in rows:
        kinds.setdefault(r["kind"], []).append(r[key])
    return summarize(r[key] for r in rows), {k: summarize(v) for k, v in kinds.items()}
