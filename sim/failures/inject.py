"""Chosen failures (the ``inject`` parameter): ``KIND:NAME@TIME`` read into :class:`Injection` (names checked later,
against the cluster, by :mod:`sim.failures.prepare`), and the kinds of item a failure hits.
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import ParamError, UsageError
from sim.core.units import parse_duration
from sim.failures import rates as fr

ITEM_KINDS = ("gpu", "host", "link", "switch", "job")


@dataclass(frozen=True)
class Injection:
    """A chosen failure: ``category`` at ``time`` (s) on the item named ``name`` (``kind`` in :data:`ITEM_KINDS`)."""

    category: str
    kind: str
    name: str
    time: float


ALIASES = {"link": ("network", "link"), "switch": ("network", "switch"), "host": ("host_maintenance", "host")}


def parse_injections(text: str | None, wall: float) -> list[Injection]:
    """``gpu:<name>@10h,link:<name>@20h,software@2h`` -> injections (names checked later, against the cluster).
    :class:`ParamError` on ``inject`` for bad syntax, an unknown category or a time outside the run."""
    out = []
    if not text or not text.strip():
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        what, at, when = part.rpartition("@")
        if not at:
            raise ParamError("inject", f"{part[:80]!r}: expected KIND:NAME@TIME, e.g. gpu:<GPU name>@10h")
        head, colon, name = what.partition(":")
        head = head.strip().lower()
        if head in ALIASES:
            category, kind = ALIASES[head]
        elif head in fr.CATEGORIES:
            category = head
            kind = _item_kind(fr.CATEGORIES[head])
        else:
            raise ParamError("inject", f"unknown kind {head!r}: choose gpu, link, switch, host or a category "
                                       f"({', '.join(fr.NAMES)})")
        name = name.strip()
        if category == "network" and kind not in ("link", "switch"):
            raise ParamError("inject", f"{part[:80]!r}: a network failure names a link (link:...) or a switch "
                                       f"(switch:...)")
        if kind != "job" and not name:
            raise ParamError("inject", f"{part[:80]!r}: {head} needs the {kind}'s name ({head}:<name>@TIME)")
        try:
            t = parse_duration(when) if when.strip() not in ("0", "0s", "0h") else 0.0
        except UsageError as e:
            raise ParamError("inject", f"{part[:80]!r}: {e}") from None
        if t >= wall:
            raise ParamError("inject", f"{part[:80]!r}: at {t / 3600:g} h, after the run's end ({wall / 3600:g} h)")
        out.append(Injection(category, kind, name, t))
    return sorted(out, key=lambda i: i.time)


def _item_kind(c: fr.Category) -> str:
    """The kind of item a category's failure names: its unit (a network item is named as a link or a switch)."""
    return c.unit
