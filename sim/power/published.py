"""What was published about a training job's power, declared once, beside the simulated figures
(:mod:`sim.core.published`). Nothing here sets a simulated figure: compared with, never tuned to.

* The Llama 3 paper [S3, section 3.3.4]: tens of thousands of GPUs raising or lowering their draw together (all
  waiting on a checkpoint or a collective, the job starting or stopping) swing the data center's power "on the
  order of tens of megawatts". Read as 10 to 100 MW.
* torchtitan's published performance on Grand Teton H100s [S80] ran at "the default 500W power limit" (tuning it
  up to the 700 W TDP "can potentially provide further speedups").
"""
from __future__ import annotations

from sim.core.published import Reference, beside

LLAMA3_SWING = Reference(
    "llama3-power-swing", "data center power swing", 10.0, 100.0, "MW", "S3",
    "Llama 3 405B pre-training on Meta's 24k H100 clusters: all GPUs waiting together (checkpoints, collectives, the "
    "job starting or stopping), 'on the order of tens of megawatts'",
    "Published: the data center's swing, with its cooling and power conversion, on events as large as the whole job "
    "starting or stopping. Simulated: the IT draw (GPUs, hosts, switches, storage; no cooling or conversion losses) "
    "of one cluster within one step, or over the failures timeline when it is run.")
TORCHTITAN_CAP = Reference(
    "torchtitan-cap", "GPU power limit of PyTorch's published Grand Teton benchmarks", 500.0, 500.0, "W", "S80",
    "torchtitan Llama 3.1 8B-405B on Grand Teton H100s (96 GB HBM2e), up to 512 GPUs, 'the default 500W power limit'",
    "Published: a setting, not a measurement, on H100s with 96 GB HBM2e (the twin's are 80 GB HBM3). Simulated: the "
    "cap of this run; the step-time cost of 500 W against 700 W is the twin's cap/clock model (docs/power.md), "
    "which nothing published measures at this scale.")


def published(*, swing_mw: float, timeline_swing_mw: float | None, cap_w: float) -> list[dict]:
    """The references beside the simulated swing (the larger of the step's and the timeline's) and cap."""
    swing = max(swing_mw, timeline_swing_mw or 0.0)
    where = "over the failures timeline" if timeline_swing_mw and timeline_swing_mw > swing_mw else "within a step"
    return [beside(LLAMA3_SWING, swing, same_case=False,
                   differs=f"the simulated cluster's IT draw {where}, not the data center's"),
            beside(TORCHTITAN_CAP, cap_w, same_case=False,
                   differs=f"this run's cap, {cap_w:g} W, on H100 SXM 80 GB at the simulated job's scale")]
