"""The Validation page (``/validation/``): the last finished ``validate`` run's result (the twin against the public
corpus: the error by kind before and after the fitted factors and cross-validated, predicted against measured on
log-log axes with the y = x line and a +-10 % band, each point's source, the sources and the fitted factors), filtered
by measurement kind and GPU; the same for a user's own measurements against a calibration profile (a finished
``calibrate`` run, chosen by itself or by the profile it was saved as); the validate runs with their live progress
and the form that starts one ("rerunning it is a run", on the header's cluster; its fields from the engine's
declaration, ``sim.validation.params.VALIDATE``). The page is a shell: frontend/js/validation.js reads its JSON
(``/validation/data/``, ``/validation/measurements/``, :mod:`twin.capabilities.validation.data`) and the runs API.
The corpus is the same whatever the cluster, so the page is not a cluster's."""
from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path

from twin.capabilities.validation import data
from twin.capabilities.validation import live as validation_live
from twin.capabilities.validation.kinds import KIND
from twin.inventory.models import Cluster
from twin.runs import calibration, registry
from twin.runs.choices import FINISHED, RunStatus
from twin.runs.models import SimulationRun
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import current_cluster
from twin.web.nav import NavItem, Page
from twin.web.views.experiments import ADD_RUN


def validate_form(cluster=None) -> dict:
    """The validate kind's fields (not ``calibration``: the corpus is predicted with the fitted factors, not a
    cluster's profile)."""
    kind = registry.get(KIND)
    fields = [f for f in form_fields(kind.params, cluster) if f["name"] != calibration.KEY]
    return {"kind": KIND, "fields": fields, "main": list(kind.main)}


@readable
def page(request):
    names = list(Cluster.objects.order_by("name").values_list("name", flat=True))
    name = current_cluster(request, names)
    cluster = Cluster.objects.filter(name=name).first() if name else None
    latest = data.latest_validation_id()
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated}
    info = {"cluster": cluster and {"id": cluster.id, "name": cluster.name}, "form": validate_form(cluster),
            "user": user, "finished": [str(s) for s in FINISHED], "latest": latest,
            "fields": list(validation_live.FIELDS), "calibrations": data.calibration_runs()}
    return render(request, "web/validation.html", {"nav": "validation", "info": info})


def _int(request, name: str) -> int | None:
    text = request.GET.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise data.NotFound(f"{name}: must be an integer, got {text[:32]!r}") from None


def _filters(request) -> tuple[str | None, str | None]:
    return request.GET.get("kind", "").strip() or None, request.GET.get("gpu", "").strip() or None


def _refused(field: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({field: [message]}, status=status)


@readable
def validation_data(request):
    """``GET /validation/data/?run=&kind=&gpu=``: a validate run's result (default: the last finished one;
    ``{"run": null}`` when none has finished) with its observations filtered (:func:`data.validation_view`)."""
    try:
        run_id = _int(request, "run")
    except data.NotFound as e:
        return _refused("run", str(e), 400)
    if run_id is None:
        run = data.latest_validation()
    else:
        run = SimulationRun.objects.select_related("cluster").filter(pk=run_id, kind=KIND).first()
        if run is None:
            return _refused("run", f"no validate run {run_id}", 404)
        if run.status != RunStatus.SUCCEEDED or not run.summary:
            return _refused("run", f"validate run {run_id} has no result ({run.status})", 404)
    return JsonResponse(data.validation_view(run, *_filters(request)))


@readable
def measurements_data(request):
    """``GET /validation/measurements/?run=|profile=&kind=&gpu=``: a user's measurements against a calibration
    profile (:func:`data.calibration_view`); a 400 naming the field when neither or a bad one is given."""
    try:
        run_id, profile_id = _int(request, "run"), _int(request, "profile")
    except data.NotFound as e:
        return _refused(str(e).split(":", 1)[0], str(e), 400)
    if (run_id is None) == (profile_id is None):
        return _refused("run", "name a calibrate run (run=<id>) or a calibration profile (profile=<id>), one of them",
                        400)
    try:
        return JsonResponse(data.calibration_view(run_id, profile_id, *_filters(request)))
    except data.NotFound as e:
        return _refused("profile" if profile_id is not None else "run", str(e), 404)


PAGE = Page(nav=NavItem("validation", "Validation", "validation", order=44, group="operations"), urlpatterns=[
    path("validation/", page, name="validation"),
    path("validation/data/", validation_data, name="validation-data"),
    path("validation/measurements/", measurements_data, name="validation-measurements"),
])
