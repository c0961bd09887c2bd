"""Template context shared by every page: the navigation (twin/web/nav.py), the clusters to choose from and the
current one, the live sockets' longest wait between tries (TWIN_LIVE_RETRY_MAX_MS, read by frontend/js/frames.js),
the table of units and date formats (sim/core/display.py, read by frontend/js/fmt.js) and the twin's version (what a
download says made it)."""
from __future__ import annotations

from django.conf import settings
from django.urls import NoReverseMatch, reverse

from sim.core import display
from twin.inventory.models import Cluster
from twin.web.nav import nav_items

CLUSTER_COOKIE = "twin_cluster"
PAGE_CLUSTER = "twin_page_cluster"


def missing_cluster(name: str) -> str:
    """What a cluster page says when the URL names no built cluster: the name, and the clusters that are built."""
    built = ", ".join(Cluster.objects.order_by("name").values_list("name", flat=True)) or "none"
    return f"no cluster named '{name}' (built: {built})"


def about_cluster(request, name: str) -> None:
    """A view whose URL has no cluster (a run, an inventory item) says which cluster its page is about, for the
    header's cluster picker and the Fabric/GPUs links."""
    setattr(request, PAGE_CLUSTER, name)


def current_cluster(request, names: list[str]) -> str | None:
    """The cluster the page is about: the URL's, else the one its view names (:func:`about_cluster`), else the last
    one viewed (cookie), else the first of the default clusters that is built, else the first by name."""
    match = getattr(request, "resolver_match", None)
    for name in ((match.kwargs.get("cluster") if match else None), getattr(request, PAGE_CLUSTER, None),
                 request.COOKIES.get(CLUSTER_COOKIE),
                 *settings.TWIN_DEFAULT_CLUSTERS):
        if name in names:
            return name
    return names[0] if names else None


def navigation(request) -> dict:
    if request.path.startswith(("/api/", "/admin/")):
        return {}
    names = list(Cluster.objects.order_by("name").values_list("name", flat=True))
    cluster = current_cluster(request, names)
    items = []
    for item in nav_items():
        try:
            href = reverse(item.url_name, kwargs={"cluster": cluster} if item.cluster_scoped else None)
        except NoReverseMatch:                      # a cluster-scoped section while no cluster is built
            href = None
        items.append({"key": item.key, "label": item.label, "href": href, "group": item.group})
    return {"nav_items": items, "cluster_names": names, "current_cluster": cluster,
            "live_retry_max_ms": settings.TWIN_LIVE_RETRY_MAX_MS, "display_table": display.table(),
            "twin_version": settings.TWIN_VERSION}
