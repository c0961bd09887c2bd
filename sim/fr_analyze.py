"""Flight recorder analysis: reads a folder of per-rank dumps (ours or PyTorch's) and names the culprit
(docs/debugging.md, "The analyzer"): the first collective where ranks disagree or stall, the ranks missing from it,
their hosts and the links on their paths; a straggler ranking of process groups, ranks and hosts."""
from __future__ import annotations


class DumpError(ValueError):
    """A dump file that cannot be read (truncated, corrupt, not a flight recorder dump): names the file."""


def analyze(folder, cluster=None, progress=None) -> dict:
    """The analysis of the dumps in ``folder`` as a JSON-ready dict (schema: docs/debugging.md). ``cluster``: a
    :class:`sim.topology.Topology`, a preset name or a spec path, to name hosts and links (None: ranks only)."""
    raise NotImplementedError
