"""Zone scopes of a cluster's live frames: where one zone's GPUs, hosts and backend links sit in the frame order, and
the scoped and summary forms of a cluster-stream frame (docs/live.md, "Scoped frames").

A cluster-stream frame carries every GPU, every host and every backend link of the cluster (the sections declared
``per`` "gpu", "host" or "link", :mod:`twin.live.sections`; e.g. ``gpu_state``, ``link_util``): 1.9 MB for
roadmap-600k, 7.8 MB/s to every open page at the 4 Hz tick, far more than a page that shows one zone draws. A client
that asks for a zone gets those sections cut to the zone's items (in the same order); a client that asks for the
summary gets the header and the small sections only (it reads aggregated figures over REST: the GPU and fabric
pages' ``zones.json``). Sections ``per`` "storage" (storage servers, frontend links) are left out of both forms; the
others (one row, a table of jobs) go as published.

A zone's items: its GPUs and hosts (those in its racks) and its backend links, a link belonging to the zone of its
lower switch (for a NIC cable, the leaf it reaches), as the fabric page counts them. A building's items (the spec's
``layout.zones_per_building``: compute zones fill building by building) are those of its zones. The arrays are read
once per cluster structure (twin.inventory.structure_cache: a large cluster's from disk in the processes after the
first), a few column queries with numpy.
"""
from __future__ import annotations

import numpy as np

from twin.inventory.models import Cluster
from twin.inventory.zones import ZoneItems, cluster_zones
from twin.live import frames
from twin.live.sections import sections as live_sections

# ZoneItems' array of each ``per`` a section may declare; "storage" sections are not in a zone (left out)
ITEMS_OF = {"gpu": "gpus", "host": "hosts", "link": "links"}


def scoped_sections(sections: dict[int, np.ndarray], items: ZoneItems | None) -> dict[int, np.ndarray]:
    """A frame's sections cut to one zone's items (``items``), or, for the summary (``items`` None), without the
    per-item sections. A section whose length is not the cluster's (a frame of another structure) is dropped."""
    per = {s.id: s.per for s in live_sections()}
    out = {}
    for sid, a in sections.items():
        kind = ITEMS_OF.get(per.get(sid))
        if per.get(sid) is None:
            out[sid] = a
        elif kind is not None and items is not None:
            at = getattr(items, kind)
            if not len(at) or at[-1] < len(a):
                out[sid] = a[at]
    return out


def scope_frame(raw: bytes, items: ZoneItems | None) -> bytes:
    """The scoped (or summary) form of an encoded frame: the same header and sequence number, the flag
    ``scoped`` set, the sections of :func:`scoped_sections`."""
    frame = frames.decode(raw)
    frame.sections = scoped_sections(frame.sections, items)
    frame.scoped = True
    return frames.encode(frame)


def frame_scope(cluster: Cluster, zone: str | None, summary: bool, building: int | None = None):
    """What a client asked for (``?zone=<name>``, ``?building=<n>``, ``?summary=1``) as a function of an encoded
    frame, or None for the whole frame; ScopeError for a zone or building the cluster does not have."""
    if zone or building is not None:
        items = cluster_zones(cluster).place(zone, building)
        return lambda raw: scope_frame(raw, items)
    if summary:
        return lambda raw: scope_frame(raw, None)
    return None


def last_frame(cluster: Cluster) -> frames.Frame | None:
    """The cluster stream's last frame (the latest of every section, twin.live.store), None before any or while
    Redis is unreachable: the pages' zone overviews then show the inventory's figures alone."""
    from redis.exceptions import RedisError

    from twin.live import store
    try:
        last = store.load_last(store.cluster_stream(cluster.id))
    except (RedisError, OSError):
        return None
    return frames.decode(last[1]) if last else None


def scope_info(cluster: Cluster, zone: str | None, summary: bool, building: int | None = None) -> dict | None:
    """The scope as the stream's metadata states it: the zone or building and its counts (the lengths of the scoped
    sections)."""
    if zone or building is not None:
        items = cluster_zones(cluster).place(zone, building)
        where = {"zone": zone} if zone else {"building": building}
        return {**where, "gpus": len(items.gpus), "hosts": len(items.hosts), "links": len(items.links)}
    return {"summary": True} if summary else None
