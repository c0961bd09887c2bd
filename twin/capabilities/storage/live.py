"""The storage capability's live sections: a checkpoint's (or a fan-out's) server rates, host progress, frontend link
utilization and phase (:mod:`twin.capabilities.storage.kinds` reports them; :mod:`twin.live.sections`)."""
from __future__ import annotations

import numpy as np

from twin.live.sections import LINK_UTIL_SCALE, Section, register

# A host's checkpoint progress (host_progress): byte = round(share * PROGRESS_SCALE); HOST_NOT_IN_JOB: none.
PROGRESS_SCALE = 250
HOST_NOT_IN_JOB = 255

# The job's checkpoint phase (checkpoint_phase): a checkpoint goes staging (GPU -> host memory, training blocked),
# uploading (host memory -> storage; blocked too in sync mode), durable; a restore goes reading (storage -> host
# memory), loading (host -> GPU), loaded. "planning": the job is being placed and its flows routed.
PHASE_PLANNING, PHASE_STAGING, PHASE_UPLOADING, PHASE_DURABLE, PHASE_READING, PHASE_LOADING, PHASE_LOADED = range(7)
CHECKPOINT_PHASES = {PHASE_PLANNING: "planning", PHASE_STAGING: "staging", PHASE_UPLOADING: "uploading",
                     PHASE_DURABLE: "durable", PHASE_READING: "reading", PHASE_LOADING: "loading",
                     PHASE_LOADED: "loaded"}


def quantize_progress(share, in_job=None) -> np.ndarray:
    """Per host share done (0..1) -> uint8 0..PROGRESS_SCALE; hosts where ``in_job`` is False (or share is NaN)
    -> HOST_NOT_IN_JOB."""
    a = np.asarray(share, dtype=np.float32)
    q = np.rint(np.clip(np.nan_to_num(a, nan=0.0), 0.0, 1.0) * float(PROGRESS_SCALE)).astype(np.uint8)
    out = np.isnan(a) if in_job is None else ~np.asarray(in_job, bool) | np.isnan(a)
    q[out] = HOST_NOT_IN_JOB
    return q


SERVER_WRITE = register(Section(
    3, "server_write", "float16", "array", per="storage",
    doc="per storage server (StorageServer rows by id), write rate in GB/s (10^9 B/s)"))
SERVER_READ = register(Section(
    4, "server_read", "float16", "array", per="storage", doc="per storage server, read rate in GB/s"))
HOST_PROGRESS = register(Section(
    5, "host_progress", "uint8", "array", per="host",
    constants={"scale": PROGRESS_SCALE, "not_in_job": HOST_NOT_IN_JOB},
    # the mean checkpoint progress of the rack's hosts in the job
    rack_figure=lambda hp, c: (np.where(hp != c["not_in_job"], hp / c["scale"], 0.0), hp != c["not_in_job"]),
    doc="per host (Host rows by id), share of its checkpoint bytes done x scale (quantize_progress); not_in_job "
        "outside the job"))
FRONTEND_UTIL = register(Section(
    6, "frontend_util", "uint8", "util", per="storage", constants={"scale": LINK_UTIL_SCALE},
    doc="per frontend link (Link rows of the frontend fabric by id), utilization as link_util"))
CHECKPOINT_PHASE = register(Section(
    7, "checkpoint_phase", "uint8", "code", codes={"value": CHECKPOINT_PHASES},
    doc="the job's checkpoint phase, one code"))
