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

    0      1    uint8    section id (the registry's, twin/live/sections.py)
    1      1    uint8    dtype code (DTYPE_NAMES): 1 Uint8, 2 Float16, 3 Uint16, 4 Float32
    2      2    uint16   reserved (0)
    4      4    uint32   element count
    8      n    data     count * itemsize bytes, then padding

What the sections are is not written here: each is declared in :mod:`twin.live.sections` (the twin's base sections)
or in a capability's ``live`` module, and this module loops over them (:func:`build_sections`, :meth:`Frame.value`,
:func:`tables`). :func:`tables` hands every code table to clients (the stream's metadata, and the copy embedded in
every page), so the browser decodes with the server's own tables.
"""
from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

import numpy as np

from twin.live import sections as registry
from twin.live.sections import Section
from twin.live.status import RUN_STATUSES

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

# A run's status byte: 0 unknown, then the run statuses in their declared order (twin/live/status.py, which the
# runs app's RunStatus is built from too).
STATUS_CODES = {"unknown": 0, **{value: k for k, (value, _label) in enumerate(RUN_STATUSES, 1)}}
STATUS_NAMES = {v: k for k, v in STATUS_CODES.items()}


# WebSocket close codes of the streams (twin/live/consumers.py) and what each says to a reader, the standard ones the
# browser may see included (1006: no close frame, the server gone). After a final one a client does not reconnect.
CLOSE_UNAUTHENTICATED = 4401        # not authenticated, or too many wrong tokens
CLOSE_NOT_FOUND = 4404              # no such run or cluster
CLOSE_TRY_AGAIN_LATER = 1013        # the channel layer (Redis) unreachable
CLOSE_REASONS = {1000: "closed", 1001: "the server is going away", 1006: "the server is unreachable",
                 1011: "server error", 1012: "the server is restarting",
                 CLOSE_TRY_AGAIN_LATER: "live push unavailable (Redis unreachable)",
                 CLOSE_UNAUTHENTICATED: "not authenticated", CLOSE_NOT_FOUND: "no such run or cluster"}
FINAL_CLOSES = (CLOSE_UNAUTHENTICATED, CLOSE_NOT_FOUND)


def tables() -> dict:
    """Every code table of the format, JSON-friendly (codes as string keys, except ``status_codes``: name -> code).
    Clients decode with these (frontend/js/frames.js takes nothing else): sent in each stream's metadata
    (twin/live/meta.py) and embedded in every page (twin/web/templatetags/live_protocol.py). ``sections`` is
    id -> name; ``section_specs`` name -> what a client needs to read the section (its id, dtype, codec, fields,
    code tables, constants and what it is indexed by)."""
    def by_code(table):
        return {str(k): v for k, v in table.items()}

    specs = {}
    for s in registry.sections():
        specs[s.name] = {"id": s.id, "dtype": s.dtype, "codec": s.codec, "fields": list(s.fields),
                         "codes": {f: by_code(t) for f, t in s.code_tables().items()},
                         "constants": dict(s.constants), "per": s.per}
    return {"protocol": VERSION, "magic": MAGIC.decode("ascii"),
            "frame_types": by_code(FRAME_TYPES), "flags": by_code(FLAG_NAMES),
            "sections": {str(s["id"]): name for name, s in specs.items()}, "dtypes": by_code(DTYPE_NAMES),
            "dtype_sizes": {str(k): dt.itemsize for k, dt in DTYPES.items()},
            "status_codes": dict(STATUS_CODES), "section_specs": specs,
            "close_reasons": by_code(CLOSE_REASONS), "final_closes": list(FINAL_CLOSES)}


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
    sections: dict[int, np.ndarray] = field(default_factory=dict)   # section id -> array (its wire dtype)

    def value(self, name: str):
        """The section ``name`` decoded by its codec (None when the frame lacks it): util -> float32 0..1, rows ->
        a list of dicts (codes by name, NaN as None), code -> the code's name, array -> the array."""
        s = registry.by_name(name)
        a = self.sections.get(s.id)
        return None if a is None else decode_value(s, a)

    def header_dict(self) -> dict:
        return {"type": self.type, "seq": self.seq, "run": self.run_id or None, "cluster": self.cluster_id or None,
                "progress": round(float(self.progress), 3), "status": self.status, "final": self.final,
                "time_ms": self.time_ms}


# ------------------------------------------------------------------------------------------------ codecs
def quantize_util(util, scale: int = registry.LINK_UTIL_SCALE) -> np.ndarray:
    """Utilization (0..1, floats) -> uint8 0..scale; NaN -> 0, out-of-range values clamped."""
    a = np.nan_to_num(np.asarray(util, dtype=np.float32), nan=0.0, posinf=1.0, neginf=0.0)
    return np.rint(np.clip(a, 0.0, 1.0) * float(scale)).astype(np.uint8)


def dequantize_util(q: np.ndarray, scale: int = registry.LINK_UTIL_SCALE) -> np.ndarray:
    return q.astype(np.float32) / float(scale)


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
            if f in d:
                d[f] = None if d[f] is None else table.get(int(d[f]), "unknown")
        rows.append(d)
    return rows


def encode_value(s: Section, value) -> np.ndarray:
    """The wire array of section ``s`` for a publisher's ``value``: the section's own ``encode``, else its codec's."""
    if s.encode is not None:
        return s.encode(value)
    if s.codec == "util":
        if isinstance(value, np.ndarray) and value.dtype == np.float16:
            return value                                       # the accepted alternative: float16 0..1
        return quantize_util(value, s.constants["scale"])
    if s.codec == "rows":
        if isinstance(value, np.ndarray):
            return value.astype(np.float32, copy=False).ravel()
        rows = [value] if isinstance(value, dict) else list(value)
        if s.max_rows is not None:
            rows = rows[-s.max_rows:] if s.max_rows else []
        return float_rows(rows, s.fields, s.code_tables())
    if s.codec == "code":
        if isinstance(value, str):
            by_name = {v: k for k, v in s.code_tables()["value"].items()}
            if value not in by_name:
                raise ValueError(f"live section {s.name!r}: no code named {value!r} (codes: {', '.join(by_name)})")
            value = by_name[value]
        return np.array([value], dtype=np.uint8)
    return np.asarray(value).astype(s.dtype, copy=False)


def decode_value(s: Section, a: np.ndarray):
    """The inverse of :func:`encode_value`, by codec (see :meth:`Frame.value`)."""
    if s.codec == "util":
        return dequantize_util(a, s.constants["scale"]) if a.dtype == np.uint8 else a.astype(np.float32)
    if s.codec == "rows":
        return rows_of(a, s.fields, s.code_tables(), ints=s.ints)
    if s.codec == "code":
        if not a.size:
            return None
        return s.code_tables().get("value", {}).get(int(a[0]), str(int(a[0])))
    return a


def build_sections(**values) -> dict[int, np.ndarray]:
    """The sections of a frame from a publisher's values, by section name (None: section left out), in the order
    given: each encoded by its section (:func:`encode_value`). An unknown name is a KeyError naming the sections."""
    out = {}
    for name, value in values.items():
        if value is None:
            continue
        s = registry.by_name(name)
        out[s.id] = encode_value(s, value)
    return out


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


def to_json(frame: Frame, raw: bytes | None = None) -> dict:
    """A JSON-friendly view of a frame: the header fields, and the encoded frame as base64 (same bytes as on the
    WebSocket), so a client resyncs with the same decoder."""
    import base64

    out = frame.header_dict()
    out["sections"] = {_name(sid): {"dtype": DTYPE_NAMES[_dtype_code(a)], "count": int(a.size)}
                       for sid, a in frame.sections.items()}
    out["frame_b64"] = base64.b64encode(raw if raw is not None else encode(frame)).decode("ascii")
    return out


def _name(sid: int) -> str:
    s = registry.by_id(sid)
    return s.name if s is not None else str(sid)
