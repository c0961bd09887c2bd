"""The overview: every built cluster as a card with its key figures and the simulations running on it (kept live
by frontend/js/overview.js), and the liveness check."""
from django.db import connection
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path

from twin.inventory.summary import cluster_overview
from twin.runs.choices import ACTIVE
from twin.runs.models import SimulationRun
from twin.web.access import readable
from twin.web.nav import NavItem, Page


def active_runs_by_cluster() -> dict[int, list[dict]]:
    """Queued and running simulations per cluster id (one query)."""
    runs: dict[int, list[dict]] = {}
    for row in (SimulationRun.objects.filter(status__in=ACTIVE).order_by("created_at")
                .values("id", "cluster_id", "kind", "status", "progress")):
        runs.setdefault(row["cluster_id"], []).append(row)
    return runs


@readable
def overview(request):
    """The clusters with their key figures and the simulations running on them."""
    clusters = cluster_overview()
    runs = active_runs_by_cluster()
    for row in clusters:
        row["runs"] = runs.get(row["cluster"].id, [])
    return render(request, "web/overview.html", {"clusters": clusters, "nav": "overview"})


def healthz(request):
    """Liveness for load balancers and docker compose: 200 once the database answers."""
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


PAGE = Page(nav=NavItem("overview", "Overview", "overview", order=10), urlpatterns=[
    path("", overview, name="overview"),
    path("healthz", healthz, name="healthz"),
])
