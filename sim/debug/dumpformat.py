"""The flight recorder dump format, as one fixed byte layout both the writer and the reader depend on.

Why a module: the writer (:mod:`sim.debug.writer`) emits pickle opcodes itself and the reader
(:mod:`sim.debug.reader`) checks and views those bytes as numpy records without unpickling them, so the layout of an
entry (:func:`record_dtype`), the strings every dump holds, the opcodes of a timestamp that may be None and the
file names must be declared once, here.

The dict is the one ``torch._C._distributed_c10d._dump_nccl_trace`` pickles (FlightRecorder::dump_dict, version
``2.10``): ``version``, ``comm_lib_version``, ``pg_config`` (per group: name, desc, ranks), ``pg_status``,
``entries`` (record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id, op_id, profiling_name,
time_created_ns, input/output sizes and dtypes, state, time_discovered_started/completed_ns, retired, timeout_ms,
is_p2p, frames) [S32, S33]. File names: ``nccl_trace_rank_<rank>`` (TORCH_NCCL_DEBUG_INFO_TEMP_FILE's default
prefix). Nothing else: the unpickled dict holds PyTorch's keys only. The strings the entries refer to (memo
positions, one byte each) are put in the pickle's memo before the top dict, each pushed, memoized (BINPUT) and popped
(POP), so they leave no object behind; the first of them (:data:`FIXED_STRINGS`, ending with :data:`LAYOUT_TAG`) are
what tells the reader a file is in this layout (:data:`FIXED_HEAD`).
"""
from __future__ import annotations

import struct

import numpy as np

from sim.core.params import MAX_GPUS

DUMP_PREFIX = "nccl_trace_rank_"      # PyTorch's TORCH_NCCL_DEBUG_INFO_TEMP_FILE default, /tmp/nccl_trace_rank_ [S32]
PLACEMENT_FILE = "twin_placement.json"      # rank -> GPU id, written beside our dumps
# ... or beside their folder, named after it (``<folder>.placement.json``): where a download puts it, so that the
# folder holds nothing PyTorch does not write (sim.debug.archive)
PLACEMENT_SIDECAR = ".placement.json"
FR_VERSION = "2.10"                   # FlightRecorder's version_val in PyTorch 2.13 [S33]
NCCL_VERSION = "2.27.5"               # comm_lib_version written in the dumps (the NCCL PyTorch 2.13 ships)
THREAD_NAME = "pt_nccl_watchdg"
DTYPES = {2: "BFloat16", 4: "Float"}
STATES = ("scheduled", "started", "completed")
ENTRY_KEYS = ("record_id", "pg_id", "process_group", "thread_name", "thread_id", "collective_seq_id", "p2p_seq_id",
              "op_id", "profiling_name", "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
              "output_dtypes", "state", "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
              "timeout_ms", "is_p2p", "frames")
LAYOUT_TAG = "cluster-twin fr layout 1"
# What the analyzer reads at most (docs/debugging.md, "Reading untrusted dumps"): a dump larger than this is refused
# before a byte is read (our largest, 100,000 entries of 145 bytes, is about 15 MB; PyTorch's default 2,000-entry
# ring with stack frames a few MB), and a rank number (file name, pg_config members) at or above MAX_RANK is
# refused (the analysis sizes per-rank arrays by the highest rank): the engine's MAX_GPUS, 2^20 ranks.
MAX_DUMP_BYTES = 256 * 2**20
MAX_RANK = MAX_GPUS


class DumpError(ValueError):
    """A dump file that cannot be read (truncated, corrupt, not a flight recorder dump): names the file."""


# ------------------------------------------------------------------------------------------------ opcodes
def pickle_str(s: str) -> bytes:
    """BINUNICODE of ``s``."""
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def pickle_int(v: int) -> bytes:
    """BININT of ``v``."""
    return b"J" + struct.pack("<i", int(v))


def memo_get(idx: int) -> bytes:
    """BINGET of memo position ``idx`` (one byte)."""
    return b"h" + bytes([idx])


def memo_put(idx: int) -> bytes:
    """BINPUT at memo position ``idx`` (one byte)."""
    return b"q" + bytes([idx])


LONG8 = b"\x8a\x08"                                                    # LONG1 opcode with 8 bytes: an ns timestamp
# None in the 10 bytes of a LONG1 timestamp: None, then a pushed-and-popped filler int (MARK-free): "NJ" + 8 bytes
NONE10 = b"N" + b"J\x00\x00\x00\x00" + b"0" + b"K\x00" + b"0"
NONE_FILL = int(np.frombuffer(NONE10[2:], "<i8")[0])                   # those 8 bytes read as the timestamp field
FIXED_STRINGS = list(ENTRY_KEYS) + list(STATES) + list(DTYPES.values()) + [THREAD_NAME, "1", FR_VERSION,
                                                                         NCCL_VERSION, LAYOUT_TAG]
POP = b"0"                                                             # drops what a memo definition pushed
ENTRIES_MARK = pickle_str("entries") + b"]("
# How every fixed-layout dump starts: PROTO 2 and the fixed strings put in the memo, each popped (no object, no key:
# the reader parses them once, sim.debug.safeload, and knows the layout by them); the top dict (TOP) follows the
# rank's own memo strings.
FIXED_HEAD = b"\x80\x02" + b"".join(pickle_str(s) + memo_put(i) + POP for i, s in enumerate(FIXED_STRINGS))
TOP = b"}("                                                            # EMPTY_DICT, MARK: the dump_dict's items
TAIL = b"eu."                                                          # APPENDS, SETITEMS, STOP


def record_dtype(keys_idx: dict) -> tuple[np.dtype, dict]:
    """The numpy record of one entry (fixed layout) and the constant bytes of every field that does not vary. A
    timestamp that may be None is two fields: ``<key>_op`` (LONG1 with 8 bytes, or None and a filler) and ``<key>``
    (the 8 bytes)."""
    parts = []                                                            # (name, dtype, constant or None)

    def const(b):
        parts.append((f"c{len(parts)}", f"S{len(b)}", b))

    def var(name, dt):
        parts.append((name, dt, None))

    const(b"}(")
    for k in ENTRY_KEYS:
        const(memo_get(keys_idx[k]))
        if k in ("record_id", "pg_id", "collective_seq_id", "p2p_seq_id", "op_id", "timeout_ms"):
            const(b"J"); var(k, "<i4")
        elif k in ("process_group", "profiling_name", "state", "thread_name", "thread_id", "frames"):
            const(b"h"); var(k, "u1")
        elif k == "time_created_ns":
            const(LONG8); var(k, "<i8")
        elif k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            var(k + "_op", "S2"); var(k, "<i8")
        elif k in ("input_sizes", "output_sizes"):
            const(b"]]J"); var(k, "<i4"); const(b"aa")
        elif k in ("input_dtypes", "output_dtypes"):
            const(b"]h"); var(k, "u1"); const(b"a")
        elif k in ("retired", "is_p2p"):
            var(k, "u1")
    const(b"u")
    dt = np.dtype([(n, t) for n, t, _ in parts])
    return dt, {n: c for n, _, c in parts if c is not None}
