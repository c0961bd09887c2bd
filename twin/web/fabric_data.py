"""The fabric page's data: a cluster's backend fabric as columnar arrays, in the order of the live frames' links.

Link order is the ``link_util`` section's: the backend fabric's Link rows by id (twin/live/meta.py). Per link: its
tier, the switch at its lower end (``a``, -1 at a NIC), the switch at its upper end (``b``) and its column in its
heatmap row. A row is the lower switch of a switch-to-switch link, or the leaf of a host link; the column is the
link's rank among that row's links of the same tier, by the row switch's port slot.

The structure changes only when the cluster is rebuilt or recabled, so it is built once per process (a few
``values_list`` queries and numpy) and kept serialized, keyed by a fingerprint of the rows that a rebuild or a
recabling changes. Statuses change any time: they are read on every request, sparse (the non-active items only).

A page zoomed into one zone (``?zone=<name>``) or building (``?building=<n>``) reads the same data for the place's
links alone (those of its lower switches, twin/live/scope.py) and the switches at their ends, in the order of a scoped
live frame. The zone
overview (:func:`overview_data`) sums the whole fabric per zone and tier without the per-link arrays.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from django.db import connection
from django.db.models import Q, Sum

from sim.fabric.layout import LINK_NIC_LEAF, STATUS_NAMES, TIER_LEAF
from twin.inventory.choices import STATUS_CODE, FabricRole, not_active_rows
from twin.inventory.models import Cluster, Fabric, Link, Port, Rack, Switch, SwitchModel, Zone
from twin.inventory.structure_cache import StructureCache, rows_fingerprint, trusted_fingerprint
from twin.inventory.zones import ZoneItems, cluster_zones
from twin.live import scope

LINK_DETAILS_MAX = 500        # links described by one links.json call (a heatmap row, the hottest, the failed)


class FabricDataError(LookupError):
    """The page cannot be drawn for this cluster (no such cluster, no backend fabric); the text says why."""


@dataclass(frozen=True)
class Structure:
    """A backend fabric's layout: the id arrays (to map statuses and link ids to positions) and the page JSON."""

    link_ids: np.ndarray          # the live order
    switch_ids: np.ndarray        # the order of the switch columns
    json: str                     # the structure part of fabric.json, an object without its closing brace


_structures: StructureCache[Structure] = StructureCache(size=32, name="fabric")   # by backend fabric id, or (fabric id, zone)


def backend_fabric(cluster_name: str) -> Fabric:
    """The backend fabric of the named cluster (with its cluster), or FabricDataError naming what is missing."""
    fabric = (Fabric.objects.filter(cluster__name=cluster_name, role=FabricRole.BACKEND)
              .select_related("cluster").defer("cluster__spec").first())
    if fabric is None:
        if not Cluster.objects.filter(name=cluster_name).exists():
            raise FabricDataError(f"no cluster named {cluster_name!r}")
        raise FabricDataError(f"cluster {cluster_name!r} has no backend fabric")
    return fabric


def structure_key(fabric: Fabric) -> tuple:
    """What changes when the fabric's rows are rebuilt or recabled: counts, top ids, sums of the end ports and of
    the switches' places (one aggregate query per table; on a large fabric read again only after a logged change
    of its cluster's rows, structure_cache.trusted_fingerprint)."""
    def read():
        return (*rows_fingerprint(Link.objects.filter(fabric=fabric), a=Sum("a_port_id"), b=Sum("b_port_id")),
                *rows_fingerprint(Switch.objects.filter(fabric=fabric), zone=Sum("zone_id"), rack=Sum("rack_id"),
                                  group=Sum("group")))
    return fabric.cluster.built_at.isoformat(), *trusted_fingerprint(("fabric", fabric.id), read, fabric.cluster_id)


def _positions(ids: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Positions of the ids ``refs`` (-1: none) in the sorted array ``ids``; -1 stays -1."""
    out = np.searchsorted(ids, np.maximum(refs, 0)).astype(np.int64)
    out[refs < 0] = -1
    return out


def _columns(tier: np.ndarray, row: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Each link's rank among the links of its (tier, row), ordered by port slot (then id)."""
    order = np.lexsort((np.arange(len(tier)), slot, row, tier))
    t, r = tier[order], row[order]
    starts = np.flatnonzero(np.r_[True, (t[1:] != t[:-1]) | (r[1:] != r[:-1])])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    col = np.empty(len(order), dtype=np.int64)
    col[order] = rank
    return col


def _runs(ids: np.ndarray) -> list[list[int]]:
    """Sorted ids as [first, count] runs of consecutive ids (a built fabric has one run per tier)."""
    if not len(ids):
        return []
    breaks = np.flatnonzero(np.diff(ids) != 1) + 1
    starts, ends = np.r_[0, breaks], np.r_[breaks, len(ids)]
    return [[int(ids[s]), int(e - s)] for s, e in zip(starts, ends)]


def _dense(refs: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Foreign keys (-1: none) as indexes into the sorted list of the distinct ones."""
    used = np.unique(refs[refs >= 0])
    return _positions(used, refs), used.tolist()


def _int_columns(queryset, *fields: str) -> list[np.ndarray]:
    """``fields`` of ``queryset`` (by id) as int64 arrays, a null as -1. The rows go through float64 (None becomes
    NaN) so that numpy converts them in one call; ids are far below 2**53."""
    rows = np.array(list(queryset.order_by("id").values_list(*fields)), dtype=np.float64).reshape(-1, len(fields))
    return list(np.nan_to_num(rows, nan=-1).astype(np.int64).T)


def _in_runs(ids: np.ndarray) -> Q:
    """Rows whose id is one of the sorted ``ids``, as a few id ranges (a zone's links are runs of ids)."""
    q = Q(pk__in=[])
    for first, count in _runs(ids):
        q |= Q(pk__range=(first, first + count - 1))
    return q


def _port_slots(*port_ids: np.ndarray) -> list[np.ndarray]:
    """The slots of the ports ``port_ids``, read by id runs: PostgreSQL plans a place's links joined to their ports
    as two scans of every port of the cluster (a 600k building's 56k links: 0.7-1.2 s), its ports by runs take
    0.4-0.5 s. Not on SQLite, which scans once per run (seconds) but joins by the ports' primary key (0.1 s)."""
    used = np.unique(np.concatenate(port_ids))
    port_id, slot = _int_columns(Port.objects.filter(_in_runs(used)), "id", "slot")
    return [slot[np.searchsorted(port_id, ids)] for ids in port_ids]


def _build(fabric: Fabric, place: ZoneItems | None = None) -> Structure:
    """Read the fabric's structure (a fixed number of column queries, numpy for the index maths), serialized.
    ``row_tier`` of a link tier is the switch tier of its heatmap rows; ``cols`` the longest row. With ``place`` (a
    zone, a building), its links and the switches at their ends."""
    cluster = fabric.cluster
    switches, links = Switch.objects.filter(fabric=fabric), Link.objects.filter(fabric=fabric)
    if place:
        zones = cluster_zones(cluster)
        at = place.links
        ends = np.concatenate([zones.link_a[at], zones.link_b[at]])
        links = links.filter(_in_runs(zones.link_ids[at]))
        switches = switches.filter(_in_runs(np.unique(ends[ends >= 0])))
    sw_id, sw_tier, sw_zone, sw_group, sw_rack, sw_model = _int_columns(
        switches, "id", "tier", "zone_id", "group", "rack_id", "model_id")
    sw_name = list(switches.order_by("id").values_list("name", flat=True))
    if place and connection.vendor == "postgresql":
        link_id, tier, a_sw, b_sw, a_port, b_port = _int_columns(
            links, "id", "tier", "a_switch_id", "b_switch_id", "a_port_id", "b_port_id")
        a_slot, b_slot = _port_slots(a_port, b_port)
    else:
        link_id, tier, a_sw, b_sw, a_slot, b_slot = _int_columns(
            links, "id", "tier", "a_switch_id", "b_switch_id", "a_port__slot", "b_port__slot")
    a, b = _positions(sw_id, a_sw), _positions(sw_id, b_sw)
    host = tier == LINK_NIC_LEAF
    col = _columns(tier, np.where(host, b, a), np.where(host, b_slot, a_slot))

    zone, zone_ids = _dense(sw_zone)
    rack, rack_ids = _dense(sw_rack)
    model, model_ids = _dense(sw_model)
    zone_names = dict(Zone.objects.filter(id__in=zone_ids).values_list("id", "name"))
    rack_names = dict(Rack.objects.filter(id__in=rack_ids).values_list("id", "name"))
    model_names = dict(SwitchModel.objects.filter(id__in=model_ids).values_list("id", "slug"))
    tier_names = dict(switches.values_list("tier", "role").distinct())
    link_tiers = []
    for code in sorted(set(tier.tolist())):
        upper = tier_names.get(code, "?")
        lower = "nic" if code == LINK_NIC_LEAF else tier_names.get(code - 1, "?")
        link_tiers.append({"code": code, "name": f"{lower}-{upper}", "lower": lower, "upper": upper,
                           "row_tier": TIER_LEAF if code == LINK_NIC_LEAF else code - 1,
                           "links": int(np.sum(tier == code)),
                           "cols": int(col[tier == code].max()) + 1})
    doc = {
        "cluster": {"id": cluster.id, "name": cluster.name, "title": cluster.title},
        "zone": place.name if place else None,
        "fabric": {"id": fabric.id, "name": fabric.name, "kind": fabric.kind, "kind_label": fabric.get_kind_display(),
                   "speed_gbps": fabric.speed_gbps},
        "switch_tiers": [tier_names.get(t, str(t)) for t in range(max(tier_names, default=-1) + 1)],
        "link_tiers": link_tiers,
        "zones": [zone_names[i] for i in zone_ids],
        "racks": [rack_names[i] for i in rack_ids],
        "models": [model_names[i] for i in model_ids],
        "status_names": list(STATUS_NAMES),
        "switches": {"count": len(sw_id), "id": sw_id.tolist(), "name": sw_name,
                     "tier": sw_tier.tolist(), "zone": zone.tolist(), "group": sw_group.tolist(),
                     "rack": rack.tolist(), "model": model.tolist()},
        "links": {"count": len(link_id), "id_runs": _runs(link_id), "tier": tier.tolist(), "a": a.tolist(),
                  "b": b.tolist(), "col": col.tolist()},
    }
    text = json.dumps(doc, separators=(",", ":"))
    return Structure(link_id, sw_id, text[:-1])


def _cached(fabric: Fabric, place: ZoneItems | None) -> tuple:
    """(owner, fingerprint, build, cluster id) of the fabric's or one place's structure in the cache."""
    return ((fabric.id, place.zone_ids) if place else fabric.id, structure_key(fabric), lambda: _build(fabric, place),
            fabric.cluster_id)


def structure(fabric: Fabric, place: ZoneItems | None = None) -> Structure:
    """The fabric's structure (or one place's part), from the process cache while its fingerprint holds."""
    return _structures.get(*_cached(fabric, place))


def keep_on_disk(fabric: Fabric, place: ZoneItems) -> None:
    """Build one place's structure onto disk, for its first visit (twin/web/warm.py)."""
    _structures.keep_on_disk(*_cached(fabric, place))


def _not_active(model, fabric: Fabric, ids: np.ndarray) -> dict:
    """The fabric's non-active rows of ``model`` as positions in its sorted ``ids``, with their status codes (a row
    added since ``ids`` were read is left out: the next fingerprint sees it)."""
    rows = sorted(not_active_rows(model.objects.filter(fabric=fabric)))
    pos = np.searchsorted(ids, [i for i, _ in rows]).tolist()
    found = [(p, STATUS_CODE[status]) for p, (i, status) in zip(pos, rows) if p < len(ids) and ids[p] == i]
    return {"index": [p for p, _ in found], "code": [code for _, code in found]}


def statuses(fabric: Fabric, s: Structure) -> dict:
    """Current statuses of the fabric's links and switches, sparse: only those not active."""
    return {"link_status": _not_active(Link, fabric, s.link_ids),
            "switch_status": _not_active(Switch, fabric, s.switch_ids)}


def page_data(fabric: Fabric, place: ZoneItems | None = None) -> str:
    """fabric.json: the cached structure with the current statuses."""
    s = structure(fabric, place)
    return f'{s.json},{json.dumps(statuses(fabric, s), separators=(",", ":"))[1:]}'


def status_data(fabric: Fabric, place: ZoneItems | None = None) -> dict:
    """The statuses alone, for a page that has the structure (refreshed while it stays open)."""
    s = structure(fabric, place)
    return {"links": {"count": len(s.link_ids)}, **statuses(fabric, s)}


def overview_data(fabric: Fabric) -> dict:
    """The zone overview: per zone (of the links' lower switches; "no zone" last when some have none) and link
    tier, the links, those not active (their own status or a switch at either end), and the mean and max
    utilization of the active ones in the cluster stream's last frame (twin.live.store)."""
    zones = cluster_zones(fabric.cluster)
    links = zones.link_ids
    tier_names = dict(Switch.objects.filter(fabric=fabric).order_by().values_list("tier", "role").distinct())
    codes = sorted(set(zones.link_tier.tolist()))
    zone_ids = np.unique(zones.link_zone[zones.link_zone >= 0])
    zone_pos = np.where(zones.link_zone >= 0, np.searchsorted(zone_ids, zones.link_zone), len(zone_ids))
    n_zones = len(zone_ids) + int((zones.link_zone < 0).any())
    down = np.zeros(len(links), dtype=bool)
    bad_links = np.array([i for i, _ in not_active_rows(Link.objects.filter(fabric=fabric))], dtype=np.int64)
    down[np.isin(links, bad_links)] = True
    bad_switches = np.array([i for i, _ in not_active_rows(Switch.objects.filter(fabric=fabric))], dtype=np.int64)
    down |= np.isin(zones.link_a, bad_switches) | np.isin(zones.link_b, bad_switches)
    frame = scope.last_frame(fabric.cluster)
    util = frame.value("link_util") if frame is not None else None
    if util is not None and len(util) != len(links):
        util = None                                   # a frame of another structure of the fabric
    tiers = []
    for code in codes:
        upper = tier_names.get(code, "?")
        lower = "nic" if code == LINK_NIC_LEAF else tier_names.get(code - 1, "?")
        mine = zones.link_tier == code
        cell = {"code": code, "name": f"{lower}-{upper}", "lower": lower, "upper": upper,
                "links": np.bincount(zone_pos[mine], minlength=n_zones).tolist(),
                "down": np.bincount(zone_pos[mine & down], minlength=n_zones).tolist()}
        if util is not None:
            ok = mine & ~down
            n = np.bincount(zone_pos[ok], minlength=n_zones)
            cell["mean"] = np.round(np.bincount(zone_pos[ok], weights=util[ok], minlength=n_zones)
                                    / np.maximum(n, 1), 4).tolist()
            peak = np.zeros(n_zones)
            np.maximum.at(peak, zone_pos[ok], util[ok])
            cell["max"] = np.round(peak, 4).tolist()
        tiers.append(cell)
    names = [zones.zone_names[z] for z in zone_ids.tolist()] + ([None] if n_zones > len(zone_ids) else [])
    buildings = [zones.zone_building.get(z) for z in zone_ids.tolist()] + [None] * (n_zones - len(zone_ids))
    return {"cluster": {"id": fabric.cluster.id, "name": fabric.cluster.name},
            "fabric": {"name": fabric.name, "speed_gbps": fabric.speed_gbps}, "zones": names, "buildings": buildings,
            "tiers": tiers,
            "links": {"count": len(links)},
            "run": {"id": frame.run_id, "status": frame.status, "progress": round(float(frame.progress), 1),
                    "seq": frame.seq} if frame is not None and frame.run_id else None}


def link_details(fabric: Fabric, ids: list[int]) -> list[dict]:
    """Name, status, speed and both ends (port and device) of the given backend links, in id order."""
    rows = (Link.objects.filter(fabric=fabric, id__in=ids).order_by("id")
            .values_list("id", "name", "status", "speed_gbps", "a_port__name", "a_port__nic__name",
                         "a_switch__name", "b_port__name", "b_switch__name"))
    return [{"id": i, "name": name, "status": status, "speed_gbps": speed,
             "a": {"port": a_port, "device": a_switch or a_nic}, "b": {"port": b_port, "device": b_switch}}
            for i, name, status, speed, a_port, a_nic, a_switch, b_port, b_switch in rows]
