"""List counts kept while the inventory is unchanged (``twin.inventory.kept``): the ``count`` of a list page over a
600k-GPU cluster is a scan of up to 3.6 million rows, repeated on every page a client walks through. Only counts of
``KEEP_MIN`` rows or more are kept (a smaller one costs little); other tables (runs, jobs) are counted every time."""
from __future__ import annotations

import hashlib

from django.core.exceptions import EmptyResultSet

from twin.inventory.kept import Kept

KEEP_MIN = 50_000   # rows: a smaller count is made again each time (a few ms at most)
COUNTS: Kept[int] = Kept(512, shared="count")


def count(queryset, known: int | None = None) -> int:
    """``queryset.count()``, the kept one while the inventory has not changed since it was counted; ``known``: the
    count, counted already (kept as if counted here)."""
    if queryset.model._meta.app_label != "inventory":
        return queryset.count()
    try:  # the rows' ids only: a ?brief=1 page or another ordering of the same rows shares the kept count
        sql, params = queryset.order_by().values("pk").query.sql_with_params()
    except EmptyResultSet:  # a filter that matches nothing by construction (a name that names no row)
        return queryset.count()
    key = hashlib.sha1(repr((queryset.db, sql, params)).encode()).hexdigest()
    return COUNTS.get(key, queryset.count if known is None else lambda: known, keep=lambda n: n >= KEEP_MIN)
