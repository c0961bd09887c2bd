"""The reader of flight recorder dumps: one rank's file as columns of its entries, ours or PyTorch's.

Why a module: reading is its own capability (docs/debugging.md, "How the dumps are written and read fast"), apart
from the analysis that matches the columns across ranks (:mod:`sim.debug.analyze`). Our fixed-layout files
(:mod:`sim.debug.dumpformat`) are checked and viewed as numpy records, their header parsed without pickle; any
other dump (PyTorch's own) is unpickled by a reader that can build data only (:mod:`sim.debug.safeload`), streamed.
A dump over MAX_DUMP_BYTES or naming a rank at or above MAX_RANK is refused naming the file. Strings met on the way
(process groups, op names) go to global tables (:class:`Tables`).
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from sim.debug.dumpformat import (ENTRIES_MARK, ENTRY_KEYS, FIXED_HEAD, FR_VERSION, LONG8, MAX_DUMP_BYTES, MAX_RANK,
                                  NONE_FILL, TAIL, DumpError, record_dtype)
from sim.debug.safeload import HeaderError, RefusedPickle, load_dump_pickle, parse_header

_NAME = re.compile(r"^(.*?)(\d+)$")
STATE_CODE = {"scheduled": 1, "started": 2, "completed": 3}


class Tables:
    """Global string tables: process groups (name -> index, desc, members) and op names."""

    def __init__(self):
        self.pg_index, self.pg_name, self.pg_desc, self.pg_members = {}, [], [], []
        self.ops, self.op_index = [], {}
        self.version, self.backend = "", ""
        self.unknown_members = 0                      # groups whose members no pg_config gave (yet)

    def pg(self, name, desc, members=None):
        """The index of group ``name``; ``members`` (an int64 array, :func:`members_of`) recorded if first given."""
        i = self.pg_index.get(name)
        if i is None:
            i = self.pg_index[name] = len(self.pg_name)
            self.pg_name.append(name)
            self.pg_desc.append(desc)
            self.pg_members.append(None)
            self.unknown_members += 1
        if members is not None and members.size and self.pg_members[i] is None:
            self.pg_members[i] = members
            self.unknown_members -= 1
        return i

    def op(self, name):
        i = self.op_index.get(name)
        if i is None:
            i = self.op_index[name] = len(self.ops)
            self.ops.append(name)
        return i


_LAYOUTS = {}                         # memo positions of the entry keys -> _Layout


class _Layout:
    """The fixed entry layout of our dumps for one set of memo positions: the record dtype, and for checking a
    file's records at once its constant bytes and their mask tiled over ``n`` records (8-byte words), the byte
    columns of memo references, booleans and timestamp opcodes."""

    def __init__(self, kidx: dict):
        self.dt, consts = record_dtype(kidx)
        const, mask = np.zeros(1, self.dt), np.zeros(1, self.dt)
        for k, v in consts.items():
            const[k] = v
            mask[k] = b"\xff" * len(v)
        self.const, self.mask = const.view(np.uint8), mask.view(np.uint8)
        self.refs = ("process_group", "profiling_name", "state", "input_dtypes", "output_dtypes", "thread_name",
                     "thread_id", "frames")
        self.bools = ("retired", "is_p2p")
        self.stamps = ("time_discovered_started_ns", "time_discovered_completed_ns")
        self.tiled = {}

    def words(self, n: int):
        got = self.tiled.get(n)
        if got is None:
            if len(self.tiled) > 8:
                self.tiled.clear()
            size = n * self.dt.itemsize
            pad = -size % 8
            got = self.tiled[n] = tuple(np.r_[np.tile(a, n), np.zeros(pad, np.uint8)].view(np.uint64)
                                        for a in (self.const, self.mask))
        return got

    def check(self, data, start: int, n: int, memo_size: int, bufs: "Buffers"):
        """The records as numpy (in ``bufs``), or None when one of them is not what pickle would read the same
        way."""
        const, mask = self.words(n)
        words = bufs.get("words", const.size, np.uint64)       # aligned 8-byte words of the records (the pad
        words[-1] = 0                                          # past them: masked)
        raw = words.view(np.uint8)[:n * self.dt.itemsize]
        raw[:] = np.frombuffer(data, np.uint8, raw.size, start)
        x = bufs.get("scratch", const.size, np.uint64)
        np.bitwise_xor(words, const, out=x)
        np.bitwise_and(x, mask, out=x)
        if x.any():
            return None                                        # a constant byte is not in place
        rec = raw.view(self.dt)
        if n and max(int(rec[k].max()) for k in self.refs) >= memo_size:
            return None                                        # a memo reference to nothing
        for k in self.bools:                                   # NEWTRUE / NEWFALSE
            if ((rec[k] | 1) != 0x89).any():
                return None
        for k in self.stamps:                                  # LONG1 of 8 bytes, or None and the filler
            op = rec[k + "_op"].view(np.uint16)
            long = op == 0x088A
            if not long.all():
                none = ~long
                if ((op[none] != 0x4A4E) | (rec[k][none] != NONE_FILL)).any():
                    return None
        return rec


class Buffers:
    """Buffers reused from file to file (a fresh large buffer costs a page fault per 4 kB): the file's bytes, the
    records' aligned words, the check's scratch. What a read returns may point into them until the next read."""

    def __init__(self):
        self.arrays = {}

    def get(self, name: str, size: int, dtype) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None or a.size < size:
            a = self.arrays[name] = np.empty(max(size, 2 * (a.size if a is not None else 0)), dtype)
        return a[:size]


def _fast(data, bufs: Buffers):
    """Our fixed-layout dumps: the header parsed alone (:func:`sim.debug.safeload.parse_header`, no pickle), the
    entries as numpy records, after checking that every record is what :mod:`pickle` would read the same way
    (constant bytes in place, timestamps LONG1 or None, booleans, memo references in range). None if the file is not
    that layout (it is then read as PyTorch's)."""
    head = bytes(data[:1 << 16])
    if not head.startswith(FIXED_HEAD) or bytes(data[-3:]) != TAIL:
        return None
    start = head.find(ENTRIES_MARK)
    if start < 0:
        return None
    start += len(ENTRIES_MARK)
    try:
        top, memo = parse_header(head[:start] + TAIL, FIXED_HEAD)  # our opcodes only: never pickle (safeload)
        kidx = tuple(memo.index(k) for k in ENTRY_KEYS)
    except (HeaderError, KeyError, TypeError, ValueError):
        return None
    lay = _LAYOUTS.get(kidx)
    if lay is None:
        lay = _LAYOUTS[kidx] = _Layout(dict(zip(ENTRY_KEYS, kidx)))
    size = len(data) - 3 - start
    if size % lay.dt.itemsize:
        return None
    rec = lay.check(data, start, size // lay.dt.itemsize, len(memo), bufs)
    return None if rec is None else (top, memo, rec)


def read_dump(path: str, rank: int, tab: Tables, bufs: Buffers | None = None,
              max_bytes: int = MAX_DUMP_BYTES) -> dict:
    """One rank's entries as columns (record_id, pg, seq, p2p, op, numel_in/out, dtype, state, created, done),
    and its timeout; DumpError naming the file if it cannot be read, is over ``max_bytes`` or holds anything but
    data (:mod:`sim.debug.safeload`)."""
    bufs = bufs or Buffers()
    too_big = DumpError(f"{path}: over {max_bytes:,} bytes, the most a dump may have (MAX_DUMP_BYTES)")
    try:
        with open(path, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise DumpError(f"{path}: {size:,} bytes, over the {max_bytes:,} a dump may have (MAX_DUMP_BYTES)")
            if f.read(len(FIXED_HEAD)) == FIXED_HEAD:           # ours: read whole (bounded), viewed as records
                f.seek(0)
                buf = bufs.get("file", size + 1, np.uint8)
                n = f.readinto(buf)
                if n > size:
                    raise DumpError(f"{path}: grew while it was read")
                fast = _fast(memoryview(buf)[:n], bufs)
                if fast is not None:
                    out = _fast_columns(path, *fast, tab)
                    if out is not None:
                        return out
            f.seek(0)
            top = load_dump_pickle(f, max_bytes, too_big)       # PyTorch's, streamed; data only
    except OSError as e:
        raise DumpError(f"{path}: cannot be read ({e.strerror})") from None
    except RefusedPickle as e:
        raise DumpError(f"{path}: {e}") from None
    except DumpError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a corrupt pickle raises, the file is named
        what = "truncated" if isinstance(e, EOFError) or "truncated" in str(e) or "ran out" in str(e) else "corrupt"
        raise DumpError(f"{path}: {what}: not a readable flight recorder dump ({type(e).__name__}: "
                        f"{str(e)[:200]})") from None
    if not isinstance(top, dict) or "version" not in top:
        raise DumpError(f"{path}: not a flight recorder dump (no 'version' key)")
    _header(path, top, tab)
    entries = top.get("entries", [])
    try:
        cols = {k: [] for k in ("record_id", "pg", "seq", "p2p", "op", "numel_in", "numel_out", "dtype", "state",
                                "created", "done")}
        timeout = 0
        for e in entries:
            name, desc = e["process_group"]
            cols["record_id"].append(int(e["record_id"]))
            cols["pg"].append(tab.pg(name, desc))
            cols["seq"].append(int(e["p2p_seq_id"] if e.get("is_p2p") else e["collective_seq_id"]))
            cols["p2p"].append(bool(e.get("is_p2p", False)))
            prof = str(e["profiling_name"])
            tab.backend = tab.backend or prof.split(":")[0]
            cols["op"].append(tab.op(prof.split(" ")[0]))
            cols["numel_in"].append(sum(int(np.prod(s)) for s in e.get("input_sizes") or []))
            cols["numel_out"].append(sum(int(np.prod(s)) for s in e.get("output_sizes") or []))
            cols["dtype"].append(hash(tuple(e.get("input_dtypes") or ())) & 0xFFFF)
            st = STATE_CODE.get(e.get("state"), 1)
            if e.get("retired") and st < 3 and e.get("time_discovered_completed_ns") is None and \
                    e.get("state") == "scheduled":
                st = 3                                       # gloo: no events; a retired work item has completed
            cols["state"].append(st)
            cols["created"].append(int(e.get("time_created_ns") or -1))
            cols["done"].append(int(e.get("time_discovered_completed_ns") or -1))
            timeout = int(e.get("timeout_ms") or timeout)
        out = {k: np.asarray(v, np.int64) for k, v in cols.items()}
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError) as e:
        raise DumpError(f"{path}: an entry lacks a field the analyzer needs or holds a number out of range "
                        f"({type(e).__name__}: {str(e)[:200]})") from None
    out["p2p"] = out["p2p"].astype(bool)
    out["state"] = out["state"].astype(np.int8)
    out["timeout_ms"] = timeout
    return out


def _fast_columns(path, top, memo, rec, tab: Tables) -> dict | None:
    """The columns of a fixed-layout dump, through lookup tables of its memo; None if a memo reference points at
    the wrong kind of object (then pickle reads it). ``seq`` is the collective sequence id (p2p entries are not
    matched); ``pgs`` the groups the memo names."""
    _header(path, top, tab)
    tab.backend = tab.backend or "nccl"                          # our dumps are NCCL's
    return _record_columns(memo, rec, tab)


def own_columns(groups, memo, rec, tab: Tables, shared: dict | None = None) -> dict:
    """The columns of a dump the twin made in memory (:func:`sim.debug.writer.rank_records`): its records as
    numpy, its memo and groups ((name, desc, members)) as the writer holds them, so nothing is parsed or checked
    (no file, nobody else's bytes: :mod:`sim.debug.safeload`'s rules are for files); what :func:`read_dump` gives
    for the file the writer would write. ``shared``: one dict per stage layout (:func:`_record_columns`)."""
    tab.version = tab.version or FR_VERSION
    for name, desc, members in groups:
        tab.pg(name, desc, np.asarray(members, np.int64))
    tab.backend = tab.backend or "nccl"
    return _record_columns(memo, rec, tab, shared)


def _record_columns(memo, rec, tab: Tables, shared: dict | None = None) -> dict | None:
    """The columns of records referring to ``memo``. ``shared``: lookup tables of the memo's strings kept from
    one dump to the next of the same layout (the twin's own dumps of one stage: the same strings at the same
    positions, only the groups' tuples differ), filled at the first."""
    lut_pg = np.full(len(memo), -1, np.int64)
    if shared and shared.get("size") == len(memo):
        lut_op, lut_dt, lut_state = shared["op"], shared["dt"], shared["state"]
        for i in shared["tuples"]:
            obj = memo[i]
            lut_pg[i] = tab.pg(obj[0], obj[1])
    else:
        lut_op = np.full(len(memo), -1, np.int64)
        lut_dt = np.zeros(len(memo), np.int64)
        lut_state = np.zeros(len(memo), np.int8)
        tuples = []
        for i, obj in enumerate(memo):
            if isinstance(obj, tuple):
                lut_pg[i] = tab.pg(obj[0], obj[1])
                tuples.append(i)
            elif isinstance(obj, str):
                if ":" in obj:
                    lut_op[i] = tab.op(obj.split(" ")[0])
                lut_dt[i] = hash((obj,)) & 0xFFFF                 # as the pickle path: hash of the dtypes tuple
                lut_state[i] = STATE_CODE.get(obj, 0)
        if shared is not None:
            shared.update(size=len(memo), op=lut_op, dt=lut_dt, state=lut_state, tuples=tuples)
    pg, op, state = lut_pg[rec["process_group"]], lut_op[rec["profiling_name"]], lut_state[rec["state"]]
    if rec.size and (pg.min() < 0 or op.min() < 0 or state.min() < 1):
        return None
    done = rec["time_discovered_completed_ns"].astype(np.int64)
    done[rec["time_discovered_completed_ns_op"].view(np.uint16) != np.frombuffer(LONG8, np.uint16)[0]] = -1
    return {"record_id": rec["record_id"], "pg": pg, "seq": rec["collective_seq_id"], "p2p": rec["is_p2p"] == 0x88,
            "op": op, "numel_in": rec["input_sizes"], "numel_out": rec["output_sizes"],
            "dtype": lut_dt[rec["input_dtypes"]], "state": state, "created": rec["time_created_ns"], "done": done,
            "timeout_ms": int(rec["timeout_ms"][0]) if rec.size else 0,
            "pgs": sorted(set(lut_pg[lut_pg >= 0].tolist()))}


def _header(path, top, tab: Tables):
    tab.version = tab.version or str(top.get("version", ""))
    cfg = top.get("pg_config") or {}
    if not isinstance(cfg, dict):
        raise DumpError(f"{path}: pg_config is not a mapping")
    for name, info in cfg.items():
        if isinstance(info, dict) and info.get("name", name) != "":
            tab.pg(str(info.get("name", name)), str(info.get("desc", "")), members_of(path, info.get("ranks")))


def members_of(path, ranks) -> np.ndarray | None:
    """A group's members from pg_config's ``ranks`` (JSON text, or a list), each a rank below MAX_RANK; None when
    unreadable; DumpError naming the file for a rank out of range."""
    if ranks is None:
        return None
    try:
        ranks = json.loads(ranks) if isinstance(ranks, str) else list(ranks)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(ranks, list) or not all(type(r) is int for r in ranks):
        return None
    if ranks and not (0 <= min(ranks) and max(ranks) < MAX_RANK):
        raise DumpError(f"{path}: pg_config names rank {max(ranks) if max(ranks) >= MAX_RANK else min(ranks)}, out "
                        f"of range (0..{MAX_RANK - 1:,}, MAX_RANK)")
    return np.asarray(ranks, np.int64)


def dump_files(folder: str) -> list[tuple[int, str]]:
    """(rank, path) of the dumps in ``folder`` (the most common ``<prefix><rank>`` prefix), by rank; DumpError
    naming a file whose rank is at or above MAX_RANK."""
    if not os.path.isdir(folder):
        raise DumpError(f"{folder}: is not a folder")
    found = {}
    width = len(str(MAX_RANK))
    for f in sorted(os.listdir(folder)):
        m = _NAME.match(f)
        p = os.path.join(folder, f)
        if m and os.path.isfile(p):
            digits = m.group(2)
            rank = int(digits) if len(digits) <= width else MAX_RANK
            if rank >= MAX_RANK:
                raise DumpError(f"{p}: rank {digits[:24]}{'...' if len(digits) > 24 else ''} is out of range "
                                f"(0..{MAX_RANK - 1:,}, MAX_RANK)")
            found.setdefault(m.group(1), []).append((rank, p))
    if not found:
        raise DumpError(f"{folder}: no dump files (named <prefix><rank>, e.g. nccl_trace_rank_0)")
    prefix = max(found, key=lambda k: len(found[k]))
    return sorted(found[prefix])
