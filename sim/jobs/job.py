"""Training jobs on the fabric: one step of a 4D-parallel (TP, CP, PP, DP with FSDP) transformer, from first
principles (docs/jobs.md).

* **Compute**: each layer's kernels (:mod:`sim.jobs.kernels`) on the cluster's GPU (:mod:`sim.jobs.gpu`): GEMMs by
  shape on an efficiency curve, attention at its kernel's efficiency, memory-bound kernels and the optimizer step
  at HBM's achievable bandwidth, a launch gap per kernel, clocks under a power cap.
* **Communication**: every parallel group of the job at once, as flows on the fabric (NCCL rings of
  :func:`sim.fabric.collectives.plan_collective` for TP, CP and DP groups; point-to-point sends between neighbouring
  pipeline stages, both directions, for PP), all four dimensions' transfers in ONE max-min solve
  (:func:`sim.fabric.netsim.solve_phase`), each dimension's time per byte set by its slowest flow. A collective of
  ``S`` bytes over ``n`` ranks then costs ``unit x S + base + steps x alpha`` (alpha-beta: ``alpha`` the slowest
  one-way hop of that dimension's transfers plus NCCL's Simple protocol cost, ``base`` NCCL's Simple base latency;
  :func:`sim.jobs.step.collective_time`).
* **Step** (:func:`sim.jobs.step.step_breakdown`): ``m`` micro-batches through the job's pipeline schedule
  (:mod:`sim.jobs.pipeline`: 1F1B, Megatron's interleaving in rounds, ZB-H1), simulated with each chunk's compute
  plus its exposed TP (with ``tp_comm_overlap``, the default, pipelined with its GEMMs, each slowed by the SMs its
  collective's kernel holds) and CP (exposed, as Llama 3's all-gather CP); the bubble and the exposed asynchronous
  PP sends come from the simulated table; FSDP all-gathers (weights, BF16, once per step: no reshard after forward)
  run one layer ahead of the first micro-batch's forward and reduce-scatters (gradients, FP32) after each layer's
  last backward, exposed where they do not fit.

``run_job`` times one job; ``run_jobs`` several jobs sharing the fabric (their traffic in one solve) and each one's
slowdown against running alone (a job none of whose links carries another job's flow is its own component of the
max-min problem: its rates alone are its rates together, exactly, and it is not solved again).

This module runs jobs (placement, the solve, results); the layout's rules and rank grid are :mod:`sim.jobs.layout`,
the transfers :mod:`sim.jobs.traffic`, the closed-form step :mod:`sim.jobs.step`.
"""
from __future__ import annotations

import time
from copy import copy
from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import UsageError
from sim.core.maxmin import link_loads
from sim.core.progress import silent, span
from sim.core.units import IDX
from sim.fabric.collectives import Phase
from sim.fabric.nccl_tuning import sim_hop
from sim.fabric.flows import link_capacity, link_names
from sim.fabric.netsim import solve_phase
from sim.fabric.placement import place
from sim.fabric.routing import resolve_routing
from sim.jobs.layout import DIMS, model_of, on_gpu, resolve_job
from sim.jobs.models import ModelShape
from sim.jobs.published import published_beside
from sim.jobs.gpu import gpu_of
from sim.jobs.kernels import settings
from sim.jobs.step import PARTS, PROTOCOL, message_sizes, step_breakdown
from sim.jobs.traffic import JobTraffic, job_traffic

# ------------------------------------------------------------------------------------------------ results
@dataclass
class HotLink:
    link: int
    name: str
    utilization: float
    flows: dict                                   # dim (or job:dim) -> flows on the link

    def to_dict(self) -> dict:
        return {"link": self.link, "name": self.name, "utilization": round(self.utilization, 4),
                "flows": self.flows}


@dataclass
class JobResult:
    """One job's step. Times in seconds; ``breakdown``: compute, exposed tp/cp/pp/dp, bubble, step;
    ``comm``: per dimension the group size, bytes per step per GPU, the fabric's busbw-equivalent and time."""

    params: dict
    model: ModelShape
    gpus: np.ndarray
    breakdown: dict
    comm: dict
    memory: dict
    hottest: list = field(default_factory=list)
    n_flows: int = 0
    seconds: float = 0.0
    routing: str = ""

    @property
    def step_time(self) -> float:
        return self.breakdown["step"]

    @property
    def tokens_per_s(self) -> float:
        return self.params["batch_tokens"] / self.step_time

    @property
    def tflops_per_gpu(self) -> float:
        return self.tokens_per_s * self.model.model_flops_per_token(self.params["seq"]) / self.gpus.size / 1e12

    @property
    def mfu(self) -> float:
        return self.tflops_per_gpu * 1e12 / gpu_of(self.params).peak_flops(self.params["precision"])

    def gpu_summary(self) -> dict:
        """The GPU the step ran on: its catalog ``slug`` and ``name``, dense ``peak_tflops`` of the job's precision,
        ``hbm_tbps``, ``sms``, ``boost_clock_mhz`` and ``clock_share`` (of its clock the compute-bound kernels keep
        under the job's ``power_cap_w``; 1 without a cap)."""
        g = gpu_of(self.params)
        return {"slug": g.slug, "name": g.name, "peak_tflops": g.peak_flops(self.params["precision"]) / 1e12,
                "hbm_tbps": g.hbm / 1e12, "sms": g.sms, "boost_clock_mhz": g.boost_mhz,
                "clock_share": settings(self.params, g).clock}

    def schedule_summary(self) -> dict:
        """The pipeline schedule as simulated: its name, chunks per stage, micro-batches and per round, balanced end
        stages, the makespan, bubble and busiest stage, and each stage's busy and idle seconds, layers and peak
        micro-batch-chunks in flight."""
        p, b = self.params, self.breakdown
        return {"name": p["schedule"], "virtual_stages": p["virtual_stages"], "micro_batches": p["micro_batches"],
                "micro_batches_per_round": p["micro_batches_per_round"], "balance_stages": p["balance_stages"],
                "asynchronous_p2p": True, "busiest_stage": b["busiest_stage"], "bubble": float(b["bubble"]),
                "stages": [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in st.items()}
                           for st in b["stages"]]}

    def to_dict(self) -> dict:
        p = self.params
        return {
            "model": self.model.to_dict(),
            "layout": {d: p[d] for d in DIMS} | {"gpus": int(self.gpus.size), "order": p["order"],
                                                 "schedule": p["schedule"], "virtual_stages": p["virtual_stages"],
                                                 "micro_batches": p["micro_batches"], "micro_batch": p["micro_batch"],
                                                 "seq": p["seq"], "batch_tokens": p["batch_tokens"],
                                                 "precision": p["precision"], "fsdp": p["fsdp"],
                                                 "recompute": p["recompute_mode"],
                                                 "recompute_layers": p["recompute_layers"],
                                                 "micro_batches_per_round": p["micro_batches_per_round"],
                                                 "balance_stages": p["balance_stages"],
                                                 "tp_comm_overlap": p["tp_comm_overlap"],
                                                 "tp_overlap_rs_sms": p["tp_overlap_rs_sms"],
                                                 "tp_overlap_ag_sms": p["tp_overlap_ag_sms"],
                                                 "reshard_after_forward": p["reshard_after_forward"],
                                                 "dp_comm_sms": p["dp_comm_sms"]},
            "schedule": self.schedule_summary(),
            "placement": p["placement"], "routing": self.routing, "qps": p["qps"], "seed": p["seed"],
            "step_time": float(self.step_time), "tokens_per_s": float(self.tokens_per_s),
            "tflops_per_gpu": float(self.tflops_per_gpu), "mfu": float(self.mfu),
            "breakdown": {k: float(self.breakdown[k])
                          for k in ("compute", "tp", "cp", "pp", "dp", "bubble", "optimizer", "step")},
            "compute_parts": {k: float(self.breakdown["compute_parts"][k]) for k in PARTS},
            "gpu": self.gpu_summary(),
            "comm": self.comm,
            "memory_gb": {k: (round(float(v) / 1e9, 3) if k not in ("stage", "recompute_layers") else int(v))
                          for k, v in self.memory.items()},
            "hottest": [h.to_dict() for h in self.hottest],
            "flows": self.n_flows, "seconds": round(self.seconds, 3),
            "published": published_beside(p, self.tflops_per_gpu, self.mfu),
        }


@dataclass
class JobsResult:
    """Several jobs sharing the fabric: each one's result together and its step time alone."""

    together: list
    alone: list
    seconds: float = 0.0
    names: list = field(default_factory=list)

    @property
    def slowdowns(self) -> list[float]:
        return [t.step_time / a.step_time for t, a in zip(self.together, self.alone)]

    def to_dict(self) -> dict:
        """Each job's result together (:meth:`JobResult.to_dict`) with its name, ``alone_step_time`` (s) and
        ``slowdown`` (step together / step alone, 1 = unaffected); ``worst_slowdown``: the largest slowdown - 1
        (a share: 0.05 = 5 % slower), ``gpus``: GPUs of all jobs."""
        names = self.names or [f"job{i}" for i in range(len(self.together))]
        jobs = [{"name": n, **t.to_dict(), "alone_step_time": float(a.step_time), "slowdown": float(s)}
                for n, t, a, s in zip(names, self.together, self.alone, self.slowdowns)]
        return {"jobs": jobs, "worst_slowdown": max((j["slowdown"] for j in jobs), default=1.0) - 1.0,
                "gpus": int(sum(t.gpus.size for t in self.together)), "seconds": round(self.seconds, 3)}


# ------------------------------------------------------------------------------------------------ running
def place_job(topo, p: dict, taken: np.ndarray | None = None, gpus=None) -> np.ndarray:
    if gpus is not None:
        return np.asarray(gpus, dtype=IDX)
    if taken is None or not taken.any():
        try:
            return place(topo, p["gpus"], p["placement"], p["seed"])
        except ValueError as e:
            raise UsageError(str(e)) from None
    # place on what the other jobs left: a topology view with their GPUs unusable
    view = copy(topo)
    view.gpu_usable = np.asarray(topo.gpu_usable) & ~taken
    try:
        return place(view, p["gpus"], p["placement"], p["seed"])
    except ValueError as e:
        raise UsageError(f"job of {p['gpus']:,} GPUs does not fit beside the others: {e}") from None


def solve_traffic(topo, traffics: list[JobTraffic], p0: dict, progress):
    """One max-min solve of every job's transfers; per job and dimension: seconds per byte (``unit``) and the
    alpha (seconds per step)."""
    routing = resolve_routing(p0["routing"], topo.kind)
    job = np.concatenate([np.full(t.src.size, j, IDX) for j, t in enumerate(traffics)])
    tag = np.concatenate([t.tag for t in traffics])
    phase = Phase("job", np.concatenate([t.src for t in traffics]), np.concatenate([t.dst for t in traffics]),
                  np.concatenate([t.share for t in traffics]), np.concatenate([t.channel for t in traffics]))
    res = solve_phase(topo, phase, p0["qps"], routing, p0["seed"], progress=progress, hash=p0["hash"],
                      udp_sport=p0["udp_sport"])
    fl = res.flows
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(res.rates > 0, fl.share / res.rates, np.inf)
    K = len(traffics) * len(DIMS)
    tkey = job * len(DIMS) + tag
    worst = _max_by_key(tkey, fl.transfer_max(per, tkey.size), K)     # every transfer has a flow
    hop = _max_by_key(tkey, np.where(res.hop_network, res.hop_latency, 0.0), K)
    net = _max_by_key(tkey, res.hop_network.astype(np.float64), K) > 0
    units, alphas = [], []
    for j, t in enumerate(traffics):
        u, a = {}, {}
        for i, d in enumerate(DIMS):
            k = j * len(DIMS) + i
            u[d] = t.steps[d] * worst[k]
            extra, nvl = sim_hop("ring", PROTOCOL, max(t.ranks[d], 2), 2 if net[k] else 1)
            a[d] = hop[k] + extra if net[k] else nvl
        units.append(u)
        alphas.append(a)
    return res, job, tag, units, alphas, routing


def _max_by_key(key: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n,) the largest of ``values`` per ``key`` (0 where none, and where all are negative): one ``np.maximum.at``
    over the flows (numpy 2's ``ufunc.at`` runs at gather speed; a sort of the keys cost 10x more at 2.3M flows; a
    maximum is exact in any order)."""
    out = np.zeros(n)
    np.maximum.at(out, key, values)
    return out


def _shared_jobs(res, job: np.ndarray, n_jobs: int) -> np.ndarray:
    """(n_jobs,) bool: the job has a flow on a link that another job's flow also crosses. A job sharing no link is
    its own component of the max-min problem, so its rates together are exactly its rates alone."""
    fl = res.flows
    per_link_job = np.repeat(job[fl.transfer], np.diff(fl.ptr))
    pairs = np.unique(fl.links * n_jobs + per_link_job)
    links, jobs = pairs // n_jobs, pairs % n_jobs
    shared = np.bincount(links)[links] > 1
    out = np.zeros(n_jobs, bool)
    out[jobs[shared]] = True
    return out


def _hottest(topo, res, job, tag, k: int, label) -> list[HotLink]:
    if k <= 0:
        return []
    fl = res.flows
    cap = link_capacity(topo)
    load = link_loads(fl.ptr, fl.links, res.rates, cap.size)
    util = np.where(cap > 0, load / np.maximum(cap, 1e-300), 0.0)
    top = np.argsort(-util, kind="stable")[:k]
    top = top[util[top] > 0]
    names = link_names(topo, top)
    out = []
    mark = np.zeros(cap.size, dtype=bool)
    mark[top] = True
    pos = np.flatnonzero(mark[fl.links])                          # entries of the CSR on the hottest links
    flow_at = np.searchsorted(fl.ptr, pos, side="right") - 1
    link_at = fl.links[pos]
    for i, name in zip(top.tolist(), names):
        t = fl.transfer[flow_at[link_at == i]]
        labels, counts = np.unique(job[t] * len(DIMS) + tag[t], return_counts=True)
        out.append(HotLink(i, name, float(util[i]), {label(int(x)): int(c) for x, c in zip(labels, counts)}))
    return out


def _result(topo, p, model, gpus, unit, alpha, traffic, **extra) -> JobResult:
    br = step_breakdown(model, p, unit, alpha, traffic.ranks)
    sizes = message_sizes(model, p)
    m = p["micro_batches"]
    comm = {}
    for d in DIMS:
        per_step = sum(size * count * (1 if d == "dp" else m) for _, size, count, _ in sizes[d])
        comm[d] = {"ranks": int(traffic.ranks[d]), "bytes_per_gpu": float(per_step),
                   "time": float(br["comm_total"][d]), "exposed": float(br[d]),
                   "seconds_per_gib": float(unit[d] * (1 << 30)), "alpha_us": float(alpha[d] * 1e6),
                   "ops": [{"what": w, "bytes": s, "count": c, "kind": k} for w, s, c, k in sizes[d]]}
    return JobResult(params=p, model=model, gpus=gpus, breakdown=br, comm=comm, memory=p["memory"], **extra)


# Parameters only the closed-form step and the memory fit read (sim.jobs.step, sim.jobs.layout.fit_memory: they set
# compute and recomputation, not the transfers): a job's placement, transfers and their max-min solve do not depend
# on them, so a caller varying only these (a calibration fit) solves once (:func:`solve_job`) and re-runs
# the step (:meth:`JobSolve.result`).
STEP_ONLY = ("gemm_efficiency", "attention_efficiency", "hbm_gb", "framework_gb", "fragmentation",
             "tp_overlap_rs_sms", "tp_overlap_ag_sms", "gemm_efficiency_scale", "hbm_efficiency",
             "launch_overhead_us", "compiled", "power_cap_w", "attention_kernel", "reshard_after_forward",
             "dp_comm_sms", "fp8_recipe", "fused_loss", "tp_overlap_backend")


@dataclass
class JobSolve:
    """A job's placement, transfers and their one max-min solve (:func:`solve_job`): per dimension seconds per
    byte (``unit``) and alpha; what every parameter of :data:`STEP_ONLY` leaves unchanged."""

    gpus: np.ndarray
    traffic: JobTraffic
    res: object
    job: np.ndarray
    tag: np.ndarray
    unit: dict
    alpha: dict
    routing: str

    def result(self, topo, params: dict, hottest: bool = False) -> JobResult:
        """The step of ``params`` (validated by :data:`sim.jobs.params.JOB`) on this solve: the job's parameters
        may differ from the solved ones only in :data:`STEP_ONLY`. ``hottest``: list the hottest links too."""
        p = resolve_job(on_gpu(topo, params))
        p["gpu"] = topo.gpu_model                     # the cluster's GPU, as the step reads it (sim.jobs.gpu)
        hot = _hottest(topo, self.res, self.job, self.tag, p["hottest"], lambda x: DIMS[x % len(DIMS)]) \
            if hottest else []
        return _result(topo, p, model_of(p), self.gpus, self.unit, self.alpha, self.traffic, hottest=hot,
                       n_flows=self.res.flows.n_flows, routing=self.routing)


def solve_job(topo, params: dict, progress=None, gpus=None, traffic: JobTraffic | None = None) -> JobSolve:
    """Place the job ``params`` (validated by :data:`sim.jobs.params.JOB`; ``gpus``: a given placement), build its
    transfers (``traffic`` when already built) and solve them together (:func:`solve_traffic`)."""
    say = progress or silent
    p = resolve_job(on_gpu(topo, params))
    gpus = place_job(topo, p, gpus=gpus)
    check_usable(topo, gpus, p["gpus"])
    say(0.02, f"placed {gpus.size:,} GPUs ({p['placement']}); building every group's transfers")
    traffic = traffic if traffic is not None else job_traffic(topo, gpus, p)
    say(0.1, f"{traffic.src.size:,} transfers (tp {traffic.ranks['tp']}, cp {traffic.ranks['cp']}, pp "
             f"{traffic.ranks['pp']}, dp {traffic.ranks['dp']}); solving them together")
    res, job, tag, units, alphas, routing = solve_traffic(topo, [traffic], p, span(progress, 0.1, 0.95))
    return JobSolve(gpus, traffic, res, job, tag, units[0], alphas[0], routing)


def run_job(topo, params: dict, progress=None, gpus=None, traffic: JobTraffic | None = None) -> JobResult:
    """One step of the job ``params`` (validated by :data:`sim.jobs.params.JOB`) on ``topo``; ``gpus``: a given
    placement (rank -> GPU) instead of ``params['placement']``; ``traffic``: the job's transfers at that placement
    when already built (:func:`sim.jobs.traffic.job_traffic`: they depend on the placement and the hosts, not on
    the fabric's state, so a re-solve after a link failure reuses them)."""
    t0 = time.perf_counter()
    say = progress or silent
    out = solve_job(topo, params, progress, gpus=gpus, traffic=traffic).result(topo, params, hottest=True)
    out.seconds = time.perf_counter() - t0
    say(1.0, f"step {out.step_time:.3f} s, MFU {100 * out.mfu:.1f} %")
    return out


def run_jobs(topo, jobs: list[dict], progress=None, placements=None) -> JobsResult:
    """Several jobs at once on ``topo`` (each a validated JOB dict), placed one after the other on what the
    previous ones left (or at ``placements``); their traffic is solved together, then each alone. Routing, QPs,
    hash and seed are the first job's (one fabric)."""
    t0 = time.perf_counter()
    say = progress or silent
    if not jobs:
        raise UsageError("run_jobs needs at least one job")
    taken = np.zeros(topo.n_gpus, bool)
    placed, traffics, models = [], [], []
    jobs = [{**resolve_job(on_gpu(topo, p)), "gpu": topo.gpu_model} for p in jobs]
    for i, p in enumerate(jobs):
        g = place_job(topo, p, taken, None if placements is None else placements[i])
        check_usable(topo, g, p["gpus"])
        if taken[g].any():
            raise UsageError(f"job {i} shares GPUs with an earlier job")
        taken[g] = True
        placed.append(g)
        traffics.append(job_traffic(topo, g, p))
        models.append(model_of(p))
    say(0.05, f"{len(jobs)} jobs placed on {int(taken.sum()):,} GPUs; solving their traffic together")
    res, job, tag, units, alphas, routing = solve_traffic(topo, traffics, jobs[0], span(progress, 0.05, 0.5))
    hot = _hottest(topo, res, job, tag, jobs[0]["hottest"], lambda x: f"job{x // len(DIMS)}:{DIMS[x % len(DIMS)]}")
    together = [_result(topo, p, mdl, g, u, a, t, n_flows=int(np.count_nonzero(job[res.flows.transfer] == j)),
                        routing=routing)
                for j, (p, mdl, g, u, a, t) in enumerate(zip(jobs, models, placed, units, alphas, traffics))]
    if together:
        together[0].hottest = hot
    alone = []
    shared = _shared_jobs(res, job, len(jobs))
    for j, (p, mdl, g, t) in enumerate(zip(jobs, models, placed, traffics)):
        if not shared[j]:                                       # its own max-min component: alone = together
            alone.append(together[j])
            continue
        r, jb, tg, u, a, _ = solve_traffic(topo, [t], jobs[0], span(progress, 0.5 + 0.5 * j / len(jobs),
                                                              0.5 + 0.5 * (j + 1) / len(jobs)))
        alone.append(_result(topo, p, mdl, g, u[0], a[0], t, n_flows=r.flows.n_flows, routing=routing))
    say(1.0, f"{len(jobs)} jobs solved together and alone")
    return JobsResult(together=together, alone=alone, seconds=time.perf_counter() - t0)


def check_usable(topo, gpus: np.ndarray, n: int) -> None:
    if gpus.size != n:
        raise UsageError(f"the placement has {gpus.size:,} GPUs, the job {n:,}")
    ids = np.sort(gpus)                          # not np.unique: it imports numpy.ma (10 ms of a job's start-up)
    if ids.size and (ids[1:] == ids[:-1]).any():
        raise UsageError("a placement may not give one GPU to two ranks")
    bad = ~np.asarray(topo.gpu_usable)[gpus]
    if bad.any():
        raise UsageError(f"{int(bad.sum())} GPUs of the placement are not usable (first: GPU {int(gpus[bad][0])})")
