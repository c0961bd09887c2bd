from django.db import connection
from django.http import HttpResponse
from django.shortcuts import render

from twin.inventory.summary import cluster_overview
from twin.web.access import readable


@readable
def overview(request):
    """The clusters with their key figures."""
    return render(request, "web/overview.html", {"clusters": cluster_overview(), "nav": "overview"})


def healthz(request):
    """Liveness for load balancers and docker compose: 200 once the database answers."""
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")
