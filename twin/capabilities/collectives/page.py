"""The collectives' pages beside the runs, under the Experiments section:

- ``/experiments/figure/``: the published AllGather figure simulated: a form starts a ``figure`` run on a cluster,
  past figure runs and their panels, the paper's claims drawn beside them (the figure kind's ``published``);
- ``/experiments/presets/``: every preset's page of figures (``preset_figure`` runs: busbw by message size against
  the roofline, rail-local vs cross-rail traffic), one cluster at a time with a selector; each preset of
  ``sim/presets`` is listed (found, not named) with the clusters built from it, and the newest finished run of the
  chosen cluster is drawn as the page opens."""
from __future__ import annotations

from functools import lru_cache

from django.db.models import Max
from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.urls import path

from sim.fabric.spec import load_spec, preset_names
from twin.inventory.models import Cluster
from twin.runs import registry
from twin.runs.choices import RunStatus
from twin.runs.models import SimulationRun
from twin.web.access import readable
from twin.web.nav import Page
from twin.web.views.experiments import experiments_context, param_fields

PRESET_KIND = "preset_figure"


def _run_param(request):
    """``?run=<id>`` as an int, None when absent; ValueError when it is not a number."""
    return int(request.GET["run"]) if request.GET.get("run") else None


@readable
def figure_page(request):
    """The published AllGather figure: start a figure run on a cluster, past figure runs, their panels."""
    try:
        selected = _run_param(request)
    except ValueError:
        return HttpResponseBadRequest("run: expected a run id, e.g. ?run=12", content_type="text/plain")
    return render(request, "web/experiments_figure.html", experiments_context(
        request, "figure", page={"run": selected, "params": param_fields("figure"), "published": registry.get("figure").published}))


@lru_cache(maxsize=None)
def _preset(name: str) -> dict:
    """A preset's name, title, description and GPUs (its spec parsed once per process)."""
    spec = load_spec(name)
    return {"name": name, "title": spec.title, "description": spec.description, "gpus": spec.layout.gpus,
            "fabric": spec.backend.kind, "rails": int(getattr(spec.backend, "rails", 1))}


def presets_info() -> list[dict]:
    """Every preset of sim/presets with the clusters built from it (by the spec's name they keep)."""
    built: dict[str, list[str]] = {}
    for name, spec_name in Cluster.objects.order_by("name").values_list("name", "spec__name"):
        built.setdefault(spec_name or name, []).append(name)
    return [{**_preset(p), "clusters": built.get(p, [])} for p in preset_names()]


@readable
def presets_page(request):
    """Each preset's page of figures: choose a cluster (built from a preset, or any cluster), its newest finished
    ``preset_figure`` run is drawn; a form starts one with live progress."""
    try:
        selected = _run_param(request)
    except ValueError:
        return HttpResponseBadRequest("run: expected a run id, e.g. ?run=12", content_type="text/plain")
    latest = dict(SimulationRun.objects.filter(kind=PRESET_KIND, status=RunStatus.SUCCEEDED)
                  .values("cluster__name").annotate(last=Max("id")).values_list("cluster__name", "last"))
    context = experiments_context(request, "presets")
    names = [c["name"] for c in context["clusters_info"]]
    chosen = request.GET.get("cluster")
    if chosen is not None and chosen not in names:
        return HttpResponseBadRequest(f"cluster: no cluster named {chosen[:64]!r}", content_type="text/plain")
    chosen = chosen or context["user_state"]["current"] or (names[0] if names else None)
    context["page"] = {"run": selected, "cluster": chosen, "latest": latest, "presets": presets_info(),
                       "params": param_fields(PRESET_KIND)}
    return render(request, "web/experiments_presets.html", context)


PAGE = Page(urlpatterns=[path("experiments/figure/", figure_page, name="experiments-figure"),
                         path("experiments/presets/", presets_page, name="experiments-presets")])
