from django.shortcuts import render

from twin.inventory.summary import cluster_overview


def overview(request):
    """The clusters with their key figures."""
    return render(request, "web/overview.html", {"clusters": cluster_overview()})
