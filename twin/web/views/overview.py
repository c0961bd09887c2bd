"""The overview: every built cluster as a card with its key figures, the simulations running on it and what else
runs there (jobs and the GPUs they hold, the last checkpoint, recent failures: :mod:`twin.web.activity`), kept live by
frontend/js/overview.js; the clusters being built (the launcher builds the default ones after the web answers),
with their progress; and the liveness check."""
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import path

from twin.inventory import build_status
from twin.inventory.summary import cluster_overview
from twin.runs.choices import ACTIVE
from twin.runs.models import SimulationRun
from twin.web.access import readable
from twin.web.activity import activity
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
    return render(request, "web/overview.html", {"clusters": clusters, "nav": "overview",
                                                  "activity": activity(clusters), "building": build_status.current()})


@readable
def building_json(request):
    """The cluster builds in progress (:mod:`twin.inventory.build_status`), polled by the page while there are."""
    return JsonResponse({"building": build_status.current()})


@readable
def activity_json(request):
    """What runs on each cluster (:func:`twin.web.activity.activity`), re-read by the page when a run ends."""
    return JsonResponse(activity(cluster_overview()))


def healthz(request):
    """Liveness for load balancers and docker compose: 200 once the database answers."""
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


PAGE = Page(nav=NavItem("overview", "Overview", "overview", order=10), urlpatterns=[
    path("", overview, name="overview"),
    path("overview/activity.json", activity_json, name="overview-activity"),
    path("overview/building.json", building_json, name="overview-building"),
    path("healthz", healthz, name="healthz"),
])
