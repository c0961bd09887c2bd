"""The cluster a rehearsal runs on and its dumps are read against: its topology from a preset, a spec or a
:class:`sim.fabric.topology.Topology`; which GPU and host each rank had; the hosts and backend links at ranks.

Why a module: the rehearsal (:mod:`sim.debug.recorder`), the analyzer (:mod:`sim.debug.analyze`) and the twin
(which maps the analyzer's culprit to inventory rows) load the cluster and locate ranks on it the same way; the
names are :mod:`sim.fabric.names`' (the inventory's, for a layout read from it) and the topology's link names.
"""
from __future__ import annotations

import json
import os

import numpy as np

from sim.debug.dumpformat import MAX_DUMP_BYTES, PLACEMENT_FILE, PLACEMENT_SIDECAR, DumpError
from sim.fabric.names import host_names
from sim.fabric.placement import place
from sim.fabric.topology import load_topology


def load_cluster(cluster_or_spec):
    """(topology, cluster name) of a :class:`sim.fabric.topology.Topology`, a preset name or a spec path (None: the
    default preset)."""
    if isinstance(cluster_or_spec, str) or cluster_or_spec is None:
        is_file = isinstance(cluster_or_spec, str) and os.path.exists(cluster_or_spec)
        cluster, topo = load_topology(None if is_file else cluster_or_spec, cluster_or_spec if is_file else None)
        return topo, cluster.name
    topo = cluster_or_spec
    name = getattr(getattr(topo.layout, "spec", None), "name", "") if topo.layout is not None else ""
    return topo, name


def rank_placement(cluster, folder, world, placement=None) -> dict | None:
    """Rank -> GPU, host names and the topology, when the cluster is known: the placement file written beside our
    dumps (:func:`placement_path`; or ``placement``, (rank -> GPU, cluster name, its GPUs), for dumps made in memory with no folder), else
    ranks on the cluster's GPUs in the topology placement (seed 0). None without a cluster. DumpError naming both
    when the dumps do not match the cluster: written on another one (the placement file names it), a rank on a GPU
    the cluster lacks, or more ranks than its GPUs."""
    if cluster is None:
        return None
    topo, name = load_cluster(cluster)
    n = int(world.max()) + 1 if world.size else 0
    path = placement_path(folder) if folder is not None else "the placement"
    gpus = None
    if placement is not None or os.path.isfile(path):
        gpus, wrote_on, wrote_gpus = _placement(path) if placement is None else placement
        gpus = np.asarray(gpus, np.int64)
        if wrote_on is not None and (wrote_on != name or wrote_gpus != topo.n_gpus):
            raise DumpError(f"{folder or path}: the dumps were written on {wrote_on} ({wrote_gpus:,} GPUs), not on the "
                            f"cluster given, {name} ({topo.n_gpus:,} GPUs)")
        if gpus.size < n or (gpus.size and (gpus.min() < 0 or gpus.max() >= topo.n_gpus)):
            raise DumpError(f"{path}: places {gpus.size:,} ranks on GPUs up to {int(gpus.max(initial=-1)):,}; the "
                            f"dumps name {n:,} ranks and the cluster given, {name}, has {topo.n_gpus:,} GPUs")
    if gpus is None:
        try:
            gpus = place(topo, n, "topology", 0)
        except ValueError as e:
            raise DumpError(f"{folder}: {n:,} ranks do not fit the cluster given, {name} ({topo.n_gpus:,} GPUs): "
                            f"{e}") from None
    hosts = host_names(topo.layout)
    rank_host = np.asarray(topo.gpu_host)[gpus]
    return {"topo": topo, "gpus": gpus, "hosts": hosts, "rank_host": rank_host,
            "host_names": [hosts[h] for h in rank_host.tolist()]}


def placement_path(folder) -> str:
    """Where a folder of our dumps has its placement file: inside it (``twin_placement.json``, as the command line
    writes it) or, failing that, beside it, named after it (``<folder>.placement.json``, as a download unpacks:
    :mod:`sim.debug.archive`). The one inside when neither exists."""
    inside = os.path.join(folder, PLACEMENT_FILE)
    beside = os.path.normpath(os.path.abspath(folder)) + PLACEMENT_SIDECAR
    return beside if not os.path.isfile(inside) and os.path.isfile(beside) else inside


def _placement(path) -> tuple[np.ndarray, str | None, int | None]:
    """The placement file's rank -> GPU, and the cluster it names (name, GPUs; None for a file without them)."""
    try:
        if os.path.getsize(path) > MAX_DUMP_BYTES:
            raise ValueError(f"over {MAX_DUMP_BYTES:,} bytes (MAX_DUMP_BYTES)")
        with open(path) as f:
            doc = json.load(f)
        gpus = np.asarray(doc["gpus"], np.int64).reshape(-1)
        on, count = doc.get("cluster"), doc.get("cluster_gpus")
        if on is not None and (not isinstance(on, str) or type(count) is not int):
            raise ValueError("cluster must be a name and cluster_gpus a count")
    except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError, AttributeError) as e:
        raise DumpError(f"{path}: not a placement file ({type(e).__name__}: {str(e)[:200]})") from None
    return gpus, on, count


def gpu_links(topo, gpus) -> np.ndarray:
    """The backend links at ``gpus`` (their NICs' links to and from the leaf): sorted directed link ids, the ones
    :func:`culprit_where` names (``topo.link_names`` of these, in this order)."""
    g = np.asarray(gpus, np.int64)
    if getattr(topo, "ports_per_nic", 1) > 1:                # every port's cable of a multi-port NIC
        up = np.asarray(topo.gpu_port_uplink)[g].ravel()
        up = up[up >= 0]
        ids = np.concatenate([up, up + topo.n_cables])
        return np.unique(ids)
    ids = np.concatenate([np.asarray(topo.gpu_uplink)[g], np.asarray(topo.gpu_downlink)[g]])
    return np.unique(ids[ids >= 0])


def culprit_where(info, ranks) -> tuple[list, list]:
    """The blamed ranks' hosts, and the names of the backend links on their paths (:func:`gpu_links`); a group
    inside one host uses NVLink only. ``info``: :func:`rank_placement`'s."""
    if not ranks:
        return [], []
    topo = info["topo"]
    r = np.asarray(ranks, np.int64)
    r = r[r < info["gpus"].size]
    g = info["gpus"][r]
    hosts = sorted({info["hosts"][h] for h in np.asarray(topo.gpu_host)[g].tolist()})
    ids = gpu_links(topo, g)
    return hosts, topo.link_names(ids) if ids.size else []
