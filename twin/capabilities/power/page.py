"""The Power page of a cluster: its ``power`` runs (:mod:`twin.capabilities.power.kinds` over :mod:`sim.power`), one
run's draw over a step (the cluster, the job and each building in MW against milliseconds) and over days when it ran
under failures, its buildings and its racks against their budgets and cooling (the worst, and every rack's peak),
the cap trade-off curve (step time against the job's power and energy per token), the published references beside
the simulated figures, and the form that starts a run; below, the cluster's draw over a job queue's schedule as jobs
come and go (``power_schedule`` runs) with its runs and its form. The forms' fields come from the engine's
declarations (``sim.power.params.POWER``, ``POWER_SCHEDULE``) through :func:`twin.runs.params.form_fields`. The page
is a shell: frontend/js/power.js reads the runs API and follows the cluster's live stream (``power_stats``)."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from twin.capabilities.power import kinds as power_kinds
from twin.capabilities.power import live as power_live
from twin.inventory.models import GPU, Cluster
from twin.runs import registry
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN

KIND = power_kinds.KIND


def power_form(cluster=None, name: str = KIND) -> dict | None:
    """The fields of the kind ``name`` (``power``, ``power_schedule``), their defaults on ``cluster`` (None while no
    such kind is registered)."""
    kind = registry.kinds().get(name)
    if kind is None or kind.params is None:
        return None
    fields = form_fields(kind.params, cluster)
    names = {f["name"] for f in fields}
    return {"kind": name, "fields": fields, "main": [n for n in kind.main if n in names]}


@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/power.html", {"nav": "power", "missing": missing_cluster(cluster)}, status=404)
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}
    info = {"cluster": {"id": found.id, "name": found.name, "gpus": GPU.objects.filter(cluster=found).count()},
            "form": power_form(found), "schedule_form": power_form(found, power_kinds.SCHEDULE_KIND), "user": user,
            "fields": list(power_live.POWER_FIELDS),
            "stored_bins": power_kinds.STORED_BINS}
    return render(request, "web/power.html", {"nav": "power", "cluster": found, "info": info})


PAGE = Page(nav=NavItem("power", "Power", "power", order=40, cluster_scoped=True, group="operations"), urlpatterns=[
    path("clusters/<str:cluster>/power/", page, name="power"),
])
