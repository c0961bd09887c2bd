"""Warm a web process's caches of the large clusters' structures in the background (twin/wsgi.py, twin/asgi.py), so
that the first visit of a GPU or fabric page, or of a zone's live stream, does not wait for them.

A cluster of more than OVERVIEW_ABOVE_GPUS GPUs opens on the zone overviews, which read its zone arrays and its
structure's fingerprints (twin/live/scope.py, twin/web/fabric_data.py): a web process that starts reads them from
disk (twin/inventory/structure_cache.py) in a fraction of a second, or, the first time after a build, one process
reads them from the database (seconds) while the others wait for its file. From the next round on, one process
(the others skip it) builds the GPU and fabric page structures of every building and zone onto disk, not into memory (a building's takes
up to a second or so, the 216 places of roadmap-600k a minute or two of one CPU, once per structure), so that the first
zoom into any of them reads its file as well. Every WARM_INTERVAL_S the thread looks
again, so that a cluster built or rebuilt while the processes run is warm before its first visit; nothing changed,
that costs one indexed row read (the inventory's version). Off with TWIN_WARM_STRUCTURES=false (the tests' servers)."""
from __future__ import annotations

import logging
import threading
import time

import numpy as np
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Count

from twin.inventory.kept import Kept
from twin.inventory.models import GPU, Cluster
from twin.inventory.structure_cache import prune, warming_pass
from twin.inventory.zones import ClusterZones, ZoneItems, cluster_zones
from twin.web import fabric_data
from twin.inventory import gpu_grid
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


def places(zones: ClusterZones) -> list[ZoneItems]:
    """Where a user zooms into a cluster: each building, then each zone holding GPUs."""
    with_gpus = set(np.unique(zones.gpu_zone[zones.gpu_zone >= 0]).tolist())
    return ([zones.place(building=b) for b in range(zones.buildings)]
            + [zones.place(zone=zones.zone_names[z]) for z in sorted(zones.zone_building) if z in with_gpus])


def warm_once(zoom: bool = True) -> int:
    """Read (or load) the zone arrays and the fingerprints of every large cluster, then (``zoom``) build the GPU
    and fabric page structures of each of its buildings and zones onto disk, once per structure by one process; how
    many clusters were warmed. Forget on disk what clusters that no longer exist left there."""
    ids = large_clusters()
    for cluster in Cluster.objects.filter(id__in=ids).order_by("id"):
        warm_cluster(cluster, zoom)
    prune(Cluster.objects.values_list("id", flat=True))
    return len(ids)


def warm_cluster(cluster: Cluster, zoom: bool) -> None:
    """One large cluster's part of :func:`warm_once`."""
    zones = cluster_zones(cluster)
    try:
        fabric = fabric_data.backend_fabric(cluster.name)
    except fabric_data.FabricDataError:
        fabric = None                           # no backend fabric: its page has nothing to draw
    keys = (gpu_grid.structure_key(cluster, fabric), fabric and fabric_data.structure_key(fabric))
    if not zoom:
        return
    with warming_pass(("zoom", cluster.id), keys, cluster.id) as mine:
        for place in places(zones) if mine else ():
            gpu_grid.keep_on_disk(cluster, place)
            if fabric is not None:
                fabric_data.keep_on_disk(fabric, place)


def on_cluster_built(sender, cluster, **kwargs) -> None:
    """A cluster was built (twin/inventory/signals.py): when it is large, read its zone arrays and fingerprints onto
    disk now, in the building process, so that the web processes (started later, or within WARM_INTERVAL_S) read
    them in milliseconds instead of its first visit reading them from the database (seconds)."""
    if settings.TWIN_WARM_STRUCTURES and cluster.id in large_clusters():
        t = time.monotonic()
        warm_cluster(cluster, zoom=False)
        log.info("warm: %s's page structures on disk in %.1f s", cluster.name, time.monotonic() - t)


def _loop(interval: float) -> None:
    """The first round reads what the overviews need; the pass over the buildings and zones waits for the next,
    so as not to compete with the first visits."""
    zoom = False
    while True:
        close_old_connections()
        try:
            t = time.monotonic()
            if warm_once(zoom):
                log.debug("warm: large clusters ready in %.2f s", time.monotonic() - t)
        except Exception:       # noqa: BLE001 - a database not yet migrated or unreachable: the next round retries
            log.warning("warm: structures not read", exc_info=True)
        finally:
            connection.close()
        time.sleep(interval)
        zoom = True


def start(interval: float = WARM_INTERVAL_S) -> bool:
    """Start the warming thread once per process (unless TWIN_WARM_STRUCTURES is false); whether it started."""
    if not settings.TWIN_WARM_STRUCTURES or _started.is_set():
        return False
    _started.set()
    threading.Thread(target=_loop, args=(interval,), name="twin-warm", daemon=True).start()
    return True
