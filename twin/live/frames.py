"""Binary live frames: a 32-byte header, then sections. The browser decodes them with DataView (frontend/js/frames.js).

All numbers are little-endian.

Header (32 bytes)::

    offset size type     field
    0      2    bytes    magic b"TW"
    2      1    uint8    version (1)
    3      1    uint8    frame type (FRAME_TYPES): 1 run stream, 2 cluster stream
    4      4    uint32   sequence number, per stream (1, 2, 3...; a jump means frames were lost: resync)
    8      4    uint32   run id (0: none)
    12     4    uint32   cluster id (0: none)
    16     4    float32  progress, 0..100
    20     1    uint8    status code (STATUS_CODES)
    21     1    uint8    flags (FLAG_NAMES): bit 0 final frame of the run, bit 1 scoped (twin/live/scope.py)
    22     2    uint16   section count
    24     8    float64  publish time, milliseconds since the Unix epoch

Section (8-byte header, then the data padded with zeros to a multiple of 4 bytes, so every section starts 4-aligned)::

    0      1    uint8    section id (SECTION_*)
    1      1    uint8    dtype code (DTYPE_NAMES): 1 Uint8, 2 Float16, 3 Uint16, 4 Float32
    2      2    uint16   reserved (0)
    4      4    uint32   element count
    8      n    data     count * itemsize bytes, then padding

Link utilization goes as Uint8 quantized over the link's capacity: byte = round(util * LINK_UTIL_SCALE),
util = byte / LINK_UTIL_SCALE (255: resolution 0.4 %). 56,256 links of meta-roce-24k take 56,296 bytes per frame
with the header; Float16 (also supported, SECTION_LINK_UTIL with dtype 2) would take 112 KB, over the 64 KB budget.

Training jobs (:class:`twin.runs.models.Job`) go as two sections: ``gpu_job`` (Uint16 per GPU by GPU.index: 0 no
job, k the k-th row of ``job_stats``) and ``job_stats`` (Float32, one row of len(JOB_FIELDS) values per job,
row-major: the job's id, its phase code (JOB_PHASES), step time in seconds, tokens/s, TFLOPs per GPU, MFU 0..1 and
its GPU count; NaN where not known yet). 24,576 GPUs take 49 KB.

Every code table of the format is declared here once; :func:`tables` hands them to clients (the stream's metadata,
and the copy embedded in every page), so the browser decodes with the server's own tables.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"TW"
VERSION = 1
HEADER = struct.Struct("<2sBBIIIfBBHd")
SECTION = struct.Struct("<BBHI")
assert HEADER.size == 32 and SECTION.size == 8

FRAME_RUN = 1
FRAME_CLUSTER = 2
FRAME_TYPES = {FRAME_RUN: "run", FRAME_CLUSTER: "cluster"}

FLAG_FINAL = 1
FLAG_SCOPED = 2         # the per-item sections are cut to one zone, or left out (the summary form: twin/live/scope.py)
FLAG_NAMES = {FLAG_FINAL: "final", FLAG_SCOPED: "scoped"}   # bits of the flags byte

DTYPE_UINT8 = 1
DTYPE_FLOAT16 = 2
DTYPE_UINT16 = 3
DTYPE_FLOAT32 = 4
DTYPES = {DTYPE_UINT8: np.dtype("<u1"), DTYPE_FLOAT16: np.dtype("<f2"), DTYPE_UINT16: np.dtype("<u2"),
          DTYPE_FLOAT32: np.dtype("<f4")}
DTYPE_NAMES = {DTYPE_UINT8: "uint8", DTYPE_FLOAT16: "float16", DTYPE_UINT16: "uint16", DTYPE_FLOAT32: "float32"}

SECTION_LINK_UTIL = 1   # per backend link (Link rows of the backend fabric by id), utilization of capacity
SECTION_GPU_STATE = 2   # per GPU (by GPU.index), GPU_STATES codes
# Checkpoints and storage (the checkpoint and storage run kinds, twin/runs/kinds.py):
SECTION_SERVER_WRITE = 3    # per storage server (StorageServer rows by id), float16 write rate in GB/s (10^9 B/s)
SECTION_SERVER_READ = 4     # the same, read rate in GB/s
SECTION_HOST_PROGRESS = 5   # per host (Host rows by id), uint8: share of its checkpoint bytes done x PROGRESS_SCALE;
                            # HOST_NOT_IN_JOB for hosts outside the job
SECTION_FRONTEND_UTIL = 6   # per frontend link (Link rows of the frontend fabric by id), as link_util
SECTION_CHECKPOINT_PHASE = 7    # one uint8: the job's checkpoint phase, CHECKPOINT_PHASES codes
# Training jobs (the job run kind, twin/capabilities/jobs/kinds.py):
SECTION_GPU_JOB = 8     # per GPU (by GPU.index), uint16: 0 no job, k the job of row k-1 of SECTION_JOB_STATS
SECTION_JOB_STATS = 9   # float32, one row of JOB_FIELDS per job
# A long job under failures (the failures run kind, twin/capabilities/failures/kinds.py):
SECTION_FAILURE_STATE = 10     # float32, one row of FAILURE_FIELDS: the timeline's state and figures so far
SECTION_FAILURE_EVENTS = 11    # float32, one row of FAILURE_EVENT_FIELDS per failure so far (the newest
                               # FAILURE_EVENTS_SENT)
# Debug rehearsals (the debug run kind, twin/capabilities/debug/kinds.py); 10-11 belong to another capability:
SECTION_DEBUG_PROGRESS = 12     # float32, one row of DEBUG_FIELDS: the rehearsal's stage and each stage's share done
SECTION_DEBUG_STOP = 13         # per GPU (by GPU.index), uint8: where its rank stopped (DEBUG_* codes below)
SECTION_NAMES = {SECTION_LINK_UTIL: "link_util", SECTION_GPU_STATE: "gpu_state",
                 SECTION_SERVER_WRITE: "server_write", SECTION_SERVER_READ: "server_read",
                 SECTION_HOST_PROGRESS: "host_progress", SECTION_FRONTEND_UTIL: "frontend_util",
                 SECTION_CHECKPOINT_PHASE: "checkpoint_phase", SECTION_GPU_JOB: "gpu_job",
                 SECTION_JOB_STATS: "job_stats", SECTION_FAILURE_STATE: "failure_state",
                 SECTION_FAILURE_EVENTS: "failure_events", SECTION_DEBUG_PROGRESS: "debug_progress",
                 SECTION_DEBUG_STOP: "debug_stop"}


# What a section is indexed by, for the scoped forms of cluster-stream frames (twin/live/scope.py): cut to a zone's
# GPUs, hosts or backend links; the storage and frontend sections are left out of both scoped forms.
PER_GPU_SECTIONS = (SECTION_GPU_STATE, SECTION_GPU_JOB)
PER_HOST_SECTIONS = (SECTION_HOST_PROGRESS,)
PER_LINK_SECTIONS = (SECTION_LINK_UTIL,)
PER_STORAGE_SECTIONS = (SECTION_SERVER_WRITE, SECTION_SERVER_READ, SECTION_FRONTEND_UTIL)


def util_sections() -> list[int]:
    """Sections quantized as link_util (uint8 = utilization x LINK_UTIL_SCALE); clients dequantize exactly these."""
    return [s for s in (SECTION_LINK_UTIL, SECTION_FRONTEND_UTIL) if s in SECTION_NAMES]


STATUS_CODES = {"unknown": 0, "queued": 1, "running": 2, "succeeded": 3, "failed": 4, "cancelled": 5}
STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}

LINK_UTIL_SCALE = 255   # a uint8 link_util byte is utilization * LINK_UTIL_SCALE

# The GPU states a run reports in SECTION_GPU_STATE (uint8). This table is the only definition: runs import the
# codes from here, and clients get the table in the stream's metadata (``gpu_states``, twin/live/meta.py).
GPU_IDLE, GPU_IN_JOB, GPU_UNUSABLE = 0, 1, 2
GPU_STATES = {GPU_IDLE: "idle", GPU_IN_JOB: "in_job", GPU_UNUSABLE: "unusable"}

# A training job's row in SECTION_JOB_STATS (float32 each), and the codes of its ``phase``: where the job is in its
# life as the twin simulates it (twin.runs.models.Job states, with ``placing`` and ``simulating`` inside running).
JOB_FIELDS = ("job", "phase", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu", "gpus")
JOB_QUEUED, JOB_PLACING, JOB_SIMULATING, JOB_FINISHED, JOB_FAILED = 0, 1, 2, 3, 4
JOB_PHASES = {JOB_QUEUED: "queued", JOB_PLACING: "placing", JOB_SIMULATING: "simulating", JOB_FINISHED: "finished",
              JOB_FAILED: "failed"}

# A long job's timeline under failures (SECTION_FAILURE_STATE, one row): its state (failure_states(), the engine's
# segment states), the simulated time reached and the run's length (hours), productive training so far (hours) and
# its share of the time reached, interruptions and lost hours so far, the seed simulated, seeds done and seeds of
# this run.
FAILURE_FIELDS = ("state", "t_hours", "hours", "productive_hours", "effective_ratio", "interruptions",
                  "lost_hours", "seed", "seeds_done", "seeds")
# One failure (SECTION_FAILURE_EVENTS row): when (hours), its category (failure_categories()), the kind of item
# it hit (item_kinds()) and that item's position (GPU: GPU.index; host: Host rows by id; link: backend Link rows
# by id, the link_util order; switch: Switch rows by id; -1 for the job itself), its consequence
# (failure_consequences()) and the work it cost (hours of training progress to recompute).
FAILURE_EVENT_FIELDS = ("t_hours", "category", "item_kind", "item", "consequence", "lost_hours")
FAILURE_EVENTS_SENT = 1024     # rows at most in one frame (24 KB): the newest


def failure_states() -> dict[int, str]:
    """The timeline's states (code -> name), declared once in the engine: :data:`sim.failures.timeline.STATES`."""
    from sim.failures.timeline import STATES
    return dict(enumerate(STATES))


def failure_categories() -> dict[int, str]:
    """The failure categories of Meta's table, in its order: :data:`sim.failures.rates.NAMES`."""
    from sim.failures.rates import NAMES
    return dict(enumerate(NAMES))


def failure_consequences() -> dict[int, str]:
    """What a failure does (:data:`sim.failures.rates.CONSEQUENCES`), and one that arrived while the job was
    already down (:data:`sim.failures.timeline.WHILE_DOWN`)."""
    from sim.failures.rates import CONSEQUENCES
    from sim.failures.timeline import WHILE_DOWN
    return dict(enumerate(CONSEQUENCES + (WHILE_DOWN,)))


def item_kinds() -> dict[int, str]:
    """The kinds of item a failure hits: :data:`sim.failures.inject.ITEM_KINDS`."""
    from sim.failures.inject import ITEM_KINDS
    return dict(enumerate(ITEM_KINDS))


# A host's checkpoint progress (SECTION_HOST_PROGRESS): byte = round(share * PROGRESS_SCALE); HOST_NOT_IN_JOB: none.
PROGRESS_SCALE = 250
HOST_NOT_IN_JOB = 255

# The job's checkpoint phase (SECTION_CHECKPOINT_PHASE): a checkpoint goes staging (GPU -> host memory, training
# blocked), uploading (host memory -> storage; blocked too in sync mode), durable; a restore goes reading (storage
# -> host memory), loading (host -> GPU), loaded. "planning": the job is being placed and its flows routed.
PHASE_PLANNING, PHASE_STAGING, PHASE_UPLOADING, PHASE_DURABLE, PHASE_READING, PHASE_LOADING, PHASE_LOADED = range(7)
CHECKPOINT_PHASES = {PHASE_PLANNING: "planning", PHASE_STAGING: "staging", PHASE_UPLOADING: "uploading",
                     PHASE_DURABLE: "durable", PHASE_READING: "reading", PHASE_LOADING: "loading",
                     PHASE_LOADED: "loaded"}

# A debug rehearsal's progress (SECTION_DEBUG_PROGRESS): its stage (DEBUG_STAGES) and the share done (0..1) of each
# of its three stages, the engine's own fractions: simulating the job with the fault, writing the per-rank dumps,
# analyzing them; ``ranks`` the job's ranks.
DEBUG_FIELDS = ("stage", "simulating", "dumping", "analyzing", "ranks")
DEBUG_SIMULATING, DEBUG_DUMPING, DEBUG_ANALYZING, DEBUG_DONE = 0, 1, 2, 3
DEBUG_STAGES = {DEBUG_SIMULATING: "simulating", DEBUG_DUMPING: "dumping", DEBUG_ANALYZING: "analyzing",
                DEBUG_DONE: "done"}
# Where each GPU's rank stopped (SECTION_DEBUG_STOP): how many collectives (of its process groups' sequence) it is
# behind the furthest rank, 0..DEBUG_LAG_MAX (clipped); DEBUG_CULPRIT for a rank the analyzer names, DEBUG_NOT_IN_JOB
# for GPUs outside the rehearsed job.
DEBUG_LAG_MAX = 250
DEBUG_CULPRIT = 254
DEBUG_NOT_IN_JOB = 255


def tables() -> dict:
    """Every code table of the format, JSON-friendly (codes as string keys, except ``status_codes``: name -> code).
    Clients decode with these (frontend/js/frames.js takes nothing else): sent in each stream's metadata
    (twin/live/meta.py) and embedded in every page (twin/web/templatetags/live_protocol.py)."""
    def by_code(table):
        return {str(k): v for k, v in table.items()}

    return {"protocol": VERSION, "magic": MAGIC.decode("ascii"),
            "frame_types": by_code(FRAME_TYPES), "flags": by_code(FLAG_NAMES),
            "sections": by_code(SECTION_NAMES), "dtypes": by_code(DTYPE_NAMES),
            "dtype_sizes": {str(k): dt.itemsize for k, dt in DTYPES.items()},
            "status_codes": dict(STATUS_CODES), "gpu_states": by_code(GPU_STATES),
            "job_fields": list(JOB_FIELDS), "job_phases": by_code(JOB_PHASES),
            "link_util_scale": LINK_UTIL_SCALE, "util_sections": [SECTION_NAMES[s] for s in util_sections()],
            "progress_scale": PROGRESS_SCALE, "host_not_in_job": HOST_NOT_IN_JOB,
            "checkpoint_phases": by_code(CHECKPOINT_PHASES),
            "failure_fields": list(FAILURE_FIELDS), "failure_event_fields": list(FAILURE_EVENT_FIELDS),
            "failure_states": by_code(failure_states()), "failure_categories": by_code(failure_categories()),
            "failure_consequences": by_code(failure_consequences()), "item_kinds": by_code(item_kinds()),
            "debug_fields": list(DEBUG_FIELDS), "debug_stages": by_code(DEBUG_STAGES),
            "debug_lag_max": DEBUG_LAG_MAX, "debug_culprit": DEBUG_CULPRIT, "debug_not_in_job": DEBUG_NOT_IN_JOB}


class FrameError(ValueError):
    """A byte string that is not a valid live frame."""


@dataclass
class Frame:
    type: int = FRAME_RUN
    seq: int = 0
    run_id: int = 0
    cluster_id: int = 0
    progress: float = 0.0
    status: str = "unknown"
    final: bool = False
    scoped: bool = False
    time_ms: float = 0.0
    sections: dict[int, np.ndarray] = field(default_factory=dict)   # section id -> array (uint8 or float16)

    @property
    def link_util(self) -> np.ndarray | None:
        """Link utilization as float32 in 0..1, whatever the wire dtype."""
        a = self.sections.get(SECTION_LINK_UTIL)
        if a is None:
            return None
        return dequantize_util(a) if a.dtype == np.uint8 else a.astype(np.float32)

    @property
    def gpu_state(self) -> np.ndarray | None:
        return self.sections.get(SECTION_GPU_STATE)

    @property
    def frontend_util(self) -> np.ndarray | None:
        """Frontend link utilization as float32 in 0..1."""
        a = self.sections.get(SECTION_FRONTEND_UTIL)
        return None if a is None else dequantize_util(a)

    @property
    def checkpoint_phase(self) -> str | None:
        a = self.sections.get(SECTION_CHECKPOINT_PHASE)
        return None if a is None or not a.size else CHECKPOINT_PHASES.get(int(a[0]), str(int(a[0])))

    @property
    def gpu_job(self) -> np.ndarray | None:
        return self.sections.get(SECTION_GPU_JOB)

    @property
    def jobs(self) -> list[dict] | None:
        """The job_stats rows as dicts (JOB_FIELDS; ``job`` and ``gpus`` as ints, ``phase`` by name, NaN as None)."""
        a = self.sections.get(SECTION_JOB_STATS)
        return None if a is None else job_rows(a)

    @property
    def failure_state(self) -> dict | None:
        """The failure_state row (FAILURE_FIELDS; ``state`` by name)."""
        a = self.sections.get(SECTION_FAILURE_STATE)
        return None if a is None else rows_of(a, FAILURE_FIELDS, {"state": failure_states()},
                                              ints=("interruptions", "seed", "seeds_done", "seeds"))[0]

    @property
    def failure_events(self) -> list[dict] | None:
        """The failure_events rows (FAILURE_EVENT_FIELDS; codes by name, ``item`` an int, -1 for none)."""
        a = self.sections.get(SECTION_FAILURE_EVENTS)
        return None if a is None else rows_of(a, FAILURE_EVENT_FIELDS, _event_codes(), ints=("item",))

    @property
    def debug_progress(self) -> dict | None:
        """The debug_progress row as a dict (DEBUG_FIELDS; ``stage`` by name, ``ranks`` an int)."""
        a = self.sections.get(SECTION_DEBUG_PROGRESS)
        return None if a is None else debug_row(a)

    @property
    def debug_stop(self) -> np.ndarray | None:
        return self.sections.get(SECTION_DEBUG_STOP)

    def header_dict(self) -> dict:
        return {"type": self.type, "seq": self.seq, "run": self.run_id or None, "cluster": self.cluster_id or None,
                "progress": round(float(self.progress), 3), "status": self.status, "final": self.final,
                "time_ms": self.time_ms}


def quantize_util(util) -> np.ndarray:
    """Utilization (0..1, floats) -> uint8 0..LINK_UTIL_SCALE; NaN -> 0, out-of-range values clamped."""
    a = np.nan_to_num(np.asarray(util, dtype=np.float32), nan=0.0, posinf=1.0, neginf=0.0)
    return np.rint(np.clip(a, 0.0, 1.0) * float(LINK_UTIL_SCALE)).astype(np.uint8)


def dequantize_util(q: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) / float(LINK_UTIL_SCALE)


def float_rows(rows: list[dict], fields: tuple[str, ...], codes: dict[str, dict[int, str]] | None = None) -> np.ndarray:
    """A float32 section of ``rows`` (dicts keyed by ``fields``), row-major; a field of ``codes`` may be given by
    its name in that code table; a missing or None value goes as NaN."""
    by_name = {f: {v: k for k, v in table.items()} for f, table in (codes or {}).items()}
    out = np.full((len(rows), len(fields)), np.nan, dtype=np.float32)
    for i, r in enumerate(rows):
        for j, f in enumerate(fields):
            v = r.get(f)
            if isinstance(v, str) and f in by_name:
                v = by_name[f][v]
            if v is not None:
                out[i, j] = float(v)
    return out.ravel()


def rows_of(a: np.ndarray, fields: tuple[str, ...], codes: dict[str, dict[int, str]] | None = None,
            ints: tuple[str, ...] = ()) -> list[dict]:
    """The inverse of :func:`float_rows`: fields of ``codes`` by name ("unknown" for a code not in the table),
    those of ``ints`` as ints, NaN as None."""
    rows = []
    for row in np.asarray(a, dtype=np.float32).reshape(-1, len(fields)):
        d = {f: (None if np.isnan(v) else float(v)) for f, v in zip(fields, row)}
        for f in ints:
            d[f] = None if d[f] is None else int(d[f])
        for f, table in (codes or {}).items():
            d[f] = None if d[f] is None else table.get(int(d[f]), "unknown")
        rows.append(d)
    return rows


def job_stats(rows: list[dict]) -> np.ndarray:
    """The SECTION_JOB_STATS array of ``rows`` (dicts with JOB_FIELDS keys; ``phase`` a name of JOB_PHASES or a
    code; a missing or None value goes as NaN)."""
    return float_rows(rows, JOB_FIELDS, {"phase": JOB_PHASES})


def job_rows(a: np.ndarray) -> list[dict]:
    """The inverse of :func:`job_stats`."""
    return rows_of(a, JOB_FIELDS, {"phase": JOB_PHASES}, ints=("job", "gpus"))


def failure_state(row: dict) -> np.ndarray:
    """The SECTION_FAILURE_STATE array of one row of FAILURE_FIELDS (``state`` by name or code)."""
    return float_rows([row], FAILURE_FIELDS, {"state": failure_states()})


def failure_events(rows: list[dict]) -> np.ndarray:
    """The SECTION_FAILURE_EVENTS array of ``rows`` (FAILURE_EVENT_FIELDS; codes by name or code), the newest
    FAILURE_EVENTS_SENT."""
    return float_rows(rows[-FAILURE_EVENTS_SENT:], FAILURE_EVENT_FIELDS, _event_codes())


def _event_codes() -> dict[str, dict[int, str]]:
    return {"category": failure_categories(), "item_kind": item_kinds(), "consequence": failure_consequences()}


def debug_progress(stage: str, *, simulating=0.0, dumping=0.0, analyzing=0.0, ranks=0) -> np.ndarray:
    """The SECTION_DEBUG_PROGRESS row: ``stage`` a name of DEBUG_STAGES, the three shares done 0..1."""
    code = {v: k for k, v in DEBUG_STAGES.items()}[stage]
    values = {"stage": code, "simulating": simulating, "dumping": dumping, "analyzing": analyzing, "ranks": ranks}
    return np.array([values[f] for f in DEBUG_FIELDS], dtype=np.float32)


def debug_row(a: np.ndarray) -> dict:
    """The inverse of :func:`debug_progress`."""
    d = dict(zip(DEBUG_FIELDS, (float(v) for v in np.asarray(a, dtype=np.float32))))
    d["stage"] = DEBUG_STAGES.get(int(d["stage"]), "unknown")
    d["ranks"] = int(d["ranks"])
    return d


def debug_stop(lag, culprit=None, in_job=None) -> np.ndarray:
    """Per GPU lag behind the furthest rank (collectives; NaN or ``in_job`` False: not in the job) -> uint8 codes of
    SECTION_DEBUG_STOP; GPUs where ``culprit`` is True -> DEBUG_CULPRIT."""
    a = np.asarray(lag, dtype=np.float64)
    q = np.clip(np.nan_to_num(a, nan=0.0), 0, DEBUG_LAG_MAX).astype(np.uint8)
    out = np.isnan(a) if in_job is None else ~np.asarray(in_job, bool) | np.isnan(a)
    if culprit is not None:
        q[np.asarray(culprit, bool)] = DEBUG_CULPRIT
    q[out] = DEBUG_NOT_IN_JOB
    return q


def _dtype_code(a: np.ndarray) -> int:
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    for code, wire in DTYPES.items():
        if wire == dt:
            return code
    raise FrameError(f"section dtype {a.dtype} is not one of {', '.join(DTYPE_NAMES.values())}")


def encode(frame: Frame) -> bytes:
    flags = (FLAG_FINAL if frame.final else 0) | (FLAG_SCOPED if frame.scoped else 0)
    parts = [HEADER.pack(MAGIC, VERSION, frame.type, frame.seq & 0xFFFFFFFF, frame.run_id, frame.cluster_id,
                         float(frame.progress), STATUS_CODES.get(frame.status, 0), flags,
                         len(frame.sections), frame.time_ms or time.time() * 1000.0)]
    for sid, arr in frame.sections.items():
        a = np.ascontiguousarray(arr)
        code = _dtype_code(a)
        data = a.astype(DTYPES[code], copy=False).tobytes()
        parts.append(SECTION.pack(sid, code, 0, a.size))
        parts.append(data)
        if len(data) % 4:
            parts.append(b"\0" * (4 - len(data) % 4))
    return b"".join(parts)


def decode(buf: bytes) -> Frame:
    if len(buf) < HEADER.size:
        raise FrameError(f"{len(buf)} bytes is shorter than the {HEADER.size}-byte header")
    magic, version, ftype, seq, run_id, cluster_id, progress, status, flags, nsec, time_ms = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise FrameError(f"bad magic {magic!r}")
    if version != VERSION:
        raise FrameError(f"unsupported version {version}")
    off = HEADER.size
    sections = {}
    for _ in range(nsec):
        if off + SECTION.size > len(buf):
            raise FrameError("truncated section header")
        sid, code, _reserved, count = SECTION.unpack_from(buf, off)
        off += SECTION.size
        if code not in DTYPES:
            raise FrameError(f"unknown dtype code {code}")
        n = count * DTYPES[code].itemsize
        if off + n > len(buf):
            raise FrameError("truncated section data")
        sections[sid] = np.frombuffer(buf, dtype=DTYPES[code], count=count, offset=off)
        off += n + (-n % 4)
    return Frame(type=ftype, seq=seq, run_id=run_id, cluster_id=cluster_id, progress=progress,
                 status=STATUS_NAMES.get(status, "unknown"), final=bool(flags & FLAG_FINAL),
                 scoped=bool(flags & FLAG_SCOPED), time_ms=time_ms,
                 sections=sections)


def quantize_progress(share, in_job=None) -> np.ndarray:
    """Per host share done (0..1) -> uint8 0..PROGRESS_SCALE; hosts where ``in_job`` is False (or share is NaN)
    -> HOST_NOT_IN_JOB."""
    a = np.asarray(share, dtype=np.float32)
    q = np.rint(np.clip(np.nan_to_num(a, nan=0.0), 0.0, 1.0) * float(PROGRESS_SCALE)).astype(np.uint8)
    out = np.isnan(a) if in_job is None else ~np.asarray(in_job, bool) | np.isnan(a)
    q[out] = HOST_NOT_IN_JOB
    return q


def build_sections(link_util=None, gpu_state=None, *, link_dtype: str = "uint8", server_write=None,
                   server_read=None, host_progress=None, frontend_util=None, checkpoint_phase=None,
                   gpu_job=None, jobs=None, failure=None, failures=None, debug_progress=None,
                   debug_stop=None) -> dict[int, np.ndarray]:
    """The sections of a frame from the publisher's arrays (None: section omitted). ``server_write`` and
    ``server_read`` in GB/s per storage server, ``host_progress`` uint8 as :func:`quantize_progress` makes it,
    ``frontend_util`` 0..1 per frontend link, ``checkpoint_phase`` a CHECKPOINT_PHASES code; ``gpu_job`` per GPU
    (0 or a 1-based row of ``jobs``), ``jobs`` the rows of :func:`job_stats` (dicts); ``failure`` the row of
    :func:`failure_state`, ``failures`` the rows of :func:`failure_events` (dicts); ``debug_progress`` the row of
    :func:`debug_progress`, ``debug_stop`` per GPU as :func:`debug_stop` makes it."""
    sections = {}
    if failure is not None:
        sections[SECTION_FAILURE_STATE] = failure_state(failure)
    if failures is not None:
        sections[SECTION_FAILURE_EVENTS] = failure_events(failures)
    if gpu_job is not None:
        sections[SECTION_GPU_JOB] = np.asarray(gpu_job).astype("<u2", copy=False)
    if jobs is not None:
        sections[SECTION_JOB_STATS] = job_stats(jobs)
    if link_util is not None:
        sections[SECTION_LINK_UTIL] = (quantize_util(link_util) if link_dtype == "uint8"
                                       else np.asarray(link_util, dtype=np.float16))
    if gpu_state is not None:
        sections[SECTION_GPU_STATE] = np.asarray(gpu_state).astype(np.uint8, copy=False)
    if server_write is not None:
        sections[SECTION_SERVER_WRITE] = np.asarray(server_write, dtype=np.float16)
    if server_read is not None:
        sections[SECTION_SERVER_READ] = np.asarray(server_read, dtype=np.float16)
    if host_progress is not None:
        sections[SECTION_HOST_PROGRESS] = np.asarray(host_progress).astype(np.uint8, copy=False)
    if frontend_util is not None:
        sections[SECTION_FRONTEND_UTIL] = quantize_util(frontend_util)
    if checkpoint_phase is not None:
        sections[SECTION_CHECKPOINT_PHASE] = np.array([checkpoint_phase], dtype=np.uint8)
    if debug_progress is not None:
        sections[SECTION_DEBUG_PROGRESS] = np.asarray(debug_progress, dtype=np.float32)
    if debug_stop is not None:
        sections[SECTION_DEBUG_STOP] = np.asarray(debug_stop).astype(np.uint8, copy=False)
    return sections


def to_json(frame: Frame, raw: bytes | None = None) -> dict:
    """A JSON-friendly view of a frame: the header fields, and the encoded frame as base64 (same bytes as on the
    WebSocket), so a client resyncs with the same decoder."""
    import base64

    out = frame.header_dict()
    out["sections"] = {SECTION_NAMES.get(sid, str(sid)): {"dtype": DTYPE_NAMES[_dtype_code(a)], "count": int(a.size)}
                       for sid, a in frame.sections.items()}
    out["frame_b64"] = base64.b64encode(raw if raw is not None else encode(frame)).decode("ascii")
    return out
