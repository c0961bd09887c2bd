"""The Jobs page of a cluster: its training-job queue (the Job rows the ``job`` and ``schedule`` runs write), each
job's placement on the cluster, its step breakdown and throughput, and the form that submits a job or a what-if
(the same job with another placement, routing or cluster side by side). The page is a shell: frontend/js/jobs.js
reads the runs API (/api/runs/jobs/, /api/runs/) and the cluster's live stream; the form's fields come from the
``job`` kind's parameter declaration (``sim.jobs.params.JOB`` through :func:`twin.runs.params.form_fields`), its
layout from the chosen model's default on this cluster (``GET /api/runs/jobs/default/``, :mod:`sim.jobs.defaults`),
shown with why beside the form.

``clusters/<name>/jobs/gpus.json`` is what runs where (:func:`twin.runs.job_actions.gpu_jobs`: running jobs only,
what-ifs never): the GPU -> job index (base64 of the uint16 array, the live ``gpu_job`` section's layout), the jobs
of its rows and the occupancy (:func:`twin.runs.job_actions.occupancy`); the GPU page colours by it too."""
from __future__ import annotations

import base64

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path

from sim.jobs import defaults
from sim.jobs.models import MODELS
from twin.capabilities.jobs.kinds import JOB_KIND
from twin.inventory.models import GPU, Cluster
from twin.runs import job_actions, registry
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN, clusters_info


def job_form(cluster=None) -> dict | None:
    """The job kind's fields, their defaults on ``cluster`` (None while no ``job`` kind is registered), the fields a
    model's default layout sets (``layout``, :data:`sim.jobs.defaults.FIELDS`) and the models that have one: the
    page asks ``GET /api/runs/jobs/default/`` for it whenever the model changes."""
    kind = registry.kinds().get(JOB_KIND)
    if kind is None or kind.params is None:
        return None
    return {"kind": JOB_KIND, "fields": form_fields(kind.params, cluster), "main": list(kind.main),
            "whatif": list(job_actions.WHATIF_AXES), "whatif_max": job_actions.WHATIF_MAX_VARIANTS,
            "layout": list(defaults.FIELDS), "models": list(MODELS)}


@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/jobs.html", {"nav": "jobs", "missing": missing_cluster(cluster)}, status=404)
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}
    info = {"cluster": {"id": found.id, "name": found.name,
                        "gpus": GPU.objects.filter(cluster=found).count()},
            "clusters": clusters_info(), "form": job_form(found), "user": user}
    return render(request, "web/jobs.html", {"nav": "jobs", "cluster": found, "jobs_info": info})


def placement_data(cluster) -> dict:
    n = GPU.objects.filter(cluster=cluster).count()
    index, jobs, rows = job_actions.gpu_jobs(cluster, n)
    return {"cluster": cluster.id, "gpus": n, "occupancy": job_actions.occupancy(cluster, n),
            "gpu_job": base64.b64encode(index.astype("<u2").tobytes()).decode(),
            "jobs": [{**row, "name": j.name, "model": j.model, "state": j.state, "run": j.run_id}
                     for j, row in zip(jobs, rows)]}


@readable
def placement(request, cluster):
    """What runs where on ``cluster``: ``{"gpus", "gpu_job": base64 uint16, "jobs": [...]}``."""
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return JsonResponse({"detail": missing_cluster(cluster)}, status=404)
    resp = JsonResponse(placement_data(found), json_dumps_params={"separators": (",", ":")})
    resp["Cache-Control"] = "no-store"
    return resp


PAGE = Page(nav=NavItem("jobs", "Jobs", "jobs", order=35, cluster_scoped=True, group="operations"), urlpatterns=[
    path("clusters/<str:cluster>/jobs/", page, name="jobs"),
    path("clusters/<str:cluster>/jobs/gpus.json", placement, name="jobs-gpus"),
])
