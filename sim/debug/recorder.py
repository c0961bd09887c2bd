"""Flight recorder rehearsal: the collectives of a simulated 4D job as PyTorch's NCCL flight recorder records them,
with a fault injected, and the per-rank dumps the watchdog writes (docs/debugging.md).

Model. Every rank runs its pipeline stage's 1F1B program of one step (:func:`stage_program`): per micro-batch the
TP (and CP) collectives of each layer forward and backward, the PP sends and receives between neighbouring stages,
and per step the FSDP all-gathers and reduce-scatters of each layer (DP). Times come from the job model
(:mod:`sim.jobs.job`): compute between two collectives from :func:`sim.jobs.job.compute_times`, a collective's duration from
:func:`sim.jobs.job.collective_time` with the fabric's seconds per byte of *its own group* (one max-min solve of every
group's transfers on the cluster). A rank enters a collective when its previous one completed plus the compute in
between; a collective completes when its last member entered plus its duration (a receive: when the sender entered
its send). All ranks of a stage are numpy arrays (dp, cp, tp); only the op loop is Python.

Faults (``inject``): ``hang`` a rank never enters its ``op``-th collective of the last step; ``desync`` it enters
a different collective or size there (the collective never completes); ``host`` every rank of the host stops
there and writes no dump (the processes are gone); ``slow`` a rank's compute is ``factor`` times slower; ``link`` a
backend link's capacity is divided by ``factor`` (``inf``: the link fails and routing avoids it) and the job is
solved again. A hang fires the watchdog ``timeout_s`` after the first collective stalled and every live rank dumps
its ring (the last ``entries`` records); without a hang the dump is taken on demand at the end of the last step.

Dump format: the dict ``torch._C._distributed_c10d._dump_nccl_trace`` pickles (FlightRecorder::dump_dict, version
``2.10``): ``version``, ``comm_lib_version``, ``pg_config`` (per group: name, desc, ranks), ``pg_status``,
``entries`` (record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id, op_id, profiling_name,
time_created_ns, input/output sizes and dtypes, state, time_discovered_started/completed_ns, retired, timeout_ms,
is_p2p, frames) [S32, S33]. File names: ``nccl_trace_rank_<rank>`` (TORCH_NCCL_DEBUG_INFO_TEMP_FILE's default
prefix). The writer emits the pickle opcodes itself, every entry in one fixed-size layout (numpy records), so 16k
ranks x 2,000 entries are written in seconds; :mod:`sim.debug.analyze` reads that layout back without unpickling each
entry, and any other dump (PyTorch's own) with :func:`pickle.load`. An extra key ``twin_memo`` holds the strings the
entries refer to.
"""
from __future__ import annotations

import math
import os
import struct
import time
from copy import copy
from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import ParamError, UsageError
from sim.core.progress import silent, span

DUMP_PREFIX = "nccl_trace_rank_"      # PyTorch's TORCH_NCCL_DEBUG_INFO_TEMP_FILE default, /tmp/nccl_trace_rank_ [S32]
FR_VERSION = "2.10"                   # FlightRecorder's version_val in PyTorch 2.13 [S33]
NCCL_VERSION = "2.27.5"               # comm_lib_version written in the dumps (the NCCL PyTorch 2.13 ships)
FAULTS = ("hang", "desync", "slow", "link", "host")
EPOCH_NS = 1_700_000_000 * 10**9      # the simulated job's clock starts here (2023-11-14), ns since the Unix epoch
THREAD_NAME = "pt_nccl_watchdg"
DTYPES = {2: "BFloat16", 4: "Float"}
STATES = ("scheduled", "started", "completed")
DIM_NAMES = ("tp", "cp", "pp", "dp")
OPS = ("all_gather", "reduce_scatter", "all_reduce", "send", "recv")
KIND_OP = {"allgather": "all_gather", "reducescatter": "reduce_scatter", "allreduce": "all_reduce"}
ENTRY_KEYS = ("record_id", "pg_id", "process_group", "thread_name", "thread_id", "collective_seq_id", "p2p_seq_id",
              "op_id", "profiling_name", "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
              "output_dtypes", "state", "time_discovered_started_ns", "time_discovered_completed_ns", "retired",
              "timeout_ms", "is_p2p", "frames")
LAYOUT_TAG = "cluster-twin fr layout 1"


# ------------------------------------------------------------------------------------------------ the fault
@dataclass(frozen=True)
class Fault:
    kind: str                         # one of FAULTS, or "none"
    rank: int = -1
    op: int | None = None             # index into the rank's last-step program (None: its middle)
    what: str = "size"                # desync: size or op
    factor: float = 1.0               # slow / link
    link: int = -1

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        if self.kind in ("hang", "desync", "slow", "host"):
            d["rank"] = self.rank
        if self.kind in ("hang", "desync", "host"):
            d["op"] = self.op
        if self.kind == "desync":
            d["what"] = self.what
        if self.kind in ("slow", "link"):
            d["factor"] = self.factor if math.isfinite(self.factor) else "inf"
        if self.kind == "link":
            d["link"] = self.link
        return d


def parse_fault(text: str | None) -> Fault:
    """``kind:key=value,...`` (see :data:`sim.debug.params.DEBUG`'s ``inject``); ParamError naming ``inject``."""
    if text is None or not text.strip() or text.strip().lower() == "none":
        return Fault("none")
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind not in FAULTS:
        raise ParamError("inject", f"unknown fault {kind!r}: choose one of {', '.join(FAULTS)}")
    args = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        k, eq, v = part.partition("=")
        if not eq:
            raise ParamError("inject", f"{part!r} is not key=value")
        args[k.strip().lower()] = v.strip()
    allowed = {"hang": {"rank", "op"}, "desync": {"rank", "op", "what"}, "host": {"rank", "op"},
               "slow": {"rank", "factor"}, "link": {"id", "factor"}}[kind]
    extra = set(args) - allowed
    if extra:
        raise ParamError("inject", f"{kind} takes {', '.join(sorted(allowed))}, not {', '.join(sorted(extra))}")

    def whole(name, required=True):
        if name not in args:
            if required:
                raise ParamError("inject", f"{kind} needs {name}=N")
            return None
        if not args[name].isdigit():
            raise ParamError("inject", f"{name} must be a whole number, got {args[name]!r}")
        return int(args[name])

    def factor():
        try:
            f = float(args.get("factor", "2" if kind == "slow" else "4"))
        except ValueError:
            raise ParamError("inject", f"factor must be a number, got {args['factor']!r}") from None
        if not f > 1.0:
            raise ParamError("inject", "factor must be above 1 (how many times slower)")
        if kind == "slow" and not math.isfinite(f):
            raise ParamError("inject", "a slow GPU needs a finite factor (a GPU that stops is a hang)")
        return f

    if kind == "link":
        return Fault("link", link=whole("id"), factor=factor())
    if kind == "slow":
        return Fault("slow", rank=whole("rank"), factor=factor())
    what = args.get("what", "size")
    if what not in ("size", "op"):
        raise ParamError("inject", f"what must be size or op, got {what!r}")
    return Fault(kind, rank=whole("rank"), op=whole("op", required=False), what=what)


def check_debug(v: dict) -> None:
    """Rules of :data:`sim.debug.params.DEBUG` across fields: the job's (:func:`sim.jobs.job.check_job`) and the fault's."""
    from sim.jobs.layout import check_job
    check_job(v)
    if v["schedule"] != "1f1b":
        raise ParamError("schedule", "the rehearsal models the 1f1b schedule only")
    f = parse_fault(v.get("inject"))
    if f.rank >= v["gpus"]:
        raise ParamError("inject", f"rank {f.rank:,} is not a rank of the job (0..{v['gpus'] - 1:,})")


# ------------------------------------------------------------------------------------------------ the program
@dataclass
class Op:
    """One flight recorder entry of a stage's program: ``dim`` index in DIM_NAMES, ``op`` in OPS, ``numel_in`` /
    ``numel_out`` per rank, element bytes, compute before it (s), duration key, p2p peer offset (+1/-1), the key
    matching a send with its receive."""

    dim: int
    op: int
    numel_in: int
    numel_out: int
    elem: int
    compute: float
    size: float                       # bytes for the duration model
    kind: str                         # sim.jobs.job collective kind
    peer: int = 0
    key: tuple = ()


def stage_program(model, p: dict, stage: int, ct: dict) -> list[Op]:
    """The ordered entries of one step on pipeline stage ``stage`` under 1F1B (warm-up forwards, one forward one
    backward, cool-down backwards); see the module docstring."""
    from sim.jobs.step import message_sizes
    from sim.jobs.models import stage_layers
    tp, cp, pp, dp = p["tp"], p["cp"], p["pp"], p["dp"]
    m = p["micro_batches"]
    L = stage_layers(model.layers, pp, 1)[stage]
    sizes = message_sizes(model, p)
    per_layer = (4 + 2 * int(p["recompute_on"]))
    slot = ct["per_stage"][stage]
    fwd_c, bwd_c = slot / 3.0, 2 * slot / 3.0
    if p["recompute_on"]:
        fwd_c, bwd_c = slot / 4.0, 3 * slot / 4.0

    def coll(dim, kind, size, elem, compute, n):
        op = KIND_OP[kind]
        numel = max(1, int(size // elem))
        per_rank = max(1, numel // n)
        i, o = {"all_gather": (per_rank, per_rank * n), "reduce_scatter": (per_rank * n, per_rank),
                "all_reduce": (numel, numel)}[op]
        return Op(dim, OPS.index(op), i, o, elem, compute, float(size), kind)

    def layer_ops(forward: bool) -> list[Op]:
        out = []
        c_total = fwd_c if forward else bwd_c
        n_ops = L * ((per_layer // 2 if forward else per_layer - per_layer // 2) + (1 if cp > 1 else 0)) if tp > 1 \
            else L * (1 if cp > 1 else 0)
        gap = c_total / max(n_ops, 1)
        for _ in range(L):
            if cp > 1:
                what = sizes["cp"][0] if forward else sizes["cp"][1]
                out.append(coll(1, what[3], what[1], 2, gap, cp))
            if tp > 1:
                k = per_layer // 2 if forward else per_layer - per_layer // 2
                act = sizes["tp"][0][1]
                for j in range(k):
                    out.append(coll(0, "allgather" if j % 2 == 0 else "reducescatter", act, 2, gap, tp))
        rest = 0.0 if out else c_total
        return out, rest

    def p2p(kind, key, peer):
        act = sizes["pp"][0][1] if pp > 1 else 0.0
        n = max(1, int(act // 2))
        return Op(2, OPS.index(kind), n, n, 2, 0.0, float(act), "send", peer=peer, key=key)

    def forward(i):
        ops = [p2p("recv", ("f", i), -1)] if stage > 0 else []
        body, rest = layer_ops(True)
        ops += body
        if stage < pp - 1:
            ops.append(p2p("send", ("f", i), +1))
            ops[-1].compute = rest
        elif body == [] and rest:
            pass
        return ops, rest

    def backward(i):
        ops = [p2p("recv", ("b", i), +1)] if stage < pp - 1 else []
        body, rest = layer_ops(False)
        ops += body
        if stage > 0:
            ops.append(p2p("send", ("b", i), -1))
            ops[-1].compute = rest
        return ops, rest

    prog: list[Op] = []
    carry = 0.0
    if dp > 1:                                        # FSDP: each layer's weights gathered once per step
        w = sizes["dp"][0]
        for _ in range(L):
            prog.append(coll(3, w[3], w[1] / L, 2, 0.0, dp))
    warm = min(pp - stage - 1, m)
    order = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        order += [("F", warm + i), ("B", i)]
    order += [("B", i) for i in range(m - warm, m)]
    for what, i in order:
        ops, rest = forward(i) if what == "F" else backward(i)
        if ops:
            ops[0].compute += carry
            carry = 0.0
            if not any(o.op == OPS.index("send") for o in ops[-1:]):
                carry = rest
        else:
            carry += rest
        prog += ops
    if dp > 1:                                        # gradients reduce-scattered per layer after the backward
        g = sizes["dp"][-1]
        for j in range(L):
            prog.append(coll(3, g[3], g[1] / L, 4 if "FP32" in g[0] else 2, carry if j == 0 else 0.0, dp))
        carry = 0.0
    if not prog:
        raise UsageError("the job has no collectives (tp, cp, pp and dp are all 1): nothing to record")
    return prog


# ------------------------------------------------------------------------------------------------ timing
def _group_units(topo, gpus, p, fault: Fault, progress):
    """Per dimension: (group index of every rank-position, seconds per byte of each group, alpha of the
    dimension), from one max-min solve of every group's transfers (the link fault applied)."""
    from sim.jobs.job import solve_traffic as _solve
    from sim.jobs.layout import groups_of, parse_order, rank_grid
    from sim.jobs.traffic import JobTraffic, pp_transfers as _pp_transfers, ring_transfers as _ring_transfers
    from sim.core.units import IDX
    sizes = {d: p[d] for d in DIM_NAMES}
    grid = rank_grid(sizes, parse_order(p["order"]))
    parts, steps, ranks, groups = [], {}, {}, {}
    for t, d in enumerate(DIM_NAMES):
        g = groups_of(grid, d)
        ranks[d] = g.shape[1]
        if d == "pp":
            src, dst, share, chan, grp = _pp_transfers(gpus[g], False)
            steps[d] = 1
        else:
            src, dst, share, chan, grp, steps[d] = _ring_transfers(gpus[g], np.asarray(topo.gpu_host),
                                                                   topo.nic_bandwidth)
        parts.append((src, dst, share, chan, np.full(src.size, t, IDX), grp))
        groups[d] = g
    cat = [np.concatenate([q[j] for q in parts]) for j in range(6)]
    traffic = JobTraffic(*cat[:5], steps=steps, ranks=ranks)
    if fault.kind == "link":
        topo = _with_link_fault(topo, fault)
    try:
        res, job, tag, units, alphas, _ = _solve(topo, [traffic], p, progress)
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


def _with_link_fault(topo, fault: Fault):
    """A copy of ``topo`` with the cable of directed link ``fault.link`` slower by ``fault.factor`` (both
    directions), or failed (``inf``: the topology rebuilt without it, so routing avoids it)."""
    if not 0 <= fault.link < topo.n_links:
        raise UsageError(f"inject: link {fault.link} is not a backend link of the cluster (0..{topo.n_links - 1})")
    cable = fault.link % topo.n_cables
    if math.isfinite(fault.factor):
        t = copy(topo)
        cap = np.array(topo.link_capacity, dtype=np.float64)
        cap[[cable, cable + topo.n_cables]] /= fault.factor
        t.link_capacity = cap
        t.cache = {}
        return t
    from sim.fabric.layout import STATUS_FAILED
    from sim.fabric.topology import topology_from_layout
    lay = copy(topo.layout)
    lay.link_status = np.array(lay.link_status).copy()
    lay.link_status[int(topo.link_cable[cable])] = STATUS_FAILED
    return topology_from_layout(lay, hop_latency=topo.hop_latency)


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
    seq_coll: np.ndarray               # (n_ops,) collective_seq_id of the op's group (per rank the same)
    seq_p2p: np.ndarray                # (n_ops,) p2p_seq_id
    desync: np.ndarray = None          # (n_ops, n) bool: the rank entered something else


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

    # -------------------------------------------------------------------------------------------- dumps
    def write_dumps(self, folder, progress=None) -> list:
        """One file per live rank, ``<folder>/nccl_trace_rank_<rank>``; returns their paths."""
        say = progress or silent
        os.makedirs(folder, exist_ok=True)
        paths = []
        R = self.gpus.size
        done = 0
        pg_config = {}                                                 # (dim, group) -> its pg_config bytes
        for st in self.stages:
            for rank, *parts in _stage_dumps(self, st, pg_config):
                path = os.path.join(folder, f"{DUMP_PREFIX}{rank}")
                with open(path, "wb") as f:
                    for part in parts:
                        f.write(part)
                paths.append(path)
                done += 1
                if done % 256 == 0:
                    say(done / R, f"{done:,} of {R:,} dumps written")
        import json
        from sim.debug.analyze import PLACEMENT_FILE
        with open(os.path.join(folder, PLACEMENT_FILE), "w") as f:       # rank -> GPU, for the analyzer's hosts
            json.dump({"gpus": self.gpus.tolist()}, f)
        say(1.0, f"{len(paths):,} dumps written to {folder}")
        return paths


def rehearse(cluster_or_spec, values: dict, progress=None) -> Rehearsal:
    """Simulate the job of ``values`` (:data:`sim.debug.params.DEBUG`, validated or not) on ``cluster_or_spec`` (a
    :class:`sim.fabric.topology.Topology`, a preset name or a spec path) with the fault ``values['inject']``."""
    from sim.jobs.job import check_usable as _check_usable, place_job as _place
    from sim.jobs.layout import model_of, resolve_job
    from sim.jobs.step import compute_times
    from sim.debug.params import DEBUG
    t0 = time.perf_counter()
    say = progress or silent
    p = DEBUG.validate(dict(values))
    topo, cluster = _topology(cluster_or_spec)
    p = resolve_job(p)
    model = model_of(p)
    fault = parse_fault(p["inject"])
    gpus = _place(topo, p)
    _check_usable(topo, gpus, p["gpus"])
    say(0.02, f"placed {gpus.size:,} ranks; solving every group's transfers")
    units, _, _ = _group_units(topo, gpus, p, fault, span(progress, 0.02, 0.5))
    ct = compute_times(model, p)
    from sim.jobs.layout import DIMS, parse_order, rank_grid
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
    steps = max(1, math.ceil(p["entries"] / per_step) + 1)
    host = np.asarray(topo.gpu_host)[gpus]
    say(0.55, f"{steps} steps of {per_step:,}..{max(len(x) for x in programs):,} collectives per rank; timing them")
    stages, fault_op, dead = _simulate(p, programs, steps, grid, units, fault, host, span(progress, 0.55, 0.98))
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
        per = len(programs[st.stage])
        base = p["steps_before"] * sum(1 for o in programs[st.stage] if o.dim == d and o.op < 3)
        gi = int(rank_group[fault_op["dim"]][fault.rank])
        fault_op.update(process_group=pg_names[(fault_op["dim"], gi)], collective_seq_id=int(st.seq_coll[at]) + base)
    fault_op.pop("index", None)
    out = Rehearsal(params=p, fault=fault, stages=stages, gpus=gpus, pg_names=pg_names, rank_group=rank_group,
                    group_ranks=group_ranks, dump_time=float(dump_time),
                    t0_ns=EPOCH_NS + int(p["steps_before"] * step_time * 1e9), dead=dead, fault_op=fault_op,
                    step_time=float(step_time), cluster=cluster)
    out.seconds = time.perf_counter() - t0
    why = "watchdog timeout" if math.isfinite(first_stall) else "on demand"
    say(1.0, f"dump at {dump_time:.1f} s of the window ({why})")
    return out


def _topology(cluster_or_spec):
    if isinstance(cluster_or_spec, str) or cluster_or_spec is None:
        from sim.fabric.topology import load_topology
        is_file = isinstance(cluster_or_spec, str) and os.path.exists(cluster_or_spec)
        cluster, topo = load_topology(None if is_file else cluster_or_spec, cluster_or_spec if is_file else None)
        return topo, cluster.name
    topo = cluster_or_spec
    name = getattr(getattr(topo.layout, "spec", None), "name", "") if topo.layout is not None else ""
    return topo, name


def _simulate(p, programs, steps, grid, units, fault: Fault, host, progress):
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
            raise ParamError("inject", f"op {k} is past the last collective of a step on rank {fault.rank}'s "
                                       f"stage ({n} collectives: 0..{n - 1})")
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
    from sim.jobs.step import PROTOCOL
    from sim.fabric.nccl_tuning import base_latency
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
            ranks = tr.ranks
            while ptr[s] < len(tr.ops):
                j = ptr[s]
                op = tr.ops[j]
                step = j // len(programs[s])
                if op.op == 4:                                      # recv: needs the sender's entry
                    key = (s + op.peer, step, op.key)
                    if key not in sends:
                        break
                c = counters[s]
                if op.op in (3, 4):
                    c["p2p"] = c.get("p2p", 0) + 1
                else:
                    c[op.dim] = c.get(op.dim, 0) + 1
                tr.seq_coll[j] = c.get(op.dim, 0) if op.op not in (3, 4) else c.get(2, 0)
                tr.seq_p2p[j] = c.get("p2p", 0)
                enter = prev[s] + op.compute * slow[ranks]
                enter = np.where(j >= stop[ranks], np.inf, enter)
                unit, alpha, n = durations[(s, DIM_NAMES[op.dim])]
                if op.op in (3, 4):                                 # one send: bytes at the pair's rate + a step
                    dur = unit * op.size + alpha
                else:                                               # sim.jobs.job.collective_time, per group
                    dur = (2 if op.op == 2 else 1) * (unit * op.size + (n - 1) * alpha) + base
                if op.op == 3:                                      # send: completes on its own (eager)
                    done = enter + dur
                    sends[(s, step, op.key)] = enter
                elif op.op == 4:
                    done = np.maximum(enter, sends.pop((s + op.peer, step, op.key))) + dur
                else:
                    ds = desync_at[ranks] == j
                    tr.desync[j] = ds
                    e = np.where(ds, np.inf, enter).reshape(shape)
                    last = e.max(axis=axis[op.dim], keepdims=True)
                    done = np.broadcast_to(last, shape).ravel() + dur
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


# ------------------------------------------------------------------------------------------------ pickling
def _u(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _i(v: int) -> bytes:
    return b"J" + struct.pack("<i", int(v))


def _get(idx: int) -> bytes:
    return b"h" + bytes([idx])


def _put(idx: int) -> bytes:
    return b"q" + bytes([idx])


LONG8 = b"\x8a\x08"                                                    # LONG1 opcode with 8 bytes: an ns timestamp
# None in the 10 bytes of a LONG1 timestamp: None, then a pushed-and-popped filler int (MARK-free): "NJ" + 8 bytes
_NONE10 = b"N" + b"J\x00\x00\x00\x00" + b"0" + b"K\x00" + b"0"
NONE_FILL = int(np.frombuffer(_NONE10[2:], "<i8")[0])                  # those 8 bytes read as the timestamp field
FIXED_STRINGS = list(ENTRY_KEYS) + list(STATES) + list(DTYPES.values()) + [THREAD_NAME, "1", FR_VERSION,
                                                                         NCCL_VERSION, LAYOUT_TAG]


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
        const(_get(keys_idx[k]))
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


def _ns(t0: int, seconds: np.ndarray) -> np.ndarray:
    """Simulated seconds (finite) -> ns since the Unix epoch."""
    return t0 + (seconds * 1e9).astype(np.int64)


class _StageLayout:
    """What every rank of one stage shares in its dump: the memo (the strings, at the same positions on every rank;
    only the group names differ), the header's constant bytes, and one template record per op of the stage's
    program (every field that does not depend on the rank's times)."""

    def __init__(self, reh: Rehearsal, st: StageTrace):
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
        self.memo_fixed = b"".join(_u(s_) + _put(i) for i, s_ in enumerate(FIXED_STRINGS))
        self.memo_names = b"".join(_u(s_) + _put(self.name_pos[j]) for j, s_ in names.items())
        self.memo_tuples = b"".join(_get(self.group_pos[d]) + _get(self.group_pos[d] + 1) + b"\x86"
                                    + _put(self.tuple_base + k) for k, d in enumerate(self.dims)) \
            + b"]" + _put(self.frames_pos) + b"e"
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
        self.head = b"\x80\x02}(" + _u("twin_memo") + b"](" + self.memo_fixed
        self.middle = (self.memo_names + self.memo_tuples + _u("version") + _get(pos[FR_VERSION])
                       + _u("comm_lib_version") + _get(pos[NCCL_VERSION]) + _u("pg_config") + b"}(")
        self.status_head = b"u" + _u("pg_status") + b"}("
        self.status_keys = [(_u(str(k + 1)) + b"}(" + _u("last_enqueued_collective"), _u("last_started_collective"),
                             _u("last_completed_collective")) for k in range(len(self.dims))]
        self.tail = b"u" + _u("entries") + b"]("

    def header(self, reh: Rehearsal, rank: int, n_present: int, n_done: int, pg_config: dict) -> bytes:
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
                    _u(reh.pg_names[(d, gi)]) + _put(at) + _u(d) + _put(at + 1),
                    _get(at) + b"}(" + _u("name") + _get(at) + _u("desc") + _get(at + 1) + _u("ranks")
                    + _u(str(reh.group_ranks[d][gi].tolist())) + b"u")
            groups.append((d, got))
        out = [self.head]
        out += [memo for _, (memo, _) in groups]
        out.append(self.middle)
        out += [cfg for _, (_, cfg) in groups]
        out.append(self.status_head)                     # per local pg id: last enqueued / started / completed
        for (d, _), (key, started, completed) in zip(groups, self.status_keys):
            last_e = int(self.last_seq[d][n_present])
            out += [key, _i(last_e), started, _i(last_e), completed, _i(int(self.last_seq[d][n_done])), b"u"]
        out.append(self.tail)
        return b"".join(out)


CHUNK_RANKS = 16                       # ranks whose records are built as one (ranks, entries) array


def _stage_dumps(reh: Rehearsal, st: StageTrace, pg_config: dict):
    """(rank, header bytes, records as uint8, tail bytes) of every live rank of one stage. A rank records a prefix
    of its program (its times grow along it), so its dump is the last ``entries`` ops of that prefix: ranks with the
    same prefix share one window of the stage's template, filled with their times in one array operation."""
    p = reh.params
    T = reh.dump_time
    ent = p["entries"]
    lay = _StageLayout(reh, st)
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
            rec["time_discovered_completed_ns_op"] = np.where(comp, LONG8, _NONE10[:2])
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
                yield rank, lay.header(reh, rank, c, int(n_done[col]), pg_config), raw[row], b"eu."
