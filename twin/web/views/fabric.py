"""The fabric page: a cluster's backend fabric as it behaves, tier by tier (heatmaps of per-link utilization, zone and
rack aggregates, one switch's ports, the hottest and the failed links), updated by the cluster's live stream.

Routes: the page; its data, fabric.json (the structure in live link order with the statuses,
twin/web/fabric_data.py); the statuses alone (refreshed while the page is open); link details (names and ends,
fetched lazily for tooltips and lists); the zone overview (zones.json).

Views of the page, as on the GPU page: the whole fabric; one zone or building (``?zone=<zone name>``,
``?building=<n>``: its links, the data and the live stream scoped to them); the zone overview (``?view=zones``: a
table of zones by tier), where a cluster above gpu_data.OVERVIEW_ABOVE_GPUS opens (``?view=all`` asks for the whole
fabric)."""

from functools import wraps

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.gzip import gzip_page

from twin.inventory.zones import ScopeError
from twin.web import fabric_data
from twin.inventory import gpu_grid
from twin.web.views.gpus import zoom
from twin.web.access import readable
from twin.web.nav import NavItem, Page

MAX_ID = 2**63 - 1


def fabric_view(view):
    """A data view of a cluster's backend fabric: called with the Fabric (and the zone asked, ``?zone=``, checked);
    404 JSON naming what is missing."""
    @readable
    @wraps(view)
    def wrapper(request, cluster):
        try:
            fabric = fabric_data.backend_fabric(cluster)
        except fabric_data.FabricDataError as e:
            return JsonResponse({"detail": str(e)}, status=404)
        try:
            request.place = gpu_grid.place_asked(fabric.cluster, request.GET.get("zone"), request.GET.get("building"))
        except ScopeError as e:
            field, _, why = str(e).partition(": ")
            return JsonResponse({field: [why]}, status=404)
        return view(request, fabric)
    return wrapper


@readable
def page(request, cluster):
    try:
        fabric = fabric_data.backend_fabric(cluster)
    except fabric_data.FabricDataError as e:
        return render(request, "web/fabric.html", {"nav": "fabric", "error": str(e)}, status=404)
    try:
        zoomed = zoom(request, fabric.cluster, whole="all")
    except ScopeError as e:
        return render(request, "web/fabric.html", {"nav": "fabric", "error": str(e)}, status=404)
    return render(request, "web/fabric.html", {"nav": "fabric", "fabric": fabric, "cluster": fabric.cluster,
                                               **zoomed})


@fabric_view
@gzip_page
def data(request, fabric):
    """The fabric's structure in live link order (cached per process) with the current statuses; ~1 MB of JSON
    for a 24k cluster, ~30 KB gzipped."""
    return HttpResponse(fabric_data.page_data(fabric, request.place), content_type="application/json")


@fabric_view
def status(request, fabric):
    """Statuses of the fabric's links and switches (the non-active ones), by position in fabric.json's arrays."""
    return JsonResponse(fabric_data.status_data(fabric, request.place))


@fabric_view
def zones(request, fabric):
    """The zone overview: per zone and link tier, links, not active, mean and max utilization of the last frame."""
    return JsonResponse(fabric_data.overview_data(fabric))


@fabric_view
def links(request, fabric):
    """Name, status and both ends of backend links: ?id=1,2,3 (at most fabric_data.LINK_DETAILS_MAX)."""
    raw = [v.strip() for part in request.GET.getlist("id") for v in part.split(",") if v.strip()]
    if not all(v.isdigit() and 0 < int(v) <= MAX_ID for v in raw):
        return JsonResponse({"id": ["a comma-separated list of link ids (positive integers) is required."]},
                            status=400)
    if len(raw) > fabric_data.LINK_DETAILS_MAX:
        return JsonResponse({"id": [f"at most {fabric_data.LINK_DETAILS_MAX} ids per call, got {len(raw)}."]},
                            status=400)
    return JsonResponse({"results": fabric_data.link_details(fabric, [int(v) for v in raw])})


PAGE = Page(nav=NavItem("fabric", "Fabric", "fabric", order=20, cluster_scoped=True), urlpatterns=[
    path("clusters/<str:cluster>/fabric/", page, name="fabric"),
    path("clusters/<str:cluster>/fabric.json", data, name="fabric-data"),
    path("clusters/<str:cluster>/fabric/status.json", status, name="fabric-status"),
    path("clusters/<str:cluster>/fabric/links.json", links, name="fabric-links"),
    path("clusters/<str:cluster>/fabric/zones.json", zones, name="fabric-zones"),
])
