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
from twin.runs.choices import FINISHED
from twin.web.access import readable
from twin.web.nav import NavItem, Page


@readable
def clusters_page(request):
    """Presets, clusters built, the spec upload, and the cluster runs under way."""
    user = request.user
    page = {"authenticated": user.is_authenticated, "kinds": list(clusters.KINDS), "formats": list(SPEC_FORMATS),
            "finished": [str(s) for s in FINISHED],
            "max_spec_bytes": clusters.MAX_SPEC_BYTES,
            "build_refusal": clusters.permission_refusal(user, clusters.PERMISSIONS[clusters.BUILD])}
    return render(request, "web/clusters.html", {"nav": "clusters", "page": page})


PAGE = Page(nav=NavItem("clusters", "Clusters", "clusters", order=12), urlpatterns=[
    path("clusters/", clusters_page, name="clusters"),
])
