"""Warm a web process's caches of the large clusters' structures in the background (twin/wsgi.py, twin/asgi.py), so
that the first visit of a GPU or fabric page, or of a zone's live stream, does not wait for them.

A cluster of more than OVERVIEW_ABOVE_GPUS GPUs opens on the zone overviews, which read its zone arrays and its
structure's fingerprints (twin/live/scope.py, twin/web/fabric_data.py): a web process that starts reads them from
disk (twin/inventory/structure_cache.py) in a fraction of a second, or, the first time after a build, one process
reads them from the database (seconds) while the others wait for its file. Every WARM_INTERVAL_S the thread looks
again, so that a cluster built or rebuilt while the processes run is warm before its first visit; nothing changed,
that costs one indexed row read (the inventory's version). Off with TWIN_WARM_STRUCTURES=false (the tests' servers)."""
from __future__ import annotations

import logging
import threading
import time

from django.db import close_old_connections, connection
from django.db.models import Count

from django.conf import settings

from twin.inventory.kept import Kept
from twin.inventory.models import GPU, Cluster
from twin.live import scope
from twin.web import fabric_data
from twin.web.gpu_data import OVERVIEW_ABOVE_GPUS

log = logging.getLogger(__name__)
WARM_INTERVAL_S = 30.0
_started = threading.Event()
_large: Kept[list] = Kept(size=1)


def large_clusters() -> list[int]:
    """The ids of the clusters whose pages open on the zone overview, kept while the inventory is unchanged (else
    one count of every GPU by cluster)."""
    def find():
        return sorted(c for c, n in GPU.objects.order_by().values("cluster").annotate(n=Count("id"))
                      .values_list("cluster", "n") if n > OVERVIEW_ABOVE_GPUS)
    return _large.get("large clusters", find)


def warm_once() -> int:
    """Read (or load) the zone arrays and the fingerprints of every large cluster; how many were warmed."""
    ids = large_clusters()
    for cluster in Cluster.objects.filter(id__in=ids).order_by("id"):
        scope.cluster_zones(cluster)
        try:
            fabric_data.structure_key(fabric_data.backend_fabric(cluster.name))
        except fabric_data.FabricDataError:
            pass                                # no backend fabric: nothing more to read
    return len(ids)


def _loop(interval: float) -> None:
    while True:
        close_old_connections()
        try:
            t = time.monotonic()
            if warm_once():
                log.debug("warm: large clusters ready in %.2f s", time.monotonic() - t)
        except Exception:       # noqa: BLE001 - a database not yet migrated or unreachable: the next round retries
            log.warning("warm: structures not read", exc_info=True)
        finally:
            connection.close()
        time.sleep(interval)


def start(interval: float = WARM_INTERVAL_S) -> bool:
    """Start the warming thread once per process (unless TWIN_WARM_STRUCTURES is false); whether it started."""
    if not settings.TWIN_WARM_STRUCTURES or _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_loop, args=(interval,), name="twin-warm", daemon=True).start()
    return True
