"""The collectives' page beside the runs: the published AllGather figure simulated (``/experiments/figure/``, under
the Experiments section): a form starts a ``figure`` run on a cluster, past figure runs and their panels, the
paper's claims drawn beside them (the figure kind's ``published``)."""
from __future__ import annotations

from django.http import HttpResponseBadRequest
from django.shortcuts import render
from django.urls import path

from twin.runs import registry
from twin.web.access import readable
from twin.web.nav import Page
from twin.web.views.experiments import experiments_context, param_fields


@readable
def figure_page(request):
    """The published AllGather figure: start a figure run on a cluster, past figure runs, their panels."""
    try:
        selected = int(request.GET["run"]) if request.GET.get("run") else None
    except ValueError:
        return HttpResponseBadRequest("run: expected a run id, e.g. ?run=12", content_type="text/plain")
    return render(request, "web/experiments_figure.html", experiments_context(
        request, "figure", page={"run": selected, "params": param_fields("figure"), "published": registry.get("figure").published}))




PAGE = Page(urlpatterns=[path("experiments/figure/", figure_page, name="experiments-figure")])
