"""Metadata and index tables sent once, as JSON, when a client connects (and used by the snapshot views)."""
from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Max

from twin.inventory.choices import FabricRole
from twin.inventory.models import GPU, Cluster, Fabric, Link
from twin.live import frames
from twin.runs.models import SimulationRun

PROTOCOL = frames.VERSION
_index_cache: dict = {}


def get_run(run_id: int):
    return SimulationRun.objects.filter(pk=run_id).first()


def cluster_index(cluster: Cluster, with_tables: bool = True) -> dict:
    """The cluster's frame order: backend links by id (the link_util section) and the GPU count (gpu_state)."""
    fabric = Fabric.objects.filter(cluster=cluster, role=FabricRole.BACKEND).first()
    links = Link.objects.filter(fabric=fabric) if fabric else Link.objects.none()
    agg = links.aggregate(n=Count("id"), top=Max("id"))
    out = {"id": cluster.id, "name": cluster.name, "title": cluster.title,
           "backend_fabric": fabric.name if fabric else None,
           "links": {"count": agg["n"]}, "gpus": {"count": GPU.objects.filter(cluster=cluster).count()}}
    if with_tables and agg["n"]:
        key = (fabric.id, agg["n"], agg["top"])
        tables = _index_cache.get(key)
        if tables is None:
            ids, names = [], []
            for i, name in links.order_by("id").values_list("id", "name").iterator(chunk_size=10000):
                ids.append(i)
                names.append(name)
            tables = {"ids": ids, "names": names}
            _index_cache.clear()          # one cluster's tables at a time per process is plenty
            _index_cache[key] = tables
        out["links"].update(tables)
    return out


def protocol_info() -> dict:
    return {"protocol": PROTOCOL, "tick_hz": settings.TWIN_LIVE_TICK_HZ,
            "sections": {str(k): v for k, v in frames.SECTION_NAMES.items()},
            "dtypes": {str(k): v for k, v in frames.DTYPE_NAMES.items()},
            "status_codes": frames.STATUS_CODES}


def run_info(run) -> dict:
    return {"id": run.id, "kind": getattr(run, "kind", None), "status": str(getattr(run, "status", "")),
            "progress": float(getattr(run, "progress", 0) or 0), "params": getattr(run, "params", None),
            "cluster": getattr(run, "cluster_id", None)}
