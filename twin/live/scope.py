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

from dataclasses import dataclass

import numpy as np

from sim.fabric.layout import LINK_NIC_LEAF, ZONE_COMPUTE
from sim.fabric.spec import parse_spec
from twin.inventory.choices import FabricRole
from twin.inventory.models import GPU, Cluster, Fabric, Host, Link, Rack, Switch, Zone
from twin.inventory.structure_cache import StructureCache, rows_fingerprint, trusted_fingerprint
from twin.live import frames
from twin.live.sections import sections as live_sections

IDX = np.int64


class ScopeError(LookupError):
    """A scope that does not name a zone of the cluster; the text says why."""


@dataclass(frozen=True)
class ZoneItems:
    """A place's items (one zone, or the zones of one building) as positions in the frame order: GPUs (by
    GPU.index), hosts and backend links (by id)."""

    zone_ids: tuple[int, ...]
    name: str                        # the zone's name, or "building <n>"
    gpus: np.ndarray
    hosts: np.ndarray
    links: np.ndarray


@dataclass(frozen=True)
class ClusterZones:
    """Per frame position, the zone id of each GPU, host and backend link (-1: none), and what the pages aggregate
    by: each GPU's and host's rack id, each link's tier and end switches (ids, -1 at a NIC)."""

    zone_names: dict[int, str]       # zone id -> name, every zone of the cluster
    zone_building: dict[int, int]    # compute zone id -> its building (0 when the spec gives none)
    gpu_ids: np.ndarray              # GPU ids by GPU.index
    gpu_zone: np.ndarray
    gpu_rack: np.ndarray
    host_zone: np.ndarray
    host_rack: np.ndarray
    link_ids: np.ndarray             # backend links by id: the link_util order
    link_zone: np.ndarray
    link_tier: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_rack: np.ndarray            # the rack of the link's row switch (a NIC cable: its leaf's rack), -1: none

    def zone_id(self, name: str) -> int:
        for zid, zname in self.zone_names.items():
            if zname == name:
                return zid
        raise ScopeError(f"zone: no zone named {name!r} in this cluster")

    @property
    def buildings(self) -> int:
        return max(self.zone_building.values(), default=-1) + 1

    def building_zones(self, building: int) -> tuple[int, ...]:
        """The zone ids of a building (ScopeError naming the field when the cluster has no such building)."""
        zones = tuple(z for z, b in self.zone_building.items() if b == building)
        if not zones:
            raise ScopeError(f"building: no building {building} in this cluster (it has {self.buildings})")
        return zones

    def place(self, zone: str | None = None, building: int | None = None) -> ZoneItems | None:
        """The items of the zone named ``zone`` or of building number ``building`` (None for neither)."""
        if zone:
            ids, name = (self.zone_id(zone),), zone
        elif building is not None:
            ids, name = self.building_zones(building), f"building {building}"
        else:
            return None
        at = np.asarray(ids, dtype=IDX)
        return ZoneItems(ids, name, np.flatnonzero(np.isin(self.gpu_zone, at)),
                         np.flatnonzero(np.isin(self.host_zone, at)), np.flatnonzero(np.isin(self.link_zone, at)))

    def items(self, name: str) -> ZoneItems:
        return self.place(zone=name)


_zones: StructureCache[ClusterZones] = StructureCache(name="zones")     # by cluster id


def _ints(queryset, *fields) -> list[np.ndarray]:
    """Columns of ``queryset`` as int64 arrays, a null as -1 (through float64: ids are far below 2**53)."""
    rows = np.array(list(queryset.values_list(*fields)), dtype=np.float64).reshape(-1, len(fields))
    return list(np.nan_to_num(rows, nan=-1).astype(IDX).T)


def _lookup(ids: np.ndarray, values: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """``values`` of the (sorted) ``ids`` at ``refs``, -1 where a ref is -1 or absent."""
    if not len(ids):
        return np.full(len(refs), -1, dtype=IDX)
    at = np.minimum(np.searchsorted(ids, refs), len(ids) - 1)
    return np.where((refs >= 0) & (ids[at] == refs), values[at], -1)


def backend_fabric(cluster: Cluster) -> Fabric | None:
    return Fabric.objects.filter(cluster=cluster, role=FabricRole.BACKEND).first()


def structure_key(cluster: Cluster, fabric: Fabric | None) -> tuple:
    """A rebuilt cluster, or GPUs, hosts or backend links added or removed, give another key (the GPU page's key
    too, twin/web/gpu_data.py); on a large cluster read again only after a logged change of its rows
    (structure_cache.trusted_fingerprint)."""
    def read():
        links = Link.objects.filter(fabric=fabric) if fabric else Link.objects.none()
        return (*rows_fingerprint(links), *rows_fingerprint(GPU.objects.filter(cluster=cluster)),
                *rows_fingerprint(Host.objects.filter(cluster=cluster)))
    return (cluster.built_at.isoformat(), fabric.id if fabric else None,
            *trusted_fingerprint(("zones", cluster.id, fabric.id if fabric else None), read, cluster.id))


def _build(cluster: Cluster, fabric: Fabric | None) -> ClusterZones:
    of = {"cluster": cluster}
    rack_id, rack_zone = _ints(Rack.objects.filter(**of).order_by("id"), "id", "zone_id")
    host_id, host_rack_id = _ints(Host.objects.filter(**of).order_by("id"), "id", "rack_id")
    gpu_id, gpu_host = _ints(GPU.objects.filter(**of).order_by("index"), "id", "host_id")
    host_rack = _lookup(rack_id, rack_id, host_rack_id)
    host_zone = _lookup(rack_id, rack_zone, host_rack)
    gpu_rack = _lookup(host_id, host_rack, gpu_host)
    sw_id, sw_zone, sw_rack = _ints(Switch.objects.filter(fabric=fabric).order_by("id"), "id", "zone_id",
                                    "rack_id") if fabric else [np.zeros(0, IDX)] * 3
    link_ids, tier, a, b = _ints(Link.objects.filter(fabric=fabric).order_by("id"), "id", "tier", "a_switch_id",
                                 "b_switch_id") if fabric else [np.zeros(0, IDX)] * 4
    row = np.where(tier == LINK_NIC_LEAF, b, a)
    per_building = parse_spec(cluster.spec).layout.zones_per_building
    compute = Zone.objects.filter(**of, kind=ZONE_COMPUTE).values_list("id", "number")
    return ClusterZones(
        zone_names=dict(Zone.objects.filter(**of).order_by("id").values_list("id", "name")),
        zone_building={z: number // per_building if per_building else 0 for z, number in compute}, gpu_ids=gpu_id,
        gpu_zone=_lookup(rack_id, rack_zone, gpu_rack), gpu_rack=gpu_rack, host_zone=host_zone, host_rack=host_rack,
        link_ids=link_ids, link_zone=_lookup(sw_id, sw_zone, row), link_tier=tier, link_a=a, link_b=b,
        link_rack=_lookup(sw_id, sw_rack, row))


def cluster_zones(cluster: Cluster) -> ClusterZones:
    """The cluster's zone arrays, from the process cache while its fingerprint holds."""
    fabric = backend_fabric(cluster)
    return _zones.get(cluster.id, structure_key(cluster, fabric), lambda: _build(cluster, fabric), cluster.id)


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


def parse_building(value: str | None) -> int | None:
    """``?building=<n>`` as an int (None when absent); ScopeError naming the field when it is not a number."""
    if value in (None, ""):
        return None
    if not value.isdigit():
        raise ScopeError(f"building: {value!r} is not a building number (0, 1, ...)")
    return int(value)


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
