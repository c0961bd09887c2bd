"""The Experiments pages: the runs list with the form that starts a run, one run live and its results, runs side by
side, and the published AllGather figure. The pages are shells: their data comes from the runs API (/api/runs/)
and the live streams (/ws/runs/<id>/); the forms get their fields, defaults, choices and bounds from the kinds'
parameter declarations (:mod:`sim.core.params`, through :func:`twin.runs.params.form_fields`) and the kinds themselves
(label, result view, headline figures) from the registry (:mod:`twin.runs.registry`), so the browser holds no
second copy of them."""
from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404, render
from django.urls import path

from sim.fabric.routing import default_routing
from twin.inventory.choices import FABRIC_KIND_BY_SPEC, FabricRole
from twin.inventory.filtersets import INT64_MAX
from twin.inventory.models import GPU, Cluster, Fabric
from twin.runs import ownership, registry
from twin.runs.choices import FINISHED, RunStatus
from twin.runs.constants import START_RUNS
from twin.runs.models import SimulationRun
from twin.runs.params import form_fields
from twin.web.access import readable
from twin.web.context import about_cluster, current_cluster

ADD_RUN = START_RUNS          # the API asks it to start a run and to cancel one (both are POSTs)
MAX_COMPARED = 8
SPEC_KIND = {str(v): k for k, v in FABRIC_KIND_BY_SPEC.items()}

# ---------------------------------------------------------------------------------------------- form data
def param_fields(kind: str) -> list[dict]:
    """The parameters of ``kind`` as the form draws them (from its ``sim.core.params`` declaration): name, type,
    default, choices, bounds, help text."""
    params = registry.get(kind).params
    return form_fields(params) if params is not None else []


def clusters_info() -> list[dict]:
    """Each cluster with its GPU count, backend fabric and that fabric's default routing (three small queries)."""
    gpus = dict(GPU.objects.values("cluster").annotate(n=Count("id")).values_list("cluster", "n"))
    fabric = dict(Fabric.objects.filter(role=FabricRole.BACKEND).values_list("cluster", "kind"))
    out = []
    for cid, name in Cluster.objects.order_by("name").values_list("id", "name"):
        spec_kind = SPEC_KIND.get(fabric.get(cid), "")
        out.append({"id": cid, "name": name, "gpus": gpus.get(cid, 0), "fabric": spec_kind,
                    "default_routing": default_routing(spec_kind) if spec_kind else None})
    return out


def experiments_context(request, subnav: str = "runs", **extra) -> dict:
    """Context of every Experiments page: the clusters, statuses and kinds, and what the visitor may do."""
    clusters = clusters_info()
    user = {"can_start": request.user.has_perm(ADD_RUN), "authenticated": request.user.is_authenticated,
            "current": current_cluster(request, [c["name"] for c in clusters])}
    return {"nav": "experiments", "subnav": subnav, "clusters_info": clusters, "user_state": user,
            "statuses": list(RunStatus.values), "finished": [str(s) for s in FINISHED],
            "kinds": [{"value": v, "label": label} for v, label in registry.choices()],
            "kind_info": registry.client_info(), **extra}


# ----------------------------------------------------------------------------------------------------- pages
@readable
def runs_page(request):
    """Runs, newest first, live progress, filters, compare; the form that starts a collective or a sweep."""
    offered = [k for k in registry.kinds().values() if k.form]
    swept = next((k for k in offered if k.params is not None), None)      # the kind the form's sweeps sweep
    form = {"kinds": [k.name for k in offered], "main": list(swept.main) if swept else [],
            "params": {k.name: param_fields(k.name) for k in offered if k.params is not None},
            "sweep_kind": swept.name if swept else None}
    return render(request, "web/experiments.html", experiments_context(request, form=form))


@readable
def run_page(request, run_id: int):
    """One run: its parameters and state, live progress, then its results drawn for its kind; links to the scenario
    it ran and the schedule that started it (on the Schedules page)."""
    run = get_object_or_404(SimulationRun.objects.select_related("cluster", "scenario", "schedule").only(
        "id", "kind", "status", "progress", "parent_id", "created_by_id", "cluster__name", "scenario__name",
        "schedule__name", "params"), pk=run_id)
    # a cluster's build or delete names its cluster in its parameters (no cluster before its build, or once deleted)
    cluster = run.cluster.name if run.cluster_id else str((run.params or {}).get("name", ""))
    if run.cluster_id:
        about_cluster(request, cluster)
    return render(request, "web/experiments_run.html", experiments_context(
        request, run=run, published=getattr(registry.kinds().get(run.kind), "published", None),
        page={"id": run.pk, "kind": run.kind, "cluster": cluster, "parent": run.parent_id,
              "can_cancel": request.user.has_perm(ADD_RUN) and ownership.may_change(request.user, run)}))


def _compared_ids(text: str) -> list[int]:
    try:
        ids = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise ValueError(f"runs: expected run ids separated by commas, e.g. ?runs=12,15; got {text!r}") from None
    ids = list(dict.fromkeys(ids))
    outside = [i for i in ids if not 1 <= i <= INT64_MAX]
    if outside:
        raise ValueError(f"runs: {str(outside[0])[:40]} is not a run id (ids are 1 to {INT64_MAX})")
    if not ids:
        raise ValueError("runs: give the runs to compare, e.g. ?runs=12,15")
    if len(ids) > MAX_COMPARED:
        raise ValueError(f"runs: {len(ids)} runs asked, at most {MAX_COMPARED} side by side")
    return ids


@readable
def compare_page(request):
    """Runs side by side: what differs in their parameters, their headline figures, one busbw chart."""
    try:
        ids = _compared_ids(request.GET.get("runs", ""))
    except ValueError as e:
        return _compare_error(request, str(e), 400)
    found = set(SimulationRun.objects.filter(pk__in=ids).values_list("id", flat=True))
    missing = [i for i in ids if i not in found]
    if missing:
        return _compare_error(request, f"runs: no run {', '.join(f'#{i}' for i in missing)}", 404)
    return render(request, "web/experiments_compare.html", experiments_context(request, page={"runs": ids}))


def _compare_error(request, message: str, status: int):
    """The compare page saying what is wrong with its ?runs= (a 400 or 404 the user can read)."""
    return render(request, "web/experiments_compare.html", experiments_context(request, error=message), status=status)


urlpatterns = [
    path("experiments/", runs_page, name="experiments"),
    path("experiments/<int:run_id>/", run_page, name="experiment-run"),
    path("experiments/compare/", compare_page, name="experiments-compare"),
]


from twin.web.nav import NavItem, Page  # noqa: E402 - the page's registration (twin/web/nav.py)

PAGE = Page(nav=NavItem("experiments", "Experiments", "experiments", order=40), urlpatterns=urlpatterns)
