"""List counts kept per process while the inventory is unchanged: the ``count`` of a list page over a 600k-GPU
cluster is a scan of up to 3.5 million rows (a third of a second on PostgreSQL), repeated on every page a client
walks through. A count of an inventory table is kept under the inventory's version (``changelog.inventory_version``,
one indexed row read per page) and the SQL of the count; any inventory write moves the version on, so a kept count
is exact. Only counts of ``KEEP_MIN`` rows or more are kept (a smaller one costs little), and other tables (runs,
jobs) are counted every time. A write that bypasses the change log (a Django shell) is seen by a kept count only
after the next logged write."""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from twin.inventory.changelog import inventory_version

SIZE = 512          # counts kept per process, the least recently used dropped first
KEEP_MIN = 50_000   # rows: a smaller count is made again each time (a few ms at most)
_counts: OrderedDict[str, tuple[int, int]] = OrderedDict()
_lock = threading.Lock()


def count(queryset) -> int:
    """``queryset.count()``, from the kept counts when the inventory has not changed since it was counted."""
    if queryset.model._meta.app_label != "inventory":
        return queryset.count()
    sql, params = queryset.query.sql_with_params()
    key = hashlib.sha1(repr((queryset.db, sql, params)).encode()).hexdigest()
    version = inventory_version()
    with _lock:
        kept = _counts.get(key)
        if kept is not None and kept[0] == version:
            _counts.move_to_end(key)
            return kept[1]
    n = queryset.count()
    if n < KEEP_MIN:
        return n
    with _lock:
        _counts[key] = (version, n)
        _counts.move_to_end(key)
        while len(_counts) > SIZE:
            _counts.popitem(last=False)
    return n
