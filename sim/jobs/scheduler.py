"""A job queue on one cluster over simulated time (docs/jobs.md, *Scheduler*).

Jobs arrive (a jobs file, or :func:`synthetic_jobs`), wait in a FIFO queue with backfill (at every event each
queued job that fits starts, in arrival order), run for ``steps`` steps of the step model (:func:`sim.jobs.job.run_job`
on the job's ACTUAL placement, alone on the fabric) or for a fixed ``hours``, and leave. Placement policies:

* ``first-fit``: the lowest free GPU ids;
* ``random``: whole free hosts drawn at random over the cluster (fragmented), ranks in host order;
* ``topology``: pack racks then zones (:func:`sim.fabric.placement.place` ``topology`` on the free GPUs), and choose the
  rank order ("minimum cut", as Meta calls its rank assignment, docs/sources.md [S2]) among ``tp,cp,pp,dp`` and
  ``tp,cp,dp,pp`` that puts fewer bytes per step on transfers between zones, so DP and PP rings stay off the zone
  layer where they can.

Jobs never land on GPUs that are not usable (failed or drained GPU, NIC, NIC cable or leaf: ``topo.gpu_usable``),
nor on any GPU of a host with such a GPU (a host whose backend link is down). Step times are cached per (job
shape, placement shape: hosts, racks and zones spanned) so 1,000 arrivals stay fast.
"""
from __future__ import annotations

import heapq
import math
import time
from copy import copy
from dataclasses import dataclass, field

import numpy as np

from sim.core.errors import UsageError
from sim.core.progress import silent
from sim.fabric.placement import place
from sim.jobs.job import run_job
from sim.jobs.layout import DIMS, model_of, on_gpu, resolve_job
from sim.jobs.params import JOB
from sim.jobs.queue import HOUR, MAX_QUEUED, QueuedJob, read_jobs
from sim.jobs.step import compute_times, message_sizes
from sim.jobs.traffic import job_traffic

DAY = 86400.0
SYNTHETIC_MEDIAN_HOURS = 24.0     # synthetic jobs' median run time (assumption)


def parse_jobs(text: str, timed: bool = True, max_jobs: int = MAX_QUEUED) -> list[QueuedJob]:
    """The jobs file (:func:`sim.jobs.queue.read_jobs`), each job checked as :data:`sim.jobs.params.JOB`."""
    return read_jobs(text, JOB.validate, timed=timed, max_jobs=max_jobs)


def synthetic_jobs(n: int, days: float, max_gpus: int, seed: int = 0) -> list[QueuedJob]:
    """``n`` jobs arriving as a Poisson process over ``days``: sizes powers of two from 8 GPUs to ``max_gpus``,
    smaller ones likelier (weight ``size^-0.5``); model by size (8B up to 64 GPUs, 70B up to 1,024, else 405B);
    TP 8 inside a host, PP for the 70B (4) and 405B (16), DP the rest; 16 micro-batches per replica at sequence
    8,192; a run of log-normal length (median :data:`SYNTHETIC_MEDIAN_HOURS`, sigma 1: a mix of short experiments
    and long runs; assumption) turned into steps by the compute-only step estimate (no communication), so a job's
    real run time is that or longer, depending on its placement."""
    rng = np.random.default_rng(seed)
    sizes = 2 ** np.arange(3, int(math.log2(max(max_gpus, 8))) + 1)
    w = sizes ** -0.5
    pick = rng.choice(sizes, size=n, p=w / w.sum())
    arrivals = np.sort(rng.uniform(0.0, days * DAY, size=n))
    hours = np.clip(rng.lognormal(math.log(SYNTHETIC_MEDIAN_HOURS), 1.0, size=n), 0.1, 24 * 30)
    out = []
    for i, (g, t, h) in enumerate(zip(pick.tolist(), arrivals.tolist(), hours.tolist())):
        model, pp = ("llama3-8b", 1) if g <= 64 else ("llama3-70b", 4) if g <= 1024 else ("llama3-405b", 16)
        pp = min(pp, g // 8)
        dp = g // (8 * pp)
        params = JOB.validate({"model": model, "gpus": g, "tp": 8, "pp": pp, "dp": dp,
                               "batch_tokens": 8192 * dp * 16, "hottest": 0})
        p = resolve_job(params)
        ideal = (p["micro_batches"] + p["pp"] - 1) * compute_times(model_of(p), p)["slot"]
        out.append(QueuedJob(f"job{i}", t, params, steps=max(1, int(h * HOUR / ideal))))
    return out


# ------------------------------------------------------------------------------------------------ results
@dataclass
class ScheduledJob:
    name: str
    gpus_asked: int
    model: str
    arrival: float
    start: float = math.nan
    end: float = math.nan
    gpus: np.ndarray | None = None
    order: str = ""
    hosts: int = 0
    racks: int = 0
    zones: int = 0
    step_time: float = math.nan
    tokens_per_s: float = math.nan
    mfu: float = math.nan
    step_alone_packed: float = math.nan

    @property
    def wait(self) -> float:
        return self.start - self.arrival

    def to_dict(self, gpus: bool = False) -> dict:
        d = {"name": self.name, "gpus": self.gpus_asked, "model": self.model, "arrival": self.arrival,
             "start": self.start, "end": self.end, "wait": self.wait, "order": self.order, "hosts": self.hosts,
             "racks": self.racks, "zones": self.zones, "step_time": self.step_time,
             "tokens_per_s": self.tokens_per_s, "mfu": self.mfu}
        d = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}
        if gpus and self.gpus is not None:
            d["gpu_ids"] = self.gpus.tolist()
        return d


@dataclass
class ScheduleResult:
    policy: str
    jobs: list
    usable_gpus: int
    makespan: float
    utilization: float
    fragmentation: float
    seconds: float = 0.0
    step_models: int = 0
    timeline: list = field(default_factory=list)      # (time, busy GPUs, free GPUs in fully free racks share)

    def waits(self) -> np.ndarray:
        return np.array([j.wait for j in self.jobs if math.isfinite(j.start)])

    def to_dict(self, gpus: bool = False) -> dict:
        w = self.waits()
        done = [j for j in self.jobs if math.isfinite(j.start)]
        q = (lambda x: float(np.percentile(w, x)) if w.size else None)
        return {"policy": self.policy, "usable_gpus": self.usable_gpus, "makespan": self.makespan,
                "utilization": self.utilization, "fragmentation": self.fragmentation,
                "jobs_run": len(done), "jobs_never_started": len(self.jobs) - len(done),
                "wait": {"mean": float(w.mean()) if w.size else None, "p50": q(50), "p95": q(95),
                         "max": float(w.max()) if w.size else None},
                "mean_mfu": float(np.nanmean([j.mfu for j in done])) if done else None,
                "step_models": self.step_models, "seconds": round(self.seconds, 3),
                "jobs": [j.to_dict(gpus) for j in self.jobs],
                "timeline": [{"t": t, "busy": b, "fragmentation": f} for t, b, f in self.timeline]}


# ------------------------------------------------------------------------------------------------ the simulation
def host_ok(topo) -> np.ndarray:
    """(G,) bool: the GPU is usable and so is every GPU of its host (no failed GPU, NIC, cable or leaf there)."""
    usable = np.asarray(topo.gpu_usable)
    host = np.asarray(topo.gpu_host)
    bad = np.bincount(host[~usable], minlength=int(host.max()) + 1) > 0
    return usable & ~bad[host]


def zone_cut_bytes(topo, gpus: np.ndarray, p: dict) -> float:
    """Bytes per step a job's transfers send between zones (the "cut" the topology policy minimizes)."""
    zone = np.asarray(topo.switch_zone)[np.asarray(topo.gpu_leaf)]
    p = resolve_job(on_gpu(topo, p))
    t = job_traffic(topo, gpus, p)
    sizes = message_sizes(model_of(p), p)
    per_dim = {d: sum(s * c for _, s, c, _ in sizes[d]) for d in DIMS}
    cross = zone[t.src] != zone[t.dst]
    w = np.array([per_dim[d] for d in DIMS])[t.tag] * t.share
    return float(w[cross].sum())


def _choose(topo, free: np.ndarray, p: dict, policy: str, seed: int):
    n = p["gpus"]
    if int(free.sum()) < n:
        return None, p["order"]
    view = copy(topo)
    view.gpu_usable = free
    try:
        gpus = place(view, n, {"random": "fragmented"}.get(policy, policy), seed)
    except ValueError:
        return None, p["order"]
    order = p["order"]
    if policy == "topology" and n > 8:
        zone = np.asarray(topo.switch_zone)[np.asarray(topo.gpu_leaf)][gpus]
        if np.unique(zone).size > 1:
            best = None
            for o in ("tp,cp,pp,dp", "tp,cp,dp,pp"):
                cut = zone_cut_bytes(topo, gpus, {**p, "order": o})
                if best is None or cut < best[0]:
                    best = (cut, o)
            order = best[1]
    return gpus, order


def run_schedule(topo, params: dict, progress=None, jobs: list[QueuedJob] | None = None) -> ScheduleResult:
    """Simulate the queue (``params`` from :data:`sim.jobs.params.SCHEDULE`; ``jobs`` overrides its jobs text)."""
    t0 = time.perf_counter()
    say = progress or silent
    ok = host_ok(topo)
    usable = int(ok.sum())
    if jobs is None:
        if params["jobs"]:
            jobs = parse_jobs(params["jobs"])
        else:
            jobs = synthetic_jobs(params["arrivals"], params["days"], params["max_gpus"] or max(8, usable * 2 // 3),
                                  params["seed"])
    for i, j in enumerate(jobs):
        if j.params["gpus"] > usable:
            raise UsageError(f"job {j.name} asks for {j.params['gpus']:,} GPUs but the cluster has {usable:,} "
                             f"usable on healthy hosts")
    fabric = {k: params[k] for k in ("routing", "qps", "hash", "seed")}
    leaf = np.asarray(topo.gpu_leaf)
    zone = np.asarray(topo.switch_zone)[leaf]
    host = np.asarray(topo.gpu_host)
    leaf_size = np.bincount(leaf[ok], minlength=int(leaf.max()) + 1)
    busy = np.zeros(topo.n_gpus, bool)
    cache: dict = {}
    out = [ScheduledJob(j.name, j.params["gpus"], j.params["model"], j.arrival) for j in jobs]
    events: list = [(j.arrival, 1, i) for i, j in enumerate(jobs)]      # (time, kind: 0 end / 1 arrival, job)
    heapq.heapify(events)
    queue: list[int] = []
    timeline, busy_area, frag_area, last_t = [], 0.0, 0.0, 0.0
    done = 0
    while events:
        t, kind, i = heapq.heappop(events)
        busy_area += busy.sum() * (t - last_t)
        frag_area += _fragmentation(busy, ok, leaf, leaf_size) * (t - last_t)
        last_t = t
        if kind == 0:
            g = out[i].gpus
            assert busy[g].all(), "a finished job's GPUs must be busy"
            busy[g] = False
            done += 1
            say(done / len(jobs), f"t = {t / DAY:.2f} d: {out[i].name} done; {len(queue)} queued")
        else:
            queue.append(i)
        started = []
        for i in queue:
            j = jobs[i]
            gpus, order = _choose(topo, ok & ~busy, j.params, params["policy"], params["seed"] + i)
            if gpus is None:
                continue
            if busy[gpus].any() or not ok[gpus].all():
                raise AssertionError("placement on a busy or unusable GPU")
            busy[gpus] = True
            p = {**j.params, **fabric, "order": order, "placement": params["policy"], "hottest": 0}
            key = _shape_key(p, gpus, host, leaf, zone)
            if key not in cache:
                r = run_job(topo, p, gpus=gpus)
                cache[key] = (r.step_time, r.tokens_per_s, r.mfu)
            step, tps, mfu = cache[key]
            run = j.steps * step if j.steps is not None else j.hours * HOUR
            s = out[i]
            s.start, s.end, s.gpus, s.order = t, t + run, gpus, order
            s.hosts, s.racks, s.zones = (int(np.unique(a[gpus]).size) for a in (host, leaf, zone))
            s.step_time, s.tokens_per_s, s.mfu = step, tps, mfu
            heapq.heappush(events, (s.end, 0, i))
            started.append(i)
        queue = [i for i in queue if i not in set(started)]
        timeline.append((t, int(busy.sum()), _fragmentation(busy, ok, leaf, leaf_size)))
    makespan = last_t
    res = ScheduleResult(policy=params["policy"], jobs=out, usable_gpus=usable, makespan=makespan,
                         utilization=busy_area / (usable * makespan) if makespan > 0 else 0.0,
                         fragmentation=frag_area / makespan if makespan > 0 else 0.0,
                         step_models=len(cache), timeline=_thin(timeline, 1000))
    res.seconds = time.perf_counter() - t0
    say(1.0, f"{len(jobs)} jobs scheduled ({params['policy']}): utilization {100 * res.utilization:.1f} %")
    return res


def _shape_key(p: dict, gpus, host, leaf, zone) -> tuple:
    """The job's shape and its placement's: zones spanned, racks spanned (to a power of two) and whether its hosts
    are whole (what the step model's result depends on, to the cache's resolution: a coarser key is faster and
    reuses one placement's step time for placements of the same shape)."""
    job = tuple(p[k] for k in ("model", "gpus", "tp", "cp", "pp", "dp", "seq", "batch_tokens", "micro_batch",
                               "schedule", "virtual_stages", "micro_batches_per_round", "balance_stages",
                               "precision", "order", "fsdp", "recompute", "tp_comm_overlap", "tp_overlap_rs_sms",
                               "tp_overlap_ag_sms", "reshard_after_forward", "dp_comm_sms",
                               "fp8_recipe", "fused_loss"))
    racks = np.unique(leaf[gpus]).size
    zones = np.unique(zone[gpus]).size
    hosts = np.unique(host[gpus]).size
    return job + (zones, int(math.ceil(math.log2(racks))) if racks > 1 else 0, hosts)


def _fragmentation(busy, ok, leaf, leaf_size) -> float:
    """Share of the free GPUs that are not in a fully free rack (0: every free GPU is in a whole free rack)."""
    free = ok & ~busy
    n = int(free.sum())
    if n == 0:
        return 0.0
    free_per_leaf = np.bincount(leaf[free], minlength=leaf_size.size)
    whole = (free_per_leaf == leaf_size) & (leaf_size > 0)
    return 1.0 - float(free_per_leaf[whole].sum()) / n


def _thin(rows: list, k: int) -> list:
    if len(rows) <= k:
        return rows
    idx = np.linspace(0, len(rows) - 1, k).round().astype(int)
    return [rows[i] for i in idx]
