"""The checkpoint interval swept for the optimum (:func:`sweep`): each interval's effective ratio over the same
seeds, beside Young/Daly's ``sqrt(2 x C x MTBF)`` [S8], C a checkpoint's full cost in training time (its wait, its
drain's share of data loading and the host CPU its background writer takes); each interval's timelines start a
checkpoint only once the previous one is durable and the store has absorbed its bytes at its sustained rate
(``overlapping``), so an interval shorter than either pays for it.
"""
from __future__ import annotations

import numpy as np

from sim.core.errors import ParamError, UsageError
from sim.core.progress import span
from sim.core.units import parse_durations
from sim.failures.prepare import prepare
from sim.failures.summary import stats
from sim.failures.timeline import Timeline, seeds_of


def sweep(cluster_or_spec, values: dict, intervals, seeds, progress=None) -> dict:
    """Effective ratio against the checkpoint interval (``intervals``: seconds, or text such as ``5m:4h``), each
    interval over the same ``seeds`` (an int: that many from the parameters' seed; or a list), beside the Young/Daly
    optimum ``sqrt(2 x C x MTBF)`` [S8] (C: ``checkpoint.cost_s``)."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.2))
    if isinstance(intervals, str):
        try:
            intervals = parse_durations(intervals)
        except UsageError as e:
            raise ParamError("sweep_interval", str(e)) from None
    intervals = [float(i) for i in intervals]
    if not intervals or min(intervals) <= 0 or max(intervals) >= ctx.wall_s:
        raise ParamError("sweep_interval", "intervals must be more than 0 and shorter than the run")
    seeds = seeds_of(ctx, seeds)
    rows, k, total = [], 0, len(intervals) * len(seeds)
    for interval in intervals:
        eff = []
        for s in seeds:
            eff.append(Timeline(ctx, s, interval, record=False).run().effective_ratio)
            k += 1
            if progress:
                progress(0.2 + 0.8 * k / total, f"interval {interval / 60:.1f} min, seed {s}")
        rows.append({"interval_s": interval, "effective_ratio": stats(eff)})
    means = np.array([r["effective_ratio"]["mean"] for r in rows])
    best = int(np.argmax(means))
    return {"intervals_s": intervals, "rows": rows, "seeds": seeds, "best_interval_s": intervals[best],
            "best_effective_ratio": float(means[best]), "young_daly_s": ctx.young_daly_s(),
            "checkpoint_cost_s": ctx.checkpoint["cost_s"], "checkpoint_durable_s": ctx.checkpoint["durable_s"],
            "store_gap_s": ctx.checkpoint["store_gap_s"], "mtbf_s": ctx.mtbf_s()}
