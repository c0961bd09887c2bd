"""Counts and the summary of a cluster just built, computed once the build commits and kept in Redis under the new
inventory version (twin/inventory/kept.py), so that no web process's first request for them pays the scan: at 600k
GPUs the count of a list page of the cluster's 3.6 million ports is about 0.1 s on PostgreSQL, its summary 1-3 s."""
from __future__ import annotations

import logging
import time

from django.conf import settings

from twin.api import counts
from twin.inventory import topology
from twin.api.inventory.views import ENDPOINTS, SUMMARIES
from twin.inventory.kept import Kept

log = logging.getLogger(__name__)


def item_models() -> list:
    """The listed models that belong to a cluster (their list pages filter by ``?cluster=``)."""
    return [model for model in ENDPOINTS if any(f.name == "cluster" for f in model._meta.fields)]


def prime(sender, cluster, **kwargs) -> None:
    """Count the lists a client walks first, as the API's list pages select them (``?cluster=<name>`` and no
    filter), and summarize the cluster; only a cluster with a list that is kept (KEEP_MIN rows) is worth it."""
    if not settings.TWIN_KEPT_CACHE:
        return
    lists = [(model.objects.filter(cluster_id__in=[cluster.id]), model.objects.all()) for model in item_models()]
    sizes = [mine.count() for mine, _ in lists]
    if max(sizes, default=0) < counts.KEEP_MIN or not Kept.shared_reachable():
        return
    t = time.monotonic()
    for (mine, every), size in zip(lists, sizes):
        counts.count(mine, known=size)
        counts.count(every)
    SUMMARIES.get(cluster.id, lambda: topology.cluster_summary(cluster))
    log.info("kept: %s's list counts and summary in %.1f s", cluster.name, time.monotonic() - t)
