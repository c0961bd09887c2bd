"""The published record of the failures a job like the simulated one met, beside the simulated figures
(:mod:`sim.core.published`): Meta's 54-day record of Llama 3 405B pre-training on 16,384 H100 [S3], declared once here.

Nothing here is a target: no constant of the failures model is tuned to meet these figures; where the twin differs,
``why`` names the mechanism (docs/reliability.md, "Published beside simulated").
"""
from __future__ import annotations

from sim.core.published import Reference, beside
from sim.failures import rates as fr

CASE = "Llama 3 405B pre-training on 16,384 H100 of Meta's RoCE cluster, a 54-day snapshot"

INTERRUPTIONS = Reference(
    "llama3-interruptions", "job interruptions in 54 days", fr.TABLE_PLANNED + fr.TABLE_UNEXPECTED,
    fr.TABLE_PLANNED + fr.TABLE_UNEXPECTED, "count", "S3", CASE,
    why="the twin does not count a failure that arrives while the job is already down (the table's causes are "
        "root-caused interruptions), and the counts are random (Poisson arrivals) around the table's rates, which "
        "come from this very table (docs/reliability.md)")
UNEXPECTED = Reference(
    "llama3-unexpected", "unexpected interruptions in 54 days", fr.TABLE_UNEXPECTED, fr.TABLE_UNEXPECTED, "count",
    "S3", CASE, why=INTERRUPTIONS.why)
EFFECTIVE = Reference(
    "llama3-effective-time", "effective training time", 0.90, 1.0, "fraction", "S3",
    CASE + ": \"higher than 90% effective training time\" (the paper's words, section 3.3.4)",
    why="Meta's checkpoint interval, detection and restart times are not published: the twin's restart_s (5 min) "
        "and checkpoint_interval are parameters, and its restart does not overlap detection; its detection times "
        "are PyTorch's and NCCL's defaults per failure class (docs/reliability.md, Detection)")
REFERENCES = (INTERRUPTIONS, UNEXPECTED, EFFECTIVE)


def _differs(params: dict, gpus: int, fleet_rate: float | None = None) -> str:
    out = []
    if params["model"] != "llama3-405b":
        out.append(f"model {params['model']}, not Llama 3 405B")
    if gpus != fr.TABLE_GPUS:
        out.append(f"{gpus:,} GPUs, not {fr.TABLE_GPUS:,}")
    if params["rates"] or params["rate_scale"] != 1.0:
        out.append("failure rates other than the table's")
    if fleet_rate is not None:
        out.append(f"the cluster's fleet: {fleet_rate:g} node failures per 1,000 node-days, not the table's "
                   f"{fr.table_node_rate():.2f}")
    if params["inject"]:
        out.append("chosen failures injected")
    if params["days"] != fr.TABLE_DAYS:
        out.append(f"{params['days']:g} days, counts scaled to 54")
    return "; ".join(out)


def published(params: dict, result: dict, summary: dict, fleet_rate: float | None = None) -> list[dict]:
    """The references beside the simulated figures: interruptions (all and unexpected, the mean over the seeds
    per day x 54 days) and the effective training time (the mean over the seeds). ``params``: the run's
    (:data:`sim.failures.params.FAILURES`), ``result``: the first seed's timeline, ``summary``: over the seeds,
    ``fleet_rate``: the cluster's own node failure rate when its preset gives one (then not the table's case)."""
    differs = _differs(params, int(result["gpus"]), fleet_rate)
    same = not differs
    per_day = summary["interruptions_per_day"]["mean"]
    planned_per_day = summary["planned_per_day"]["mean"]
    return [beside(INTERRUPTIONS, per_day * fr.TABLE_DAYS, same_case=same, differs=differs),
            beside(UNEXPECTED, (per_day - planned_per_day) * fr.TABLE_DAYS, same_case=same, differs=differs),
            beside(EFFECTIVE, summary["effective_ratio"]["mean"], same_case=same, differs=differs)]
