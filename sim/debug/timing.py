"""The timing of a rehearsal: when every rank enters and completes each collective of its program.

Why a module: the times are the rehearsal's model proper, apart from the programs (:mod:`sim.debug.programs`) and
from how they are written (:mod:`sim.debug.writer`). Compute between two collectives comes from
:func:`sim.jobs.job.compute_times` (through the programs), a collective's duration from the formula of
:func:`sim.jobs.job.collective_time` with the fabric's seconds per byte of *its own group* (one max-min solve of
every group's transfers on the cluster, :func:`group_units`). A rank enters a collective when its previous one
completed plus the compute in between; a collective completes when its last member entered plus its duration (a
receive: when the sender entered its send). All ranks of a stage are numpy arrays (dp, cp, tp); only the op loop is
Python. Faults: a hang stops a rank at its op, a host stops every rank of its host, a desync makes the rank enter
something else there, a slow GPU multiplies its compute, a link fault changes the fabric before the solve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim.core.errors import ParamError, UsageError
from sim.core.units import IDX
from sim.debug.faults import Fault, fault_op_error, with_link_fault
from sim.debug.programs import DIM_NAMES, OPS
from sim.fabric.nccl_tuning import base_latency
from sim.jobs.job import check_usable, place_job, solve_traffic
from sim.jobs.layout import groups_of, parse_order, rank_grid
from sim.jobs.step import PROTOCOL
from sim.jobs.traffic import JobTraffic, pp_transfers, ring_transfers


def place_ranks(topo, p: dict) -> np.ndarray:
    """Rank -> GPU of the job of ``p`` (resolved), as the job model places it; UsageError if unusable."""
    gpus = place_job(topo, p)
    check_usable(topo, gpus, p["gpus"])
    return gpus


def group_units(topo, gpus, p, fault: Fault, progress):
    """Per dimension: (group index of every rank-position, seconds per byte of each group, alpha of the
    dimension), from one max-min solve of every group's transfers (the link fault applied)."""
    sizes = {d: p[d] for d in DIM_NAMES}
    grid = rank_grid(sizes, parse_order(p["order"]))
    parts, steps, ranks, groups = [], {}, {}, {}
    for t, d in enumerate(DIM_NAMES):
        g = groups_of(grid, d)
        ranks[d] = g.shape[1]
        if d == "pp":
            src, dst, share, chan, grp = pp_transfers(gpus[g], False, np.asarray(topo.gpu_host))
            steps[d] = 1
        else:
            src, dst, share, chan, grp, steps[d] = ring_transfers(gpus[g], np.asarray(topo.gpu_host),
                                                                   topo.nic_bandwidth)
        parts.append((src, dst, share, chan, np.full(src.size, t, IDX), grp))
        groups[d] = g
    cat = [np.concatenate([q[j] for q in parts]) for j in range(6)]
    traffic = JobTraffic(*cat[:5], steps=steps, ranks=ranks)
    if fault.kind == "link":
        topo = with_link_fault(topo, fault)
    try:
        res, job, tag, units, alphas, _ = solve_traffic(topo, [traffic], p, progress)
    except ValueError as e:
        raise UsageError(f"inject: with link {fault.link} {'failed' if not math.isfinite(fault.factor) else 'slow'}"
                         f", {e} (a rank cut off: rehearse it as a host fault)") from None
    fl = res.flows
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(res.rates > 0, fl.share / res.rates, np.inf)
    tr = fl.transfer
    out = {}
    for t, d in enumerate(DIM_NAMES):
        n_groups = groups[d].shape[0]
        unit = np.zeros(n_groups)
        sel = tag[tr] == t
        if sel.any():
            np.maximum.at(unit, cat[5][tr[sel]], per[sel])
        unit = unit * steps[d]
        out[d] = (groups[d], unit, alphas[0][d])
    return out, res, topo



@dataclass
class StageTrace:
    """One stage's recorded ops and, per op, per rank of the stage (dp*cp*tp positions, flattened): entry and
    completion times (s from the window's start; inf: never), and the desync marks."""

    stage: int
    ranks: np.ndarray                  # (n,) global ranks of the stage, in (dp, cp, tp) order
    ops: list
    enter: np.ndarray                  # (n_ops, n)
    done: np.ndarray                   # (n_ops, n)
    step_of: np.ndarray                # (n_ops,) step index within the window
    seq_coll: np.ndarray               # (n_ops,) collective_seq_id of the op's group (per rank the same; 0 for P2P)
    seq_p2p: np.ndarray                # (n_ops,) p2p_seq_id: a P2P op's count in its pair of stages (0: collective)
    desync: np.ndarray = None          # (n_ops, n) bool: the rank entered something else



def simulate(p, programs, steps, grid, units, fault: Fault, host, progress):
    """Entry and completion times of every op of every stage over ``steps`` steps (see the module docstring)."""
    pp = p["pp"]
    R = grid.size
    slow = np.ones(R)
    if fault.kind == "slow":
        slow[fault.rank] = fault.factor
    stop = np.full(R, np.iinfo(np.int64).max)          # global op index (per stage) at which the rank stops
    desync_at = np.full(R, -1)
    fault_op = {}
    if fault.kind in ("hang", "desync", "host"):
        s = int(np.argwhere(grid == fault.rank)[0][1])
        n = len(programs[s])
        k = n // 2 if fault.op is None else fault.op
        while fault.kind == "desync" and fault.op is None and k < n - 1 and programs[s][k].op in (3, 4):
            k += 1                                                  # a desync's default: the next collective
        if k >= n:
            raise fault_op_error(k, fault.rank, n)
        at = (steps - 1) * n + k
        op = programs[s][k]
        fault_op = {"op": k, "stage": s, "entry": OPS[op.op], "dim": DIM_NAMES[op.dim], "index": at}
        if fault.kind == "desync":
            if op.op in (3, 4):
                raise ParamError("inject", f"op {k} of stage {s} is a PP {OPS[op.op]}: a desync needs a collective")
            desync_at[fault.rank] = at
        elif fault.kind == "hang":
            stop[fault.rank] = at
        else:
            stop[host == host[fault.rank]] = at
    dead = np.zeros(R, bool)
    if fault.kind == "host":
        dead[host == host[fault.rank]] = True
    stage_ranks = [grid[:, s, :, :] for s in range(pp)]            # (dp, cp, tp)
    shape = stage_ranks[0].shape
    n_pos = stage_ranks[0].size
    # per stage, per dim: each position's group's duration per byte and the dim's alpha
    durations = {}
    for s in range(pp):
        ranks = stage_ranks[s].ravel()
        for d in ("tp", "cp", "dp", "pp"):
            g, unit, alpha = units[d]
            rg = np.empty(R, np.int64)
            rg[g.ravel()] = np.repeat(np.arange(g.shape[0]), g.shape[1])
            durations[(s, d)] = (unit[rg[ranks]], alpha, g.shape[1])
    base = base_latency("ring", PROTOCOL)
    traces = []
    for s in range(pp):
        prog = programs[s] * steps
        n_ops = len(prog)
        traces.append(StageTrace(stage=s, ranks=stage_ranks[s].ravel(), ops=prog,
                                 enter=np.full((n_ops, n_pos), np.inf), done=np.full((n_ops, n_pos), np.inf),
                                 step_of=np.repeat(np.arange(steps), len(programs[s])),
                                 seq_coll=np.zeros(n_ops, np.int64), seq_p2p=np.zeros(n_ops, np.int64),
                                 desync=np.zeros((n_ops, n_pos), bool)))
    axis = {0: 2, 1: 1, 3: 0}                                       # dim -> axis of (dp, cp, tp)
    # Per axis of (dp, cp, tp): the positions of each group along it (a row each) and each position's group, so that
    # a collective's completion (its group's last entry) is two small gathers instead of a broadcast.
    positions = np.arange(n_pos).reshape(shape)
    members = {a: np.moveaxis(positions, a, -1).reshape(-1, shape[a]) for a in range(3)}
    group_of = {}
    for a, m in members.items():
        group_of[a] = np.empty(n_pos, np.int64)
        group_of[a][m.ravel()] = np.repeat(np.arange(m.shape[0]), m.shape[1])
    # Per stage, what the op loop reads for every op, taken once: the ranks' slowness, the op index each stops at
    # (and the first of them), the ops at which a rank desyncs. Programs repeat every step and micro-batch, so an
    # op's durations (per rank of the stage) are computed once per (stage, op kind, dim, size).
    slow_of = [slow[t.ranks] for t in traces]
    stop_of = [stop[t.ranks] for t in traces]
    first_stop = [int(x.min()) for x in stop_of]
    desync_of = [desync_at[t.ranks] for t in traces]
    desync_ops = [set(int(v) for v in x[x >= 0]) for x in desync_of]
    dur_cache = {}

    def duration(s, op):
        key = (s, op.op, op.dim, op.size)
        dur = dur_cache.get(key)
        if dur is None:
            unit, alpha, n = durations[(s, DIM_NAMES[op.dim])]
            if op.op in (3, 4):                                     # one send: bytes at the pair's rate + a step
                dur = unit * op.size + alpha
            else:                                                   # sim.jobs.job.collective_time, per group
                dur = (2 if op.op == 2 else 1) * (unit * op.size + (n - 1) * alpha) + base
            dur_cache[key] = dur
        return dur

    ptr = [0] * pp
    prev = [np.zeros(n_pos) for _ in range(pp)]
    sends = {}
    counters = [{} for _ in range(pp)]
    total = sum(len(t.ops) for t in traces)
    done_ops = 0
    while True:
        moved = False
        for s in range(pp):
            tr = traces[s]
            per_step = len(programs[s])
            c = counters[s]
            while ptr[s] < len(tr.ops):
                j = ptr[s]
                op = tr.ops[j]
                step = j // per_step
                p2p = op.op in (3, 4)
                if op.op == 4:                                      # recv: needs the sender's entry
                    key = (s + op.peer, step, op.key)
                    if key not in sends:
                        break
                if p2p:                                             # per pair of stages (its own group)
                    c[("p2p", op.peer)] = c.get(("p2p", op.peer), 0) + 1
                else:
                    c[op.dim] = c.get(op.dim, 0) + 1
                tr.seq_coll[j] = c.get(op.dim, 0) if not p2p else 0
                tr.seq_p2p[j] = c[("p2p", op.peer)] if p2p else 0
                enter = prev[s] + op.compute * slow_of[s]
                if j >= first_stop[s]:
                    enter = np.where(j >= stop_of[s], np.inf, enter)
                dur = duration(s, op)
                if op.op == 3:                                      # send: completes on its own (eager)
                    done = enter + dur
                    sends[(s, step, op.key)] = enter
                elif op.op == 4:
                    done = np.maximum(enter, sends.pop((s + op.peer, step, op.key))) + dur
                else:
                    e = enter
                    if j in desync_ops[s]:
                        ds = desync_of[s] == j
                        tr.desync[j] = ds
                        e = np.where(ds, np.inf, enter)
                    a = axis[op.dim]
                    done = e[members[a]].max(axis=1)[group_of[a]] + dur
                tr.enter[j] = enter
                tr.done[j] = done
                prev[s] = done
                ptr[s] += 1
                moved = True
                done_ops += 1
                if done_ops % 2048 == 0:
                    progress(done_ops / total, f"{done_ops:,} of {total:,} stage-collectives timed")
        if all(ptr[s] == len(traces[s].ops) for s in range(pp)):
            break
        if not moved:
            raise RuntimeError("pipeline schedule deadlocked (a receive without its send)")
    return traces, fault_op, dead
