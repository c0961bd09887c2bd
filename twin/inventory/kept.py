"""Values derived from the inventory (a list's count, a cluster's summary), kept per process while the inventory is
unchanged: at 600k GPUs each is a scan of millions of rows (a third of a second to three seconds on PostgreSQL).
A value is kept with the inventory's version (``changelog.inventory_version``, one indexed row read); any logged
write changes the version, so a kept value is never stale. A write that bypasses the change log (a Django shell)
is seen only after the next logged write."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from twin.inventory.changelog import inventory_version

T = TypeVar("T")
_ALL: weakref.WeakSet = weakref.WeakSet()


def clear_all() -> None:
    """Forget every kept value (the tests, whose rolled-back writes can leave the version as it was)."""
    for kept in list(_ALL):
        kept.clear()


class Kept(Generic[T]):
    """Up to ``size`` values by key, the least recently used dropped first."""

    def __init__(self, size: int):
        self.size = size
        self._values: OrderedDict[Hashable, tuple[object, T]] = OrderedDict()
        self._lock = threading.Lock()
        _ALL.add(self)

    def get(self, key: Hashable, compute: Callable[[], T], keep: Callable[[T], bool] = lambda value: True) -> T:
        """The value of ``key`` under the inventory's current version: the kept one, else ``compute()`` (kept when
        ``keep(value)``)."""
        version = inventory_version()
        with self._lock:
            kept = self._values.get(key)
            if kept is not None and kept[0] == version:
                self._values.move_to_end(key)
                return kept[1]
        value = compute()  # read after the version: it holds every write up to that version, maybe more
        if keep(value):
            with self._lock:
                self._values[key] = (version, value)
                self._values.move_to_end(key)
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
