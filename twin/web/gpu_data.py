"""The GPU page's data: the grid of a cluster's GPUs (:mod:`twin.inventory.gpu_grid`: the cached structure and the
fresh statuses, spliced into one JSON document), only the statuses when the inventory changes, and above
``OVERVIEW_ABOVE_GPUS`` GPUs the zone overview (:func:`overview_data`): per zone and per rack, how many GPUs are
usable, in the last run, in training jobs, and the mean utilization of their NIC links and checkpoint progress.

A page zoomed into one zone (``?zone=<name>``) or building (``?building=<n>``) reads the same data for that place
alone: its GPUs (``gpus.index`` gives their GPU.index values), hosts and racks, and ``gpus.link`` as positions among
the place's backend links, the order of a scoped live frame (twin/live/scope.py).
"""
from __future__ import annotations

import json

import numpy as np

from sim.fabric.layout import LINK_NIC_LEAF
from twin.inventory.gpu_grid import IdIndex, rank_within, statuses, structure, unusable_gpu_ids
from twin.inventory.models import Cluster
from twin.inventory.zones import ZoneItems, backend_fabric, cluster_zones
from twin.live import scope

from sim.core.units import IDX

# Above this many GPUs the GPU page opens on the zone overview instead of one cell per GPU: 24k clusters keep their
# full grid (2-3 px cells on a laptop screen); 131k GPUs would be one device pixel each, unreadable and a 10 MB page.
OVERVIEW_ABOVE_GPUS = 65_536

def page_data(cluster: Cluster, place: ZoneItems | None = None) -> bytes:
    """The whole page data as JSON bytes: the cached structure with the fresh statuses spliced in."""
    st = structure(cluster, place)
    fresh = json.dumps(statuses(cluster, st), separators=(",", ":")).encode()
    return st.json[:-1] + b"," + fresh[1:]


def status_data(cluster: Cluster, place: ZoneItems | None = None) -> bytes:
    """Only the fresh part (the page re-reads it when the inventory changes)."""
    return json.dumps(statuses(cluster, structure(cluster, place)), separators=(",", ":")).encode()


def _per(group: np.ndarray, n: int, weights=None) -> np.ndarray:
    """Sums per group (0..n-1) of ``weights`` (1 each by default); items of group -1 are left out."""
    ok = group >= 0
    return np.bincount(group[ok], weights=None if weights is None else weights[ok], minlength=n)[:n]


def overview_data(cluster: Cluster) -> bytes:
    """The zone overview: per zone holding GPUs (name, GPU count) and per rack of those zones (its zone and place,
    GPU count, and the GPUs not usable and in the last run; the mean utilization of the NIC links into its leaf; and
    each capability section's figure, by the section's name: :attr:`twin.live.sections.Section.rack_figure`, e.g. the
    share of its GPUs in a training job, the mean checkpoint progress of its hosts), the live figures from the cluster
    stream's last frame
    (twin.live.store). Built from the zone arrays of twin.live.scope and the non-active rows: not the per-GPU
    structure, which a 590k-GPU cluster takes seconds to read. A GPU whose NIC has no cable counts as not usable
    (its rack has more GPUs than NIC cables)."""
    from twin.live import sections

    zones = cluster_zones(cluster)
    rack_ids = np.unique(zones.gpu_rack[zones.gpu_rack >= 0])
    rack_of = IdIndex(rack_ids)
    gpu_rack = np.where(zones.gpu_rack >= 0, rack_of(zones.gpu_rack), -1)
    rack_zone_id = np.full(len(rack_ids), -1, dtype=IDX)
    rack_zone_id[gpu_rack[gpu_rack >= 0]] = zones.gpu_zone[gpu_rack >= 0]
    zone_ids = np.unique(rack_zone_id)
    rack_zone = np.searchsorted(zone_ids, rack_zone_id)
    n = len(rack_ids)
    gpus = _per(gpu_rack, n).astype(IDX)
    nic_links = zones.link_tier == LINK_NIC_LEAF
    link_rack = np.where(nic_links & (zones.link_rack >= 0), rack_of(np.maximum(zones.link_rack, 0)), -1)
    cables = _per(link_rack, n).astype(IDX)
    bad = IdIndex(zones.gpu_ids)(unusable_gpu_ids(cluster, backend_fabric(cluster)))
    bad_rack = gpu_rack[bad[bad >= 0]]
    not_usable = np.minimum(gpus, _per(bad_rack, n).astype(IDX) + np.maximum(gpus - cables, 0))
    doc = {"cluster": {"id": cluster.id, "name": cluster.name, "title": cluster.title},
           "zones": {"name": [zones.zone_names[z] for z in zone_ids.tolist()],
                     "building": [zones.zone_building.get(z, 0) for z in zone_ids.tolist()],
                     "gpus": _per(rack_zone, len(zone_ids), gpus.astype(float)).astype(int).tolist()},
           "racks": {"zone": rack_zone.tolist(), "pos": rank_within(rack_zone, rack_ids).tolist(),
                     "gpus": gpus.tolist(), "not_usable": not_usable.tolist()},
           "run": None}
    frame = scope.last_frame(cluster)
    if frame is not None and frame.run_id:
        doc["run"] = {"id": frame.run_id, "status": frame.status, "progress": round(float(frame.progress), 1),
                      "seq": frame.seq}
        racks = doc["racks"]
        state, util = frame.value("gpu_state"), frame.value("link_util")
        if state is not None and len(state) == len(gpu_rack):
            racks["in_run"] = _per(gpu_rack, n, (state == sections.GPU_IN_JOB).astype(float)).astype(int).tolist()
        if util is not None and len(util) == len(zones.link_ids):
            racks["util"] = np.round(_per(link_rack, n, util.astype(float)) / np.maximum(cables, 1), 4).tolist()
        host_rack = np.where(zones.host_rack >= 0, rack_of(np.maximum(zones.host_rack, 0)), -1)
        item_rack = {"gpu": gpu_rack, "host": host_rack}
        for section in sections.sections():            # the capabilities' figures per rack (Section.rack_figure)
            value, where = frame.value(section.name), item_rack.get(section.per)
            if section.rack_figure is None or value is None or where is None or len(value) != len(where):
                continue
            weight, counted = section.rack_figure(np.asarray(value), section.constants)
            items = _per(np.where(counted, where, -1), n)
            racks[section.name] = np.where(items > 0, np.round(_per(where, n, np.where(counted, weight, 0.0))
                                                               / np.maximum(items, 1), 4), -1).tolist()
    return json.dumps(doc, separators=(",", ":")).encode()
