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
from twin.web.access import readable
from twin.web.activity import activity
from twin.web.nav import NavItem, Page


@readable
def overview(request):
    """The clusters with their key figures and the simulations running on them."""
    clusters = cluster_overview()
    shown = activity(clusters)
    for row in clusters:
        row["runs"] = shown[row["cluster"].name]["runs"]
    return render(request, "web/overview.html", {"clusters": clusters, "nav": "overview",
                                                  "activity": shown, "building": build_status.current()})


@readable
def building_json(request):
    """The cluster builds in progress (:mod:`twin.inventory.build_status`), polled by the page while there are."""
    return JsonResponse({"building": build_status.current()})


@readable
def activity_json(request):
    """Each card's figures, runs and what runs on its cluster (:func:`twin.web.activity.activity`): read again by the
    page on its cluster streams' events and frames, and after a reconnection."""
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
