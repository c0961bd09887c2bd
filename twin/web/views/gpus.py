"""The GPU grid: every GPU of a cluster on one canvas, coloured by job, health or utilization (frontend/js/gpus.js),
and the compact data it is drawn from (twin/web/gpu_data.py).

Views of the page: the whole grid; one zone's or building's grid (``?zone=<zone name>``, ``?building=<n>``); the zone
overview (``?view=zones``, one cell per rack), where a cluster above gpu_data.OVERVIEW_ABOVE_GPUS opens
(``?view=grid`` asks for the whole grid)."""
import time
from urllib.parse import quote

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path, reverse

from twin.api.counts import count
from twin.inventory.models import GPU, Cluster
from twin.inventory.zones import ScopeError
from twin.web import gpu_data
from twin.inventory import gpu_grid
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page



@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/gpus.html", {"nav": "gpus", "missing": missing_cluster(cluster)}, status=404)
    try:
        zoomed = zoom(request, found, whole="grid")
    except ScopeError as e:
        return render(request, "web/gpus.html", {"nav": "gpus", "missing": str(e)}, status=404)
    return render(request, "web/gpus.html", {"nav": "gpus", "cluster": found, **zoomed})


def zoom(request, cluster: Cluster, whole: str) -> dict:
    """What a page of ``cluster`` shows (the GPU and fabric pages): ``place``, the zone or building asked
    (``?zone=``, ``?building=``; ScopeError for an unknown one); ``view``: "zone" for a place, else ``?view=``
    ("zones", or ``whole`` for everything), by default the zone overview above gpu_data.OVERVIEW_ABOVE_GPUS;
    ``scope`` and ``query``, the place as its data and live stream take it; ``snapshot_url``, the live snapshot
    of that view (the summary for the overview)."""
    place = gpu_grid.place_asked(cluster, request.GET.get("zone"), request.GET.get("building"))
    view = request.GET.get("view")
    if place is not None:
        view = "zone"
    elif view not in ("zones", whole):
        view = "zones" if count(GPU.objects.filter(cluster=cluster)) > gpu_data.OVERVIEW_ABOVE_GPUS else whole
    scope = scope_query(request)
    snapshot_url = reverse("live:cluster-snapshot", kwargs={"name": cluster.name}) + "?binary=1"
    snapshot_url += "&summary=1" if view == "zones" else f"&{scope}" if scope else ""
    return {"view": view, "place": place, "scope": scope, "query": f"?{scope}" if scope else "",
            "snapshot_url": snapshot_url}


def scope_query(request) -> str:
    """The place a page is zoomed into, as the query its data and live stream take (``zone=...``, ``building=n``)."""
    zone, building = request.GET.get("zone"), request.GET.get("building")
    return f"zone={quote(zone)}" if zone else f"building={quote(building)}" if building else ""


def _json_view(build, zoned=True):
    """A page-data view answering ``build(cluster)`` (JSON bytes; ``build(cluster, place)`` when ``zoned`` and the
    request names a zone or a building, ``?zone=``, ``?building=``), its server time in a Server-Timing header."""
    @readable
    def view(request, cluster):
        t0 = time.perf_counter()
        found = Cluster.objects.filter(name=cluster).first()
        if found is None:
            return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
        try:
            place = gpu_grid.place_asked(found, request.GET.get("zone"), request.GET.get("building")) \
                if zoned else None
        except ScopeError as e:
            field, _, why = str(e).partition(": ")
            return JsonResponse({field: [why]}, status=404)
        resp = HttpResponse(build(found, place) if place else build(found), content_type="application/json")
        resp["Server-Timing"] = f"data;dur={1000 * (time.perf_counter() - t0):.1f}"
        resp["Cache-Control"] = "no-store"
        return resp
    return view


PAGE = Page(nav=NavItem("gpus", "GPUs", "gpus", order=30, cluster_scoped=True), urlpatterns=[
    path("clusters/<str:cluster>/gpus/", page, name="gpus"),
    # structure (cached) + statuses (fresh): what the grid is drawn from
    path("clusters/<str:cluster>/gpus.json", _json_view(gpu_data.page_data), name="gpus-data"),
    # statuses only: re-read by the page when the cluster stream says the inventory changed
    path("clusters/<str:cluster>/gpus/status.json", _json_view(gpu_data.status_data), name="gpus-status"),
    # the zone overview: per zone and rack, counts and live figures (re-read on the summary stream's frames)
    path("clusters/<str:cluster>/gpus/zones.json", _json_view(gpu_data.overview_data, zoned=False),
         name="gpus-zones"),
])
