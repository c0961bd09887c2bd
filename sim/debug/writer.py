"""The dump writer: every live rank's flight recorder dump of a rehearsal, as PyTorch pickles it.

Why a module: writing 16k ranks x 2,000 entries in seconds needs the pickle opcodes emitted by hand, every entry
in the one fixed layout of :mod:`sim.debug.dumpformat` (numpy records): a stage's ranks share a memo, a header and
one template record per op of their program (:class:`StageLayout`); a rank's dump fills the template's window with
its times (:func:`rank_dumps`). :mod:`sim.debug.reader` reads that layout back without unpickling each entry.

What the dumps are made of is a :class:`DumpSet`: per stage the op columns of its program and, per rank, the window
of its times it records (ns, as the dump holds them), taken from a :class:`sim.debug.recorder.Rehearsal`
(:meth:`DumpSet.of`) or from the compact copy the twin keeps of it (:mod:`sim.debug.dumpstate`): the same bytes
either way. The twin's analysis takes the records as they are made (:func:`sim.debug.analyze.analyze_dumpset`),
without writing or re-reading a file.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from sim.core.progress import silent
from sim.debug.dumpformat import (DUMP_PREFIX, ENTRIES_MARK, ENTRY_KEYS, FIXED_HEAD, FIXED_STRINGS, FR_VERSION,
                                  LONG8, NCCL_VERSION, NONE10, NONE_FILL, PLACEMENT_FILE, POP, TAIL, THREAD_NAME, TOP,
                                  DumpError, memo_get, memo_put, pickle_int, pickle_str, record_dtype)
from sim.debug.programs import DIM_NAMES, OPS

OP_COLUMNS = ("dim", "op", "peer", "elem", "numel_in", "numel_out")     # the Op fields a dump shows
STEP_COLUMNS = ("step_of", "seq_coll", "seq_p2p")                        # sim.debug.timing.StageTrace's


@dataclass
class StageDumps:
    """One pipeline stage's part of the dumps: its program's op columns (``ops``: OP_COLUMNS and STEP_COLUMNS,
    (n_ops,) int64 each), its ranks (n,), per rank the entries recorded by the dump (``n_present``) and completed by
    then (``n_done``), whether it dumps (``live``), and its times over the op rows ``lo`` .. ``lo + w`` (every
    live rank's window, the last ``entries`` of its recorded ops, lies within): ``created`` / ``done`` (n, w) int64
    ns from the dump's t0 (``done`` 0 where not ``completed``), ``completed`` and ``desync`` (n, w) bool."""

    stage: int
    ranks: np.ndarray
    ops: dict
    n_present: np.ndarray
    n_done: np.ndarray
    live: np.ndarray
    lo: int
    created: np.ndarray
    done: np.ndarray
    completed: np.ndarray
    desync: np.ndarray


@dataclass
class DumpSet:
    """Everything every rank's dump is made of (see the module docstring): the job's parameters, the fault (``kind``,
    ``what``: :class:`sim.debug.faults.Fault`), the placement (``gpus``), the ranks without a dump (``dead``), the
    process groups (``rank_group`` dim -> (R,), ``group_ranks`` dim -> (groups, size), ``pg_names`` (dim, group) ->
    name), t0 (ns since the epoch), the cluster (name, GPUs) and one :class:`StageDumps` per stage."""

    params: dict
    fault: object
    gpus: np.ndarray
    dead: np.ndarray
    rank_group: dict
    group_ranks: dict
    pg_names: dict
    t0_ns: int
    cluster: str
    cluster_gpus: int
    stages: list

    @classmethod
    def of(cls, reh, progress=None) -> "DumpSet":
        """The dumps of the rehearsal ``reh`` at its dump time (:class:`sim.debug.recorder.Rehearsal`);
        ``progress(fraction)`` per stage."""
        say = progress or silent
        stages = []
        for st in reh.stages:
            stages.append(_stage_dumps(reh, st))
            say(len(stages) / len(reh.stages), f"stage {st.stage}'s times taken")
        return cls(params=reh.params, fault=reh.fault, gpus=reh.gpus, dead=reh.dead, rank_group=reh.rank_group,
                   group_ranks=reh.group_ranks, pg_names=reh.pg_names, t0_ns=reh.t0_ns, cluster=reh.cluster,
                   cluster_gpus=reh.cluster_gpus, stages=stages)

    def nbytes(self) -> int:
        """The bytes of every dump (headers, records, tails), as written; the placement file not counted."""
        total, pg_config = 0, {}
        for i, j, rank, lay in self._ranks():
            sd = self.stages[i]
            c = int(sd.n_present[j])
            total += len(lay.header(self, rank, c, int(sd.n_done[j]), pg_config)) + len(TAIL) \
                + (c - max(0, c - self.params["entries"])) * lay.dt.itemsize
        return total

    def _ranks(self, by_stage: bool = False):
        """(stage index, position in the stage, rank, the stage's :class:`StageLayout`) of every live rank, by
        rank (the order a folder is read in), or ``by_stage``: stage after stage (each stage's ranks by rank), each
        stage looked at once (:attr:`stages` may load one at a time: :func:`sim.debug.dumpstate.load`)."""
        if by_stage:
            for i in range(len(self.stages)):
                sd = self.stages[i]
                lay = StageLayout(self, sd)
                order = np.argsort(sd.ranks, kind="stable")
                for j in order[sd.live[order] & ~self.dead[sd.ranks[order]]].tolist():
                    yield i, j, int(sd.ranks[j]), lay
            return
        R = self.gpus.size
        stage_of = np.full(R, -1, np.int64)
        pos = np.zeros(R, np.int64)
        for i, sd in enumerate(self.stages):
            stage_of[sd.ranks] = i
            pos[sd.ranks] = np.arange(sd.ranks.size)
        layouts = [StageLayout(self, sd) for sd in self.stages]
        for rank in np.flatnonzero(~self.dead).tolist():
            i = int(stage_of[rank])
            if i >= 0 and self.stages[i].live[pos[rank]]:
                yield i, int(pos[rank]), rank, layouts[i]

    def placement(self) -> str:
        """The placement file's text (rank -> GPU and the cluster, for the analyzer)."""
        return json.dumps({"gpus": self.gpus.tolist(), "cluster": self.cluster, "cluster_gpus": self.cluster_gpus})


def _ns(seconds: np.ndarray) -> np.ndarray:
    """Simulated seconds (finite) -> ns from the dump's t0."""
    return (seconds * 1e9).astype(np.int64)


def _stage_dumps(reh, st) -> StageDumps:
    T, ent = reh.dump_time, reh.params["entries"]
    n_present = (st.enter <= T).sum(axis=0)
    n_done = (st.done <= T).sum(axis=0)
    live = ~reh.dead[st.ranks]
    starts = np.maximum(0, n_present - ent)
    lo = int(starts[live].min()) if live.any() else 0
    hi = int(n_present[live].max()) if live.any() else 0
    enter, done = st.enter[lo:hi].T, st.done[lo:hi].T                     # (n, w): a rank's window contiguous
    entered = enter <= T                                                  # a recorded op (its times finite)
    completed = done <= T
    ops = {k: np.array([getattr(o, k) for o in st.ops], np.int64) for k in OP_COLUMNS}
    ops.update({k: np.asarray(getattr(st, k), np.int64) for k in STEP_COLUMNS})
    return StageDumps(stage=st.stage, ranks=np.asarray(st.ranks, np.int64), ops=ops, n_present=n_present,
                      n_done=n_done, live=live, lo=lo, created=_ns(np.where(entered, enter, 0.0)),
                      done=_ns(np.where(completed, done, 0.0)), completed=completed,
                      desync=np.ascontiguousarray(st.desync[lo:hi].T))


def write_dumps(reh, folder, progress=None) -> list:
    """One file per live rank of the rehearsal ``reh`` (:class:`sim.debug.recorder.Rehearsal`, or a
    :class:`DumpSet`), ``<folder>/nccl_trace_rank_<rank>``, and the rank -> GPU placement file; returns the dumps'
    paths."""
    say = progress or silent
    ds = reh if isinstance(reh, DumpSet) else DumpSet.of(reh)
    os.makedirs(folder, exist_ok=True)
    paths = []
    R = ds.gpus.size
    for done, (rank, parts) in enumerate(rank_dumps(ds), 1):
        path = os.path.join(folder, f"{DUMP_PREFIX}{rank}")
        with open(path, "wb") as f:
            for part in parts:
                f.write(part)
        paths.append(path)
        if done % 256 == 0:
            say(done / R, f"{done:,} of {R:,} dumps written")
    with open(os.path.join(folder, PLACEMENT_FILE), "w") as f:       # rank -> GPU and the cluster, for the analyzer
        f.write(ds.placement())
    say(1.0, f"{len(paths):,} dumps written to {folder}")
    return paths


class StageLayout:
    """What every rank of one stage shares in its dump: the memo (the strings, at the same positions on every rank;
    only the group names differ), the header's constant bytes, and one template record per op of the stage's
    program (every field that does not depend on the rank's times)."""

    def __init__(self, ds: DumpSet, sd: StageDumps):
        p = ds.params
        op_dim, op_kind, op_peer = sd.ops["dim"], sd.ops["op"], sd.ops["peer"]
        n_ops = op_dim.size
        per_step = n_ops // (int(sd.ops["step_of"].max()) + 1)
        rec_base = p["steps_before"] * per_step
        p2p = op_kind >= 3
        seq_base = np.array([p["steps_before"] * int(np.sum((op_dim[:per_step] == d) & ~p2p[:per_step]))
                             for d in range(4)])
        # a pair's p2p_seq_id counts its P2P ops (one counter per pair group, as seqP2P_ is per process group)
        p2p_base = {peer: p["steps_before"] * int(np.sum(p2p[:per_step] & (op_peer[:per_step] == peer)))
                    for peer in (-1, 1)}
        # the rank's groups (slots: a dim of size 1 has none; PP: the pair with the previous stage and the pair
        # with the next one, :func:`pair_group`), at fixed memo positions
        self.stage, self.pp = sd.stage, p["pp"]
        self.slots = [(d, peer) for d in DIM_NAMES if p[d] > 1
                      for peer in ((-1, 1) if d == "pp" else (0,))
                      if d != "pp" or 0 <= sd.stage + peer < p["pp"]]
        n_fixed = len(FIXED_STRINGS)
        self.group_pos = {sl: n_fixed + 2 * k for k, sl in enumerate(self.slots)}  # name at pos, desc at pos + 1
        lut = np.zeros(4 * 3, np.int64)                  # (dim, peer + 1) -> the op's slot
        for k, (d, peer) in enumerate(self.slots):
            lut[DIM_NAMES.index(d) * 3 + peer + 1] = k
        slot_of = lut[op_dim * 3 + op_peer + 1]
        key = op_kind * 10 + np.where(p2p, op_peer + 1, 0)
        names = {}
        for j in np.unique(key).tolist():
            kind, peer = divmod(j, 10)
            if kind < 3:
                names[j] = f"nccl:{OPS[kind]}"
            else:                                     # ranks local to the pair group: the lower stage is 0
                me = 0 if peer == 2 else 1
                names[j] = f"nccl:send {me}->{1 - me}" if kind == 3 else f"nccl:recv {me}<-{1 - me}"
        if ds.fault.kind == "desync" and ds.fault.what == "op":
            names[-1] = "nccl:all_reduce"                                 # what the desynced rank entered
        self.names = names
        names_base = n_fixed + 2 * len(self.slots)
        self.name_pos = {j: names_base + i for i, j in enumerate(names)}
        self.tuple_base = names_base + len(names)
        self.frames_pos = self.tuple_base + len(self.slots)
        if self.frames_pos > 255:
            raise RuntimeError("too many strings for one-byte memo references")
        pos = {s_: i for i, s_ in enumerate(FIXED_STRINGS)}
        self.pos = pos
        self.memo_names = b"".join(pickle_str(s_) + memo_put(self.name_pos[j]) + POP for j, s_ in names.items())
        self.memo_tuples = b"".join(memo_get(self.group_pos[sl]) + memo_get(self.group_pos[sl] + 1) + b"\x86"
                                    + memo_put(self.tuple_base + k) + POP for k, sl in enumerate(self.slots)) \
            + b"]" + memo_put(self.frames_pos) + POP
        # per slot: the group's last collective / p2p sequence id up to each op (pg_status of a rank that recorded
        # a prefix of its program)
        self.last_seq = {}
        for sl in self.slots:
            d, peer = sl
            if d == "pp":
                base, seqs = p2p_base[peer], np.where(p2p & (op_peer == peer), sd.ops["seq_p2p"], 0)
            else:
                di = DIM_NAMES.index(d)
                base, seqs = int(seq_base[di]), np.where((op_dim == di) & ~p2p, sd.ops["seq_coll"], 0)
            self.last_seq[sl] = np.r_[base, np.maximum.accumulate(seqs) + base]   # index: entries recorded
        self.dt, consts = record_dtype({k: pos[k] for k in ENTRY_KEYS})
        t = np.zeros(n_ops, self.dt)
        for k, v in consts.items():
            t[k] = v
        elem = sd.ops["elem"]
        t["record_id"] = rec_base + np.arange(n_ops)
        t["pg_id"] = slot_of + 1
        t["process_group"] = self.tuple_base + slot_of
        t["thread_name"] = pos[THREAD_NAME]
        t["thread_id"] = pos["1"]
        t["collective_seq_id"] = sd.ops["seq_coll"] + seq_base[op_dim]
        t["p2p_seq_id"] = np.where(p2p, sd.ops["seq_p2p"] + np.where(op_peer < 0, p2p_base[-1], p2p_base[1]), 0)
        # op_id: ProcessGroupNCCL's op_id_, one counter per process group, +1 per collective and per P2P op (what a
        # real gloo run shows: tests/torch); a group of ours does either collectives or P2P, so it is the one of the
        # two sequence ids that counts on the entry's group (record_id is the process-wide FlightRecorder::id_)
        t["op_id"] = t["collective_seq_id"] + t["p2p_seq_id"]
        lut = np.zeros(int(key.max()) + 1, np.int64)
        for j, mi in self.name_pos.items():
            if j >= 0:
                lut[j] = mi
        t["profiling_name"] = lut[key]
        t["input_sizes"] = sd.ops["numel_in"]
        t["output_sizes"] = sd.ops["numel_out"]
        t["input_dtypes"] = np.where(elem == 4, pos["Float"], pos["BFloat16"])
        t["output_dtypes"] = t["input_dtypes"]
        t["time_discovered_started_ns_op"] = LONG8                       # a recorded entry has started
        t["timeout_ms"] = int(p["timeout_s"] * 1000)
        t["is_p2p"] = np.where(op_kind >= 3, 0x88, 0x89)                 # NEWTRUE / NEWFALSE
        t["frames"] = self.frames_pos
        self.template = t
        self.template_bytes = t.view(np.uint8)
        self.head = FIXED_HEAD
        self.middle = (self.memo_names + self.memo_tuples + TOP + pickle_str("version") + memo_get(pos[FR_VERSION])
                       + pickle_str("comm_lib_version") + memo_get(pos[NCCL_VERSION]) + pickle_str("pg_config") + b"}(")
        self.status_head = b"u" + pickle_str("pg_status") + b"}("
        self.status_keys = [(pickle_str(str(k + 1)) + b"}(" + pickle_str("last_enqueued_collective"), pickle_str("last_started_collective"),
                             pickle_str("last_completed_collective")) for k in range(len(self.slots))]
        self.tail = b"u" + ENTRIES_MARK

    def header(self, ds: DumpSet, rank: int, n_present: int, n_done: int, pg_config: dict) -> bytes:
        """The pickle up to the entries list: PROTO 2, the memo's strings (each put and popped: no key of ours,
        :mod:`sim.debug.dumpformat`), then the top dict: version, comm_lib_version, pg_config, pg_status.
        ``pg_config``: the bytes of each group's memo strings and config, built once per group."""
        groups = []
        for sl in self.slots:
            name, desc, members = self.group(ds, sl, rank)
            got = pg_config.get((sl, name))
            if got is None:
                at = self.group_pos[sl]
                got = pg_config[(sl, name)] = (
                    pickle_str(name) + memo_put(at) + POP + pickle_str(desc) + memo_put(at + 1) + POP,
                    memo_get(at) + b"}(" + pickle_str("name") + memo_get(at) + pickle_str("desc") + memo_get(at + 1) + pickle_str("ranks")
                    + pickle_str(str(members.tolist())) + b"u")
            groups.append((sl, got))
        out = [self.head]
        out += [memo for _, (memo, _) in groups]
        out.append(self.middle)
        out += [cfg for _, (_, cfg) in groups]
        out.append(self.status_head)                     # per local pg id: last enqueued / started / completed
        for (sl, _), (key, started, completed) in zip(groups, self.status_keys):
            last_e = int(self.last_seq[sl][n_present])
            out += [key, pickle_int(last_e), started, pickle_int(last_e), completed, pickle_int(int(self.last_seq[sl][n_done])), b"u"]
        out.append(self.tail)
        return b"".join(out)

    def group(self, ds: DumpSet, slot: tuple, rank: int) -> tuple[str, str, np.ndarray]:
        """(name, desc, members) of the rank's group in ``slot`` ((dim, 0), or ("pp", -1 / +1): the pair with the
        previous / next stage, :func:`pair_group`)."""
        d, peer = slot
        gi = int(ds.rank_group[d][rank])
        if d == "pp":
            return pair_group(ds, gi, min(self.stage, self.stage + peer))
        return ds.pg_names[(d, gi)], d, ds.group_ranks[d][gi]

    def groups(self, ds: DumpSet, rank: int) -> list[tuple[str, str, np.ndarray]]:
        """(name, desc, members) of the rank's process groups, as its header's pg_config gives them."""
        return [self.group(ds, sl, rank) for sl in self.slots]

    def memo(self, groups: list) -> list:
        """The rank's memo as its header defines it, by position (the fixed strings, its groups' names and descs,
        the op names, the (name, desc) tuples, the empty frames list)."""
        out = list(FIXED_STRINGS)
        for name, desc, _ in groups:
            out += [name, desc]
        out += list(self.names.values())
        out += [(name, desc) for name, desc, _ in groups]
        out.append([])
        return out

    def records(self, ds: DumpSet, sd: StageDumps, j: int) -> np.ndarray:
        """The records (uint8, the dtype's bytes) of the stage's ``j``-th rank: its window of the template filled
        with its times, states and desync marks."""
        c = int(sd.n_present[j])
        s = max(0, c - ds.params["entries"])
        a, b = s - sd.lo, c - sd.lo
        raw = self.template_bytes[s * self.dt.itemsize:c * self.dt.itemsize].copy()   # a byte copy (a record
        rec = raw.view(self.dt)                                                      # copy is slow)
        created = ds.t0_ns + sd.created[j, a:b]
        comp = sd.completed[j, a:b]
        rec["time_created_ns"] = created
        rec["time_discovered_started_ns"] = created
        rec["state"] = np.where(comp, self.pos["completed"], self.pos["started"])
        rec["time_discovered_completed_ns_op"] = np.where(comp, LONG8, NONE10[:2])
        rec["time_discovered_completed_ns"] = np.where(comp, ds.t0_ns + sd.done[j, a:b], NONE_FILL)
        rec["retired"] = np.where(comp, 0x88, 0x89)
        ds_ = sd.desync[j, a:b]
        if ds_.any():
            if ds.fault.what == "size":
                rec["input_sizes"][ds_] *= 2
                rec["output_sizes"][ds_] *= 2
            else:
                rec["profiling_name"][ds_] = self.name_pos[-1]
                rec["output_sizes"][ds_] = rec["input_sizes"][ds_]
        return raw


def pair_group(ds: DumpSet, chain: int, k: int) -> tuple[str, str, np.ndarray]:
    """(name, desc, members) of the two-rank group of stages ``k`` and ``k + 1`` of the pipeline ``chain`` (an index
    of ``group_ranks['pp']``): the group the pipeline's P2P between those stages is recorded on. PyTorch's fr_trace
    matches a send with its receive only in a group of two ranks (docs/debugging.md "P2P entries"). Named after
    every other group: 1 + the number of named groups + the pair's index."""
    base = 1 + len(ds.pg_names)
    pp = ds.group_ranks["pp"].shape[1]
    members = np.sort(ds.group_ranks["pp"][chain][k:k + 2])
    return str(base + chain * (pp - 1) + k), "pp", members


def rank_records(ds: DumpSet, by_stage: bool = False):
    """(rank, its stage's :class:`StageLayout`, its :class:`StageDumps`, its position there, its records as
    uint8) of every live rank, by rank (or stage after stage: :meth:`DumpSet._ranks`)."""
    for i, j, rank, lay in ds._ranks(by_stage):
        sd = ds.stages[i]
        yield rank, lay, sd, j, lay.records(ds, sd, j)


def rank_dumps(ds: DumpSet, by_stage: bool = False):
    """(rank, (header bytes, records as uint8, tail bytes)) of every live rank, by rank (or stage after stage):
    the file's parts."""
    pg_config = {}                                                 # (dim, group) -> its pg_config bytes
    for rank, lay, sd, j, raw in rank_records(ds, by_stage):
        yield rank, (lay.header(ds, rank, int(sd.n_present[j]), int(sd.n_done[j]), pg_config), raw, TAIL)


def rank_dump(ds: DumpSet, rank: int) -> tuple:
    """The file's parts (header bytes, records as uint8, tail bytes) of ``rank``'s dump alone, its stage the only
    one looked at (the rank's position in its pipeline, ``group_ranks['pp']``); DumpError when the job has no such
    rank or the rank left no dump (its process is gone: ``dead``)."""
    R = ds.gpus.size
    if not 0 <= rank < R:
        raise DumpError(f"rank {rank}: not a rank of the job (0..{R - 1:,})")
    chain = ds.group_ranks["pp"][int(ds.rank_group["pp"][rank])]
    k = int(np.flatnonzero(chain == rank)[0])
    if not (k < len(ds.stages) and ds.stages[k].stage == k and rank in ds.stages[k].ranks):
        k = next(i for i in range(len(ds.stages)) if rank in ds.stages[i].ranks)
    sd = ds.stages[k]
    j = int(np.flatnonzero(sd.ranks == rank)[0])
    if ds.dead[rank] or not sd.live[j]:
        raise DumpError(f"rank {rank}: left no dump (its process was gone when the others dumped)")
    lay = StageLayout(ds, sd)
    return lay.header(ds, rank, int(sd.n_present[j]), int(sd.n_done[j]), {}), lay.records(ds, sd, j), TAIL
