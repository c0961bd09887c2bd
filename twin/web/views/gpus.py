"""The GPU grid: every GPU of a cluster on one canvas, coloured by job, health or utilization (frontend/js/gpus.js),
and the compact data it is drawn from (twin/web/gpu_data.py)."""
import time

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path, reverse

from twin.inventory.models import Cluster
from twin.web import gpu_data
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page



@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/gpus.html", {"nav": "gpus", "missing": missing_cluster(cluster)}, status=404)
    snapshot_url = reverse("live:cluster-snapshot", kwargs={"name": found.name}) + "?binary=1"
    return render(request, "web/gpus.html", {"nav": "gpus", "cluster": found, "snapshot_url": snapshot_url})


def _json_view(build):
    """A page-data view answering ``build(cluster)`` (JSON bytes), its server time in a Server-Timing header."""
    @readable
    def view(request, cluster):
        t0 = time.perf_counter()
        found = Cluster.objects.filter(name=cluster).first()
        if found is None:
            return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
        resp = HttpResponse(build(found), content_type="application/json")
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
])
