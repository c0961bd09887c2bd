"""The Calibration page of a cluster: the form that starts a ``calibrate`` run (the measurements file uploaded, read
in the browser into the ``measurements`` field, or pasted; the ``fit`` names; its fields from the engine's
declaration, ``sim.calibrate.params.CALIBRATE``, through :func:`twin.runs.params.form_fields`), the cluster's
calibrate runs with their live progress, and a finished run's result view (frontend/js/capabilities/calibration.js:
predicted against measured, |error| by kind, the fitted parameters) with the form that saves it as a calibration
profile (``POST /api/calibrations/``). The page is a shell: frontend/js/calibration.js reads the runs API."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from twin.capabilities.calibration.kinds import KIND
from twin.inventory.models import Cluster
from twin.runs import calibration, registry
from twin.runs.choices import FINISHED
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import missing_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN


def calibrate_form(cluster=None) -> dict:
    """The calibrate kind's fields (not ``calibration``: the kind declares no number a profile could set)."""
    kind = registry.get(KIND)
    fields = [f for f in form_fields(kind.params, cluster) if f["name"] != calibration.KEY]
    return {"kind": KIND, "fields": fields, "main": list(kind.main)}


@readable
def page(request, cluster):
    found = Cluster.objects.filter(name=cluster).first()
    if found is None:
        return render(request, "web/calibration.html", {"nav": "calibration", "missing": missing_cluster(cluster)},
                      status=404)
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated,
            "can_save": request.user.has_perm("runs.add_calibrationprofile")}
    info = {"cluster": {"id": found.id, "name": found.name}, "form": calibrate_form(found), "user": user,
            "finished": [str(s) for s in FINISHED]}
    return render(request, "web/calibration.html", {"nav": "calibration", "cluster": found, "info": info})


PAGE = Page(nav=NavItem("calibration", "Calibration", "calibration", order=43, cluster_scoped=True,
                        group="operations"), urlpatterns=[
    path("clusters/<str:cluster>/calibration/", page, name="calibration"),
])
