"""The Clusters page: the presets (size, GPUs, fabric, estimated build time), the clusters built, a spec upload, and
the builds, rebuilds and deletes under way, each a run (:mod:`twin.runs.clusters`) started through
``/api/clusters/`` and followed live (frontend/js/clusters.js). The page is a shell: what it lists comes from the
API, what it offers from the user's permissions (the API checks them again) and each built cluster's
``delete_refusal``."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from sim.fabric.spec import SPEC_FORMATS
from twin.runs import clusters
from twin.web.access import readable
from twin.web.nav import NavItem, Page


@readable
def clusters_page(request):
    """Presets, clusters built, the spec upload, and the cluster runs under way."""
    user = request.user
    page = {"authenticated": user.is_authenticated, "kinds": list(clusters.KINDS), "formats": list(SPEC_FORMATS),
            "max_spec_bytes": clusters.MAX_SPEC_BYTES,
            "build_refusal": _missing(user, clusters.PERMISSIONS[clusters.BUILD])}
    return render(request, "web/clusters.html", {"nav": "clusters", "page": page})


def _missing(user, perms) -> str:
    """Why ``user`` may not build ("" when they may): not signed in, or the permissions they lack."""
    if not user.is_authenticated:
        return "log in to build a cluster"
    lacking = [p for p in perms if not user.has_perm(p)]
    return f"your account needs the permission {', '.join(lacking)}" if lacking else ""


PAGE = Page(nav=NavItem("clusters", "Clusters", "clusters", order=12), urlpatterns=[
    path("clusters/", clusters_page, name="clusters"),
])
