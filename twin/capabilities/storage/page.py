"""The Storage page: a cluster's storage clusters as a grid of servers coloured by live load, the frontend fabric's
heatmaps (the Fabric page's component on the frontend fabric), a checkpoint timeline (blocked vs durable, the
aggregate rate against the storage's rated bandwidth), and the form that starts a checkpoint or a restore
(frontend/js/storage.js).

Routes: the page; storage.json (stores, racks, servers in live order, twin/capabilities/storage/data.py); the frontend
fabric's structure (twin/web/fabric_data.py, in the ``frontend_util`` section's link order)."""
import time

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.gzip import gzip_page

from sim.storage.params import CHECKPOINT
from twin.inventory.models import Cluster
from twin.runs.params import form_fields
from twin.runs import registry
from twin.web import fabric_data
from twin.capabilities.storage import data as storage_data
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN




@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/storage.html", {"nav": "storage", "missing": missing_cluster(cluster)}, status=404)
    form = {"fields": form_fields(CHECKPOINT, found), "main": list(registry.get("checkpoint").main), "kind": "checkpoint",
            "can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}
    return render(request, "web/storage.html", {
        "nav": "storage", "cluster": found, "form": form,
        "has_frontend": storage_data.frontend_fabric(found) is not None,
        "snapshot_url": reverse("live:cluster-snapshot", kwargs={"name": found.name}) + "?binary=1"})


def _json_view(build):
    """A page-data view answering ``build(cluster)`` (JSON text), its server time in a Server-Timing header."""
    @readable
    @gzip_page
    def view(request, cluster):
        t0 = time.perf_counter()
        found = Cluster.objects.filter(name=cluster).first()
        if found is None:
            return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
        body = build(found)
        if body is None:
            return JsonResponse({"detail": f"cluster {cluster!r} has no frontend fabric"}, status=404)
        resp = HttpResponse(body, content_type="application/json")
        resp["Server-Timing"] = f"data;dur={1000 * (time.perf_counter() - t0):.1f}"
        resp["Cache-Control"] = "no-store"
        return resp
    return view


def _frontend(cluster):
    fabric = storage_data.frontend_fabric(cluster)
    return fabric_data.page_data(fabric) if fabric is not None else None


PAGE = Page(nav=NavItem("storage", "Storage", "storage", order=38, cluster_scoped=True), urlpatterns=[
    path("clusters/<str:cluster>/storage/", page, name="storage"),
    path("clusters/<str:cluster>/storage.json", _json_view(storage_data.page_data), name="storage-data"),
    path("clusters/<str:cluster>/storage/fabric.json", _json_view(_frontend), name="storage-fabric"),
])
