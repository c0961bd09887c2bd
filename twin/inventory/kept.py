"""Values derived from the inventory (a list's count, a cluster's summary), kept while the inventory is unchanged:
at 600k GPUs each is a scan of millions of rows (a tenth of a second to three seconds on PostgreSQL).
A value is kept with the inventory's version (``changelog.inventory_version``, one indexed row read); any logged
write changes the version, so a kept value is never stale. A write that bypasses the change log (a Django shell)
is seen only after the next logged write.

Kept in the process, and, for a ``Kept(shared=...)``, also in Redis (cache ``TWIN_KEPT_CACHE``) under the version:
what one process (or the build, which primes them: twin/api/inventory/priming.py) computed, every other web process reads in a
millisecond instead of computing it again on its first request. Redis unreachable: computed, as without it."""
from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.db import connection

from twin.inventory.changelog import inventory_version

T = TypeVar("T")
log = logging.getLogger(__name__)
SHARED_TTL_S = 24 * 3600       # a version's values outlive it by a day at most (a new version has new keys)
_ALL: weakref.WeakSet = weakref.WeakSet()


def clear_all() -> None:
    """Forget every kept value (the tests, whose rolled-back writes can leave the version as it was)."""
    for kept in list(_ALL):
        kept.clear()


class Kept(Generic[T]):
    """Up to ``size`` values by key, the least recently used dropped first; ``shared``: a name under which the values
    are also kept in Redis for the other processes (picklable values)."""

    def __init__(self, size: int, shared: str | None = None):
        self.size, self.shared = size, shared
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
        shared_key = self._shared_key(key, version)
        value = self._shared_get(shared_key)
        if value is None:
            value = compute()  # read after the version: it holds every write up to that version, maybe more
            if keep(value):
                self._shared_set(shared_key, value)
        if keep(value):
            with self._lock:
                self._values[key] = (version, value)
                self._values.move_to_end(key)
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
        return value

    def _shared_key(self, key, version) -> str | None:
        """The key in Redis: the database's name and the version (None, before the first logged write, is no
        version: nothing is shared then), so two databases on one Redis never read each other's values."""
        if not (self.shared and settings.TWIN_KEPT_CACHE) or version is None:
            return None
        return f"{connection.settings_dict['NAME']}:{version}:{self.shared}:{key}"

    @staticmethod
    def _shared(call: Callable):
        """(answered, result) of ``call(the shared cache)``: Redis down or restarting is (False, None), and the
        caller computes or keeps the value in this process, as a lone process would."""
        try:
            return True, call(caches[settings.TWIN_KEPT_CACHE])
        except Exception as e:  # noqa: BLE001 - any failure of the cache's client
            log.warning("kept: the shared cache does not answer: %s", e)
            return False, None

    @classmethod
    def shared_reachable(cls) -> bool:
        """Whether the shared cache answers (a build primes nothing without it)."""
        return cls._shared(lambda cache: cache.get("ping"))[0]

    def _shared_get(self, key):
        return self._shared(lambda cache: cache.get(key))[1] if key else None

    def _shared_set(self, key, value) -> None:
        if key:
            self._shared(lambda cache: cache.set(key, value, SHARED_TTL_S))

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
