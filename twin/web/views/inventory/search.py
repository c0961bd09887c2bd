"""Search across the physical kinds by name or serial, with status and cluster filters.

Names hold the whole location (``meta-roce-24k.z03.r017.h1.gpu4``, ``meta-roce-24k.be.rtsw.z03.017:8``), so what
an engineer types is usually the start of a name once the cluster or fabric is put before it: ``z03.r017.h1``,
``be.rtsw.z03.017``, ``GPU-B3CA56-00096`` (a serial). By default a name matches when it starts with q, or with
``<cluster>.q`` or ``<fabric>.q``, and a serial when it starts with q: index range seeks on the unique name and serial
columns, a few milliseconds for every kind together. When nothing starts so, or when asked (``match=anywhere``),
names match anywhere: a scan of every kind's name index (the 700k names of the three dev clusters, mostly ports and
links, in 60-100 ms on SQLite; an index of trigrams would be needed to do better). At most ``MATCH_CAP`` + 1 ids
are read per kind (unordered, so that the database can combine index ranges; sorted here) and rows are loaded only
for the ones shown.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Q

from twin.inventory.choices import Status
from twin.inventory.models import Cluster, Fabric

from .kinds import SEARCHABLE, Kind
from .tally import NOT_ACTIVE, in_status

MATCH_CAP = 1000        # matches counted per kind; past it the count reads "1,000+"
NOT_ACTIVE_FILTER = "not-active"
_DIGITS = re.compile(r"(\d+)")
STATUS_FILTERS = [("", "any status"), *Status.choices, (NOT_ACTIVE_FILTER, "not active (any)")]


@dataclass
class Hits:
    """The matches of one kind: how many (up to MATCH_CAP, ``more`` past it) and the rows shown."""

    kind: Kind
    ids: list[int] = field(default_factory=list)
    more: bool = False
    rows: list[dict] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.ids)

    def show(self, ids: list[int]) -> None:
        """Load the rows of ``ids`` (some of this kind's matches), in their order."""
        fields = ["id", "name", "status", "cluster__name"] + (["serial"] if self.kind.has_serial else [])
        by_id = {r["id"]: r for r in self.kind.model.objects.filter(id__in=ids).values(*fields)}
        self.rows = [by_id[i] for i in ids if i in by_id]


def _prefix(field_name: str, text: str) -> Q:
    """``field`` starts with ``text``, in a form the database answers from the field's index: a range on SQLite
    (its LIKE cannot use an index), LIKE 'text%' on PostgreSQL (Django adds a pattern index for unique columns)."""
    if connection.vendor == "postgresql":
        return Q(**{f"{field_name}__startswith": text})
    return Q(**{f"{field_name}__gte": text, f"{field_name}__lt": text + "\U0010ffff"})


def _natural(text: str) -> list:
    """Sort key that puts port 2 before port 10: the digit runs compare as numbers."""
    return [int(part) if part.isdigit() else part for part in _DIGITS.split(text)]


def _first_ids(queryset, field_name: str = "name") -> list[int]:
    """Ids of at most MATCH_CAP + 1 rows of ``queryset`` in natural order of ``field``, read without ORDER BY: an
    ordered read would make SQLite walk the whole name index instead of seeking each range."""
    rows = queryset.order_by().values_list(field_name, "id")[:MATCH_CAP + 1]
    return [i for _, i in sorted(rows, key=lambda row: _natural(row[0]))]


def _matching_ids(kind: Kind, base, q: str, scopes: list[str], anywhere: bool) -> list[int]:
    """Ids of ``base`` matching q (see the module), serial matches first, then by name; at most MATCH_CAP + 1 (one
    more tells that there are more)."""
    if not q:
        return _first_ids(base)
    by_serial = []
    if kind.has_serial:
        by_serial = _first_ids(base.filter(_prefix("serial", q) | _prefix("serial", q.upper())), "serial")
    if anywhere:
        names = Q(name__icontains=q)
    else:
        names = Q()
        for start in {q, q.lower(), *(f"{scope}.{q}" for scope in scopes)}:
            names |= _prefix("name", start)
    seen = set(by_serial)
    return (by_serial + [i for i in _first_ids(base.filter(names)) if i not in seen])[:MATCH_CAP + 1]


def search(q: str, kind: str = "", status: str = "", cluster=None, anywhere: bool = False) -> list[Hits]:
    """The matches of each kind in scope (``kind``: one kind's key, or empty for all). ``status`` is a status,
    "not-active" or empty; ``cluster`` a Cluster or None; ``anywhere``: names contain q rather than start with it.
    Rows are loaded by the caller (``Hits.show``)."""
    scopes = []     # the names a name may start with before q: only name prefixes need them
    if q and not anywhere:
        clusters = Cluster.objects.filter(pk=cluster.pk) if cluster is not None else Cluster.objects.all()
        scopes = [*clusters.values_list("name", flat=True),
                  *Fabric.objects.filter(cluster__in=clusters).values_list("name", flat=True)]
    out = []
    for k in SEARCHABLE:
        if kind and k.key != kind:
            continue
        base = k.model.objects.all()
        if status == Status.ACTIVE:
            base = base.filter(status=status)
        elif status:
            base = in_status(base, NOT_ACTIVE if status == NOT_ACTIVE_FILTER else [status])
        if cluster is not None:
            base = base.filter(cluster=cluster)
        ids = _matching_ids(k, base, q, scopes, anywhere)
        out.append(Hits(k, ids[:MATCH_CAP], more=len(ids) > MATCH_CAP))
    return out
