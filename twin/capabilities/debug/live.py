"""A debug rehearsal's live sections: its progress (``debug_progress``, one row) and where each GPU's rank stopped
(``debug_stop``), sent by the ``debug`` kind (:mod:`twin.capabilities.debug.kinds`)."""
from __future__ import annotations

import numpy as np

from twin.live.sections import Section, register

# A debug rehearsal's progress (debug_progress): its stage (DEBUG_STAGES) and the share done (0..1) of each of its
# four stages, each counted from the work done in it: simulating the job with the fault, making the per-rank dumps
# and reading them, analyzing them (matching the collectives), keeping their compact copy with the run (one after
# the other); ``ranks`` the job's ranks.
DEBUG_FIELDS = ("stage", "simulating", "dumping", "analyzing", "ranks", "packing")
DEBUG_SIMULATING, DEBUG_DUMPING, DEBUG_ANALYZING, DEBUG_DONE, DEBUG_PACKING = 0, 1, 2, 3, 4
DEBUG_STAGES = {DEBUG_SIMULATING: "simulating", DEBUG_DUMPING: "dumping", DEBUG_ANALYZING: "analyzing",
                DEBUG_DONE: "done", DEBUG_PACKING: "packing"}
# Where each GPU's rank stopped (debug_stop): how many collectives (of its process groups' sequence) it is behind
# the furthest rank, 0..DEBUG_LAG_MAX (clipped); DEBUG_CULPRIT for a rank the analyzer names, DEBUG_NOT_IN_JOB for
# GPUs outside the rehearsed job.
DEBUG_LAG_MAX = 250
DEBUG_CULPRIT = 254
DEBUG_NOT_IN_JOB = 255


def debug_progress(stage: str, *, simulating=0.0, dumping=0.0, analyzing=0.0, ranks=0, packing=0.0) -> dict:
    """The debug_progress row: ``stage`` a name of DEBUG_STAGES, the four shares done 0..1."""
    if stage not in DEBUG_STAGES.values():
        raise KeyError(stage)
    return {"stage": stage, "simulating": simulating, "dumping": dumping, "analyzing": analyzing, "ranks": ranks,
            "packing": packing}


def debug_stop(lag, culprit=None, in_job=None) -> np.ndarray:
    """Per GPU lag behind the furthest rank (collectives; NaN or ``in_job`` False: not in the job) -> uint8 codes of
    debug_stop; GPUs where ``culprit`` is True -> DEBUG_CULPRIT."""
    a = np.asarray(lag, dtype=np.float64)
    q = np.clip(np.nan_to_num(a, nan=0.0), 0, DEBUG_LAG_MAX).astype(np.uint8)
    out = np.isnan(a) if in_job is None else ~np.asarray(in_job, bool) | np.isnan(a)
    if culprit is not None:
        q[np.asarray(culprit, bool)] = DEBUG_CULPRIT
    q[out] = DEBUG_NOT_IN_JOB
    return q


DEBUG_PROGRESS = register(Section(
    12, "debug_progress", "float32", "rows", fields=DEBUG_FIELDS, codes={"stage": DEBUG_STAGES}, ints=("ranks",),
    doc="one row: the rehearsal's stage and each stage's share done"))
DEBUG_STOP = register(Section(
    13, "debug_stop", "uint8", "array", per="gpu",
    constants={"lag_max": DEBUG_LAG_MAX, "culprit": DEBUG_CULPRIT, "not_in_job": DEBUG_NOT_IN_JOB},
    doc="per GPU (by GPU.index), where its rank stopped: lag 0..lag_max, culprit, not_in_job"))
