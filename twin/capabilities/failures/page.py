"""The Reliability page of a cluster: a long training job's life under failures (the ``failures`` run kind,
:mod:`twin.capabilities.failures.kinds`, over :mod:`sim.failures.timeline`): the timeline of one seed as a chart (state bands,
failures as marks, lost work shaded), the time lost by cause and by phase, the distribution over seeds, the
checkpoint-interval sweep with the simulated optimum beside Young/Daly, and the form that starts a run (its fields
from the kind's declaration, ``sim.failures.params.FAILURES``, through :func:`twin.runs.params.form_fields`). The page is a
shell: frontend/js/reliability.js reads the runs API and follows the cluster's live stream.

``clusters/<name>/reliability/failed.json?run=<id>`` is what a run's failures hit, for the GPU page's replay
(``/clusters/<name>/gpus/?color=failures&run=<id>``): each failure's time, repair, category and item, and the GPU
indices it takes down (a GPU; a host's GPUs; a backend link's or NIC's GPU; a leaf switch's GPUs), resolved against
the inventory by the item's name.
"""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path

from twin.inventory.models import GPU, Cluster
from twin.runs import registry
from twin.capabilities.failures import kinds as failure_kinds
from twin.runs.models import SimulationRun
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN

KIND = failure_kinds.KIND


def failures_form(cluster=None) -> dict | None:
    """The failures kind's fields, their defaults on ``cluster`` (None while no ``failures`` kind is registered)."""
    kind = registry.kinds().get(KIND)
    if kind is None or kind.params is None:
        return None
    fields = form_fields(kind.params, cluster)
    names = {f["name"] for f in fields}
    return {"kind": KIND, "fields": fields, "main": [n for n in kind.main if n in names]}


@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/reliability.html", {"nav": "reliability", "missing": missing_cluster(cluster)},
                      status=404)
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}
    info = {"cluster": {"id": found.id, "name": found.name, "gpus": GPU.objects.filter(cluster=found).count()},
            "form": failures_form(found), "user": user, "examples": failure_kinds.example_items(found),
            "tables": failure_kinds.client_tables()}
    return render(request, "web/reliability.html", {"nav": "reliability", "cluster": found, "info": info})


@readable
def failed(request, cluster):
    """What run ``?run=<id>``'s failures hit: ``{"run", "days", "events": [...], "gpus": n}``."""
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
    try:
        run_id = int(request.GET.get("run", ""))
    except ValueError:
        return JsonResponse({"run": ["give the id of a failures run of this cluster: ?run=<id>"]}, status=400)
    run = SimulationRun.objects.filter(pk=run_id, cluster=found, kind=KIND).first()
    if run is None:
        return JsonResponse({"detail": f"no failures run #{run_id} on {found.name}"}, status=404)
    resp = JsonResponse(failure_kinds.failed_parts(found, run), json_dumps_params={"separators": (",", ":")})
    resp["Cache-Control"] = "no-store"
    return resp


PAGE = Page(nav=NavItem("reliability", "Reliability", "reliability", order=39, cluster_scoped=True,
                        group="operations"), urlpatterns=[
    path("clusters/<str:cluster>/reliability/", page, name="reliability"),
    path("clusters/<str:cluster>/reliability/failed.json", failed, name="reliability-failed"),
])
