"""The inventory pages and their routes: the clusters, one page per item, and the search."""
from __future__ import annotations

from urllib.parse import urlencode

from django.core.paginator import Page
from django.http import Http404
from django.shortcuts import render
from django.urls import path

from twin.inventory.choices import Status
from twin.inventory.models import GPU, Cluster, Host, Link, StorageServer, Switch, Zone
from twin.web.access import readable
from twin.web.context import about_cluster

from .changes import item_changes
from .items import PAGES, paginate
from .kinds import KINDS, SEARCHABLE, SIMULATED, breadcrumb
from .search import MATCH_CAP, STATUS_FILTERS, search
from .tally import tally_by

ROWS_PER_KIND = 20      # search rows shown for each kind when searching all kinds
ROWS_PER_PAGE = 50      # search rows a page when one kind is searched


def _context(request, cluster_name: str = "", **extra) -> dict:
    """What every inventory page's header needs: the search form's choices and values."""
    params = request.GET
    form = {"q": params.get("q", "").strip(), "kind": params.get("kind", ""), "status": params.get("status", ""),
            "cluster": params.get("cluster", cluster_name)}
    return {"nav": "inventory", "search": form, "search_kinds": SEARCHABLE, "status_filters": STATUS_FILTERS,
            **extra}


@readable
def clusters(request):
    """Every cluster with its counts by status: where a drill-down starts."""
    rows = list(Cluster.objects.values("id", "name", "title", "status", "built_at"))
    counts = {label: tally_by(model.objects.all(), "cluster_id")
              for label, model in (("hosts", Host), ("gpus", GPU), ("switches", Switch), ("links", Link),
                                   ("servers", StorageServer))}
    zones = tally_by(Zone.objects.all(), "cluster_id")
    for r in rows:
        r.update({label: by_cluster[r["id"]] for label, by_cluster in counts.items()}, zones=zones[r["id"]])
    return render(request, "web/inventory/index.html", _context(request, clusters=rows))


def _add_labels(value, prefix: str) -> None:
    """Give every row (dict) with a ``name`` (or ``x__name``) a ``label`` (``x__label``): the name without the
    cluster's prefix, which the breadcrumb already shows (``z00.r000.h0.be0:0`` for ``meta-roce-24k.z00...``)."""
    if isinstance(value, dict):
        for key in [k for k in value if k == "name" or k.endswith("__name")]:
            name = value[key]
            if isinstance(name, str):
                value[key[:-4] + "label"] = name.removeprefix(prefix)
        for v in list(value.values()):
            _add_labels(v, prefix)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _add_labels(v, prefix)
    elif isinstance(value, Page):
        _add_labels(value.object_list, prefix)


def _status_hint(kind) -> str:
    if kind.key in SIMULATED:
        return (f"Simulations and path queries read this status: a {kind.verbose_name} that is not active is left "
                "out of the next run, and traffic is routed around it.")
    return ("Simulations read the statuses of GPUs, NICs, switches, ports and links; "
            f"a {kind.verbose_name}'s status is kept for the record and for search.")


@readable
def item(request, kind: str, pk: int):
    """One item: its header (name, serial, model, status, location, API and admin links, status form), what its
    kind's page function adds (children with counts, neighbours) and its last changes."""
    k = KINDS.get(kind)
    if k is None:
        raise Http404(f"no inventory kind {kind!r}")
    obj = k.model.objects.select_related(*k.related).filter(pk=pk).first()
    if obj is None:
        raise Http404(f"no {k.label} {pk}")
    crumbs = breadcrumb(obj)
    cluster_name = crumbs[0]["name"] if crumbs else obj.name
    about_cluster(request, cluster_name)
    ctx = _context(request, cluster_name,
                   kind=k, obj=obj, crumbs=crumbs, api_url=k.api_url(pk), admin_url=k.admin_url(pk),
                   hardware=getattr(obj, k.hardware) if k.hardware else None,
                   can_change=k.has_status and request.user.has_perm(k.change_permission),
                   statuses=Status.choices, status_hint=_status_hint(k), simulated=kind in SIMULATED)
    rows = PAGES[kind](request, obj)
    _add_labels(rows, cluster_name + ".")
    ctx.update(rows, **item_changes(kind, pk, request.user))
    return render(request, f"web/inventory/{kind}.html", ctx)


@readable
def search_page(request):
    """Search by name or serial across the physical kinds, filtered by kind, status and cluster."""
    ctx = _context(request)
    form = ctx["search"]
    if form["kind"] not in KINDS or not KINDS[form["kind"]].searchable:
        form["kind"] = ""
    if form["status"] not in {value for value, _ in STATUS_FILTERS}:
        form["status"] = ""
    cluster = Cluster.objects.filter(name=form["cluster"]).first() if form["cluster"] else None
    if form["cluster"] and cluster is None:
        ctx["error"] = f"cluster: no cluster named {form['cluster']!r}"
    elif not form["q"] and not form["status"]:
        ctx["error"] = "q: type a name or a serial (or a part of one), or pick a status to list"
    else:
        anywhere = request.GET.get("match") == "anywhere"
        hits = search(form["q"], form["kind"], form["status"], cluster, anywhere)
        if form["q"] and not anywhere and not any(h.count for h in hits):   # nothing starts so: look inside names
            anywhere = ctx["widened"] = True
            hits = search(form["q"], form["kind"], form["status"], cluster, anywhere)
        # q, status, cluster and the match mode, for the links that pick a kind
        ctx["same_search"] = urlencode({"q": form["q"], "status": form["status"], "cluster": form["cluster"],
                                        **({"match": "anywhere"} if anywhere else {})})
        ctx["anywhere"] = anywhere
        if form["kind"]:
            page = paginate(request, hits[0].ids, ROWS_PER_PAGE)
            hits[0].show(page.object_list)
            ctx["page"] = page
        else:
            for h in hits:
                h.show(h.ids[:ROWS_PER_KIND])
        ctx.update(hits=hits, total=sum(h.count for h in hits), capped=any(h.more for h in hits))
    ctx.update(match_cap=MATCH_CAP, rows_per_kind=ROWS_PER_KIND, status_label=dict(STATUS_FILTERS)[form["status"]])
    return render(request, "web/inventory/search.html", ctx)


urlpatterns = [
    path("inventory/", clusters, name="inventory"),
    path("inventory/search/", search_page, name="inventory-search"),
    path("inventory/<str:kind>/<int:pk>/", item, name="inventory-item"),
]
