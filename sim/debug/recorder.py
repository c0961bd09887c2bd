"""Flight recorder rehearsal: the collectives of a simulated 4D job as PyTorch's NCCL flight recorder records them,
with a fault injected, and the per-rank dumps the watchdog writes (docs/debugging.md).

Why a module: it ties the rehearsal's parts into one result (:class:`Rehearsal`): the fault
(:mod:`sim.debug.faults`), the per-rank programs (:mod:`sim.debug.programs`), their timing (:mod:`sim.debug.timing`)
and the dump writer (:mod:`sim.debug.writer`, format in :mod:`sim.debug.dumpformat`); :mod:`sim.debug.analyze`
reads the dumps back.

Faults (``inject``): ``hang`` a rank never enters its ``op``-th collective of the last step; ``desync`` it enters
a different collective or size there (the collective never completes); ``host`` every rank of the host stops
there and writes no dump (the processes are gone); ``slow`` a rank's compute is ``factor`` times slower; ``link`` a
backend link's capacity is divided by ``factor`` (``inf``: the link fails and routing avoids it) and the job is
solved again. A hang fires the watchdog ``timeout_s`` after the first collective stalled and every live rank dumps
its ring (the last ``entries`` records); without a hang the dump is taken on demand at the end of the last step.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import ParamError
from sim.core.progress import span, silent
from sim.debug.cluster import load_cluster
from sim.debug.dumpsize import check_dump_bytes
from sim.debug.faults import Fault, fault_op_error, parse_fault, resolve_fault
from sim.debug.programs import DIM_NAMES, stage_program
from sim.debug.timing import group_units, place_ranks, simulate
from sim.debug.writer import write_dumps
from sim.jobs.layout import DIMS, check_job, model_of, on_gpu, parse_order, rank_grid, resolve_job
from sim.jobs.step import compute_times

EPOCH_NS = 1_700_000_000 * 10**9      # the simulated job's clock starts here (2023-11-14), ns since the Unix epoch


def check_debug(v: dict) -> None:
    """Rules of :data:`sim.debug.params.DEBUG` across fields: the job's (:func:`sim.jobs.job.check_job`), the dumps'
    size (:func:`sim.debug.dumpsize.check_dump_bytes`), ``steps`` at most what fills the ring (:func:`ring_steps`:
    more would fall out of every ring) and the fault's: it parses, its rank is a rank of the job, its op a collective
    of a step on the rank's stage."""
    check_job(v)
    if v["schedule"] != "1f1b":
        raise ParamError("schedule", "the rehearsal models the 1f1b schedule only")
    check_dump_bytes(v)                                 # check_job filled gpus and dp
    if v.get("steps") is not None and v["gpus"] > 1:
        p = resolve_job(v)
        lengths = [len(stage_program(model_of(p), p, s, {"per_stage": [0.0] * p["pp"]})) for s in range(p["pp"])]
        fill = ring_steps(v["entries"], min(lengths))
        if v["steps"] > fill:
            raise ParamError("steps", f"{v['steps']:,} steps, at most {fill:,} with {v['entries']:,} entries (the "
                                      f"shortest stage records {min(lengths):,} per step): more steps than fill the "
                                      f"ring add nothing the dumps hold (steps_before sets where the job is)")
    f = parse_fault(v.get("inject"))
    if f.rank >= v["gpus"]:
        raise ParamError("inject", f"rank {f.rank:,} is not a rank of the job (0..{v['gpus'] - 1:,})")
    if f.op is not None and f.rank >= 0 and v["gpus"] > 1:
        p = resolve_job(v)
        stage = int(np.argwhere(rank_grid({d: p[d] for d in DIMS}, parse_order(p["order"])) == f.rank)[0][1])
        n = len(stage_program(model_of(p), p, stage, {"per_stage": [0.0] * p["pp"]}))   # times do not count
        if f.op >= n:
            raise fault_op_error(f.op, f.rank, n)


def ring_steps(entries: int, per_step: int) -> int:
    """The steps a rehearsal runs by default (``steps`` null): enough that the shortest stage's ring of ``entries``
    wraps (its ``per_step`` entries a step), so every rank's dump is a full ring, as mid-run."""
    return max(1, math.ceil(entries / per_step) + 1)


@dataclass
class Rehearsal:
    """A simulated job's flight recorder state at the dump: ``write_dumps(folder, progress=None)`` -> list of paths;
    ``to_dict()`` -> a JSON summary (job, fault, dump time, where it was injected)."""

    params: dict
    fault: Fault
    stages: list
    gpus: np.ndarray
    pg_names: dict                     # (dim, group index) -> global pg name
    rank_group: dict                   # dim -> (R,) group index of every rank
    group_ranks: dict                  # dim -> (groups, size) ranks
    dump_time: float                   # s from the window's start
    t0_ns: int
    dead: np.ndarray                   # (R,) bool: no dump (host died)
    fault_op: dict = field(default_factory=dict)
    step_time: float = 0.0
    seconds: float = 0.0
    cluster: str = ""
    host_names: list = None
    cluster_gpus: int = 0              # the cluster's GPUs (the placement file names the cluster: the analyzer checks)

    # -------------------------------------------------------------------------------------------- summary
    def to_dict(self) -> dict:
        p = self.params
        return {"cluster": self.cluster, "gpus": int(self.gpus.size),
                "layout": {d: p[d] for d in DIM_NAMES} | {"order": p["order"], "micro_batches": p["micro_batches"],
                                                          "model": p["model"]},
                "fault": self.fault.to_dict() | self.fault_op, "entries": p["entries"], "timeout_s": p["timeout_s"],
                "step_time": self.step_time, "dump_time_s": self.dump_time,
                "dumps": int((~self.dead).sum()), "dead_ranks": np.flatnonzero(self.dead).tolist()[:64],
                "hung": bool(math.isfinite(self.dump_time) and self.fault.kind in ("hang", "desync", "host")),
                "seconds": round(self.seconds, 3)}
    def write_dumps(self, folder, progress=None) -> list:
        """One file per live rank, ``<folder>/nccl_trace_rank_<rank>``; returns their paths
        (:func:`sim.debug.writer.write_dumps`)."""
        return write_dumps(self, folder, progress)


def rehearse(cluster_or_spec, values: dict, progress=None) -> Rehearsal:
    """Simulate the job of ``values`` (validated by :data:`sim.debug.params.DEBUG`) on ``cluster_or_spec`` (a
    :class:`sim.fabric.topology.Topology`, a preset name or a spec path) with the fault ``values['inject']`` (item
    names it gives resolved on the cluster, :func:`sim.debug.faults.resolve_fault`)."""
    t0 = time.perf_counter()
    say = progress or silent
    topo, cluster = load_cluster(cluster_or_spec)
    p = resolve_job(on_gpu(topo, values))
    model = model_of(p)
    gpus = place_ranks(topo, p)
    fault = resolve_fault(parse_fault(p["inject"]), topo, gpus)
    say(0.02, f"placed {gpus.size:,} ranks; solving every group's transfers")
    units, _, _ = group_units(topo, gpus, p, fault, span(progress, 0.02, 0.5))
    ct = compute_times(model, p)
    grid = rank_grid({d: p[d] for d in DIMS}, parse_order(p["order"]))          # (dp, pp, cp, tp)
    R = gpus.size
    rank_group, group_ranks, pg_names = {}, {}, {}
    name = 1                                                                      # "0" is the default group
    for d in DIM_NAMES:
        g, _, _ = units[d]
        group_ranks[d] = g
        rg = np.empty(R, np.int64)
        rg[g.ravel()] = np.repeat(np.arange(g.shape[0]), g.shape[1])
        rank_group[d] = rg
        if g.shape[1] > 1:
            for i in range(g.shape[0]):
                pg_names[(d, i)] = str(name)
                name += 1
    programs = [stage_program(model, p, s, ct) for s in range(p["pp"])]
    per_step = min(len(pr) for pr in programs)
    steps = ring_steps(p["entries"], per_step) if p.get("steps") is None else p["steps"]
    host = np.asarray(topo.gpu_host)[gpus]
    say(0.55, f"{steps} steps of {per_step:,}..{max(len(x) for x in programs):,} collectives per rank; timing them")
    stages, fault_op, dead = simulate(p, programs, steps, grid, units, fault, host, span(progress, 0.55, 0.98))
    ends = [np.where(np.isfinite(s.done), s.done, -np.inf).max() for s in stages]
    stalled = [s.enter[np.isfinite(s.enter) & ~np.isfinite(s.done)] for s in stages]
    first_stall = min((float(x.min()) for x in stalled if x.size), default=math.inf)
    if math.isfinite(first_stall):
        dump_time = first_stall + p["timeout_s"]
    else:
        dump_time = max(ends)
    step_time = max(ends) / steps if not math.isfinite(first_stall) else math.nan
    if not math.isfinite(step_time):
        s0 = stages[0]
        fin = s0.done[s0.step_of == 0]
        step_time = float(np.max(fin[np.isfinite(fin)])) if np.isfinite(fin).any() else 0.0
    if "index" in fault_op and fault_op["entry"] not in ("send", "recv"):
        st, at = stages[fault_op["stage"]], fault_op.pop("index")
        d = DIM_NAMES.index(fault_op["dim"])
        base = p["steps_before"] * sum(1 for o in programs[st.stage] if o.dim == d and o.op < 3)
        gi = int(rank_group[fault_op["dim"]][fault.rank])
        fault_op.update(process_group=pg_names[(fault_op["dim"], gi)], collective_seq_id=int(st.seq_coll[at]) + base)
    fault_op.pop("index", None)
    out = Rehearsal(params=p, fault=fault, stages=stages, gpus=gpus, pg_names=pg_names, rank_group=rank_group,
                    group_ranks=group_ranks, dump_time=float(dump_time),
                    t0_ns=EPOCH_NS + int(p["steps_before"] * step_time * 1e9), dead=dead, fault_op=fault_op,
                    step_time=float(step_time), cluster=cluster, cluster_gpus=int(topo.n_gpus))
    out.seconds = time.perf_counter() - t0
    why = "watchdog timeout" if math.isfinite(first_stall) else "on demand"
    say(1.0, f"dump at {dump_time:.1f} s of the window ({why})")
    return out
