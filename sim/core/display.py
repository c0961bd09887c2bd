"""How the twin writes a quantity for a person and for a file: one table, :data:`QUANTITIES`, behind the command
line, the browser (served to every page as data: frontend/js/fmt.js formats with it, exports.js names columns with
it) and the exports. Nothing else declares a unit's size or name.

A quantity has one unit a file carries it in (``unit``: its column name ends in ``_<unit>``, e.g. ``busbw_GBps``,
``time_to_durable_s``) and a ladder of units a person reads it in (``ladder``: each with its size in ``unit``; a
value takes the largest it reaches once of, three significant digits). Bytes are binary for people (KiB, MiB, GiB:
powers of 1024, as the forms read sizes) and plain bytes in files; rates are GB/s (10^9 bytes/s, as nccl-tests prints
them); link speeds Gb/s; powers W in files, W/kW/MW for people; durations s in files, µs to days for people.

Dates: ISO 8601 in UTC in files (``2026-12-07T22:31:05Z``); for people one format, :data:`DATE_FORMAT`, in UTC, with
the time relative to now on hover.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone


@dataclass(frozen=True)
class Quantity:
    name: str
    unit: str                                  # the unit of files and column names (``busbw_GBps``)
    ladder: tuple[tuple[str, float], ...]      # (label people read, size in ``unit``), smallest first
    label: str                                 # what it is, for a column's header and an axis

    def to_json(self) -> dict:
        return {"unit": self.unit, "ladder": [list(step) for step in self.ladder], "label": self.label}


QUANTITIES = {q.name: q for q in (
    Quantity("bytes", "bytes", (("B", 1), ("KiB", 2 ** 10), ("MiB", 2 ** 20), ("GiB", 2 ** 30), ("TiB", 2 ** 40),
                                ("PiB", 2 ** 50)), "size"),
    Quantity("rate", "GBps", (("B/s", 1e-9), ("kB/s", 1e-6), ("MB/s", 1e-3), ("GB/s", 1), ("TB/s", 1e3),
                              ("PB/s", 1e6)), "bandwidth"),
    Quantity("bitrate", "Gbps", (("Mb/s", 1e-3), ("Gb/s", 1), ("Tb/s", 1e3)), "link speed"),
    Quantity("duration", "s", (("µs", 1e-6), ("ms", 1e-3), ("s", 1), ("min", 60), ("h", 3600), ("d", 86400)),
             "time"),
    Quantity("power", "W", (("W", 1), ("kW", 1e3), ("MW", 1e6), ("GW", 1e9)), "power"),
    Quantity("energy", "Wh", (("Wh", 1), ("kWh", 1e3), ("MWh", 1e6), ("GWh", 1e9)), "energy"),
    Quantity("flops", "TFLOPs", (("GFLOP/s", 1e-3), ("TFLOP/s", 1), ("PFLOP/s", 1e3)), "compute rate"),
    Quantity("percent", "pct", (("%", 1),), "share"),
)}
SIGNIFICANT = 3                                 # digits a person reads
DATE_FORMAT = "YYYY-MM-DD HH:mm:ss UTC"         # the one date format of the pages (shown in UTC)


def significant(x: float, digits: int = SIGNIFICANT) -> str:
    """``x`` with about ``digits`` significant digits, thousands separated from 1,000 on (1.23, 12.3, 123, 1,234)."""
    a = abs(x)
    if a >= 10 ** digits:
        return f"{round(x):,}"
    decimals = 0 if a == 0 else max(0, digits - 1 - math.floor(math.log10(a)))
    return f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{x:.0f}"


def human(name: str, value: float | None) -> str:
    """``value`` (in the quantity's file unit) as a person reads it: ``human("bytes", 4 * 2**30)`` is ``4 GiB``."""
    if value is None or not math.isfinite(value):
        return "–"
    q = QUANTITIES[name]
    label, size = q.ladder[0]
    for step_label, step_size in q.ladder:
        if abs(value) >= step_size:
            label, size = step_label, step_size
    return f"{significant(value / size)} {label}"


def iso_utc(moment: datetime | float) -> str:
    """A moment (aware datetime or Unix seconds) as files carry it: ISO 8601 in UTC, to the second."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def column(name: str, quantity: str) -> str:
    """A column's name in a file: the name with the quantity's unit (``column("busbw", "rate")`` is ``busbw_GBps``)."""
    return f"{name}_{QUANTITIES[quantity].unit}"


def table() -> dict:
    """The whole table as the browser reads it."""
    return {"quantities": {n: q.to_json() for n, q in QUANTITIES.items()}, "significant": SIGNIFICANT,
            "date_format": DATE_FORMAT}
