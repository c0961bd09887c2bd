"""Flight recorder analysis: names the culprit in a folder of per-rank dumps (ours or PyTorch's)
(docs/debugging.md, "The analyzer"): the first collective where ranks disagree or stall, the ranks missing from it,
their hosts and the links on their paths; a straggler ranking of process groups, ranks and hosts; a heatmap of
where each rank stopped.

Rules. Entries of one process group with one ``collective_seq_id`` are one collective. A collective *disagrees*
(desync) when its members recorded different ops, sizes or dtypes: the ranks off the majority are blamed. It is
*stalled* when a member entered it and it never completed: the members with no entry for it are missing; a
missing rank that is not itself waiting in another collective (its last entry completed), or that left no dump (its
process is gone), is the culprit; when every missing rank waits elsewhere the earliest stall is reported. Without
a stall or disagreement, the straggler ranking says who is slow: per collective, a rank is late by its arrival
(``time_created_ns``) minus the first member's; a group's peers wait the sum of those; a group's excess is its
time from the last arrival to completion above the median of the groups of its kind (a slow link).

Why a module: these rules, apart from reading the files (:mod:`sim.debug.reader`, rank by rank) and accumulating
the collectives (:mod:`sim.debug.cells`); hosts and links come from :mod:`sim.debug.cluster`.
"""
from __future__ import annotations

import time

import numpy as np

from sim.core.progress import silent
from sim.debug.cells import Cells, Kept
from sim.debug.cluster import culprit_where, rank_placement
from sim.debug.reader import Buffers, Tables, dump_files, own_columns, read_dump
from sim.debug.writer import rank_records

MAX_HEATMAP_ROWS = 1024
HEATMAP_COLUMNS = 64
HEATMAP_AFTER_STOP = 16       # columns the heatmap shows past the earliest stop (what the ranks ahead went on to do)
TOP = 10
MAX_MISMATCHES = 20


def analyze(folder, cluster=None, progress=None) -> dict:
    """The analysis of the dumps in ``folder`` as a JSON-ready dict (schema: docs/debugging.md). ``cluster``: a
    :class:`sim.fabric.topology.Topology`, a preset name or a spec path, to name hosts and links (None: ranks only)."""
    folder = str(folder)
    files = dump_files(folder)
    tab = Tables()
    bufs = Buffers()
    columns = ((rank, path, read_dump(path, rank, tab, bufs)) for rank, path in files)
    return _analyze(columns, len(files), tab, cluster, folder, None, progress)


def analyze_dumpset(ds, cluster=None, progress=None) -> dict:
    """The analysis of the dumps the :class:`sim.debug.writer.DumpSet` ``ds`` is made of, taken from the writer's
    records as they are made (:func:`sim.debug.writer.rank_records`, :func:`sim.debug.reader.own_columns`): what
    :func:`analyze` gives for the folder :func:`sim.debug.writer.write_dumps` would write, without writing or
    reading it."""
    tab = Tables()

    shared = {}                                 # per stage layout: its memo's lookup tables

    def columns():
        for rank, lay, _sd, _j, raw in rank_records(ds):
            groups = lay.groups(ds, rank)
            yield rank, f"rank {rank}'s dump", own_columns(groups, lay.memo(groups), raw.view(lay.dt), tab,
                                                           shared.setdefault(id(lay), {}))
    n = int((~ds.dead).sum())
    return _analyze(columns(), n, tab, cluster, None, (ds.gpus, ds.cluster, ds.cluster_gpus), progress)


def _analyze(columns, n_files: int, tab, cluster, folder, placement, progress) -> dict:
    """The analysis of ``columns`` ((rank, its file's name, its columns) by rank); progress 0..0.8 as they are
    read, then each step of the matching."""
    t0 = time.perf_counter()
    say = progress or silent
    kept = Kept(tab)
    for i, (rank, path, cols) in enumerate(columns):
        kept.add(rank, cols, path)
        if i % 256 == 255:
            say(0.8 * (i + 1) / n_files, f"{i + 1:,} of {n_files:,} dumps read")
    say(0.8, f"{n_files:,} dumps read; matching collectives across ranks")
    dumped = np.asarray(kept.ranks, np.int64)
    # members of each group: pg_config's, else the ranks seen in it (gloo leaves pg_config empty)
    for g in range(len(tab.pg_name)):
        if tab.pg_members[g] is None:
            tab.pg_members[g] = dumped.copy() if tab.pg_desc[g] == "default_pg" else \
                np.unique(np.asarray(kept.pg_seen.get(g, []), np.int64))
    world = np.unique(np.concatenate([dumped] + [m for m in tab.pg_members if m is not None]))
    missing_dumps = np.setdiff1d(world, dumped)
    topo_info = rank_placement(cluster, folder, world, placement)
    cells = Cells(kept, len(tab.pg_name))
    say(0.84, "collectives laid side by side; looking for the first that stalled or disagrees")
    res = _match(cells, kept, tab, dumped, missing_dumps)
    culprit = res["culprit"]
    if culprit is not None and topo_info is not None:
        culprit["hosts"], culprit["links"] = culprit_where(topo_info, culprit["ranks"])
    say(0.88, "culprit found; ranking the stragglers" if culprit else "no stall; ranking the stragglers")
    strag = _stragglers(cells, kept, tab, topo_info)
    del cells
    say(0.94, "stragglers ranked; drawing the heatmap")
    verdict = culprit["kind"] if culprit else "clean"
    if culprit is None and strag["slow"]:
        verdict = "slow"
    if culprit is None:
        res["mismatches"] = []
    out = {"schema": 1, **({"folder": folder} if folder is not None else {}), "dumps": n_files, "ranks": int(world.size), "version": tab.version,
           "backend": tab.backend or "nccl", "missing_dumps": missing_dumps.tolist(), "verdict": verdict,
           "culprit": culprit, "mismatches": res["mismatches"],
           "stragglers": {k: strag[k] for k in ("process_groups", "ranks", "hosts")},
           "heatmap": _heatmap(kept, dumped, missing_dumps, topo_info),
           "seconds": round(time.perf_counter() - t0, 3)}
    say(1.0, f"verdict: {verdict}")
    return out


def _pg_doc(tab, g) -> dict:
    return {"name": tab.pg_name[g], "desc": tab.pg_desc[g], "size": int(tab.pg_members[g].size)}


def _match(cells: Cells, kept: Kept, tab, dumped, missing_dumps) -> dict:
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


def _stragglers(cells: Cells, kept: Kept, tab, topo_info) -> dict:
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


def _heatmap(kept: Kept, dumped, missing_dumps, topo_info) -> dict:
    """Where each rank stopped (docs/debugging.md, "The heatmap"): on a time axis when the dumps have timestamps
    (:func:`_time_grid`: ranks run different programs, a pipeline stage's record ids are not another's, so only time
    lines them up), else on the record ids (:func:`_record_grid`); per host past MAX_HEATMAP_ROWS ranks."""
    ranks = np.union1d(dumped, missing_dumps)
    R = int(ranks.max()) + 1 if ranks.size else 0
    tail = [np.concatenate(x) if x else np.zeros(0, dt)
            for x, dt in zip(kept.tail, (np.int32, np.int32, np.int8, np.float32, np.float32))]
    last_started = np.full(R, -1, np.int64)
    last_done = np.full(R, -1, np.int64)
    last_started[dumped] = kept.last_started
    last_done[dumped] = kept.last_done
    timed = tail[3].size > 0 and not np.isnan(tail[3]).any() and float(np.ptp(tail[3])) > 0
    grid, axis = _time_grid(tail, dumped, R) if timed else _record_grid(tail, last_started, dumped, R)
    cols = grid.shape[1]
    stopped = axis.pop("stopped_s", None)          # per rank: its last event, s from the earliest stop
    if R <= MAX_HEATMAP_ROWS:
        if stopped is not None:
            axis["stopped_s"] = _seconds(stopped)
        return {"level": "rank", "labels": [str(r) for r in range(R)], "ranks": [[r] for r in range(R)], **axis,
                "state": grid.tolist(), "last_started": last_started.tolist(), "last_completed": last_done.tolist()}
    if topo_info:
        hid = topo_info["rank_host"][:R]
        labels_all = topo_info["hosts"]
    else:
        hid = np.arange(R) // 8
        labels_all = [f"ranks {8 * h}-{8 * h + 7}" for h in range(int(hid.max()) + 1)]
    uniq, inv = np.unique(hid, return_inverse=True)
    if timed:       # a host's cell: its most advanced state (a rank idle among waiting peers stands out)
        agg = np.zeros((uniq.size, cols), np.int8)
        np.maximum.at(agg, inv, grid)
    else:           # its least advanced rank
        agg = np.full((uniq.size, cols), 127, np.int8)
        np.minimum.at(agg, inv, grid)
    if stopped is not None:                    # a host's: its earliest stop
        host_stop = np.full(uniq.size, np.inf)
        np.minimum.at(host_stop, inv, np.where(np.isfinite(stopped), stopped, np.inf))
        axis["stopped_s"] = _seconds(host_stop)
    ls = np.full(uniq.size, np.iinfo(np.int64).max)
    lc = np.full(uniq.size, np.iinfo(np.int64).max)
    np.minimum.at(ls, inv, last_started)
    np.minimum.at(lc, inv, last_done)
    members = [[] for _ in uniq]
    for r, h in enumerate(inv.tolist()):
        members[h].append(r)
    return {"level": "host", "labels": [labels_all[h] for h in uniq.tolist()], "ranks": members, **axis,
            "state": agg.tolist(), "last_started": ls.tolist(), "last_completed": lc.tolist()}


def _record_grid(tail, last_started, dumped, R):
    """HEATMAP_COLUMNS consecutive record ids ending HEATMAP_AFTER_STOP past the earliest stop (the least advanced
    dumped rank's last entry), so a rank that stopped behind its peers is seen stopping, not a window of the last
    records that it never reached. Built from the last HEATMAP_KEPT entries of each rank (the streamed read keeps no
    more): a rank more than that ahead of the stop shows no cells there. For dumps without timestamps (gloo's)."""
    t_rank, t_rid, t_state = tail[:3]
    first, top = int(t_rid.min(initial=0)), int(t_rid.max(initial=0))
    stop = int(last_started[dumped].min(initial=top)) if dumped.size else top
    hi = min(top, max(stop, first) + HEATMAP_AFTER_STOP)
    lo = max(first, hi - HEATMAP_COLUMNS + 1)
    hi = min(top, lo + HEATMAP_COLUMNS - 1)
    cols = hi - lo + 1 if t_rid.size else 0
    grid = np.zeros((R, cols), np.int8)
    sel = (t_rid >= lo) & (t_rid <= hi)
    grid[t_rank[sel], t_rid[sel] - lo] = t_state[sel]
    return grid, {"axis": "record", "record_ids": list(range(lo, hi + 1)) if cols else []}


def _time_grid(tail, dumped, R):
    """HEATMAP_COLUMNS instants from a little before the earliest stop (the dumped rank whose last event is
    earliest) to the last event of any rank, as far back as the kept entries of 99 % of the ranks reach; a rank's
    cell at an instant is the state of its latest entry created by then: completed (done by then: computing, or idle
    for good after its last entry), started (in a collective, or waiting in one that never completes), scheduled;
    absent before its kept entries or without a dump. Column times in seconds from the earliest stop."""
    t_rank, _, t_state, created, done = tail
    t_rank = t_rank.astype(np.int64)
    event = np.fmax(created, done).astype(np.float64)
    last = np.full(R, -np.inf)
    np.maximum.at(last, t_rank, event)
    first = np.full(R, np.inf)
    np.minimum.at(first, t_rank, created.astype(np.float64))
    hi = float(event.max())
    stop = float(last[dumped].min())
    lo = max(stop - (hi - stop) / 3, float(np.quantile(first[dumped], 0.99)))
    if hi - lo <= 0:
        lo = hi - 1e-3
    ends = lo + (hi - lo) * np.arange(1, HEATMAP_COLUMNS + 1) / HEATMAP_COLUMNS
    width = hi - lo + 1.0
    key = t_rank * (hi - float(created.min()) + 2 * width) + (created.astype(np.float64) - float(created.min()))
    order = np.argsort(key, kind="stable") if (np.diff(key) < 0).any() else None
    if order is not None:
        key, t_rank, t_state, done = key[order], t_rank[order], t_state[order], done[order]
    scale = hi - float(created.min()) + 2 * width
    q = np.arange(R)[:, None] * scale + (ends[None, :] - float(created.min()))
    j = np.searchsorted(key, q.ravel(), "right") - 1
    ok = (j >= 0) & (t_rank[np.maximum(j, 0)] == np.repeat(np.arange(R), HEATMAP_COLUMNS))
    j = np.maximum(j, 0)
    st, dn, at = t_state[j], done[j].astype(np.float64), np.tile(ends, R)
    cell = np.where(st == 3, np.where(np.isnan(dn) | (dn <= at), 3, 2), st)
    grid = np.where(ok, cell, 0).astype(np.int8).reshape(R, HEATMAP_COLUMNS)
    return grid, {"axis": "time", "times_s": [round(float(t - stop), 6) for t in ends], "stopped_s": last - stop}


def _seconds(a) -> list:
    """Seconds as JSON: rounded to the microsecond, None where unknown (no dump)."""
    return [round(x, 6) if np.isfinite(x) else None for x in np.asarray(a, np.float64).tolist()]
