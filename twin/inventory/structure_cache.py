"""What pages and streams derive from a cluster's structure (which rows exist and how they are wired), kept per
process while a fingerprint of those rows holds: the GPU grid's data (twin/web/gpu_data.py), the fabric page's
(twin/web/fabric_data.py), the live link index (twin/live/meta.py). Statuses change any time: never cached here."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.db.models import Count, Max, QuerySet

T = TypeVar("T")


def rows_fingerprint(queryset: QuerySet, **aggregates) -> tuple:
    """What changes when rows of ``queryset`` are added or removed (their count and largest id), plus whatever
    ``aggregates`` catch (``a=Sum("a_port_id")`` catches a recabling): one aggregate query."""
    return tuple(queryset.aggregate(n=Count("id"), top=Max("id"), **aggregates).values())


# A fingerprint that took more than TRUST_ABOVE_S to read (the aggregates over the 1.3M backend links of a 590k-GPU
# cluster take seconds on SQLite) is trusted for TRUST_FACTOR times that long, counted from the read (so that it
# outlasts the cold build that follows), before it is read again: a large cluster's pages do not spend most of each
# request re-checking it, and a change of its structure shows that much later. Below the threshold (a 24k cluster:
# tens of ms) every request reads it, as before.
TRUST_ABOVE_S = 0.1
TRUST_FACTOR = 30.0
_trusted: dict[Hashable, tuple[float, tuple]] = {}     # key -> (trusted until, monotonic; fingerprint)


def trusted_fingerprint(key: Hashable, read: Callable[[], tuple]) -> tuple:
    """``read()`` (a fingerprint), or its last value while that is trusted (see TRUST_ABOVE_S)."""
    now = time.monotonic()
    kept = _trusted.get(key)
    if kept is not None and now < kept[0]:
        return kept[1]
    value = read()
    took = time.monotonic() - now
    if took > TRUST_ABOVE_S:
        _trusted[key] = (time.monotonic() + TRUST_FACTOR * took, value)
    else:
        _trusted.pop(key, None)
    return value


class StructureCache(Generic[T]):
    """Built structures by owner id (a cluster's, a fabric's), each kept with the fingerprint it was built under.

    A missing or stale entry is built under a lock, so the visitors who come during a cold build (about a second
    for a 24k cluster) wait for it instead of building their own. A rebuilt cluster has new ids, so an old owner is
    only ever evicted: the oldest first, beyond ``size`` owners."""

    def __init__(self, size: int = 8):
        self.size = size
        self._entries: dict[int, tuple[Hashable, T]] = {}
        self._lock = threading.Lock()

    def get(self, owner: int, fingerprint: Hashable, build: Callable[[], T]) -> T:
        """The structure of ``owner`` as built under ``fingerprint``; ``build()`` makes it when missing or stale."""
        entry = self._entries.get(owner)
        if entry is None or entry[0] != fingerprint:
            with self._lock:
                entry = self._entries.get(owner)
                if entry is None or entry[0] != fingerprint:
                    entry = (fingerprint, build())
                    self._entries.pop(owner, None)
                    while len(self._entries) >= self.size:
                        del self._entries[next(iter(self._entries))]
                    self._entries[owner] = entry
        return entry[1]
