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
"""
from __future__ import annotations

import json
import os
import pickle
import re
import time

import numpy as np

from sim.progress import silent

MAX_HEATMAP_ROWS = 1024
HEATMAP_COLUMNS = 64
HEATMAP_AFTER_STOP = 16       # columns the heatmap shows past the earliest stop (what the ranks ahead went on to do)
TOP = 10
MAX_MISMATCHES = 20
PLACEMENT_FILE = "twin_placement.json"      # rank -> GPU id, written beside our dumps
_NAME = re.compile(r"^(.*?)(\d+)$")
STATE_CODE = {"scheduled": 1, "started": 2, "completed": 3}


class DumpError(ValueError):
    """A dump file that cannot be read (truncated, corrupt, not a flight recorder dump): names the file."""


# ------------------------------------------------------------------------------------------------ reading
class _Tables:
    """Global string tables: process groups (name -> index, desc, members) and op signatures."""

    def __init__(self):
        self.pg_index, self.pg_name, self.pg_desc, self.pg_members = {}, [], [], []
        self.ops, self.op_index = [], {}
        self.version, self.backend = "", ""

    def pg(self, name, desc, ranks_text=None):
        i = self.pg_index.get(name)
        if i is None:
            i = self.pg_index[name] = len(self.pg_name)
            self.pg_name.append(name)
            self.pg_desc.append(desc)
            self.pg_members.append(None)
        if ranks_text is not None and self.pg_members[i] is None:
            try:
                ranks = json.loads(ranks_text) if isinstance(ranks_text, str) else list(ranks_text)
            except ValueError:
                ranks = []
            if ranks:
                self.pg_members[i] = np.asarray(ranks, np.int64)
        return i

    def op(self, name):
        i = self.op_index.get(name)
        if i is None:
            i = self.op_index[name] = len(self.ops)
            self.ops.append(name)
        return i


def _fast(path: str, data: bytes, tab: _Tables):
    """Our fixed-layout dumps: header unpickled alone, the entries as numpy records. None if not that layout."""
    from sim.flight_recorder import ENTRY_KEYS, record_dtype
    head = b"\x80\x02}(X\x09\x00\x00\x00twin_memo"
    if not data.startswith(head) or not data.endswith(b"eu."):
        return None
    marker = b"X\x07\x00\x00\x00entries](" 
    start = data.find(marker)
    if start < 0:
        return None
    start += len(marker)
    try:
        top = pickle.loads(data[:start] + b"eu.")
        memo = top["twin_memo"]
        kidx = {k: memo.index(k) for k in ENTRY_KEYS}
    except Exception:
        return None
    dt, consts = record_dtype(kidx)
    body = memoryview(data)[start:len(data) - 3]
    if len(body) % dt.itemsize:
        return None
    rec = np.frombuffer(body, dt)
    for k, v in consts.items():
        if rec.size and not (rec[k] == v).all():
            return None
    return top, memo, rec


def _read(path: str, rank: int, tab: _Tables) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise DumpError(f"{path}: cannot be read ({e.strerror})") from None
    fast = _fast(path, data, tab)
    if fast is not None:
        top, memo, rec = fast
        _header(path, top, tab)
        n = rec.size
        pg_map = {}
        for i, obj in enumerate(memo):
            if isinstance(obj, tuple):
                pg_map[i] = tab.pg(obj[0], obj[1])
        lut_pg = np.full(256, -1, np.int64)
        for i, g in pg_map.items():
            lut_pg[i] = g
        lut_op = np.full(256, -1, np.int64)
        for i, obj in enumerate(memo):
            if isinstance(obj, str) and ":" in obj:
                lut_op[i] = tab.op(obj.split(" ")[0])
        lut_dt = np.zeros(256, np.int64)
        for i, obj in enumerate(memo):
            if isinstance(obj, str):
                lut_dt[i] = hash(obj) & 0xFFFF
        state = np.where(rec["state"] == memo.index("completed"), 3,
                         np.where(rec["state"] == memo.index("started"), 2, 1))
        done = np.where(rec["time_discovered_completed_ns_op"] == b"\x8a\x08", rec["time_discovered_completed_ns"], -1)
        return {"rank": rank, "record_id": rec["record_id"].astype(np.int64), "pg": lut_pg[rec["process_group"]],
                "seq": rec["collective_seq_id"].astype(np.int64), "p2p": rec["is_p2p"] == 0x88,
                "op": lut_op[rec["profiling_name"]], "numel_in": rec["input_sizes"].astype(np.int64),
                "numel_out": rec["output_sizes"].astype(np.int64), "dtype": lut_dt[rec["input_dtypes"]],
                "state": state.astype(np.int8), "created": rec["time_created_ns"].astype(np.int64),
                "done": done.astype(np.int64), "timeout_ms": int(rec["timeout_ms"][0]) if n else 0}
    try:
        top = pickle.loads(data)
    except Exception as e:
        what = "truncated" if isinstance(e, EOFError) or "truncated" in str(e) or "ran out" in str(e) else "corrupt"
        raise DumpError(f"{path}: {what}: not a readable flight recorder dump ({type(e).__name__}: {e})") from None
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
    out["rank"], out["timeout_ms"] = rank, timeout
    return out


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


# ------------------------------------------------------------------------------------------------ analysis
def analyze(folder, cluster=None, progress=None) -> dict:
    """The analysis of the dumps in ``folder`` as a JSON-ready dict (schema: docs/debugging.md). ``cluster``: a
    :class:`sim.topology.Topology`, a preset name or a spec path, to name hosts and links (None: ranks only)."""
    t0 = time.perf_counter()
    say = progress or silent
    folder = str(folder)
    files = _dump_files(folder)
    tab = _Tables()
    per_rank = []
    for i, (rank, path) in enumerate(files):
        per_rank.append(_read(path, rank, tab))
        if i % 256 == 255:
            say(0.8 * (i + 1) / len(files), f"{i + 1:,} of {len(files):,} dumps read")
    say(0.8, f"{len(files):,} dumps read; matching collectives across ranks")
    cat = {k: np.concatenate([d[k] for d in per_rank]) if per_rank else np.zeros(0)
           for k in ("record_id", "pg", "seq", "p2p", "op", "numel_in", "numel_out", "dtype", "state", "created",
                     "done")}
    cat["rank"] = np.concatenate([np.full(d["record_id"].size, d["rank"], np.int64) for d in per_rank])
    timeout_ms = max((d["timeout_ms"] for d in per_rank), default=0)
    dumped = np.array([d["rank"] for d in per_rank], np.int64)
    # members of each group: pg_config's, else the ranks seen in it (gloo leaves pg_config empty)
    for g in range(len(tab.pg_name)):
        if tab.pg_members[g] is None:
            tab.pg_members[g] = dumped.copy() if tab.pg_desc[g] == "default_pg" else \
                np.unique(cat["rank"][cat["pg"] == g])
    world = np.unique(np.concatenate([dumped] + [m for m in tab.pg_members if m is not None]))
    missing_dumps = np.setdiff1d(world, dumped)
    topo_info = _cluster(cluster, folder, world)
    times = cat["created"][cat["created"] > 0]
    dump_ns = int(max(times.max(initial=0), cat["done"].max(initial=0))) if times.size else 0
    res = _match(cat, tab, dumped, missing_dumps, dump_ns, timeout_ms)
    culprit = res["culprit"]
    if culprit is not None and topo_info is not None:
        culprit["hosts"], culprit["links"] = _where(topo_info, culprit["ranks"], culprit["process_group"])
    strag = _stragglers(cat, tab, topo_info)
    verdict = culprit["kind"] if culprit else "clean"
    if culprit is None and strag["slow"]:
        verdict = "slow"
    if culprit is None:
        res["mismatches"] = []
    out = {"schema": 1, "folder": folder, "dumps": len(files), "ranks": int(world.size), "version": tab.version,
           "backend": tab.backend or "nccl", "missing_dumps": missing_dumps.tolist(), "verdict": verdict,
           "culprit": culprit, "mismatches": res["mismatches"],
           "stragglers": {k: strag[k] for k in ("process_groups", "ranks", "hosts")},
           "heatmap": _heatmap(cat, dumped, missing_dumps, topo_info),
           "seconds": round(time.perf_counter() - t0, 3)}
    say(1.0, f"verdict: {verdict}")
    return out


def _pg_doc(tab, g) -> dict:
    return {"name": tab.pg_name[g], "desc": tab.pg_desc[g], "size": int(tab.pg_members[g].size)}


def _match(cat, tab, dumped, missing_dumps, dump_ns, timeout_ms) -> dict:
    coll = ~cat["p2p"].astype(bool)
    pg, seq = cat["pg"][coll], cat["seq"][coll]
    key = pg * (1 << 40) + seq
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if k.size else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], k.size]
    rank = cat["rank"][coll][order]
    state = cat["state"][coll][order]
    created = cat["created"][coll][order]
    sig = ((cat["op"][coll] * 1_000_003 + cat["numel_in"][coll]) * 1_000_033 + cat["numel_out"][coll]) * 65_537 \
        + cat["dtype"][coll]
    sig = sig[order]
    n_present = ends - starts
    n_done = np.add.reduceat((state == 3).astype(np.int64), starts) if k.size else np.zeros(0, np.int64)
    sig_min = np.minimum.reduceat(sig, starts) if k.size else sig
    sig_max = np.maximum.reduceat(sig, starts) if k.size else sig
    first = np.minimum.reduceat(np.where(created > 0, created, np.iinfo(np.int64).max), starts) if k.size else sig
    key_pg = k[starts] >> 40
    key_seq = k[starts] & ((1 << 40) - 1)
    stalled = n_done < n_present
    desync = sig_min != sig_max
    # a rank is idle when it has no unfinished entry (its CPU never issued the next collective)
    open_ranks = np.unique(cat["rank"][cat["state"] < 3])
    idle = np.setdiff1d(dumped, open_ranks)
    blameable = np.union1d(idle, missing_dumps)
    bad = np.flatnonzero(stalled | desync)
    bad = bad[np.argsort(first[bad], kind="stable")]
    records = []
    for b in bad.tolist():
        g = int(key_pg[b])
        present = rank[starts[b]:ends[b]]
        members = tab.pg_members[g]
        if desync[b]:
            s = sig[starts[b]:ends[b]]
            vals, counts = np.unique(s, return_counts=True)
            major = vals[np.argmax(counts)]
            blame = np.sort(present[s != major])
            kind = "desync"
        else:
            blame = np.setdiff1d(members, present)
            kind = "hang"
        records.append({"b": b, "g": g, "kind": kind, "blame": blame, "present": present})
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
    if chosen is not None:
        b, g = chosen["b"], chosen["g"]
        i0 = starts[b]
        op = tab.ops[int(cat["op"][coll][order][i0])] if tab.ops else ""
        kind = chosen["kind"]
        if kind == "hang" and ranks.size and np.isin(ranks, missing_dumps).all():
            kind = "missing"
        waited = None                                 # the dump's own time is not in the dump
        culprit = {"kind": kind, "process_group": _pg_doc(tab, g), "collective_seq_id": int(key_seq[b]), "op": op,
                   "input_sizes": [[int(cat["numel_in"][coll][order][i0])]],
                   "ranks": ranks.tolist(), "waiting_ranks": int(n_present[b] - n_done[b]),
                   "waited_s": None if waited is None else round(waited, 3), "hosts": [], "links": []}
        culprit["explanation"] = _explain(culprit, ranks, missing_dumps, timeout_ms)
    mism = [{"process_group": _pg_doc(tab, r["g"]), "collective_seq_id": int(key_seq[r["b"]]),
             "op": tab.ops[int(cat["op"][coll][order][starts[r["b"]]])] if tab.ops else "", "kind": r["kind"],
             "ranks": r["blame"].tolist()[:64]} for r in records[:MAX_MISMATCHES]]
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


def _stragglers(cat, tab, topo_info) -> dict:
    ok = ~cat["p2p"].astype(bool) & (cat["created"] > 0) & (cat["state"] == 3)
    empty = {"process_groups": [], "ranks": [], "hosts": [], "slow": False}
    if not ok.any():
        return empty
    pg, seq, rank = cat["pg"][ok], cat["seq"][ok], cat["rank"][ok]
    created, done = cat["created"][ok], cat["done"][ok]
    key = pg * (1 << 40) + seq
    order = np.argsort(key, kind="stable")
    k, pg, rank, created, done = key[order], pg[order], rank[order], created[order], done[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, k.size])
    first = np.minimum.reduceat(created, starts)
    last = np.maximum.reduceat(created, starts)
    late = (created - np.repeat(first, counts)) / 1e9
    wait = (np.repeat(last, counts) - created) / 1e9
    n_pg = len(tab.pg_name)
    kpg = pg[starts]
    pg_wait = np.bincount(pg, wait, minlength=n_pg)
    pg_n = np.bincount(kpg, minlength=n_pg)
    busy = np.zeros(n_pg)
    if (done > 0).all():
        end = np.maximum.reduceat(done, starts)
        busy = np.bincount(kpg, (end - last) / 1e9, minlength=n_pg)
    excess = np.zeros(n_pg)
    for desc in set(tab.pg_desc):
        sel = np.array([d == desc for d in tab.pg_desc]) & (pg_n > 0)
        if sel.any():
            excess[sel] = busy[sel] - np.median(busy[sel])
    world = int(rank.max()) + 1
    rank_late = np.bincount(rank, late, minlength=world)
    rank_n = np.bincount(rank, minlength=world)
    # the member of each group that is late most often
    pg_slowest = {}
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
    span_s = (created.max() - created.min()) / 1e9 or 1.0
    slow = bool(rank_late.max() > 0.02 * span_s or (excess.max(initial=0) > 0.02 * span_s))
    return {"process_groups": out_pg, "ranks": out_rank, "hosts": out_host, "slow": slow}


def _heatmap(cat, dumped, missing_dumps, topo_info) -> dict:
    """Where each rank stopped: HEATMAP_COLUMNS consecutive record ids ending HEATMAP_AFTER_STOP past the earliest
    stop (the least advanced dumped rank's last entry), so a rank that stopped behind its peers is seen stopping, not
    a window of the last records that it never reached; per host past MAX_HEATMAP_ROWS ranks."""
    ranks = np.union1d(dumped, missing_dumps)
    R = int(ranks.max()) + 1 if ranks.size else 0
    rid = cat["record_id"]
    last_started = np.full(R, -1, np.int64)
    last_done = np.full(R, -1, np.int64)
    np.maximum.at(last_started, cat["rank"], rid)
    d = cat["state"] == 3
    np.maximum.at(last_done, cat["rank"][d], rid[d])
    first, top = int(rid.min(initial=0)), int(rid.max(initial=0))
    stop = int(last_started[dumped].min(initial=top)) if dumped.size else top
    hi = min(top, max(stop, first) + HEATMAP_AFTER_STOP)
    lo = max(first, hi - HEATMAP_COLUMNS + 1)
    hi = min(top, lo + HEATMAP_COLUMNS - 1)
    cols = hi - lo + 1 if rid.size else 0
    grid = np.zeros((R, cols), np.int8)
    sel = (rid >= lo) & (rid <= hi)
    grid[cat["rank"][sel], rid[sel] - lo] = cat["state"][sel]
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
    from sim.flight_recorder import _topology
    from sim.names import host_names
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
        from sim.placement import place
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
