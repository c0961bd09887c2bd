"""The storage capability's entry points (docs/engine.md "Entry points"): ``run_<name>(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology` (``cluster.layout`` is what the
storage models read), ``values`` validated by :data:`sim.storage.params.CHECKPOINT` or
:data:`sim.storage.params.STORAGE_FANOUT`. Each returns a :class:`sim.core.entry.ClusterResult` whose ``to_dict()``
is what ``python -m sim checkpoint --json`` (``to_dict(series=True, links=True)``: with ``--series``) and
``python -m sim storage-fanout --json`` print.
"""
from __future__ import annotations

from sim.core.entry import ClusterResult, cluster_name
from sim.storage import checkpoint, fanout


def run_checkpoint(cluster, values: dict, progress=None) -> ClusterResult:
    """One checkpoint or restore (:func:`sim.storage.checkpoint.run_checkpoint`; ``.result`` is its
    :class:`sim.storage.checkpoint.CheckpointResult`)."""
    return ClusterResult(cluster_name(cluster), checkpoint.run_checkpoint(cluster.layout, values, backend=cluster,
                                                                          progress=progress))


def run_storage_fanout(cluster, values: dict, progress=None) -> ClusterResult:
    """N clients reading the same files (:func:`sim.storage.fanout.run_fanout`; ``.result`` is its
    :class:`sim.storage.fanout.FanoutResult`)."""
    return ClusterResult(cluster_name(cluster), fanout.run_fanout(cluster.layout, values, progress=progress))
