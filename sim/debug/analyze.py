"""Flight recorder analysis: reads a folder of per-rank dumps (ours or PyTorch's) and names the culprit
(docs/debugging.md, "The analyzer"): the first collective where ranks disagree or stall, the ranks missing from it,
their hosts and the links on their paths; a straggler ranking of process groups, ranks and hosts.

Rules. Entries of one process group with one ``collective_seq_id`` are one collective. A collective *disagrees*
(desync) when its members recorded different ops, sizes or dtypes: the ranks off the majority are blamed. It is
*stalled* when a member entered it and it never completed: the members with no entry for it are missing; a
missing rank that is not itself waiting in another collective (its last entry completed), or that left no dump (its
process is gone), is the culprit; when every missing rank waits elsewhere the earliest stall is reported. Without
a stall or disagreement, the straggler ranking says who is slow: per collective, a rank is late by its arrival
(``time_created_ns``) minus the first member's; a group's peers wait the sum of those; a group's excess is its
time from the last arrival to completion above the median of the groups of its kind (a slow link).

Reading streams rank by rank (docs/debugging.md, "How the dumps are written and read fast"): our fixed-layout
files are checked and viewed as numpy records, others unpickled; each rank's collectives are added to per group,
per sequence id cells (:class:`_GroupCells`) and only compact per-entry arrays are kept (:class:`_Kept`), never
every entry of every rank as objects.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import time

import numpy as np

from sim.core.progress import silent

MAX_HEATMAP_ROWS = 1024
HEATMAP_COLUMNS = 64
HEATMAP_AFTER_STOP = 16       # columns the heatmap shows past the earliest stop (what the ranks ahead went on to do)
HEATMAP_KEPT = 512            # last entries of each rank the streamed read keeps for the heatmap (16k ranks: 75 MB)
TOP = 10
MAX_MISMATCHES = 20
PLACEMENT_FILE = "twin_placement.json"      # rank -> GPU id, written beside our dumps
_NAME = re.compile(r"^(.*?)(\d+)$")
STATE_CODE = {"scheduled": 1, "started": 2, "completed": 3}


class DumpError(ValueError):
    """A dump file that cannot be read (truncated, corrupt, not a flight recorder dump): names the file."""


# ------------------------------------------------------------------------------------------------ reading
class _Tables:
    """Global string tables: process groups (name -> index, desc, members) and op names."""

    def __init__(self):
        self.pg_index, self.pg_name, self.pg_desc, self.pg_members = {}, [], [], []
        self.ops, self.op_index = [], {}
        self.version, self.backend = "", ""
        self.unknown_members = 0                      # groups whose members no pg_config gave (yet)

    def pg(self, name, desc, ranks_text=None):
        i = self.pg_index.get(name)
        if i is None:
            i = self.pg_index[name] = len(self.pg_name)
            self.pg_name.append(name)
            self.pg_desc.append(desc)
            self.pg_members.append(None)
            self.unknown_members += 1
        if ranks_text is not None and self.pg_members[i] is None:
            try:
                ranks = json.loads(ranks_text) if isinstance(ranks_text, str) else list(ranks_text)
            except ValueError:
                ranks = []
            if ranks:
                self.pg_members[i] = np.asarray(ranks, np.int64)
                self.unknown_members -= 1
        return i

    def op(self, name):
        i = self.op_index.get(name)
        if i is None:
            i = self.op_index[name] = len(self.ops)
            self.ops.append(name)
        return i


_LAYOUTS = {}                         # memo positions of the entry keys -> _Layout
_ENTRIES_MARK = b"X\x07\x00\x00\x00entries]("
_HEAD = b"\x80\x02}(X\x09\x00\x00\x00twin_memo"


class _Layout:
    """The fixed entry layout of our dumps for one set of memo positions: the record dtype, and for checking a
    file's records at once its constant bytes and their mask tiled over ``n`` records (8-byte words), the byte
    columns of memo references, booleans and timestamp opcodes."""

    def __init__(self, kidx: dict):
        from sim.debug.recorder import record_dtype
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

    def check(self, data, start: int, n: int, memo_size: int, bufs: "_Buffers"):
        """The records as numpy (in ``bufs``), or None when one of them is not what pickle would read the same
        way."""
        from sim.debug.recorder import NONE_FILL
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


class _Buffers:
    """Buffers reused from file to file (a fresh large buffer costs a page fault per 4 kB): the file's bytes, the
    records' aligned words, the check's scratch. What a read returns may point into them until the next read."""

    def __init__(self):
        self.arrays = {}

    def get(self, name: str, size: int, dtype) -> np.ndarray:
        a = self.arrays.get(name)
        if a is None or a.size < size:
            a = self.arrays[name] = np.empty(max(size, 2 * (a.size if a is not None else 0)), dtype)
        return a[:size]


def _fast(data, bufs: _Buffers):
    """Our fixed-layout dumps: the header unpickled alone, the entries as numpy records, after checking that every
    record is what :mod:`pickle` would read the same way (constant bytes in place, timestamps LONG1 or None, booleans,
    memo references in range). None if the file is not that layout (it is then read with pickle)."""
    from sim.debug.recorder import ENTRY_KEYS
    head = bytes(data[:1 << 16])
    if not head.startswith(_HEAD) or bytes(data[-3:]) != b"eu.":
        return None
    start = head.find(_ENTRIES_MARK)
    if start < 0:
        return None
    start += len(_ENTRIES_MARK)
    try:
        top = pickle.loads(head[:start] + b"eu.")
        memo = top["twin_memo"]
        kidx = tuple(memo.index(k) for k in ENTRY_KEYS)
    except Exception:
        return None
    lay = _LAYOUTS.get(kidx)
    if lay is None:
        lay = _LAYOUTS[kidx] = _Layout(dict(zip(ENTRY_KEYS, kidx)))
    size = len(data) - 3 - start
    if size % lay.dt.itemsize:
        return None
    rec = lay.check(data, start, size // lay.dt.itemsize, len(memo), bufs)
    return None if rec is None else (top, memo, rec)


def _read(path: str, rank: int, tab: _Tables, bufs: _Buffers | None = None) -> dict:
    """One rank's entries as columns (record_id, pg, seq, p2p, op, numel_in/out, dtype, state, created, done),
    and its timeout; DumpError naming the file if it cannot be read."""
    bufs = bufs or _Buffers()
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf = bufs.get("file", size + 1, np.uint8)
            n = f.readinto(buf)
            data = memoryview(buf)[:n] if n <= size else bytes(buf) + f.read()
    except OSError as e:
        raise DumpError(f"{path}: cannot be read ({e.strerror})") from None
    fast = _fast(data, bufs)
    if fast is not None:
        out = _fast_columns(path, *fast, tab)
        if out is not None:
            return out
    try:
        top = pickle.loads(data)
    except Exception as e:
        what = "truncated" if isinstance(e, EOFError) or "truncated" in str(e) or "ran out" in str(e) else "corrupt"
        raise DumpError(f"{path}: {what}: not a readable flight recorder dump ({type(e).__name__}: {e})") from None
    del data
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
    except (KeyError, TypeError, ValueError) as e:
        raise DumpError(f"{path}: an entry lacks a field the analyzer needs ({type(e).__name__}: {e})") from None
    out = {k: np.asarray(v, np.int64) for k, v in cols.items()}
    out["p2p"] = out["p2p"].astype(bool)
    out["state"] = out["state"].astype(np.int8)
    out["timeout_ms"] = timeout
    return out


def _fast_columns(path, top, memo, rec, tab: _Tables) -> dict | None:
    """The columns of a fixed-layout dump, through lookup tables of its memo; None if a memo reference points at
    the wrong kind of object (then pickle reads it). ``seq`` is the collective sequence id (p2p entries are not
    matched); ``pgs`` the groups the memo names."""
    from sim.debug.recorder import LONG8
    _header(path, top, tab)
    lut_pg = np.full(len(memo), -1, np.int64)
    lut_op = np.full(len(memo), -1, np.int64)
    lut_dt = np.zeros(len(memo), np.int64)
    lut_state = np.zeros(len(memo), np.int8)
    for i, obj in enumerate(memo):
        if isinstance(obj, tuple):
            lut_pg[i] = tab.pg(obj[0], obj[1])
        elif isinstance(obj, str):
            if ":" in obj:
                lut_op[i] = tab.op(obj.split(" ")[0])
            lut_dt[i] = hash((obj,)) & 0xFFFF                 # as the pickle path: hash of the dtypes tuple
            lut_state[i] = STATE_CODE.get(obj, 0)
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


def _header(path, top, tab: _Tables):
    tab.version = tab.version or str(top.get("version", ""))
    cfg = top.get("pg_config") or {}
    if not isinstance(cfg, dict):
        raise DumpError(f"{path}: pg_config is not a mapping")
    for name, info in cfg.items():
        if isinstance(info, dict) and info.get("name", name) != "":
            tab.pg(str(info.get("name", name)), str(info.get("desc", "")), info.get("ranks"))
    if not tab.backend:
        tab.backend = "nccl" if "twin_memo" in top else ""


def _dump_files(folder: str) -> list[tuple[int, str]]:
    if not os.path.isdir(folder):
        raise DumpError(f"{folder}: is not a folder")
    found = {}
    for f in sorted(os.listdir(folder)):
        m = _NAME.match(f)
        p = os.path.join(folder, f)
        if m and os.path.isfile(p):
            found.setdefault(m.group(1), []).append((int(m.group(2)), p))
    if not found:
        raise DumpError(f"{folder}: no dump files (named <prefix><rank>, e.g. nccl_trace_rank_0)")
    prefix = max(found, key=lambda k: len(found[k]))
    return sorted(found[prefix])


I64MAX, I64MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
MAX_SEQ_SPAN = 1 << 24                # collective sequence ids one group's dumps may span (a ring holds the last few)


class _GroupCells:
    """One process group's collectives, one cell per sequence id (dense: a ring buffer's ids are consecutive),
    accumulated rank by rank: members present, completed, signature agreement (``ref``: the signature of the first
    entry read, with its op and input size), first arrival; and over completed entries (for the straggler ranking)
    their count, first and last arrival, last completion and the sum of arrivals (ns from the first arrival read)."""

    FIELDS = (("n", np.int32, 0), ("n_done", np.int32, 0), ("ref", np.int64, 0), ("ref_op", np.int32, 0),
              ("ref_numel", np.int64, 0), ("desync", np.bool_, False), ("first", np.int64, I64MAX),
              ("ok_n", np.int32, 0), ("ok_first", np.int64, I64MAX), ("ok_last", np.int64, I64MIN),
              ("ok_end", np.int64, I64MIN), ("ok_sum", np.int64, 0))

    def __init__(self, lo: int, hi: int):
        self.anchor = self.base = self.seen_lo = lo      # anchor: fixed origin of the kept relative ids
        self.seen_hi = hi
        self.a = {k: np.full(hi - lo + 1, v, dt) for k, dt, v in self.FIELDS}

    def cover(self, lo: int, hi: int, path: str) -> None:
        size = self.a["n"].size
        self.seen_lo, self.seen_hi = min(self.seen_lo, lo), max(self.seen_hi, hi)
        if self.seen_hi - self.seen_lo >= MAX_SEQ_SPAN:
            raise DumpError(f"{path}: collective sequence ids {self.seen_lo:,}..{self.seen_hi:,} of one group are "
                            f"too far apart for a flight recorder ring (corrupt?)")
        if lo >= self.base and hi < self.base + size:
            return
        new_lo = min(lo, self.base - size) if lo < self.base else self.base
        new_hi = max(hi, self.base + 2 * size - 1) if hi >= self.base + size else self.base + size - 1
        shift = self.base - new_lo
        for k, dt, v in self.FIELDS:
            arr = np.full(new_hi - new_lo + 1, v, dt)
            arr[shift:shift + size] = self.a[k]
            self.a[k] = arr
        self.base = new_lo

    def add(self, seq, sig, op, numel, state, created, done, t_base) -> np.ndarray:
        """One rank's entries of this group (file order); returns which completed with a start time."""
        a = self.a
        ok = (state == 3) & (created > 0)
        if seq.size > 1 and not (np.diff(seq) == 1).all():
            return self._add_scattered(seq - self.base, sig, op, numel, state, created, done, ok, t_base)
        i0 = int(seq[0]) - self.base
        sl = slice(i0, i0 + seq.size)                 # consecutive ids: slices
        new = a["n"][sl] == 0
        if new.any():
            np.copyto(a["ref"][sl], sig, where=new)
            np.copyto(a["ref_op"][sl], op, where=new, casting="unsafe")
            np.copyto(a["ref_numel"][sl], numel, where=new)
        a["desync"][sl] |= a["ref"][sl] != sig
        a["n"][sl] += 1
        a["n_done"][sl] += state == 3
        np.minimum(a["first"][sl], np.where(created > 0, created, I64MAX), out=a["first"][sl])
        a["ok_n"][sl] += ok
        all_ok = ok.all()
        np.minimum(a["ok_first"][sl], created if all_ok else np.where(ok, created, I64MAX), out=a["ok_first"][sl])
        np.maximum(a["ok_last"][sl], created if all_ok else np.where(ok, created, I64MIN), out=a["ok_last"][sl])
        np.maximum(a["ok_end"][sl], done if all_ok else np.where(ok, done, I64MIN), out=a["ok_end"][sl])
        a["ok_sum"][sl] += (created - t_base) if all_ok else np.where(ok, created - t_base, 0)
        return ok

    def _add_scattered(self, i, sig, op, numel, state, created, done, ok, t_base):
        a = self.a
        new = np.flatnonzero(a["n"][i] == 0)[::-1]           # reversed: the first entry read sets the reference
        a["ref"][i[new]], a["ref_op"][i[new]], a["ref_numel"][i[new]] = sig[new], op[new], numel[new]
        a["desync"][i[a["ref"][i] != sig]] = True
        np.add.at(a["n"], i, 1)
        np.add.at(a["n_done"], i[state == 3], 1)
        c = created > 0
        np.minimum.at(a["first"], i[c], created[c])
        io = i[ok]
        np.add.at(a["ok_n"], io, 1)
        np.minimum.at(a["ok_first"], io, created[ok])
        np.maximum.at(a["ok_last"], io, created[ok])
        np.maximum.at(a["ok_end"], io, done[ok])
        np.add.at(a["ok_sum"], io, created[ok] - t_base)
        return ok


class _Kept:
    """What the analysis keeps of the dumps, rank by rank (never every entry of every rank at once): per group
    and sequence id the collective's counts and times (:class:`_GroupCells`); per rank and group the sequence ids,
    signatures (a hash of op, sizes, dtype) and completion of its entries in compact arrays (to list a stalled
    collective's members and a rank's lateness); per rank its last record ids, whether it waits and its last
    entries for the heatmap. PP send / recv entries are not matched across ranks."""

    def __init__(self, tab: _Tables):
        self.tab = tab
        self.groups: dict[int, _GroupCells] = {}
        self.chunks = []                              # (rank, group, seq - anchor (int32), signature, completed)
        self.ranks, self.last_started, self.last_done, self.waiting = [], [], [], []
        self.ok_n, self.ok_sum = [], []               # per rank: completed entries and the sum of their arrivals
        self.rid_min, self.timeout_ms = 0, 0
        self.t_base = None                            # ns: the first arrival read (keeps sums small)
        self.ok_lo, self.ok_hi, self.all_done = I64MAX, I64MIN, True
        self.tail = ([], [], [])                      # rank, record id, state of each rank's last entries
        self.pg_seen = {}                             # pg -> ranks with entries in it (when pg_config has none)

    def add(self, rank: int, c: dict, path: str) -> None:
        tab = self.tab
        rid, state = c["record_id"], c["state"]
        self.ranks.append(rank)
        self.timeout_ms = max(self.timeout_ms, c["timeout_ms"])
        if rid.size:
            top = int(rid.max())
            done = state == 3
            self.last_started.append(top)
            self.last_done.append(int(rid[done].max()) if done.any() else -1)
            self.waiting.append(not done.all())
            self.rid_min = min(self.rid_min, int(rid.min()))
            t = np.flatnonzero(rid >= top - (HEATMAP_KEPT - 1))
            self.tail[0].append(np.full(t.size, rank, np.int32))
            self.tail[1].append(rid[t].astype(np.int32))
            self.tail[2].append(state[t])
        else:
            self.last_started.append(-1)
            self.last_done.append(-1)
            self.waiting.append(False)
        if tab.unknown_members:
            for g in np.unique(c["pg"]).tolist():
                if tab.pg_members[g] is None:
                    self.pg_seen.setdefault(g, []).append(rank)
        n_ok, s_ok = 0, 0
        coll = ~c["p2p"]
        groups = c["pgs"] if "pgs" in c else np.unique(c["pg"]).tolist()
        for g in groups:
            e = np.flatnonzero(coll & (c["pg"] == g)) if len(groups) > 1 or not coll.all() else slice(None)
            s = c["seq"][e].astype(np.int64)
            if not s.size:
                continue
            created = c["created"][e].astype(np.int64)
            if self.t_base is None and (created > 0).any():
                self.t_base = int(created[created > 0][0])
            t_base = self.t_base or 0
            op, n_in, done = c["op"][e], c["numel_in"][e].astype(np.int64), c["done"][e]
            sig = ((op * 1_000_003 + n_in) * 1_000_033 + c["numel_out"][e]) * 65_537 + c["dtype"][e]
            lo, hi = int(s.min()), int(s.max())
            cells = self.groups.get(g)
            if cells is None:
                cells = self.groups[g] = _GroupCells(lo, hi)
            cells.cover(lo, hi, path)
            ok = cells.add(s, sig, op, n_in, c["state"][e], created, done, t_base)
            self.chunks.append((rank, g, (s - cells.anchor).astype(np.int32), sig, ok))
            if ok.all():
                cr, dn = created, done
            elif ok.any():
                cr, dn = created[ok], done[ok]
            else:
                continue
            n_ok += cr.size
            s_ok += int((cr - t_base).sum())
            self.ok_lo, self.ok_hi = min(self.ok_lo, int(cr.min())), max(self.ok_hi, int(cr.max()))
            self.all_done = self.all_done and bool((dn > 0).all())
        self.ok_n.append(n_ok)
        self.ok_sum.append(s_ok)


class _Cells:
    """Every group's collectives side by side (group order, then sequence id): the :class:`_GroupCells` fields as
    one array each, ``pg`` / ``seq`` of every cell, and the cell of each kept chunk's entries."""

    def __init__(self, kept: _Kept, n_pg: int):
        self.off, spans, parts = {}, [], {k: [] for k, _, _ in _GroupCells.FIELDS}
        pgs, seqs, at = [], [], 0
        for g in range(n_pg):
            c = kept.groups.get(g)
            if c is None:
                continue
            i0, i1 = c.seen_lo - c.base, c.seen_hi - c.base + 1
            for k in parts:
                parts[k].append(c.a[k][i0:i1])
            self.off[g] = at - (c.seen_lo - c.anchor)        # cell of a kept relative id r: off[g] + r
            pgs.append(np.full(i1 - i0, g, np.int64))
            seqs.append(np.arange(c.seen_lo, c.seen_hi + 1, dtype=np.int64))
            at += i1 - i0
        self.size = at
        for k, dt, _ in _GroupCells.FIELDS:
            setattr(self, k, np.concatenate(parts[k]) if parts[k] else np.zeros(0, dt))
        self.pg = np.concatenate(pgs) if pgs else np.zeros(0, np.int64)
        self.seq = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
        kept.groups = {}

    def of(self, chunk) -> np.ndarray:
        return self.off[chunk[1]] + chunk[2]


# ------------------------------------------------------------------------------------------------ analysis
def analyze(folder, cluster=None, progress=None) -> dict:
    """The analysis of the dumps in ``folder`` as a JSON-ready dict (schema: docs/debugging.md). ``cluster``: a
    :class:`sim.fabric.topology.Topology`, a preset name or a spec path, to name hosts and links (None: ranks only)."""
    t0 = time.perf_counter()
    say = progress or silent
    folder = str(folder)
    files = _dump_files(folder)
    tab = _Tables()
    kept = _Kept(tab)
    bufs = _Buffers()
    for i, (rank, path) in enumerate(files):
        kept.add(rank, _read(path, rank, tab, bufs), path)
        if i % 256 == 255:
            say(0.8 * (i + 1) / len(files), f"{i + 1:,} of {len(files):,} dumps read")
    say(0.8, f"{len(files):,} dumps read; matching collectives across ranks")
    dumped = np.asarray(kept.ranks, np.int64)
    # members of each group: pg_config's, else the ranks seen in it (gloo leaves pg_config empty)
    for g in range(len(tab.pg_name)):
        if tab.pg_members[g] is None:
            tab.pg_members[g] = dumped.copy() if tab.pg_desc[g] == "default_pg" else \
                np.unique(np.asarray(kept.pg_seen.get(g, []), np.int64))
    world = np.unique(np.concatenate([dumped] + [m for m in tab.pg_members if m is not None]))
    missing_dumps = np.setdiff1d(world, dumped)
    topo_info = _cluster(cluster, folder, world)
    cells = _Cells(kept, len(tab.pg_name))
    res = _match(cells, kept, tab, dumped, missing_dumps)
    culprit = res["culprit"]
    if culprit is not None and topo_info is not None:
        culprit["hosts"], culprit["links"] = _where(topo_info, culprit["ranks"], culprit["process_group"])
    strag = _stragglers(cells, kept, tab, topo_info)
    del cells
    verdict = culprit["kind"] if culprit else "clean"
    if culprit is None and strag["slow"]:
        verdict = "slow"
    if culprit is None:
        res["mismatches"] = []
    out = {"schema": 1, "folder": folder, "dumps": len(files), "ranks": int(world.size), "version": tab.version,
           "backend": tab.backend or "nccl", "missing_dumps": missing_dumps.tolist(), "verdict": verdict,
           "culprit": culprit, "mismatches": res["mismatches"],
           "stragglers": {k: strag[k] for k in ("process_groups", "ranks", "hosts")},
           "heatmap": _heatmap(kept, dumped, missing_dumps, topo_info),
           "seconds": round(time.perf_counter() - t0, 3)}
    say(1.0, f"verdict: {verdict}")
    return out


def _pg_doc(tab, g) -> dict:
    return {"name": tab.pg_name[g], "desc": tab.pg_desc[g], "size": int(tab.pg_members[g].size)}


def _match(cells: _Cells, kept: _Kept, tab, dumped, missing_dumps) -> dict:
    stalled = cells.n_done < cells.n
    # a rank is idle when it has no unfinished entry (its CPU never issued the next collective)
    idle = dumped[~np.asarray(kept.waiting, bool)] if dumped.size else dumped
    blameable = np.union1d(idle, missing_dumps)
    bad = np.flatnonzero(stalled | cells.desync)
    bad = bad[np.argsort(cells.first[bad], kind="stable")]
    # the entries of the bad collectives: rank and signature, grouped by collective (reading order within one)
    is_bad = np.zeros(cells.size, bool)
    is_bad[bad] = True
    c_of, r_of, s_of = [], [], []
    for ch in kept.chunks:
        cell = cells.of(ch)
        m = is_bad[cell]
        if m.any():
            c_of.append(cell[m])
            r_of.append(np.full(int(m.sum()), ch[0], np.int64))
            s_of.append(ch[3][m])
    c_of, r_of, s_of = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in (c_of, r_of, s_of))
    order = np.argsort(c_of, kind="stable")
    c_of, r_of, s_of = c_of[order], r_of[order], s_of[order]
    lo = np.searchsorted(c_of, bad, "left")
    hi = np.searchsorted(c_of, bad, "right")
    records = []
    for b, i, j in zip(bad.tolist(), lo.tolist(), hi.tolist()):
        g = int(cells.pg[b])
        present = r_of[i:j]
        if cells.desync[b]:
            s = s_of[i:j]
            vals, counts = np.unique(s, return_counts=True)
            blame = np.sort(present[s != vals[np.argmax(counts)]])
            kind = "desync"
        else:
            blame = np.setdiff1d(tab.pg_members[g], present)
            kind = "hang"
        records.append({"b": b, "g": g, "kind": kind, "blame": blame})
    culprit = None
    chosen = None
    desyncs = [r for r in records if r["kind"] == "desync"]
    if desyncs:
        chosen = desyncs[0]
        ranks = chosen["blame"]
    elif records:
        roots = [r for r in records if np.intersect1d(r["blame"], blameable).size]
        if roots:
            chosen = roots[0]
            ranks = np.unique(np.concatenate([np.intersect1d(r["blame"], blameable) for r in roots]))
        else:
            chosen = records[0]
            ranks = chosen["blame"]

    def op_of(r):
        return tab.ops[int(cells.ref_op[r["b"]])] if tab.ops else ""

    if chosen is not None:
        b, g = chosen["b"], chosen["g"]
        kind = chosen["kind"]
        if kind == "hang" and ranks.size and np.isin(ranks, missing_dumps).all():
            kind = "missing"
        culprit = {"kind": kind, "process_group": _pg_doc(tab, g), "collective_seq_id": int(cells.seq[b]),
                   "op": op_of(chosen), "input_sizes": [[int(cells.ref_numel[b])]],
                   "ranks": ranks.tolist(), "waiting_ranks": int(cells.n[b] - cells.n_done[b]),
                   "waited_s": None, "hosts": [], "links": []}   # the dump's own time is not in the dump
        culprit["explanation"] = _explain(culprit, ranks, missing_dumps, kept.timeout_ms)
    mism = [{"process_group": _pg_doc(tab, r["g"]), "collective_seq_id": int(cells.seq[r["b"]]), "op": op_of(r),
             "kind": r["kind"], "ranks": r["blame"].tolist()[:64]} for r in records[:MAX_MISMATCHES]]
    return {"culprit": culprit, "mismatches": mism}


def _explain(c, ranks, missing_dumps, timeout_ms) -> str:
    pg = c["process_group"]
    where = f"{c['op']} #{c['collective_seq_id']} of group {pg['name']} ({pg['desc']}, {pg['size']} ranks)"
    who = ", ".join(map(str, ranks[:8].tolist())) + (" ..." if ranks.size > 8 else "")
    if c["kind"] == "desync":
        return (f"ranks disagree on {where}: rank(s) {who} entered a different op, size or dtype; the others wait "
                f"for a collective that cannot complete")
    if c["kind"] == "missing":
        return (f"rank(s) {who} left no dump (the process is gone: a dead host?) and never entered {where}; "
                f"{c['waiting_ranks']} peers wait in it")
    if not ranks.size:
        return (f"every member entered {where} and it does not complete: the transfers between them (network) "
                f"are stuck")
    waited = f" for {c['waited_s']:.0f} s" if c.get("waited_s") else ""
    return (f"rank(s) {who} never entered {where}, and are not waiting in any other collective (their last "
            f"collective completed): {c['waiting_ranks']} peers wait{waited} (timeout {timeout_ms / 1000:.0f} s)")




def _stragglers(cells: _Cells, kept: _Kept, tab, topo_info) -> dict:
    empty = {"process_groups": [], "ranks": [], "hosts": [], "slow": False}
    ok_n = np.asarray(kept.ok_n, np.int64)
    if not ok_n.sum():
        return empty
    dumped = np.asarray(kept.ranks, np.int64)
    # a rank's lateness: the sum over its completed collectives of its arrival minus the first member's
    first_sum = np.zeros(dumped.size, np.int64)
    pos = {r: i for i, r in enumerate(kept.ranks)}
    for ch in kept.chunks:
        if ch[4].any():
            first_sum[pos[ch[0]]] += int((cells.ok_first[cells.of(ch)[ch[4]]] - (kept.t_base or 0)).sum())
    has = cells.ok_n > 0
    kpg = cells.pg[has]
    n_pg = len(tab.pg_name)
    last_rel = cells.ok_last[has] - (kept.t_base or 0)
    pg_wait = np.bincount(kpg, (cells.ok_n[has] * last_rel - cells.ok_sum[has]) / 1e9, minlength=n_pg)
    pg_n = np.bincount(kpg, minlength=n_pg)
    busy = np.zeros(n_pg)
    if kept.all_done:
        busy = np.bincount(kpg, (cells.ok_end[has] - cells.ok_last[has]) / 1e9, minlength=n_pg)
    excess = np.zeros(n_pg)
    for desc in set(tab.pg_desc):
        sel = np.array([d == desc for d in tab.pg_desc]) & (pg_n > 0)
        if sel.any():
            excess[sel] = busy[sel] - np.median(busy[sel])
    world = int(dumped[ok_n > 0].max()) + 1
    rank_late = np.zeros(world)
    rank_n = np.zeros(world, np.int64)
    w = dumped < world
    rank_late[dumped[w]] = (np.asarray(kept.ok_sum, np.int64)[w] - first_sum[w]) / 1e9
    rank_n[dumped[w]] = ok_n[w]
    top_pg = np.argsort(-(pg_wait + excess), kind="stable")[:TOP]
    out_pg = []
    for g in top_pg.tolist():
        if pg_n[g] == 0 or pg_wait[g] + excess[g] <= 0:
            continue
        members = tab.pg_members[g]
        slowest = int(members[np.argmax(rank_late[members])]) if members.size else -1
        out_pg.append({"name": tab.pg_name[g], "desc": tab.pg_desc[g], "size": int(members.size),
                       "wait_s": round(float(pg_wait[g]), 6), "excess_s": round(float(excess[g]), 6),
                       "slowest_rank": slowest, "collectives": int(pg_n[g])})
    host_of = topo_info["host_names"] if topo_info else None
    out_rank = []
    for r in np.argsort(-rank_late, kind="stable")[:TOP].tolist():
        if rank_late[r] <= 0:
            break
        out_rank.append({"rank": r, "host": host_of[r] if host_of is not None and r < len(host_of) else None,
                         "late_s": round(float(rank_late[r]), 6), "collectives": int(rank_n[r])})
    out_host = []
    if topo_info:
        hid = topo_info["rank_host"][:world]
        h_late = np.bincount(hid, rank_late[:hid.size], minlength=int(hid.max()) + 1)
        for h in np.argsort(-h_late, kind="stable")[:TOP].tolist():
            if h_late[h] <= 0:
                break
            out_host.append({"host": topo_info["hosts"][h], "late_s": round(float(h_late[h]), 6),
                             "ranks": np.flatnonzero(hid == h).tolist()})
    span_s = (kept.ok_hi - kept.ok_lo) / 1e9 or 1.0
    slow = bool(rank_late.max() > 0.02 * span_s or (excess.max(initial=0) > 0.02 * span_s))
    return {"process_groups": out_pg, "ranks": out_rank, "hosts": out_host, "slow": slow}


def _heatmap(kept: _Kept, dumped, missing_dumps, topo_info) -> dict:
    """Where each rank stopped: HEATMAP_COLUMNS consecutive record ids ending HEATMAP_AFTER_STOP past the earliest
    stop (the least advanced dumped rank's last entry), so a rank that stopped behind its peers is seen stopping, not
    a window of the last records that it never reached; per host past MAX_HEATMAP_ROWS ranks. Built from the last
    HEATMAP_KEPT entries of each rank (the streamed read keeps no more): a rank more than that ahead of the stop
    shows no cells there."""
    ranks = np.union1d(dumped, missing_dumps)
    R = int(ranks.max()) + 1 if ranks.size else 0
    t_rank, t_rid, t_state = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in kept.tail)
    last_started = np.full(R, -1, np.int64)
    last_done = np.full(R, -1, np.int64)
    last_started[dumped] = kept.last_started
    last_done[dumped] = kept.last_done
    first, top = int(t_rid.min(initial=0)), int(t_rid.max(initial=0))
    stop = int(last_started[dumped].min(initial=top)) if dumped.size else top
    hi = min(top, max(stop, first) + HEATMAP_AFTER_STOP)
    lo = max(first, hi - HEATMAP_COLUMNS + 1)
    hi = min(top, lo + HEATMAP_COLUMNS - 1)
    cols = hi - lo + 1 if t_rid.size else 0
    grid = np.zeros((R, cols), np.int8)
    sel = (t_rid >= lo) & (t_rid <= hi)
    grid[t_rank[sel], t_rid[sel] - lo] = t_state[sel]
    if R <= MAX_HEATMAP_ROWS:
        rows = [[r] for r in range(R)]
        return {"level": "rank", "labels": [str(r) for r in range(R)], "ranks": rows,
                "record_ids": list(range(lo, hi + 1)) if cols else [], "state": grid.tolist(),
                "last_started": last_started.tolist(), "last_completed": last_done.tolist()}
    if topo_info:
        hid = topo_info["rank_host"][:R]
        labels_all = topo_info["hosts"]
    else:
        hid = np.arange(R) // 8
        labels_all = [f"ranks {8 * h}-{8 * h + 7}" for h in range(int(hid.max()) + 1)]
    uniq, inv = np.unique(hid, return_inverse=True)
    agg = np.full((uniq.size, cols), 127, np.int8)
    np.minimum.at(agg, inv, grid)
    ls = np.full(uniq.size, np.iinfo(np.int64).max)
    lc = np.full(uniq.size, np.iinfo(np.int64).max)
    np.minimum.at(ls, inv, last_started)
    np.minimum.at(lc, inv, last_done)
    members = [[] for _ in uniq]
    for r, h in enumerate(inv.tolist()):
        members[h].append(r)
    return {"level": "host", "labels": [labels_all[h] for h in uniq.tolist()], "ranks": members,
            "record_ids": list(range(lo, hi + 1)), "state": agg.tolist(), "last_started": ls.tolist(),
            "last_completed": lc.tolist()}


# ------------------------------------------------------------------------------------------------ the cluster
def _cluster(cluster, folder, world):
    """Rank -> GPU, host names and the topology, when the cluster is known: the placement file written beside our
    dumps, else ranks on the cluster's GPUs in the topology placement (seed 0)."""
    if cluster is None:
        return None
    from sim.debug.recorder import _topology
    from sim.fabric.names import host_names
    topo, _ = _topology(cluster)
    n = int(world.max()) + 1 if world.size else 0
    path = os.path.join(folder, PLACEMENT_FILE)
    gpus = None
    if os.path.isfile(path):
        try:
            with open(path) as f:
                gpus = np.asarray(json.load(f)["gpus"], np.int64)
        except (OSError, ValueError, KeyError) as e:
            raise DumpError(f"{path}: not a placement file ({e})") from None
    if gpus is None or gpus.size < n or (gpus.size and gpus.max() >= topo.n_gpus):
        from sim.fabric.placement import place
        try:
            gpus = place(topo, n, "topology", 0)
        except ValueError as e:
            raise DumpError(f"{folder}: {n:,} ranks do not fit the cluster: {e}") from None
    hosts = host_names(topo.layout)
    rank_host = np.asarray(topo.gpu_host)[gpus]
    return {"topo": topo, "gpus": gpus, "hosts": hosts, "rank_host": rank_host,
            "host_names": [hosts[h] for h in rank_host.tolist()]}


def _where(info, ranks, pg) -> tuple[list, list]:
    """The blamed ranks' hosts, and the backend links on their paths (their NIC's links to and from the leaf);
    a group inside one host uses NVLink only."""
    if not ranks:
        return [], []
    topo = info["topo"]
    r = np.asarray(ranks, np.int64)
    r = r[r < info["gpus"].size]
    g = info["gpus"][r]
    hosts = sorted({info["hosts"][h] for h in np.asarray(topo.gpu_host)[g].tolist()})
    ids = np.concatenate([np.asarray(topo.gpu_uplink)[g], np.asarray(topo.gpu_downlink)[g]])
    ids = np.unique(ids[ids >= 0])
    return hosts, topo.link_names(ids) if ids.size else []
