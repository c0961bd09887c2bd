"""Published figures beside simulated ones: what a public source measured on a case like the one simulated, so that
a user sizing a cluster sees how far the twin's prediction is from production, and why (DEVELOPERS: "show the
published figure beside the simulated one").

Each engine package declares its own :class:`Reference` rows once (the Llama 3 paper's MFU table in ``sim.jobs``,
Tectonic's throughput in ``sim.storage``, the 54-day interruption record in ``sim.failures``) with its
docs/sources.md tag, and picks the nearest to a simulated case; :func:`beside` puts the two side by side. A result
carries the list under ``published`` in its JSON (CLI ``--json``, the run's stored summary); the pages draw it with
``frontend/js/published.js``. Nothing here is a target: no constant is tuned to make ``simulated`` meet ``low`` ..
``high``; where they differ, ``why`` names the mechanism the model leaves out or models otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

UNITS = ("fraction", "TFLOP/s", "TB/s", "s", "h", "count", "MW", "W")   # how a page formats low, high and simulated


@dataclass(frozen=True)
class Reference:
    """One published measurement: ``low`` .. ``high`` (equal for a single value) in ``unit``, of ``what``, on
    ``case`` (the published set-up, in words), from docs/sources.md ``source``; ``why``: where and why the twin's
    model of it may differ (empty when nothing is known to differ)."""

    key: str
    what: str
    low: float
    high: float
    unit: str
    source: str
    case: str
    why: str = ""

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"Reference {self.key}: unit {self.unit!r} is not one of {UNITS}")
        if not self.low <= self.high:
            raise ValueError(f"Reference {self.key}: low {self.low} > high {self.high}")


def beside(ref: Reference, simulated: float | None, *, same_case: bool, differs: str = "") -> dict:
    """The reference and the simulated figure side by side, as results carry them. ``same_case``: the simulated
    case is the published one (same model, GPUs, layout...), not only the nearest; ``differs``: what differs
    between the two cases when it is not (``"model llama3-70b, not 405B"``). ``ratio`` is simulated over the
    published value (the middle of a range); ``within``: simulated inside the published range."""
    mid = (ref.low + ref.high) / 2
    out = {"key": ref.key, "what": ref.what, "low": ref.low, "high": ref.high, "unit": ref.unit,
           "source": ref.source, "case": ref.case, "why": ref.why, "same_case": bool(same_case),
           "differs": differs, "simulated": None, "ratio": None, "within": None}
    if simulated is not None:
        out["simulated"] = float(simulated)
        out["ratio"] = float(simulated) / mid if mid else None
        out["within"] = bool(ref.low <= simulated <= ref.high)
    return out
