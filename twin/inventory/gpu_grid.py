"""The GPU grid of a cluster: which host, rack and zone each GPU is in (``GPU.index`` order, the order of the live
``gpu_state`` section), where its backend NIC cable sits among the backend links, and each GPU's statuses with the
rule that decides whether a job can use it.

- The structure changes only when the cluster is rebuilt or rows are added or removed. It is read once per process
  with ``values_list`` + numpy and kept as ready JSON, keyed by a fingerprint (:func:`twin.inventory.zones.structure_key`).
- The statuses are read fresh on every call, but only the non-active rows, through the ``status`` index (one query
  per table, about a millisecond each). A GPU is unusable, as ``sim.fabric.topology`` decides for every simulation,
  when the GPU, its backend NIC, the NIC's port, its cable, the leaf's port or the leaf switch is not active, or its
  NIC has no cable; ``unusable`` says which of these hold, as bits of :data:`REASONS`.

This is the inventory's one usable-GPU rule: the GPU page draws it, the run limits count by it
(:func:`usable_mask`).
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from django.db.models import CharField, Count, F, Value
from django.db.models.functions import Cast, Concat

from sim.core.units import IDX
from sim.fabric.layout import STATUS_ACTIVE, STATUS_NAMES
from twin.inventory.choices import STATUS_CODE, not_active_rows
from twin.inventory.models import GPU, NIC, Cluster, Fabric, Host, Link, Port, Rack, Switch, Zone
from twin.inventory.structure_cache import StructureCache
from twin.inventory.zones import ScopeError, ZoneItems, backend_fabric, cluster_zones, parse_building, structure_key

# Why a GPU is unusable: bits of the ``unusable.reasons`` array (a GPU can have several).
REASONS = ("NIC", "NIC port", "cable", "leaf port", "leaf switch", "no cable")
R_NIC, R_NIC_PORT, R_CABLE, R_LEAF_PORT, R_LEAF, R_NO_CABLE = (1 << k for k in range(len(REASONS)))


class IdIndex:
    """Positions of ids in an id array (any order): calling it maps ids to positions, -1 where absent. One sort
    up front, one ``searchsorted`` per lookup."""

    def __init__(self, ids):
        self.ids = np.asarray(ids, dtype=IDX)
        self.order = np.argsort(self.ids, kind="stable")
        self.sorted = self.ids[self.order]

    def __call__(self, refs) -> np.ndarray:
        refs = np.asarray(refs, dtype=IDX)
        if not len(self.ids):
            return np.full(len(refs), -1, dtype=IDX)
        at = np.minimum(np.searchsorted(self.sorted, refs), len(self.ids) - 1)
        return np.where(self.sorted[at] == refs, self.order[at], -1).astype(IDX)


@dataclass
class GridStructure:
    """What does not change while a cluster stands, for the fresh status part: the GPU and host ids by position,
    and for each kind of part a GPU needs (NIC, port, cable, leaf switch) the ids with the GPU position each serves
    (a leaf switch serves many GPUs, so its id repeats). A GPU without a cable is unusable whatever its NIC."""

    gpus: IdIndex                   # GPU ids in index order
    hosts: IdIndex                  # host ids in the order of the ``hosts`` arrays
    nic_id: np.ndarray              # per GPU cable (cable_gpu), the NIC at its lower end
    port_id: np.ndarray             # NIC ports, then leaf ports, of the GPU cables
    port_gpu: np.ndarray
    port_reason: np.ndarray         # R_NIC_PORT or R_LEAF_PORT
    cable_id: np.ndarray
    cable_gpu: np.ndarray
    leaf_id: np.ndarray             # per GPU cable, the leaf switch at its upper end
    no_cable: np.ndarray            # GPU positions without a backend NIC cable
    gpu_link: np.ndarray            # per GPU, its NIC cable's position in the link_util order (-1: none)
    json: bytes                     # the structure part of the page data, a JSON object


_structures: StructureCache[GridStructure] = StructureCache(size=32, name="grid")     # by cluster id, or (cluster id, zone)


def _columns(queryset, *fields) -> list[list]:
    rows = list(queryset.values_list(*fields))
    return [list(col) for col in zip(*rows)] if rows else [[] for _ in fields]


def rank_within(group: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Each item's position among the items of its group, ordered by ``keys`` (the last key sorts first)."""
    if not len(group):
        return np.zeros(0, dtype=IDX)
    order = np.lexsort((*keys, group))
    g = group[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    rank = np.empty(len(group), dtype=IDX)
    rank[order] = np.arange(len(g)) - np.repeat(starts, np.diff(np.r_[starts, len(g)]))
    return rank


def _odd_gpu_names(gpu_rows, gpus: IdIndex) -> dict[str, str]:
    """GPU names that do not follow "<host name>.gpu<slot>" (the builder's rule), by position: the page derives
    the others, which saves 0.7 MB on a 24k cluster. Compared in SQL, so usually no row comes back."""
    rule = Concat(F("host__name"), Value(".gpu"), Cast("slot", CharField()))
    ids, names = _columns(gpu_rows.exclude(name=rule).order_by("index"), "id", "name")
    return {str(pos): name for pos, name in zip(gpus(ids).tolist(), names)}


def build_structure(cluster: Cluster, fabric: Fabric | None, place: ZoneItems | None = None) -> GridStructure:
    """Read the structure from the database: a fixed number of column queries, no model instances. With ``place``
    (a zone or a building), that part alone, its links in the order of a scoped frame."""
    of = {"cluster": cluster}
    zones = list(place.zone_ids) if place else None
    gpu_rows = GPU.objects.filter(**of, **({"host__rack__zone__in": zones} if place else {}))
    gpu_id, gpu_index, gpu_host, gpu_slot = _columns(gpu_rows.order_by("index"), "id", "index", "host_id", "slot")
    host_id, host_name, host_rack, host_slot = _columns(
        Host.objects.filter(**of, **({"rack__zone__in": zones} if place else {})).order_by("id"),
        "id", "name", "rack_id", "slot")
    rack_id, rack_name, rack_zone, rack_number = _columns(
        Rack.objects.filter(**of, **({"zone__in": zones} if place else {})).order_by("id"),
        "id", "name", "zone_id", "number")
    zone_id, zone_name = _columns(Zone.objects.filter(**of, **({"id__in": zones} if place else {})).order_by("id"),
                                  "id", "name")
    gpus, hosts = IdIndex(gpu_id), IdIndex(host_id)

    # Only the racks holding hosts and the zones holding those racks (storage zones have no GPUs), densely renumbered.
    host_rack_any = IdIndex(rack_id)(host_rack)
    used_racks = np.unique(host_rack_any[host_rack_any >= 0])
    rack_zone_any = IdIndex(zone_id)(np.asarray(rack_zone, dtype=IDX)[used_racks])
    used_zones = np.unique(rack_zone_any)
    rack_zone_pos = np.searchsorted(used_zones, rack_zone_any)
    host_rack_pos = np.where(host_rack_any >= 0, np.searchsorted(used_racks, host_rack_any), -1)
    gpu_host_pos = hosts(gpu_host)

    # Each GPU's backend NIC cable (the Link whose lower port is on the GPU's NIC) and its position among the
    # backend links by id: the order of the live link_util section.
    link_ids = np.zeros(0, dtype=IDX)
    cables = ([],) * 6
    if fabric is not None:
        if place is None:
            link_ids = np.asarray(Link.objects.filter(fabric=fabric).order_by("id").values_list("id", flat=True),
                                  dtype=IDX)
        else:
            link_ids = cluster_zones(cluster).link_ids[place.links]
        cables = _columns(Link.objects.filter(fabric=fabric, a_port__nic__gpu__isnull=False,
                                              **({"a_port__nic__gpu__host__rack__zone__in": zones} if place else {}))
                          .order_by("id"),
                          "id", "a_port_id", "b_port_id", "b_switch_id", "a_port__nic_id", "a_port__nic__gpu_id")
    cable_id, nic_port, leaf_port, leaf_id, nic_id, cable_gpu_id = (np.asarray(c, dtype=IDX) for c in cables)
    cable_gpu = gpus(cable_gpu_id)
    gpu_link = np.full(len(gpu_id), -1, dtype=IDX)
    gpu_link[cable_gpu] = IdIndex(link_ids)(cable_id)

    index = np.asarray(gpu_index, dtype=IDX)
    doc = {
        "cluster": {"id": cluster.id, "name": cluster.name, "title": cluster.title},
        "zone": place.name if place else None,         # the place the page is zoomed into: a zone, a building
        "status_names": list(STATUS_NAMES),
        "reason_names": list(REASONS),
        "zones": {"name": [zone_name[z] for z in used_zones.tolist()]},
        "racks": {"name": [rack_name[r] for r in used_racks.tolist()], "zone": rack_zone_pos.tolist(),
                  "pos": rank_within(rack_zone_pos, np.asarray(rack_id, dtype=IDX)[used_racks],
                                      np.asarray(rack_number, dtype=IDX)[used_racks]).tolist()},
        "hosts": {"id": host_id, "name": host_name, "rack": host_rack_pos.tolist(),
                  "pos": rank_within(host_rack_pos, hosts.ids, np.asarray(host_slot, dtype=IDX)).tolist()},
        "gpus": {"count": len(gpu_id), "host": gpu_host_pos.tolist(), "slot": gpu_slot, "link": gpu_link.tolist(),
                 # GPU.index values where they are not 0..N-1 (a deleted GPU leaves a gap), else null
                 "index": None if np.array_equal(index, np.arange(len(index))) else index.tolist(),
                 "names": _odd_gpu_names(gpu_rows, gpus)},
        "links": {"count": len(link_ids)},
    }
    return GridStructure(
        gpus=gpus, hosts=hosts,
        nic_id=nic_id,
        port_id=np.r_[nic_port, leaf_port], port_gpu=np.r_[cable_gpu, cable_gpu],
        port_reason=np.r_[np.full(len(nic_port), R_NIC_PORT), np.full(len(leaf_port), R_LEAF_PORT)],
        cable_id=cable_id, cable_gpu=cable_gpu, leaf_id=leaf_id, no_cable=np.flatnonzero(gpu_link < 0),
        gpu_link=gpu_link, json=json.dumps(doc, separators=(",", ":")).encode())


def place_asked(cluster: Cluster, zone: str | None, building: str | None) -> ZoneItems | None:
    """The place a request zooms into (``?zone=<name>`` or ``?building=<n>``), None for the whole cluster;
    ScopeError naming the field when the cluster has no such zone or building."""
    number = parse_building(building)
    if not zone and number is None:
        return None
    if zone and not Zone.objects.filter(cluster=cluster, name=zone).exists():     # before reading the zone arrays
        raise ScopeError(f"zone: no zone named {zone!r} in cluster {cluster.name!r}")
    return cluster_zones(cluster).place(zone or None, number)


def _cached(cluster: Cluster, place: ZoneItems | None) -> tuple:
    """(owner, fingerprint, build, cluster id) of the cluster's or one place's structure in the cache."""
    fabric = backend_fabric(cluster)
    return ((cluster.id, place.zone_ids) if place else cluster.id, structure_key(cluster, fabric),
            lambda: build_structure(cluster, fabric, place), cluster.id)


def structure(cluster: Cluster, place: ZoneItems | None = None) -> GridStructure:
    """The cluster's structure (or one place's), from the in-process cache while its fingerprint holds."""
    return _structures.get(*_cached(cluster, place))


def keep_on_disk(cluster: Cluster, place: ZoneItems) -> None:
    """Build one place's structure onto disk, for its first visit (twin/web/warm.py)."""
    _structures.keep_on_disk(*_cached(cluster, place))


def _not_active(model, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """(ids, status codes) of the cluster's non-active rows of ``model``."""
    rows = not_active_rows(model.objects.filter(cluster=cluster))
    ids = np.array([pk for pk, _ in rows], dtype=IDX)
    return ids, np.array([STATUS_CODE[s] for _, s in rows], dtype=np.int8)


def _mark(bits: np.ndarray, part_id: np.ndarray, part_gpu: np.ndarray, down: np.ndarray, reason) -> None:
    """OR ``reason`` (a bit, or one per part) into the GPUs served by the parts whose ids are ``down``."""
    hit = np.isin(part_id, down)
    np.bitwise_or.at(bits, part_gpu[hit], reason[hit] if isinstance(reason, np.ndarray) else reason)


def statuses(cluster: Cluster, st: GridStructure) -> dict:
    """The fresh part: each GPU's status code, the unusable GPUs with their reasons (bits of ``REASONS``), and
    the hosts that are not active (sparse)."""
    status = np.zeros(len(st.gpus.ids), dtype=np.int8)
    ids, codes = _not_active(GPU, cluster)
    pos = st.gpus(ids)
    status[pos[pos >= 0]] = codes[pos >= 0]
    bits = np.zeros(len(st.gpus.ids), dtype=np.int64)
    bits[st.no_cable] |= R_NO_CABLE
    _mark(bits, st.nic_id, st.cable_gpu, _not_active(NIC, cluster)[0], R_NIC)
    _mark(bits, st.port_id, st.port_gpu, _not_active(Port, cluster)[0], st.port_reason)
    _mark(bits, st.cable_id, st.cable_gpu, _not_active(Link, cluster)[0], R_CABLE)
    _mark(bits, st.leaf_id, st.cable_gpu, _not_active(Switch, cluster)[0], R_LEAF)
    unusable = np.flatnonzero(bits)
    ids, codes = _not_active(Host, cluster)
    pos = st.hosts(ids)
    return {
        "status": status.tolist(),
        "unusable": {"gpu": unusable.tolist(), "reasons": bits[unusable].tolist()},
        "hosts_not_active": {"host": pos[pos >= 0].tolist(), "status": codes[pos >= 0].tolist()},
    }




def unusable_gpu_ids(cluster: Cluster, fabric: Fabric | None) -> np.ndarray:
    """Ids of the GPUs that are not active or whose NIC, NIC port, cable, leaf port or leaf switch is not (as
    ``statuses`` decides, without the per-GPU structure): the non-active rows first (the status index: as many
    as there are), then the GPUs they serve, by id; nothing more when every part is active."""
    def bad(model):
        return [pk for pk, _ in not_active_rows(model.objects.filter(cluster=cluster))]

    def each(ids, query):                               # in chunks, under SQLite's limit of bound parameters
        return [v for k in range(0, len(ids), 10_000) for v in query(ids[k:k + 10_000])]

    found = bad(GPU)
    found += each(bad(NIC), lambda ids: NIC.objects.filter(id__in=ids, gpu__isnull=False)
                  .values_list("gpu_id", flat=True))
    if fabric is not None:
        cables = Link.objects.filter(fabric=fabric, a_port__nic__gpu__isnull=False)
        ports, links, switches = bad(Port), bad(Link), bad(Switch)
        for ids, field in ((links, "id__in"), (ports, "a_port_id__in"), (ports, "b_port_id__in"),
                           (switches, "b_switch_id__in")):
            found += each(ids, lambda chunk, f=field: cables.filter(**{f: chunk})
                          .values_list("a_port__nic__gpu_id", flat=True))
    return np.unique(np.asarray(found, dtype=IDX))


def usable_mask(cluster: Cluster) -> np.ndarray:
    """Per GPU of ``cluster`` (index order), whether a job can use it (:func:`statuses`: the GPU active and not
    unusable), from the cached structure and the non-active rows only: no topology is built."""
    fresh = statuses(cluster, structure(cluster))
    down = np.asarray(fresh["status"]) != STATUS_ACTIVE
    down[fresh["unusable"]["gpu"]] = True
    return ~down


_counted: ContextVar[dict | None] = ContextVar("usable_gpus_counted", default=None)


@contextmanager
def usable_counted_once():
    """Within the block, :func:`usable_gpus` counts each cluster once (its first answer holds): one validation
    asks for it from each parameter default that fits the cluster and from its kind's check, and a sweep's from each
    of its combinations (hundreds), all within one request. Nested blocks share the outermost one's counts."""
    if _counted.get() is not None:
        yield
        return
    token = _counted.set({})
    try:
        yield
    finally:
        _counted.reset(token)


def usable_gpus(cluster: Cluster) -> int:
    """GPUs of ``cluster`` a job can use (:func:`usable_mask`); counted once per cluster within
    :func:`usable_counted_once`."""
    counted = _counted.get()
    if counted is None:
        return int(usable_mask(cluster).sum())
    if cluster.pk not in counted:
        counted[cluster.pk] = int(usable_mask(cluster).sum())
    return counted[cluster.pk]


def gpus_per_host(cluster) -> int:
    """The most GPUs one host of ``cluster`` holds (one backend NIC each: the NICs NCCL's channel count starts
    from, :func:`sim.fabric.nccl.ring_channels`)."""
    counts = GPU.objects.filter(cluster=cluster).values("host").annotate(n=Count("id")).values_list("n", flat=True)
    return max(counts, default=1)
