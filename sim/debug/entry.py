"""The debugging capability's entry points (docs/engine.md "Entry points"): ``run_debug(cluster, values,
progress=None)`` (``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.debug.params.DEBUG`) and ``run_startup(cluster, values, progress=None)`` (no cluster: ``cluster`` is
None; ``values`` validated by :data:`sim.debug.params.STARTUP`). Their ``to_dict()`` is what ``python -m sim debug
--json`` (once the dumps are written: :meth:`DebugRun.write_dumps`, an explicit step since it needs a folder) and
``python -m sim startup --json`` print.
"""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.entry import Document
from sim.debug.recorder import Rehearsal, rehearse
from sim.debug.startup import model


@dataclass
class DebugRun:
    """A rehearsal (:class:`sim.debug.recorder.Rehearsal`) and, once written, where its dumps went."""

    rehearsal: Rehearsal
    folder: str | None = None
    files: int | None = None

    def write_dumps(self, folder, progress=None) -> list:
        """Every live rank's dump into ``folder`` (:meth:`sim.debug.recorder.Rehearsal.write_dumps`); the paths."""
        paths = self.rehearsal.write_dumps(folder, progress=progress)
        self.folder, self.files = folder, len(paths)
        return paths

    def to_dict(self) -> dict:
        d = self.rehearsal.to_dict()
        return d if self.folder is None else d | {"folder": self.folder, "files": self.files}


def run_debug(cluster, values: dict, progress=None) -> DebugRun:
    """A job's collectives with the fault ``values['inject']`` (:func:`sim.debug.recorder.rehearse`)."""
    return DebugRun(rehearse(cluster, values, progress=progress))


def run_startup(cluster, values: dict, progress=None) -> Document:
    """The process groups' start-up over job sizes (:func:`sim.debug.startup.model`); needs no cluster (None) and
    reports no progress."""
    return Document(model(values))
