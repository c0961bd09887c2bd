"""Metadata and index tables sent once, as JSON, when a client connects (and used by the snapshot views)."""
from __future__ import annotations

from django.conf import settings

from twin.inventory.choices import FabricRole
from twin.inventory.models import GPU, Cluster, Fabric, Link
from twin.inventory.structure_cache import StructureCache, rows_fingerprint
from twin.live import frames
from twin.runs.models import SimulationRun

_link_tables: StructureCache[dict] = StructureCache(size=1)   # by backend fabric id: one at a time is plenty


def get_run(run_id: int):
    return SimulationRun.objects.filter(pk=run_id).first()


def cluster_index(cluster: Cluster, with_tables: bool = True) -> dict:
    """The cluster's frame order: backend links by id (the link_util section) and the GPU count (gpu_state)."""
    fabric = Fabric.objects.filter(cluster=cluster, role=FabricRole.BACKEND).first()
    links = Link.objects.filter(fabric=fabric) if fabric else Link.objects.none()
    fingerprint = rows_fingerprint(links)
    out = {"id": cluster.id, "name": cluster.name, "title": cluster.title,
           "backend_fabric": fabric.name if fabric else None,
           "links": {"count": fingerprint[0]}, "gpus": {"count": GPU.objects.filter(cluster=cluster).count()}}
    if with_tables and fingerprint[0]:
        out["links"].update(_link_tables.get(fabric.id, fingerprint, lambda: _read_link_tables(links)))
    return out


def _read_link_tables(links) -> dict:
    ids, names = [], []
    for i, name in links.order_by("id").values_list("id", "name").iterator(chunk_size=10000):
        ids.append(i)
        names.append(name)
    return {"ids": ids, "names": names}


def protocol_info() -> dict:
    """The wire format's tables (:func:`twin.live.frames.tables`) and the publish rate: the stream's metadata, and
    the copy every page embeds for decoding snapshots before a socket is open."""
    return {**frames.tables(), "tick_hz": settings.TWIN_LIVE_TICK_HZ}


def run_info(run) -> dict:
    return {"id": run.id, "kind": getattr(run, "kind", None), "status": str(getattr(run, "status", "")),
            "progress": float(getattr(run, "progress", 0) or 0), "params": getattr(run, "params", None),
            "cluster": getattr(run, "cluster_id", None)}
