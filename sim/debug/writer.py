"""The dump writer: every live rank's flight recorder dump of a rehearsal, as PyTorch pickles it.

Why a module: writing 16k ranks x 2,000 entries in seconds needs the pickle opcodes emitted by hand, every entry
in the one fixed layout of :mod:`sim.debug.dumpformat` (numpy records): a stage's ranks share a memo, a header and
one template record per op of their program (:class:`StageLayout`); a rank's dump fills the template's window with
its times (:func:`stage_dumps`). :mod:`sim.debug.reader` reads that layout back without unpickling each entry.
"""
from __future__ import annotations

import json
import os

import numpy as np

from sim.core.progress import silent
from sim.debug.dumpformat import (DUMP_PREFIX, ENTRIES_MARK, ENTRY_KEYS, FIXED_HEAD, FIXED_STRINGS, FR_VERSION,
                                  LONG8, NCCL_VERSION, NONE10, NONE_FILL, PLACEMENT_FILE, TAIL, THREAD_NAME, memo_get,
                                  memo_put, pickle_int, pickle_str, record_dtype)
from sim.debug.programs import DIM_NAMES, OPS


def write_dumps(reh, folder, progress=None) -> list:
    """One file per live rank of the rehearsal ``reh`` (:class:`sim.debug.recorder.Rehearsal`),
    ``<folder>/nccl_trace_rank_<rank>``, and the rank -> GPU placement file; returns the dumps' paths."""
    say = progress or silent
    os.makedirs(folder, exist_ok=True)
    paths = []
    R = reh.gpus.size
    done = 0
    pg_config = {}                                                 # (dim, group) -> its pg_config bytes
    for st in reh.stages:
        for rank, *parts in stage_dumps(reh, st, pg_config):
            path = os.path.join(folder, f"{DUMP_PREFIX}{rank}")
            with open(path, "wb") as f:
                for part in parts:
                    f.write(part)
            paths.append(path)
            done += 1
            if done % 256 == 0:
                say(done / R, f"{done:,} of {R:,} dumps written")
    with open(os.path.join(folder, PLACEMENT_FILE), "w") as f:       # rank -> GPU and the cluster, for the analyzer
        json.dump({"gpus": reh.gpus.tolist(), "cluster": reh.cluster, "cluster_gpus": reh.cluster_gpus}, f)
    say(1.0, f"{len(paths):,} dumps written to {folder}")
    return paths


def _ns(t0: int, seconds: np.ndarray) -> np.ndarray:
    """Simulated seconds (finite) -> ns since the Unix epoch."""
    return t0 + (seconds * 1e9).astype(np.int64)


class StageLayout:
    """What every rank of one stage shares in its dump: the memo (the strings, at the same positions on every rank;
    only the group names differ), the header's constant bytes, and one template record per op of the stage's
    program (every field that does not depend on the rank's times)."""

    def __init__(self, reh, st):
        p = reh.params
        self.ops = st.ops
        op_dim = np.array([o.dim for o in st.ops])
        op_kind = np.array([o.op for o in st.ops])
        op_peer = np.array([o.peer for o in st.ops])
        per_step = len(st.ops) // (int(st.step_of.max()) + 1)
        rec_base = p["steps_before"] * per_step
        seq_base = np.array([p["steps_before"] * int(np.sum((op_dim[:per_step] == d) & (op_kind[:per_step] < 3)))
                             for d in range(4)])
        p2p_base = p["steps_before"] * int(np.sum(op_kind[:per_step] >= 3))
        # the group dims of every rank (a dim of size 1 has no group), at fixed memo positions
        self.dims = [d for d in DIM_NAMES if p[d] > 1]
        n_fixed = len(FIXED_STRINGS)
        self.group_pos = {d: n_fixed + 2 * k for k, d in enumerate(self.dims)}      # name at pos, desc at pos + 1
        pg_local = {DIM_NAMES.index(d): k + 1 for k, d in enumerate(self.dims)}
        key = op_kind * 10 + np.where(op_kind >= 3, op_peer + 1, 0)
        names = {}
        for j in np.unique(key).tolist():
            kind, peer = divmod(j, 10)
            if kind < 3:
                names[j] = f"nccl:{OPS[kind]}"
            else:
                other = st.stage + peer - 1
                names[j] = f"nccl:send {st.stage}->{other}" if kind == 3 else f"nccl:recv {st.stage}<-{other}"
        if reh.fault.kind == "desync" and reh.fault.what == "op":
            names[-1] = "nccl:all_reduce"                                 # what the desynced rank entered
        names_base = n_fixed + 2 * len(self.dims)
        self.name_pos = {j: names_base + i for i, j in enumerate(names)}
        self.tuple_base = names_base + len(names)
        self.frames_pos = self.tuple_base + len(self.dims)
        if self.frames_pos > 255:
            raise RuntimeError("too many strings for one-byte memo references")
        pos = {s_: i for i, s_ in enumerate(FIXED_STRINGS)}
        self.pos = pos
        self.memo_names = b"".join(pickle_str(s_) + memo_put(self.name_pos[j]) for j, s_ in names.items())
        self.memo_tuples = b"".join(memo_get(self.group_pos[d]) + memo_get(self.group_pos[d] + 1) + b"\x86"
                                    + memo_put(self.tuple_base + k) for k, d in enumerate(self.dims)) \
            + b"]" + memo_put(self.frames_pos) + b"e"
        # per dim: the group's last collective / p2p sequence id up to each op (pg_status of a rank that recorded a
        # prefix of its program)
        seqs = np.where(op_kind >= 3, st.seq_p2p, st.seq_coll)
        self.last_seq = {}
        for d in self.dims:
            di = DIM_NAMES.index(d)
            base = p2p_base if di == 2 else int(seq_base[di])
            self.last_seq[d] = np.maximum.accumulate(np.where(op_dim == di, seqs, 0)) + base
            self.last_seq[d] = np.r_[base, self.last_seq[d]]                  # index: entries recorded
        self.dt, consts = record_dtype({k: pos[k] for k in ENTRY_KEYS})
        t = np.zeros(len(st.ops), self.dt)
        for k, v in consts.items():
            t[k] = v
        elem = np.array([o.elem for o in st.ops])
        t["record_id"] = rec_base + np.arange(len(st.ops))
        t["op_id"] = t["record_id"] + 1
        t["pg_id"] = np.array([pg_local.get(x, 0) for x in range(4)])[op_dim]
        t["process_group"] = np.array([self.tuple_base + pg_local.get(x, 1) - 1 for x in range(4)])[op_dim]
        t["thread_name"] = pos[THREAD_NAME]
        t["thread_id"] = pos["1"]
        t["collective_seq_id"] = st.seq_coll + seq_base[op_dim]
        t["p2p_seq_id"] = st.seq_p2p + p2p_base
        lut = np.zeros(int(key.max()) + 1, np.int64)
        for j, mi in self.name_pos.items():
            if j >= 0:
                lut[j] = mi
        t["profiling_name"] = lut[key]
        t["input_sizes"] = [o.numel_in for o in st.ops]
        t["output_sizes"] = [o.numel_out for o in st.ops]
        t["input_dtypes"] = np.where(elem == 4, pos["Float"], pos["BFloat16"])
        t["output_dtypes"] = t["input_dtypes"]
        t["time_discovered_started_ns_op"] = LONG8                       # a recorded entry has started
        t["timeout_ms"] = int(p["timeout_s"] * 1000)
        t["is_p2p"] = np.where(op_kind >= 3, 0x88, 0x89)                 # NEWTRUE / NEWFALSE
        t["frames"] = self.frames_pos
        self.template = t
        self.head = FIXED_HEAD
        self.middle = (self.memo_names + self.memo_tuples + pickle_str("version") + memo_get(pos[FR_VERSION])
                       + pickle_str("comm_lib_version") + memo_get(pos[NCCL_VERSION]) + pickle_str("pg_config") + b"}(")
        self.status_head = b"u" + pickle_str("pg_status") + b"}("
        self.status_keys = [(pickle_str(str(k + 1)) + b"}(" + pickle_str("last_enqueued_collective"), pickle_str("last_started_collective"),
                             pickle_str("last_completed_collective")) for k in range(len(self.dims))]
        self.tail = b"u" + ENTRIES_MARK

    def header(self, reh, rank: int, n_present: int, n_done: int, pg_config: dict) -> bytes:
        """The pickle up to the entries list: PROTO 2, the top dict, twin_memo (defines the memo), version,
        comm_lib_version, pg_config, pg_status. ``pg_config``: the bytes of each group's memo strings and config,
        built once per group."""
        groups = []
        for d in self.dims:
            gi = int(reh.rank_group[d][rank])
            got = pg_config.get((d, gi))
            if got is None:
                at = self.group_pos[d]
                got = pg_config[(d, gi)] = (
                    pickle_str(reh.pg_names[(d, gi)]) + memo_put(at) + pickle_str(d) + memo_put(at + 1),
                    memo_get(at) + b"}(" + pickle_str("name") + memo_get(at) + pickle_str("desc") + memo_get(at + 1) + pickle_str("ranks")
                    + pickle_str(str(reh.group_ranks[d][gi].tolist())) + b"u")
            groups.append((d, got))
        out = [self.head]
        out += [memo for _, (memo, _) in groups]
        out.append(self.middle)
        out += [cfg for _, (_, cfg) in groups]
        out.append(self.status_head)                     # per local pg id: last enqueued / started / completed
        for (d, _), (key, started, completed) in zip(groups, self.status_keys):
            last_e = int(self.last_seq[d][n_present])
            out += [key, pickle_int(last_e), started, pickle_int(last_e), completed, pickle_int(int(self.last_seq[d][n_done])), b"u"]
        out.append(self.tail)
        return b"".join(out)


CHUNK_RANKS = 16                       # ranks whose records are built as one (ranks, entries) array


def stage_dumps(reh, st, pg_config: dict):
    """(rank, header bytes, records as uint8, tail bytes) of every live rank of one stage. A rank records a prefix
    of its program (its times grow along it), so its dump is the last ``entries`` ops of that prefix: ranks with the
    same prefix share one window of the stage's template, filled with their times in one array operation."""
    p = reh.params
    T = reh.dump_time
    ent = p["entries"]
    lay = StageLayout(reh, st)
    t0 = reh.t0_ns
    n_present = (st.enter <= T).sum(axis=0)
    n_done = (st.done <= T).sum(axis=0)
    live = np.flatnonzero(~reh.dead[st.ranks])
    for c in np.unique(n_present[live]).tolist():
        s = max(0, c - ent)
        cols_all = live[n_present[live] == c]
        for i in range(0, cols_all.size, CHUNK_RANKS):
            cols = cols_all[i:i + CHUNK_RANKS]
            raw = np.empty((cols.size, (c - s) * lay.dt.itemsize), np.uint8)
            raw[...] = lay.template[s:c].view(np.uint8)                 # a byte copy (a record copy is slow)
            rec = raw.view(lay.dt)
            enter = st.enter[s:c, cols].T
            done = st.done[s:c, cols].T
            comp = done <= T
            created = _ns(t0, enter)
            rec["time_created_ns"] = created
            rec["time_discovered_started_ns"] = created
            rec["state"] = np.where(comp, lay.pos["completed"], lay.pos["started"])
            rec["time_discovered_completed_ns_op"] = np.where(comp, LONG8, NONE10[:2])
            rec["time_discovered_completed_ns"] = np.where(comp, _ns(t0, np.where(comp, done, 0.0)), NONE_FILL)
            rec["retired"] = np.where(comp, 0x88, 0x89)
            ds = st.desync[s:c, cols].T
            if ds.any():
                if reh.fault.what == "size":
                    rec["input_sizes"][ds] *= 2
                    rec["output_sizes"][ds] *= 2
                else:
                    rec["profiling_name"][ds] = lay.name_pos[-1]
                    rec["output_sizes"][ds] = rec["input_sizes"][ds]
            for row, col in enumerate(cols.tolist()):
                rank = int(st.ranks[col])
                yield rank, lay.header(reh, rank, c, int(n_done[col]), pg_config), raw[row], TAIL
