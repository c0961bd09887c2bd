"""The collectives of a folder of dumps, accumulated rank by rank: per process group and sequence id, who entered,
who completed, whether they agree and when they arrived.

Why a module: the analysis (:mod:`sim.debug.analyze`) never holds every entry of every rank as objects; each rank's
columns (:func:`sim.debug.reader.read_dump`) are added to per group, per sequence id cells (:class:`GroupCells`)
and only compact per-entry arrays are kept (:class:`Kept`), then laid side by side (:class:`Cells`).
"""
from __future__ import annotations

import numpy as np

from sim.debug.dumpformat import DumpError
from sim.debug.reader import Tables

HEATMAP_KEPT = 512            # last entries of each rank the streamed read keeps for the heatmap (16k ranks: 75 MB)
I64MAX, I64MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
MAX_SEQ_SPAN = 1 << 24                # collective sequence ids one group's dumps may span (a ring holds the last few)


class GroupCells:
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


class Kept:
    """What the analysis keeps of the dumps, rank by rank (never every entry of every rank at once): per group
    and sequence id the collective's counts and times (:class:`GroupCells`); per rank and group the sequence ids,
    signatures (a hash of op, sizes, dtype) and completion of its entries in compact arrays (to list a stalled
    collective's members and a rank's lateness); per rank its last record ids, whether it waits and its last
    entries for the heatmap. PP send / recv entries are not matched across ranks."""

    def __init__(self, tab: Tables):
        self.tab = tab
        self.groups: dict[int, GroupCells] = {}
        self.chunks = []                              # (rank, group, seq - anchor (int32), signature, completed)
        self.ranks, self.last_started, self.last_done, self.waiting = [], [], [], []
        self.ok_n, self.ok_sum = [], []               # per rank: completed entries and the sum of their arrivals
        self.rid_min, self.timeout_ms = 0, 0
        self.t_base = None                            # ns: the first arrival read (keeps sums small)
        self.ok_lo, self.ok_hi, self.all_done = I64MAX, I64MIN, True
        self.tail = ([], [], [], [], [])              # rank, record id, state, created, completed (s from t_base,
                                                      # float32, NaN: none) of each rank's last entries
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
            created, completed = c["created"][t].astype(np.int64), c["done"][t].astype(np.int64)
            if self.t_base is None and (created > 0).any():
                self.t_base = int(created[created > 0][0])
            base = self.t_base or 0
            self.tail[3].append(np.where(created > 0, (created - base) / 1e9, np.nan).astype(np.float32))
            self.tail[4].append(np.where(completed > 0, (completed - base) / 1e9, np.nan).astype(np.float32))
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
                cells = self.groups[g] = GroupCells(lo, hi)
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


class Cells:
    """Every group's collectives side by side (group order, then sequence id): the :class:`GroupCells` fields as
    one array each, ``pg`` / ``seq`` of every cell, and the cell of each kept chunk's entries."""

    def __init__(self, kept: Kept, n_pg: int):
        self.off, parts = {}, {k: [] for k, _, _ in GroupCells.FIELDS}
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
        for k, dt, _ in GroupCells.FIELDS:
            setattr(self, k, np.concatenate(parts[k]) if parts[k] else np.zeros(0, dt))
        self.pg = np.concatenate(pgs) if pgs else np.zeros(0, np.int64)
        self.seq = np.concatenate(seqs) if seqs else np.zeros(0, np.int64)
        kept.groups = {}

    def of(self, chunk) -> np.ndarray:
        return self.off[chunk[1]] + chunk[2]
