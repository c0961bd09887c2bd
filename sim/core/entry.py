"""What a capability's entry point returns (``sim/<capability>/entry.py``, docs/engine.md "Entry points").

Every entry point has one shape, ``run_<name>(cluster, values, progress=None) -> result``: ``cluster`` the backend
:class:`sim.fabric.topology.Topology` (it carries ``.layout``), ``values`` the capability's
:meth:`sim.core.params.ParamSet.validate` output (every default filled in: the defaults live in the ParamSets
only), ``progress`` a :mod:`sim.core.progress` callback or None. The result's ``to_dict()`` is the document
``python -m sim <command> --json`` prints.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class ClusterResult:
    """An engine result and the name of the cluster it ran on: ``to_dict(**options)`` is ``{"cluster": name}``
    followed by the result's own ``to_dict(**options)``."""

    cluster: str
    result: Any

    def to_dict(self, **options) -> dict:
        return {"cluster": self.cluster, **self.result.to_dict(**options)}


def cluster_name(cluster) -> str:
    """The name of a :class:`sim.fabric.topology.Topology`'s cluster (its spec's)."""
    return cluster.layout.spec.name


@dataclass
class Document:
    """A result that is already the printed document (a JSON-ready dict): ``to_dict()`` returns it."""

    doc: dict

    def to_dict(self) -> dict:
        return self.doc
