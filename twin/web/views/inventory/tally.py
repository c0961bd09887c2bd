"""Counts of items by status, in two indexed queries per question whatever the table size.

Almost everything is active, so a grouped count by status would read every row. Instead the total comes from the
group's own index (``cluster_id``, ``rack_id``...) and only the items that are *not* active are counted by status;
active = total - the rest. Those are picked as ``id IN (ids whose status is not active)``: the subquery can only be
answered from the status index, where a plain ``status IN (...)`` next to ``cluster_id = ?`` lets SQLite's planner
(whose statistics say that every row is active) walk the cluster's whole index instead.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count
from django.utils.html import format_html, format_html_join

from twin.inventory.choices import NOT_ACTIVE, Status


@dataclass
class Tally:
    """How many items, and how many of them in each status other than active."""

    total: int = 0
    off: dict[str, int] = field(default_factory=dict)

    @property
    def not_active(self) -> int:
        return sum(self.off.values())

    @property
    def active(self) -> int:
        return self.total - self.not_active

    @property
    def health(self) -> str:
        """A css class: bad when any is failed, warn when any is drained or in maintenance, ok otherwise."""
        if self.off.get(Status.FAILED):
            return "bad"
        return "warn" if self.not_active else "ok"

    @property
    def parts(self) -> list[tuple[str, int]]:
        """(status, count) of the statuses other than active that occur, in the choices' order."""
        return [(s, self.off[s]) for s in NOT_ACTIVE if self.off.get(s)]

    def __str__(self) -> str:
        """``{{ tally }}`` in a template: the total, then a badge per status other than active (few, or none)."""
        return format_html('<span class="tally">{}{}</span>', f"{self.total:,}",
                           format_html_join("", ' <span class="badge {0}">{1} {0}</span>',
                                            ((s, f"{n:,}") for s, n in self.parts)))

    __html__ = __str__   # already escaped

    def __add__(self, other: Tally) -> Tally:
        off = dict(self.off)
        for s, n in other.off.items():
            off[s] = off.get(s, 0) + n
        return Tally(self.total + other.total, off)


def in_status(queryset, statuses):
    """The items of ``queryset`` in one of ``statuses`` (few: none of them active), found through the status index
    (see above)."""
    return queryset.filter(pk__in=queryset.model.objects.filter(status__in=statuses).values("pk"))


def not_active(queryset):
    """The items of ``queryset`` that are not active."""
    return in_status(queryset, NOT_ACTIVE)


def tally(queryset) -> Tally:
    """The statuses of ``queryset``'s items."""
    off = dict(not_active(queryset).values_list("status").annotate(n=Count("pk")).order_by())
    return Tally(queryset.count(), off)


def tally_by(queryset, *keys: str) -> defaultdict[object, Tally]:
    """The statuses of ``queryset``'s items grouped by ``keys`` (fields or lookup paths); a group is the key's
    value, or the tuple of the keys' values when there are several."""
    group = (lambda row: row[0]) if len(keys) == 1 else (lambda row: tuple(row[:len(keys)]))
    out: defaultdict[object, Tally] = defaultdict(Tally)
    for row in queryset.values_list(*keys).annotate(n=Count("pk")).order_by():
        out[group(row)].total = row[-1]
    for row in not_active(queryset).values_list(*keys, "status").annotate(n=Count("pk")).order_by():
        out[group(row)].off[row[-2]] = row[-1]
    return out
