"""Flight recorder rehearsal: the collectives of a simulated 4D job as PyTorch's NCCL flight recorder records them,
with a fault injected, and the per-rank dumps the watchdog writes (docs/debugging.md).

Public interface (the twin's run kinds call these): :func:`rehearse` -> :class:`Rehearsal`, whose
:meth:`Rehearsal.write_dumps` writes one file per rank (``nccl_trace_rank_<rank>``, a pickle of the dict PyTorch's
``fr_trace`` reads).
"""
from __future__ import annotations

DUMP_PREFIX = "nccl_trace_rank_"      # PyTorch's TORCH_NCCL_DEBUG_INFO_TEMP_FILE default, /tmp/nccl_trace_rank_ [S32]
FAULTS = ("hang", "desync", "slow", "link", "host")


def check_debug(v: dict) -> None:
    """Rules of :data:`sim.params.DEBUG` across fields: the job's (:func:`sim.job.check_job`) and the fault's."""
    raise NotImplementedError


class Rehearsal:
    """A simulated job's flight recorder state at the dump: ``write_dumps(folder, progress=None)`` -> list of paths;
    ``to_dict()`` -> a JSON summary (job, fault, dump time, what was injected where)."""

    def write_dumps(self, folder, progress=None) -> list:
        raise NotImplementedError

    def to_dict(self) -> dict:
        raise NotImplementedError


def rehearse(cluster_or_spec, values: dict, progress=None) -> Rehearsal:
    """Simulate the job of ``values`` (:data:`sim.params.DEBUG`, validated or not) on ``cluster_or_spec`` (a
    :class:`sim.topology.Topology`, a preset name or a spec path) with the fault ``values['inject']``."""
    raise NotImplementedError
