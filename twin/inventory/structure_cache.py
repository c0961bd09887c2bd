"""What pages and streams derive from a cluster's structure (which rows exist and how they are wired), kept per
process while a fingerprint of those rows holds: the GPU grid's data (twin/web/gpu_data.py), the fabric page's
(twin/web/fabric_data.py), the zone arrays (twin/live/scope.py), the live link index (twin/live/meta.py). Statuses
change any time: never cached here.

A large cluster's (a 590k-GPU one: its fingerprints take seconds to read, its zone arrays 2M rows) are also kept on
disk (settings.TWIN_STRUCTURE_CACHE_DIR, one file per owner and database), so that every web process after the first
(a restart, each of gunicorn's processes) reads them in milliseconds: the cold first visit of a page costs what a
warm one does. See :func:`trusted_fingerprint` for when such a fingerprint is read again."""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import logging
import os
import pickle
import shutil
import threading
import time
import weakref
from collections.abc import Callable, Hashable
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, QuerySet

from twin.inventory.changelog import inventory_version
from twin.inventory.choices import ChangeAction
from twin.inventory.models import ObjectChange

T = TypeVar("T")
log = logging.getLogger(__name__)


def rows_fingerprint(queryset: QuerySet, **aggregates) -> tuple:
    """What changes when rows of ``queryset`` are added or removed (their count and largest id), plus whatever
    ``aggregates`` catch (``a=Sum("a_port_id")`` catches a recabling): one aggregate query."""
    return tuple(queryset.aggregate(n=Count("id"), top=Max("id"), **aggregates).values())


# A fingerprint or structure that took more than SLOW_S to read (the aggregates over the 1.3M backend links of a
# 590k-GPU cluster take seconds) is kept on disk as well as in the process. Such a fingerprint is not read again
# while the inventory's version (changelog.inventory_version, one indexed row) is the one it was read under, nor
# when the change log's entries of its cluster since then are all status updates (a failed link, a drained
# switch): only a logged change of the rows (an added, removed or recabled item, a rebuilt cluster) reads it again.
# A write that bypasses the change log (a Django shell) is seen after the next logged one (as twin/inventory/kept.py).
# Below SLOW_S (a 24k cluster: tens of ms) every request reads the fingerprint, as before.
SLOW_S = 0.1
STATUS_SCAN_MAX = 20_000     # change-log entries looked through for "statuses only" before reading the fingerprint
STATUS_FIELDS = frozenset({"status"})


@dataclasses.dataclass
class _Read:
    value: tuple
    version: object          # the inventory version it was read under
    mark: tuple              # the change log's last entry when it was read, (id, time)


_trusted: dict[Hashable, _Read] = {}
_fast: set[Hashable] = set()       # keys whose fingerprint was read in under SLOW_S


def _digest(value) -> str:
    return hashlib.sha1(repr(value).encode()).hexdigest()[:24]


def _database_dir() -> Path:
    """This database's directory (several databases can share a host)."""
    db = connection.settings_dict
    return Path(settings.TWIN_STRUCTURE_CACHE_DIR) / _digest((db.get("HOST"), db.get("PORT"), str(db.get("NAME"))))


def _path(kind: str, key: Hashable, cluster_id: int | None) -> Path:
    """The file of ``key`` (an owner, a fingerprint's key) of cluster ``cluster_id``: in the cluster's directory,
    which :func:`prune` removes once the cluster is gone (deleted, or rebuilt under a new id)."""
    return _database_dir() / (f"c{cluster_id}" if cluster_id is not None else "any") / f"{kind}-{_digest(key)}.pickle"


def prune(cluster_ids) -> int:
    """Remove the directories of this database's clusters that are not in ``cluster_ids``; how many."""
    keep = {f"c{i}" for i in cluster_ids}
    gone = [d for d in _database_dir().glob("c*") if d.is_dir() and d.name not in keep]
    for d in gone:
        shutil.rmtree(d, ignore_errors=True)
    return len(gone)


def _shape(value) -> tuple:
    """What a kept value must still match to be used by this code: its class and, for a dataclass, its fields."""
    cls = type(value)
    names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
    return cls.__module__, cls.__qualname__, names


def _load(path: Path, fingerprint: Hashable):
    """The value kept in ``path`` under ``fingerprint``, else None (missing, stale, or of an older shape)."""
    try:
        with open(path, "rb") as f:
            kept, shape, value = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception as e:      # noqa: BLE001 - a torn or foreign file is a miss, never an error page
        log.warning("structure cache: %s unreadable (%s), rebuilt", path, e)
        return None
    return value if kept == fingerprint and shape == _shape(value) else None


def _save(path: Path, fingerprint: Hashable, value) -> None:
    """Write atomically (a reader sees the old file or the new one); a failure to write is logged, not raised."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            pickle.dump((fingerprint, _shape(value), value), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as e:
        log.warning("structure cache: cannot write %s (%s)", path, e)
        tmp.unlink(missing_ok=True)


@contextmanager
def _file_lock(path: Path, wait: bool = True):
    """Held by one process at a time (per file): the web processes that start together build a structure once.
    Yields whether it is held (``wait`` False: False at once when another process holds it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    except OSError:
        yield wait
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


@contextmanager
def warming_pass(key: Hashable, fingerprint: Hashable, cluster_id: int | None):
    """Yields whether this process is to make the pass ``key`` (building many structures onto disk) under
    ``fingerprint``: not made yet by any process (a record on disk says so once it ends without error), and no other
    process making it now."""
    path = _path("pass", key, cluster_id)
    if _load(path, fingerprint) is not None:
        yield False
        return
    with _file_lock(path, wait=False) as held:
        if not held or _load(path, fingerprint) is not None:
            yield False
            return
        yield True
        _save(path, fingerprint, True)


def _last_change() -> tuple:
    """The change log's last entry as (id, time): (0, None) before any."""
    return ObjectChange.objects.order_by("-id").values_list("id", "time").first() or (0, None)


def _statuses_only_since(mark: tuple, cluster_id: int | None) -> tuple | None:
    """The change log's last entry (:func:`_last_change`) when every entry of cluster ``cluster_id`` after ``mark``
    is a status update (its structure unchanged), else None: when there are too many to look through, or when the
    entry ``mark`` names is not the one that was there (a restored database, a test's rolled-back writes)."""
    first, when = mark
    if cluster_id is None or (first and not ObjectChange.objects.filter(id=first, time=when).exists()):
        return None
    top = _last_change()
    rows = list(ObjectChange.objects.filter(id__gt=first, id__lte=top[0], cluster_id=cluster_id).order_by()
                .values_list("action", "after")[:STATUS_SCAN_MAX + 1])
    if len(rows) > STATUS_SCAN_MAX:
        return None
    ok = all(action == ChangeAction.UPDATE and set(after or ()) <= STATUS_FIELDS for action, after in rows)
    return top if ok else None


def forget() -> None:
    """Forget the fingerprints and structures kept in this process (the tests: ids repeat from test to test)."""
    _trusted.clear()
    _fast.clear()
    for cache in list(_caches):
        cache.clear()


def _holding(kept: _Read | None, version, cluster_id: int | None, key: Hashable) -> _Read | None:
    """``kept`` if it still holds under the inventory's ``version`` (updated, in memory and on disk, when the
    cluster's changes since it was read are all status updates), else None."""
    if kept is None or version is None:
        return None
    if kept.version == version:
        return kept
    mark = _statuses_only_since(kept.mark, cluster_id)
    if mark is None:
        return None
    kept = _Read(kept.value, version, mark)
    _save(_path("fingerprint", key, cluster_id), key, kept)
    return kept


def trusted_fingerprint(key: Hashable, read: Callable[[], tuple], cluster_id: int | None = None) -> tuple:
    """``read()`` (a fingerprint of cluster ``cluster_id``'s rows), or the value read before while it holds (see
    SLOW_S): from this process, else from disk; read under a file lock, so that processes that miss it together
    read it once. A fingerprint once read fast is read on every call, with no other query."""
    if key in _fast:
        t = time.monotonic()
        value = read()
        if time.monotonic() - t > SLOW_S:
            _fast.discard(key)          # slow now: the next call reads the version first, and keeps what it reads
        return value
    version = inventory_version()
    path = _path("fingerprint", key, cluster_id)
    kept = _holding(_trusted.get(key) or (_load(path, key) if version is not None else None), version, cluster_id,
                    key)
    if kept is None:
        with _file_lock(path):
            kept = _holding(_load(path, key) if version is not None else None, version, cluster_id, key)
            if kept is None:            # not read by another process meanwhile either
                mark = _last_change()
                t = time.monotonic()
                value = read()
                if time.monotonic() - t <= SLOW_S or version is None:
                    _trusted.pop(key, None)
                    _fast.add(key)
                    return value
                kept = _Read(value, version, mark)
                _save(path, key, kept)
    _trusted[key] = kept
    return kept.value


_caches: weakref.WeakSet = weakref.WeakSet()      # every StructureCache of this process, for forget()


class StructureCache(Generic[T]):
    """Built structures by owner id (a cluster's, a fabric's), each kept with the fingerprint it was built under.

    A missing or stale entry is built under a lock, so the visitors who come during a cold build (about a second
    for a 24k cluster) wait for it instead of building their own. A rebuilt cluster has new ids, so an old owner is
    only ever evicted: the oldest first, beyond ``size`` owners. With a ``name``, a structure that took more than
    SLOW_S to build is kept on disk too, and a process that misses it reads it there first (the build itself under
    a file lock, so that processes starting together wait for one build)."""

    def __init__(self, size: int = 8, name: str | None = None):
        self.size = size
        self.name = name
        self._entries: dict[int, tuple[Hashable, T]] = {}
        self._lock = threading.Lock()
        _caches.add(self)

    def clear(self) -> None:
        """Drop what this process holds (:func:`forget`)."""
        with self._lock:
            self._entries.clear()

    def get(self, owner: Hashable, fingerprint: Hashable, build: Callable[[], T], cluster_id: int | None = None) -> T:
        """The structure of ``owner`` (of cluster ``cluster_id``, for its file) as built under ``fingerprint``;
        ``build()`` makes it when missing or stale."""
        entry = self._entries.get(owner)
        if entry is None or entry[0] != fingerprint:
            with self._lock:
                entry = self._entries.get(owner)
                if entry is None or entry[0] != fingerprint:
                    entry = (fingerprint, self._load_or_build(owner, fingerprint, build, cluster_id))
                    self._entries.pop(owner, None)
                    while len(self._entries) >= self.size:
                        del self._entries[next(iter(self._entries))]
                    self._entries[owner] = entry
        return entry[1]

    def keep_on_disk(self, owner: Hashable, fingerprint: Hashable, build: Callable[[], T],
                     cluster_id: int | None = None) -> None:
        """Build the structure of ``owner`` onto disk (when slow, as :meth:`get` would), not into this process: a
        warming pass over many owners, whose first visits then read it there."""
        entry = self._entries.get(owner)
        if self.name is None or (entry is not None and entry[0] == fingerprint):
            return
        path = _path(self.name, owner, cluster_id)
        with _file_lock(path):
            if _load(path, fingerprint) is None:
                t = time.monotonic()
                value = build()
                if time.monotonic() - t > SLOW_S:
                    _save(path, fingerprint, value)

    def _load_or_build(self, owner: Hashable, fingerprint: Hashable, build: Callable[[], T],
                       cluster_id: int | None) -> T:
        if self.name is None:
            return build()
        path = _path(self.name, owner, cluster_id)
        value = _load(path, fingerprint)
        if value is not None:
            return value
        with _file_lock(path):
            value = _load(path, fingerprint)        # built by another process meanwhile
            if value is None:
                t = time.monotonic()
                value = build()
                if time.monotonic() - t > SLOW_S:
                    _save(path, fingerprint, value)
        return value
