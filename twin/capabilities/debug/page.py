"""The Debug page of a cluster: pick a finished rehearsal (a ``debug`` run) and see where each rank stopped (a rank x
sequence heatmap, per host when ranks are many), the culprit with its explanation, its GPUs on the GPU page
(``?color=debug&run=<id>``) and its links on the fabric page, the straggler ranking, the dumps to download; and the
start-up model's curve over scale (a ``startup`` run). The forms that start both come from the kinds' parameter
declarations (``sim.debug.params.DEBUG``, ``STARTUP``, through :func:`twin.runs.params.form_fields`). The page is a shell:
frontend/js/debug.js reads the runs API, ``debug/<run>.json`` (:mod:`twin.capabilities.debug.data`) and the run's stream."""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path

from twin.inventory.models import GPU, Cluster
from twin.runs import registry
from twin.runs.models import SimulationRun
from twin.runs.params import form_fields
from twin.capabilities.debug import data as debug_data
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN

DEBUG_KINDS = ("debug", "startup")
# The parameters each form shows first; the others go under "more parameters".


def forms(cluster=None) -> dict:
    """Each debugging kind's form fields, their defaults on ``cluster`` (a kind the engine does not declare yet is
    left out)."""
    kinds = registry.kinds()
    return {k: {"kind": k, "label": kinds[k].label, "fields": form_fields(kinds[k].params, cluster),
                "main": list(kinds[k].main)}
            for k in DEBUG_KINDS if k in kinds and kinds[k].params is not None}


@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/debug.html", {"nav": "debug", "missing": missing_cluster(cluster)}, status=404)
    info = {"cluster": {"id": found.id, "name": found.name, "gpus": GPU.objects.filter(cluster=found).count()},
            "forms": forms(found), "states": debug_data.HEATMAP_STATES,
            "user": {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}}
    return render(request, "web/debug.html", {"nav": "debug", "cluster": found, "debug_info": info})


@readable
def run_data(request, cluster, run):
    """One debug or startup run of ``cluster`` as the page draws it (:func:`twin.capabilities.debug.data.run_data`)."""
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
    r = SimulationRun.objects.filter(pk=run, cluster=found, kind__in=DEBUG_KINDS).first() if run < 2**63 else None
    if r is None:
        return JsonResponse({"detail": f"{found.name} has no debug or startup run {run}"}, status=404)
    resp = JsonResponse(debug_data.run_data(r, request.user), json_dumps_params={"separators": (",", ":")})
    resp["Cache-Control"] = "no-store"
    return resp


PAGE = Page(nav=NavItem("debug", "Debug", "debug", order=41, cluster_scoped=True, group="operations"), urlpatterns=[
    path("clusters/<str:cluster>/debug/", page, name="debug"),
    path("clusters/<str:cluster>/debug/<int:run>.json", run_data, name="debug-run"),
])
