"""Metadata sent once, as JSON, when a client connects, and the link index tables its ``links.index`` URL serves.

The live layer sits below the runs app (twin.inventory <- twin.live <- twin.runs): it does not import the run model.
The runs app hands it the lookup of a run by id when it starts (:func:`set_run_lookup`, twin/runs/apps.py)."""
from __future__ import annotations

import gzip
import hashlib
import json

from django.conf import settings

from twin.inventory.choices import FabricRole
from twin.inventory.models import GPU, Cluster, Fabric, Link
from twin.inventory.structure_cache import StructureCache, rows_fingerprint
from twin.live import frames

_link_tables: StructureCache[tuple] = StructureCache(size=2)   # by backend fabric id


_run_lookup = None      # run id -> the run (an object with id, kind, status, progress, params, cluster_id), or None


def set_run_lookup(lookup) -> None:
    """How a run is found by id (the runs app's, set in its AppConfig.ready)."""
    global _run_lookup
    _run_lookup = lookup


def get_run(run_id: int):
    """The run ``run_id``, or None (no such run, or no runs app in this process)."""
    return _run_lookup(run_id) if _run_lookup is not None else None


def cluster_index(cluster: Cluster) -> dict:
    """The cluster's frame order: backend links by id (the link_util section) and the GPU count (gpu_state). The
    link id and name tables are not in the stream's metadata (4 MB for a 24k cluster, over the WebSocket message
    limit): ``links.index`` is their REST URL (:func:`link_index`)."""
    fabric = Fabric.objects.filter(cluster=cluster, role=FabricRole.BACKEND).first()
    links = Link.objects.filter(fabric=fabric) if fabric else Link.objects.none()
    return {"id": cluster.id, "name": cluster.name, "title": cluster.title,
            "backend_fabric": fabric.name if fabric else None,
            "links": {"count": links.count(), "index": f"/api/live/clusters/{cluster.name}/links/"},
            "gpus": {"count": GPU.objects.filter(cluster=cluster).count()}}


def link_index(cluster: Cluster) -> tuple[str, bytes, bytes]:
    """The link_util section's order as JSON (``{"cluster", "backend_fabric", "count", "ids", "names"}``), raw and
    gzipped, with an ETag: built once per structure of the backend fabric (twin.inventory.structure_cache)."""
    fabric = Fabric.objects.filter(cluster=cluster, role=FabricRole.BACKEND).first()
    links = Link.objects.filter(fabric=fabric) if fabric else Link.objects.none()
    fingerprint = rows_fingerprint(links)
    return _link_tables.get(fabric.id if fabric else -cluster.id, fingerprint,
                            lambda: _encode_link_index(cluster, fabric, links, fingerprint))


def _encode_link_index(cluster, fabric, links, fingerprint) -> tuple[str, bytes, bytes]:
    ids, names = [], []
    for i, name in links.order_by("id").values_list("id", "name").iterator(chunk_size=10000):
        ids.append(i)
        names.append(name)
    body = json.dumps({"cluster": cluster.name, "backend_fabric": fabric.name if fabric else None,
                       "count": len(ids), "ids": ids, "names": names}, separators=(",", ":")).encode()
    etag = '"' + hashlib.sha256(repr((cluster.id, fingerprint)).encode()).hexdigest()[:24] + '"'
    return etag, body, gzip.compress(body, compresslevel=6)


def protocol_info() -> dict:
    """The wire format's tables (:func:`twin.live.frames.tables`) and the publish rate: the stream's metadata, and
    the copy every page embeds for decoding snapshots before a socket is open."""
    return {**frames.tables(), "tick_hz": settings.TWIN_LIVE_TICK_HZ}


def run_info(run) -> dict:
    return {"id": run.id, "kind": getattr(run, "kind", None), "status": str(getattr(run, "status", "")),
            "progress": float(getattr(run, "progress", 0) or 0), "params": getattr(run, "params", None),
            "cluster": getattr(run, "cluster_id", None)}
