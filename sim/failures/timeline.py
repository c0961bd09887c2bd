"""A training job's wall clock over days: failures, detection, restarts, re-routing and checkpoints, as a
discrete-event simulation (docs/reliability.md has the model, its parameters and sources).

* **Failures** arrive per category of :mod:`sim.failures.rates` as Poisson processes over the job's units (its GPUs,
  its hosts, the job itself): all arrival times of one timeline are drawn up front with numpy, then merged in time
  order with the chosen failures (``inject``) and the repairs they cause.
* **Crash** (a GPU, a host part, software...): detected after ``detection_s`` (the NCCL watchdog / heartbeat
  timeout); the job then waits for a healthy host in place of the failed one (a free hot spare at once, else the
  first spare to come back or the failed host's repair, whichever comes first), relaunches and starts its process
  groups (``restart_s``), loads the last **durable** checkpoint (``restore_s``) and recomputes the work done since
  that checkpoint's snapshot.
* **Degradation**: a failed fabric cable or switch the routing can go around (``reroute``) slows the job for its
  repair time: the step is re-solved by :func:`sim.jobs.job.run_job` on the fabric with every failed item removed (cached
  by the set of failed items, or by how many items of each class failed: ``fabric_states``); a thermally throttled
  GPU keeps ``thermal_speed`` of its compute speed, and the slowest rank paces the synchronous job (the step's
  compute part divided by it) until the job's next restart leaves its host for a spare. A NIC cable or the job's
  rack switch has no other path: its failure crashes the job.
* **Planned maintenance** stops the job cleanly: a last durable checkpoint, ``planned_down_s``, restart, restore.
* **Checkpoints** every ``checkpoint_interval`` of training progress: training waits ``blocked`` seconds; the
  checkpoint is durable ``durable`` seconds after its start (:func:`sim.storage.checkpoint.run_checkpoint` run once for the
  write and once for the restore when a store is given, else parameters).

Between two events training runs in closed form (cycles of ``interval / rate`` training then ``blocked``), so a
timeline costs one Python step per event (hundreds), not per checkpoint. Wall time splits exactly into productive
training, recomputed work, checkpoint overhead, degradation, detection, waiting, restart, restore and planned downtime
(``lost.by_phase``); ``effective_ratio`` = productive / wall.

Public calls (the twin's ``failures`` run kind uses them): :func:`prepare`, :func:`simulate` (one timeline),
:func:`summarize` (the distribution over seeds), :func:`sweep` (checkpoint intervals against Young/Daly).
"""
from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from sim.failures import rates as fr
from sim.core.errors import ParamError, UsageError
from sim.jobs.models import BF16, FP32
from sim.core.progress import silent, span
from sim.core.units import parse_duration, parse_durations

STATES = ("training", "checkpointing", "down", "restarting", "degraded")
TRAINING, CHECKPOINTING, DOWN, RESTARTING, DEGRADED = range(len(STATES))
PHASES = ("recompute", "checkpoint", "degradation", "detection", "wait", "restart", "restore", "planned")
STORE_SUSTAINED_BPS = 2e12        # Tectonic's sustained 2 TB/s (docs/sources.md [S1]): store "off" defaults
CHECKPOINT_BYTES_PER_PARAM = BF16 + 3 * FP32   # BF16 weights + FP32 master weights, Adam m and v [S22]
ITEM_KINDS = ("gpu", "host", "link", "switch", "job")
NET_CABLE, NET_SWITCH = 0, 1
NET_CLASSES = ("nic cable", "leaf-spine cable", "spine-core cable", "leaf", "spine", "core")   # tier + kind
WHILE_DOWN = "while_down"         # a failure that arrived while the job was already stopped
NO_STORE = "off"                  # store: no storage simulation, the checkpoint_* parameters


# ------------------------------------------------------------------------------------------------ validation
def _duration(value: str, field_name: str) -> float:
    try:
        return parse_duration(value)
    except UsageError as e:
        raise ParamError(field_name, str(e)) from None


@dataclass(frozen=True)
class Injection:
    """A chosen failure: ``category`` at ``time`` (s) on the item named ``name`` (``kind`` in :data:`ITEM_KINDS`)."""

    category: str
    kind: str
    name: str
    time: float


ALIASES = {"link": ("network", "link"), "switch": ("network", "switch"), "host": ("host_maintenance", "host")}


def parse_injections(text: str | None, wall: float) -> list[Injection]:
    """``gpu:<name>@10h,link:<name>@20h,software@2h`` -> injections (names checked later, against the cluster).
    :class:`ParamError` on ``inject`` for bad syntax, an unknown category or a time outside the run."""
    out = []
    if not text or not text.strip():
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        what, at, when = part.rpartition("@")
        if not at:
            raise ParamError("inject", f"{part[:80]!r}: expected KIND:NAME@TIME, e.g. gpu:<GPU name>@10h")
        head, colon, name = what.partition(":")
        head = head.strip().lower()
        if head in ALIASES:
            category, kind = ALIASES[head]
        elif head in fr.CATEGORIES:
            category = head
            kind = _item_kind(fr.CATEGORIES[head])
        else:
            raise ParamError("inject", f"unknown kind {head!r}: choose gpu, link, switch, host or a category "
                                       f"({', '.join(fr.NAMES)})")
        name = name.strip()
        if category == "network" and kind == "gpu":
            raise ParamError("inject", f"{part[:80]!r}: a network failure names a link (link:...) or a switch "
                                       f"(switch:...)")
        if kind != "job" and not name:
            raise ParamError("inject", f"{part[:80]!r}: {head} needs the {kind}'s name ({head}:<name>@TIME)")
        try:
            t = parse_duration(when) if when.strip() not in ("0", "0s", "0h") else 0.0
        except UsageError as e:
            raise ParamError("inject", f"{part[:80]!r}: {e}") from None
        if t >= wall:
            raise ParamError("inject", f"{part[:80]!r}: at {t / 3600:g} h, after the run's end ({wall / 3600:g} h)")
        out.append(Injection(category, kind, name, t))
    return sorted(out, key=lambda i: i.time)


def _item_kind(c: fr.Category) -> str:
    return {"gpu": "gpu", "host": "host", "job": "job"}[c.unit]


def check_failures(v: dict) -> None:
    """Rules across :data:`sim.failures.params.FAILURES` (called by its ``validate``): the job's layout (as JOB), the interval
    shorter than the run, rates, repair times, injected failures and the sweep parse. Raises :class:`ParamError`
    naming the field."""
    from sim.jobs.job import check_job
    check_job(v)
    wall = v["days"] * 86400.0
    interval = _duration(v["checkpoint_interval"], "checkpoint_interval")
    if interval >= wall:
        raise ParamError("checkpoint_interval", f"{interval / 3600:g} h is not shorter than the run "
                                                f"({v['days']:g} days)")
    fr.parse_overrides(v["rates"], "rates")
    fr.parse_overrides(v["repair_h"], "repair_h")
    parse_injections(v["inject"], wall)
    if v["sweep_interval"]:
        try:
            points = parse_durations(v["sweep_interval"])
        except UsageError as e:
            raise ParamError("sweep_interval", str(e)) from None
        if max(points) >= wall:
            raise ParamError("sweep_interval", f"{max(points) / 3600:g} h is not shorter than the run "
                                               f"({v['days']:g} days)")


# ------------------------------------------------------------------------------------------------ preparation
@dataclass
class Prepared:
    """Everything a timeline needs that does not depend on its seed: the cluster, the placed job and its healthy
    step, the checkpoint's costs, the job's units and network items, rates and repair times, the chosen failures,
    and the cache of step times by fabric state. Build it once (:func:`prepare`) for many seeds or intervals."""

    cluster: str
    layout: object
    topo: object
    params: dict
    gpus: np.ndarray                  # (N,) GPU ids of the job's ranks
    hosts: np.ndarray                 # (H,) layout host ids of the job
    step_s: float                     # healthy step
    compute_s: float                  # its compute part (what a throttled GPU stretches)
    checkpoint: dict                  # interval_s, blocked_s, durable_s, restore_s, bytes_per_gpu, source
    net_kind: np.ndarray              # (K,) NET_CABLE or NET_SWITCH: the job's network items
    net_id: np.ndarray                # (K,) layout link or switch id
    net_crash: np.ndarray             # (K,) bool: no other path (NIC cable, the job's rack switch)
    net_hosts: np.ndarray             # (K,) job hosts cut off when the item fails (0 for fabric items)
    net_class: np.ndarray             # (K,) NET_CLASSES index of a fabric item, -1 for one with no other path
    spares: int
    rates: dict                       # category -> per unit-hour
    repair_s: dict                    # category -> seconds
    injections: list                  # (time, category, item index) resolved against the job
    steps: dict = field(default_factory=dict)     # frozenset of failed (kind, id) -> step seconds, None = no path
    traffic: object = None            # the job's transfers (sim.jobs.job.JobTraffic), built at the first re-solve
    solves: int = 0
    solve_seconds: float = 0.0
    _names: dict | None = None

    @property
    def wall_s(self) -> float:
        return self.params["days"] * 86400.0

    def units(self, unit: str) -> int:
        return {"gpu": int(self.gpus.size), "host": int(self.hosts.size), "job": 1}[unit]

    def n_items(self, category: str) -> int:
        return int(self.net_id.size) if category == "network" else self.units(fr.CATEGORIES[category].unit)

    def names(self) -> dict:
        if self._names is None:
            from sim.fabric.names import host_names, item_names
            from sim.fabric.names import gpu_name
            lay = self.layout
            self._names = item_names(lay)
            host = self._names["host"] = host_names(lay)      # the inventory's own names when it has them
            self._names["gpu"] = [gpu_name(host[h], s) for h, s in zip(lay.gpu_host.tolist(), lay.gpu_slot.tolist())]
        return self._names

    def item_name(self, category: str, item: int) -> str:
        c = fr.CATEGORIES[category]
        if category == "network":
            key = "link" if self.net_kind[item] == NET_CABLE else "switch"
            return self.names()[key][int(self.net_id[item])]
        if c.unit == "gpu":
            return self.names()["gpu"][int(self.gpus[item])]
        if c.unit == "host":
            return self.names()["host"][int(self.hosts[item])]
        return "job"

    def step_of(self, items) -> float | None:
        """The job's step with the network items ``items`` (indices into ``net_*``) failed. ``fabric_states``
        ``exact``: that very fabric state; ``by_class``: the state where as many items of each class (leaf-spine
        cable, spine-core cable, spine, core) fail, the first ones of the class in the job's list, so every timeline
        and seed shares a handful of solves (docs/reliability.md)."""
        items = list(items)
        if self.params["fabric_states"] == "by_class" and items:
            classes, counts = np.unique(self.net_class[items], return_counts=True)
            items = [int(i) for k, c in zip(classes.tolist(), counts.tolist())
                     for i in np.flatnonzero(self.net_class == k)[:c]]
        return self.step_with(frozenset((int(self.net_kind[i]), int(self.net_id[i])) for i in items))

    def step_with(self, failed: frozenset) -> float | None:
        """The job's step (s) on the fabric with the ``failed`` items (``(NET_CABLE|NET_SWITCH, layout id)``)
        removed; None when some transfer has no path left. Solved once per fabric state."""
        if not failed:
            return self.step_s
        if failed not in self.steps:
            t0 = time.perf_counter()
            self.steps[failed] = _solve_step(self, failed)
            self.solves += 1
            self.solve_seconds += time.perf_counter() - t0
        return self.steps[failed]

    def mtbf_s(self) -> float:
        """Mean time between failures that lose work (crashes) from the rates: the ``M`` of Young/Daly."""
        total = 0.0
        for name, c in fr.CATEGORIES.items():
            if c.consequence != "crash":
                continue
            lam = self.rates[name] * self.units(c.unit) / 3600.0
            if name == "network" and self.params["reroute"] and self.net_id.size:
                lam *= float(self.net_crash.mean())
            total += lam
        return 1.0 / total if total > 0 else math.inf

    def young_daly_s(self) -> float:
        """sqrt(2 x checkpoint cost x MTBF) [S8], the cost being the time training waits per checkpoint."""
        return math.sqrt(2.0 * self.checkpoint["blocked_s"] * self.mtbf_s())


def _solve_step(ctx: Prepared, failed: frozenset) -> float | None:
    from sim.jobs.job import run_job
    from sim.fabric.layout import STATUS_FAILED
    from sim.fabric.topology import topology_from_layout
    lay = ctx.layout
    link_status, switch_status = lay.link_status.copy(), lay.switch_status.copy()
    for kind, i in failed:
        (link_status if kind == NET_CABLE else switch_status)[i] = STATUS_FAILED
    topo = topology_from_layout(replace(lay, link_status=link_status, switch_status=switch_status))
    if ctx.traffic is None:
        from sim.jobs.job import job_traffic, resolve_job
        ctx.traffic = job_traffic(ctx.topo, ctx.gpus, resolve_job(ctx.params))
    try:
        return float(run_job(topo, ctx.params, gpus=ctx.gpus, traffic=ctx.traffic).step_time)
    except (UsageError, ValueError):          # a GPU cut off, or a transfer with no path left (NoPathError)
        return None


def _cluster(cluster_or_spec):
    """``(name, layout, topology)`` of a preset name or spec path, a ClusterSpec, a ClusterLayout (the twin's, from
    its inventory, failed items included) or a Topology."""
    from sim.fabric.layout import ClusterLayout, expand
    from sim.fabric.spec import ClusterSpec, load_spec
    from sim.fabric.topology import Topology, topology_from_layout
    if isinstance(cluster_or_spec, Topology):
        return cluster_or_spec.layout.spec.name, cluster_or_spec.layout, cluster_or_spec
    if isinstance(cluster_or_spec, ClusterLayout):
        return cluster_or_spec.spec.name, cluster_or_spec, topology_from_layout(cluster_or_spec)
    spec = cluster_or_spec if isinstance(cluster_or_spec, ClusterSpec) else load_spec(cluster_or_spec or
                                                                                      "meta-roce-24k")
    layout = expand(spec)
    return spec.name, layout, topology_from_layout(layout)


def prepare(cluster_or_spec, values: dict, progress=None) -> Prepared:
    """Validate ``values`` (:data:`sim.failures.params.FAILURES`), place the job, solve its healthy step, time its checkpoint
    and restore, list its network items and resolve the chosen failures against the cluster's names."""
    from sim.failures.params import FAILURES
    say = progress or silent
    if isinstance(cluster_or_spec, Prepared):
        return cluster_or_spec
    p = FAILURES.validate(values)
    name, layout, topo = _cluster(cluster_or_spec)
    usable = int(np.count_nonzero(topo.gpu_usable))
    if p["gpus"] > usable:
        raise ParamError("gpus", f"{p['gpus']:,} GPUs asked, {name} has {usable:,} usable")
    from sim.jobs.job import model_of, resolve_job, run_job
    from sim.fabric.placement import place
    say(0.0, f"placing {p['gpus']:,} GPUs and solving the healthy step")
    job_p = {**p, "hottest": 0}
    try:
        gpus = np.asarray(place(topo, p["gpus"], p["placement"], p["seed"]))
    except ValueError as e:
        raise ParamError("gpus", str(e)) from None
    healthy = run_job(topo, job_p, gpus=gpus, progress=span(progress, 0.0, 0.4))
    hosts = np.unique(np.asarray(topo.gpu_host)[gpus])
    wall = p["days"] * 86400.0
    ckpt = _checkpoint_costs(layout, topo, p, resolve_job(job_p), model_of(job_p), span(progress, 0.4, 0.9))
    ckpt["interval_s"] = parse_duration(p["checkpoint_interval"])
    net = _network_items(topo, gpus)
    free_hosts = np.unique(np.asarray(topo.gpu_host)[np.asarray(topo.gpu_usable)])
    spares = p["spares"] if p["spares"] is not None else int(free_hosts.size - hosts.size)
    tier = np.where(net[0] == NET_CABLE, np.asarray(layout.link_tier)[np.where(net[0] == NET_CABLE, net[1], 0)],
                    3 + np.asarray(layout.switch_tier)[np.where(net[0] == NET_SWITCH, net[1], 0)])
    ctx = Prepared(cluster=name, layout=layout, topo=topo, params={**job_p}, gpus=gpus, hosts=hosts,
                   step_s=float(healthy.step_time), compute_s=float(healthy.breakdown["compute"]), checkpoint=ckpt,
                   net_kind=net[0], net_id=net[1], net_crash=net[2], net_hosts=net[3],
                   net_class=np.where(net[2], -1, tier).astype(np.int64), spares=spares,
                   rates=fr.rates(fr.parse_overrides(p["rates"], "rates"), p["rate_scale"]),
                   repair_s={k: 3600.0 * v for k, v in fr.repair_hours(fr.parse_overrides(p["repair_h"],
                                                                                            "repair_h")).items()},
                   injections=[])
    ctx.steps[frozenset()] = ctx.step_s
    ctx.injections = _resolve_injections(ctx, parse_injections(p["inject"], wall))
    say(1.0, f"step {ctx.step_s:.3f} s; checkpoint blocks {ckpt['blocked_s']:.2f} s, durable after "
             f"{ckpt['durable_s']:.2f} s, restore {ckpt['restore_s']:.2f} s ({ckpt['source']})")
    return ctx


def _checkpoint_costs(layout, topo, p: dict, job: dict, model, progress) -> dict:
    """Blocked, durable and restore seconds of the job's checkpoint: simulated once each on the store when there is
    one (:func:`sim.storage.checkpoint.run_checkpoint`), else the bytes at :data:`STORE_SUSTAINED_BPS`; given values win."""
    gpus = p["gpus"]
    per_gpu = p["bytes_per_gpu"] or max(1, int(model.params * CHECKPOINT_BYTES_PER_PARAM / gpus))
    store = p["store"]
    kinds = [s.kind for s in layout.spec.storage]
    if store is None:
        store = "tectonic" if "tectonic" in kinds else NO_STORE
    elif store != NO_STORE and store not in kinds:
        raise ParamError("store", f"{layout.spec.name} has no {store} storage cluster "
                                  f"({', '.join(kinds) or 'none'})")
    if store == NO_STORE:
        plain = per_gpu * gpus / STORE_SUSTAINED_BPS
        blocked, durable, restore, source = plain, plain, plain, "parameters (bytes at 2 TB/s)"
    else:
        from sim.storage.checkpoint import run_checkpoint
        w = run_checkpoint(layout, gpus=gpus, bytes_per_gpu=per_gpu, store=store, mode=p["checkpoint_mode"],
                           placement=p["placement"], seed=p["seed"], backend=topo, samples=2, hottest=0,
                           progress=span(progress, 0.0, 0.5))
        r = run_checkpoint(layout, gpus=gpus, bytes_per_gpu=per_gpu, store=store, restore=True,
                           placement=p["placement"], seed=p["seed"], backend=topo, samples=2, hottest=0,
                           progress=span(progress, 0.5, 1.0))
        blocked, durable, restore = w.blocked_seconds, w.durable_seconds, r.blocked_seconds
        source = f"{store} model ({p['checkpoint_mode']})"
    if p["checkpoint_mode"] == "sync":
        blocked = durable
    blocked = p["checkpoint_blocked_s"] if p["checkpoint_blocked_s"] is not None else blocked
    durable = p["checkpoint_durable_s"] if p["checkpoint_durable_s"] is not None else durable
    restore = p["restore_s"] if p["restore_s"] is not None else restore
    if durable < blocked:
        raise ParamError("checkpoint_durable_s", f"{durable:g} s: a checkpoint cannot be durable before training "
                                                 f"stops waiting for it ({blocked:g} s)")
    return {"blocked_s": float(blocked), "durable_s": float(durable), "restore_s": float(restore),
            "bytes_per_gpu": int(per_gpu), "source": source}


def _network_items(topo, gpus: np.ndarray):
    """The job's network items: each GPU's NIC cable and its rack switch (no other path: a crash, cutting off its
    hosts), then the fabric cables and switches above its leaves that its traffic may cross (other paths exist)."""
    from sim.fabric.layout import LINK_LEAF_SPINE, LINK_SPINE_CORE
    gpu_host = np.asarray(topo.gpu_host)
    up = np.asarray(topo.gpu_uplink)[gpus]
    up = up[up >= 0]
    nic_cables = np.asarray(topo.link_cable)[up]
    nic_hosts = np.ones(nic_cables.size, np.int64)
    gpu_leaf = np.asarray(topo.gpu_leaf)[gpus]
    leaves = np.unique(gpu_leaf)
    pairs = np.unique(np.searchsorted(leaves, gpu_leaf) * (gpu_host.size + 1) + gpu_host[gpus])
    hosts_of_leaf = np.bincount(pairs // (gpu_host.size + 1), minlength=leaves.size).astype(np.int64)
    kinds, ids, crash, cut = [np.full(nic_cables.size, NET_CABLE)], [nic_cables], [np.ones(nic_cables.size, bool)], \
        [nic_hosts]
    kinds.append(np.full(leaves.size, NET_SWITCH))
    ids.append(np.asarray(topo.switch_layout_id)[leaves])
    crash.append(np.ones(leaves.size, bool))
    cut.append(hosts_of_leaf)
    tail, head = np.asarray(topo.link_tail), np.asarray(topo.link_head)
    is_up, tier = np.asarray(topo.link_is_up), np.asarray(topo.link_tier)
    if leaves.size > 1:
        ls = is_up & (tier == LINK_LEAF_SPINE) & np.isin(tail, leaves)
        spines = np.unique(head[ls])
        fabric = [np.flatnonzero(ls)]
        zones = np.unique(np.asarray(topo.switch_zone)[leaves])
        switches = [spines]
        if zones.size > 1:
            sc = is_up & (tier == LINK_SPINE_CORE) & np.isin(tail, spines)
            fabric.append(np.flatnonzero(sc))
            switches.append(np.unique(head[sc]))
        cables = np.asarray(topo.link_cable)[np.concatenate(fabric)]
        sw = np.asarray(topo.switch_layout_id)[np.concatenate(switches)]
        for k, x in ((NET_CABLE, cables), (NET_SWITCH, sw)):
            kinds.append(np.full(x.size, k))
            ids.append(x)
            crash.append(np.zeros(x.size, bool))
            cut.append(np.zeros(x.size, np.int64))
    return (np.concatenate(kinds).astype(np.int8), np.concatenate(ids).astype(np.int64), np.concatenate(crash),
            np.concatenate(cut))


def _resolve_injections(ctx: Prepared, injections: list[Injection]) -> list[tuple]:
    """``(time, category, item index)`` of each chosen failure; :class:`ParamError` on ``inject`` naming an item
    that the cluster does not have, or that the job does not use."""
    out = []
    if not injections:
        return out
    names = ctx.names()
    for inj in injections:
        if inj.kind == "job":
            out.append((inj.time, inj.category, 0))
            continue
        if inj.kind == "gpu":
            index = _index_of(names["gpu"], inj.name, "GPU")
            hit = np.flatnonzero(ctx.gpus == index)
            what = "GPUs"
        elif inj.kind == "host":
            index = _index_of(names["host"], inj.name, "host")
            hit = np.flatnonzero(ctx.hosts == index)
            what = "hosts"
        else:
            kind = NET_CABLE if inj.kind == "link" else NET_SWITCH
            index = _index_of(names[inj.kind], inj.name, inj.kind)
            hit = np.flatnonzero((ctx.net_kind == kind) & (ctx.net_id == index))
            what = "backend network items (its NIC cables, rack switches and the fabric above them)"
        if not hit.size:
            raise ParamError("inject", f"{inj.kind} {inj.name!r} is not one of the job's {what}")
        out.append((inj.time, inj.category, int(hit[0])))
    return out


def _index_of(names: list[str], name: str, what: str) -> int:
    try:
        return names.index(name)
    except ValueError:
        raise ParamError("inject", f"unknown {what} {name!r} (names as the inventory's: docs/reliability.md)") \
            from None


# ------------------------------------------------------------------------------------------------ one timeline
class _Timeline:
    """One timeline of the job: the state machine of the module docstring, advanced event by event."""

    def __init__(self, ctx: Prepared, seed: int, interval: float, record: bool = True):
        self.ctx, self.seed, self.record = ctx, int(seed), record
        ck = ctx.checkpoint
        self.I, self.b, self.d = float(interval), ck["blocked_s"], ck["durable_s"]
        self.W = ctx.wall_s
        self.t = 0.0                  # wall clock
        self.p = 0.0                  # training progress, in seconds of healthy training
        self.q = 0.0                  # progress since the last checkpoint's snapshot
        self.block_end = 0.0          # the current checkpoint's blocking ends
        self.pending: list[tuple[float, float]] = []     # (start, snapshot) not yet durable
        self.durable = (0.0, 0.0)     # (wall start, snapshot) of the newest durable checkpoint (the start: 0)
        self.rate = 1.0
        self.up = True
        self.stalled: float | None = None     # down since then: the fabric left the job no path
        self.failed_net: dict[int, float] = {}           # network item -> repair time (degrading)
        self.throttled: dict[int, float] = {}            # GPU index -> repair time
        self.spare_free = ctx.spares
        self.spare_back: list[float] = []
        self.phase = dict.fromkeys(PHASES, 0.0)
        self.cause: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.events: list[dict] = []
        self.seg_start: list[np.ndarray] = []
        self.seg_end: list[np.ndarray] = []
        self.seg_state: list[np.ndarray] = []
        self.checkpoints = 0
        self.interruptions = 0
        self.degradations = 0

    # --------------------------------------------------------------------------------------- bookkeeping
    def _seg(self, start, end, state) -> None:
        if not self.record:
            return
        start, end = np.atleast_1d(np.asarray(start, float)), np.atleast_1d(np.asarray(end, float))
        keep = end > start
        if keep.any():
            self.seg_start.append(start[keep])
            self.seg_end.append(end[keep])
            self.seg_state.append(np.full(int(keep.sum()), state, np.int8))

    def _lose(self, phase: str, seconds: float, causes) -> None:
        if seconds <= 0:
            return
        self.phase[phase] += seconds
        share = seconds / len(causes)
        for c in causes:
            self.cause[c] = self.cause.get(c, 0.0) + share

    def _degrade_causes(self) -> list[str]:
        return (["network"] if self.failed_net else []) + (["thermal"] if self.throttled else [])

    def _train(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            return
        gained = self.rate * (t1 - t0)
        self.p += gained
        self.q += gained
        self._lose("degradation", (t1 - t0) - gained, self._degrade_causes())
        self._seg(t0, t1, TRAINING if self.rate >= 1.0 else DEGRADED)

    # --------------------------------------------------------------------------------------- training
    def _advance(self, T: float) -> None:
        """Train (with checkpoints) from ``self.t`` to ``T`` at the current rate."""
        t = self.t
        if T <= t:
            return
        if self.block_end > t:
            e = min(self.block_end, T)
            self._lose("checkpoint", e - t, ["checkpoint"])
            self._seg(t, e, CHECKPOINTING)
            t = e
        if t >= T:
            self.t = T
            return
        I, b, r = self.I, self.b, self.rate
        first = t + (I - self.q) / r
        if first >= T:
            self._train(t, T)
            self.t = T
            return
        self._train(t, first)
        cycle = b + I / r
        n = int((T - first) // cycle) + 1
        starts = first + cycle * np.arange(n)
        if starts[-1] >= T:
            starts = starts[:-1]
        n = starts.size
        snaps = self.p + I * np.arange(n)
        ends = np.minimum(starts + b, T)
        self._lose("checkpoint", float((ends - starts).sum()), ["checkpoint"])
        self._seg(starts, ends, CHECKPOINTING)
        if n > 1:                                 # the full training stretches between checkpoints
            full = (n - 1) * (I / r)
            self._lose("degradation", full * (1.0 - r), self._degrade_causes())
            self._seg(ends[:-1], starts[1:], TRAINING if r >= 1.0 else DEGRADED)
        self.p = float(snaps[-1])
        self.q = 0.0
        self.checkpoints += n
        self.block_end = float(starts[-1] + b)
        self._checkpointed(starts, snaps, T)
        if self.block_end < T:
            self._train(self.block_end, T)
        self.t = T

    def _checkpointed(self, starts: np.ndarray, snaps: np.ndarray, now: float) -> None:
        """Note new checkpoints; those durable by ``now`` replace the newest durable one, the rest wait."""
        if self.pending:
            starts = np.concatenate([[s for s, _ in self.pending], starts])
            snaps = np.concatenate([[x for _, x in self.pending], snaps])
        done = starts + self.d <= now
        if done.any():
            i = int(np.flatnonzero(done)[-1])
            self.durable = (float(starts[i]), float(snaps[i]))
        self.pending = list(zip(starts[~done].tolist(), snaps[~done].tolist()))

    def _last_durable(self, now: float) -> tuple[float, float]:
        best = self.durable
        for s, x in self.pending:
            if s + self.d <= now:
                best = (s, x)
        return best

    def _set_rate(self) -> bool:
        """The rate for the current failed items; False when the fabric leaves no path (the job cannot run)."""
        step = self.ctx.step_of(self.failed_net)
        if step is None:
            return False
        if self.throttled:
            step += self.ctx.compute_s * (1.0 / self.ctx.params["thermal_speed"] - 1.0)
        self.rate = min(1.0, self.ctx.step_s / step)
        return True

    # --------------------------------------------------------------------------------------- the run
    def run(self, progress=None, on_failure=None) -> "_Timeline":
        """Advance the timeline to its end. ``on_failure(now, event)``, if given, is called after each failure with
        :meth:`now` and the failure's event (None when events are not recorded): a live view of the timeline as it
        is simulated."""
        say = progress or silent
        ctx = self.ctx
        rng = np.random.default_rng(self.seed)
        heap: list = []
        seq = 0
        for name in fr.NAMES:                     # every category's arrivals at once, in a fixed order (seeded)
            k = ctx.n_items(name)
            lam = ctx.rates[name] * (ctx.units(fr.CATEGORIES[name].unit)) / 3600.0
            n = rng.poisson(lam * self.W) if lam > 0 and k > 0 else 0
            times = rng.uniform(0.0, self.W, n)
            items = rng.integers(0, k, n) if n else np.zeros(0, np.int64)
            for t, i in zip(times.tolist(), items.tolist()):
                heap.append((t, seq, "fail", (name, i, False)))
                seq += 1
        for t, name, i in ctx.injections:
            heap.append((t, seq, "fail", (name, i, True)))
            seq += 1
        heapq.heapify(heap)
        total = max(1, len(heap))
        done = 0
        while heap and heap[0][0] < self.W:
            t, _, what, data = heapq.heappop(heap)
            if what == "fail":
                done += 1
                if done % 32 == 0:
                    say(min(0.99, done / total), f"{done} of {total} failures, day {t / 86400:.1f}")
                seq = self._fail(t, *data, heap, seq)
                if on_failure is not None:
                    on_failure(self.now(t), self.events[-1] if self.record and self.events else None)
            elif what == "heal":
                self._heal(t, data)
            elif what == "resume":
                self._resume(t, data)
        if self.up:
            self._advance(self.W)
        elif self.stalled is not None:
            self._unstall(self.W)
        say(1.0, f"{self.interruptions} interruptions, effective {100 * self.effective_ratio:.1f} %")
        return self

    def _fail(self, t: float, name: str, item: int, injected: bool, heap, seq: int) -> int:
        c = fr.CATEGORIES[name]
        ctx = self.ctx
        self.counts[name] = self.counts.get(name, 0) + 1
        event = {"time": t, "category": name, "item": ctx.item_name(name, item) if self.record else "",
                 "injected": injected, "consequence": c.consequence, "lost_work": 0.0, "restored_from": None}
        repair = ctx.repair_s[name]
        degrade = (name == "thermal" or (name == "network" and ctx.params["reroute"] and not ctx.net_crash[item]))
        if degrade:
            if self.up:
                self._advance(t)
            table = self.throttled if name == "thermal" else self.failed_net
            table[item] = max(table.get(item, 0.0), t + repair)
            heapq.heappush(heap, (t + repair, seq, "heal", (name, item)))
            seq += 1
            if self._set_rate():
                self.degradations += 1
                event.update(consequence="degrade", slowdown=1.0 / self.rate, until=t + repair)
                self._event(event)
                return seq
            event["consequence"] = "crash"        # no path left: the job stops until the repair
        if not self.up:
            event["consequence"] = WHILE_DOWN
            self._event(event)
            return seq
        self._advance(t)
        self.up = False
        self.interruptions += 1
        W = self.W
        if event["consequence"] == "planned":
            save = self.d                          # a last checkpoint, durable before the stop
            spans = [("planned", save + ctx.params["planned_down_s"]), ("restart", ctx.params["restart_s"]),
                     ("restore", ctx.checkpoint["restore_s"])]
            snap = self.p
            event["restored_from"] = t
        else:
            start, snap = self._last_durable(t)
            lost = self.p - snap
            self._lose("recompute", min(lost, W), [name])
            event.update(lost_work=lost, restored_from=start)
            detect = ctx.params["detection_s"]
            wait = self._wait(t + detect, t, name, item) if c.replaces_host else 0.0
            if degrade:                            # the fabric has no path left: wait for the item's repair
                wait = max(wait, t + repair - (t + detect))
            spans = [("detection", detect), ("wait", wait), ("restart", ctx.params["restart_s"]),
                     ("restore", ctx.checkpoint["restore_s"])]
        self._swap_throttled(t + spans[0][1] + spans[1][1] if len(spans) == 4 else t)
        at = t
        for ph, dur in spans:
            end = min(at + dur, W)
            self._lose(ph, end - at, [name])
            self._seg(at, end, DOWN if ph in ("planned", "detection", "wait") else RESTARTING)
            event[ph] = dur
            at = end
        self.p, self.q = snap, 0.0
        self.pending, self.block_end = [], 0.0
        self.durable = (event["restored_from"] or 0.0, snap)
        heapq.heappush(heap, (t + sum(d for _, d in spans), seq, "resume", None))
        self._event(event)
        return seq + 1

    def _release_spares(self, at: float) -> None:
        while self.spare_back and self.spare_back[0] <= at:
            heapq.heappop(self.spare_back)
            self.spare_free += 1

    def _swap_throttled(self, at: float) -> None:
        """A restart leaves throttled GPUs behind: each host with one moves to a free spare (back when repaired)."""
        self._release_spares(at)
        for item, repaired in list(self.throttled.items()):
            if self.spare_free <= 0:
                break
            self.spare_free -= 1
            heapq.heappush(self.spare_back, repaired)
            del self.throttled[item]

    def _wait(self, at: float, failed_at: float, name: str, item: int) -> float:
        """Seconds from ``at`` until the job has healthy hosts for the failed ones: free spares at once (a used one
        comes back when the failed host is repaired), else the first spare back or the repair, whichever first."""
        need = int(self.ctx.net_hosts[item]) if name == "network" else 1
        repaired = failed_at + self.ctx.repair_s[name]
        self._release_spares(at)
        if self.spare_free >= need:
            self.spare_free -= need
            for _ in range(need):
                heapq.heappush(self.spare_back, repaired)
            return 0.0
        short = need - self.spare_free
        back = sorted(self.spare_back)
        via_spares = back[short - 1] if len(back) >= short else math.inf
        if via_spares < repaired:
            for _ in range(short):
                heapq.heappop(self.spare_back)
            self.spare_free = 0
            for _ in range(need):
                heapq.heappush(self.spare_back, repaired)
            return via_spares - at
        return max(0.0, repaired - at)

    def _heal(self, t: float, data) -> None:
        name, item = data
        table = self.throttled if name == "thermal" else self.failed_net
        if table.get(item, math.inf) > t:        # failed again since: a later repair heals it
            return
        if self.up:
            self._advance(t)
        del table[item]
        if self._set_rate() and self.stalled is not None:
            self._unstall(t)

    def _resume(self, t: float, _data) -> None:
        self.t = min(t, self.W)
        if self._set_rate():
            self.up = True
        else:                                     # still no path: down until a repair gives one back
            self.stalled = self.t

    def _unstall(self, t: float) -> None:
        end = min(t, self.W)
        self._lose("wait", end - self.stalled, ["network"])
        self._seg(self.stalled, end, DOWN)
        self.t, self.stalled, self.up = end, None, True

    def _event(self, e: dict) -> None:
        if self.record:
            self.events.append(e)

    # --------------------------------------------------------------------------------------- results
    @property
    def productive(self) -> float:
        return self.p

    @property
    def effective_ratio(self) -> float:
        return self.p / self.W

    def now(self, t: float) -> dict:
        """The timeline at wall time ``t`` (s), just after the events there: its state (a name of STATES), the
        productive time and effective ratio so far, the interruptions so far."""
        state = DOWN if not self.up or self.stalled is not None else TRAINING if self.rate >= 1.0 else DEGRADED
        return {"state": STATES[state], "time": t, "productive_s": self.p,
                "effective_ratio": self.p / t if t > 0 else 1.0, "interruptions": self.interruptions}

    def to_dict(self) -> dict:
        ctx, p = self.ctx, self.ctx.params
        days = p["days"]
        out = {
            "kind": "failures", "cluster": ctx.cluster, "seed": self.seed, "gpus": int(ctx.gpus.size),
            "hosts": int(ctx.hosts.size), "days": days, "wall_s": self.W, "model": p["model"],
            "step_s": ctx.step_s, "spares": ctx.spares,
            "checkpoint": {**ctx.checkpoint, "interval_s": self.I, "count": self.checkpoints},
            "effective_ratio": self.effective_ratio, "productive_s": self.productive,
            "lost": {"by_phase": dict(self.phase), "by_cause": dict(sorted(self.cause.items(), key=lambda kv: -kv[1]))},
            "interruptions": self.interruptions, "interruptions_per_day": self.interruptions / days,
            "degradations": self.degradations, "failures_by_category": dict(self.counts),
            "mtbf_s": ctx.mtbf_s(), "young_daly_s": ctx.young_daly_s(),
            "solves": {"fabric_states": len(ctx.steps) - 1, "seconds": ctx.solve_seconds},
        }
        if self.record:
            cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
            start = cat(self.seg_start)
            order = np.argsort(start, kind="stable")
            out["timeline"] = {"states": list(STATES), "start": start[order].tolist(),
                               "end": cat(self.seg_end)[order].tolist(),
                               "state": cat(self.seg_state)[order].astype(int).tolist()}
            out["events"] = self.events
        return out


# ------------------------------------------------------------------------------------------------ public calls
def simulate(cluster_or_spec, values: dict, seed: int | None = None, progress=None, on_failure=None) -> dict:
    """One timeline (JSON-able, schema in docs/reliability.md) of the job ``values`` (:data:`sim.failures.params.FAILURES`)
    on a preset name, spec, ClusterLayout, Topology or :class:`Prepared`; ``seed``: the failure seed (default the
    parameters' ``seed``); ``on_failure(now, event)``: called after each failure as it is simulated
    (:meth:`_Timeline.run`)."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.3))
    seed = ctx.params["seed"] if seed is None else seed
    timeline = _Timeline(ctx, seed, ctx.checkpoint["interval_s"])
    return timeline.run(span(progress, 0.3, 1.0), on_failure).to_dict()


def simulate_seeds(cluster_or_spec, values: dict, seeds, progress=None, timelines: int = 1) -> list[dict]:
    """Timelines of several seeds on one preparation; the first ``timelines`` keep their timeline and events."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.2))
    seeds = _seeds(ctx, seeds)
    out = []
    for k, s in enumerate(seeds):
        tl = _Timeline(ctx, s, ctx.checkpoint["interval_s"], record=k < timelines)
        out.append(tl.run().to_dict())
        if progress:
            progress(0.2 + 0.8 * (k + 1) / len(seeds), f"seed {s}: effective {100 * tl.effective_ratio:.1f} %")
    return out


def _seeds(ctx: Prepared, seeds) -> list[int]:
    if isinstance(seeds, int):
        return list(range(ctx.params["seed"], ctx.params["seed"] + seeds))
    return [int(s) for s in seeds]


def _stats(x) -> dict:
    x = np.asarray(x, float)
    if not x.size:
        return {"mean": None, "p5": None, "p50": None, "p95": None, "min": None, "max": None}
    p5, p50, p95 = np.percentile(x, [5, 50, 95])
    return {"mean": float(x.mean()), "p5": float(p5), "p50": float(p50), "p95": float(p95), "min": float(x.min()),
            "max": float(x.max())}


def summarize(results: list[dict]) -> dict:
    """The distribution over seeds of :func:`simulate` results: effective ratio and interruptions per day (mean,
    p5, p50, p95, min, max), and the mean seconds lost per phase and per cause."""
    if not results:
        raise UsageError("summarize needs at least one result")
    n = len(results)
    phases = {k: sum(r["lost"]["by_phase"][k] for r in results) / n for k in PHASES}
    causes: dict[str, float] = {}
    for r in results:
        for k, v in r["lost"]["by_cause"].items():
            causes[k] = causes.get(k, 0.0) + v / n
    return {"seeds": [r["seed"] for r in results], "count": n,
            "effective_ratio": _stats([r["effective_ratio"] for r in results]),
            "interruptions_per_day": _stats([r["interruptions_per_day"] for r in results]),
            "degradations": _stats([r["degradations"] for r in results]),
            "lost_mean": {"by_phase": phases, "by_cause": dict(sorted(causes.items(), key=lambda kv: -kv[1]))},
            "wall_s": results[0]["wall_s"], "mtbf_s": results[0]["mtbf_s"], "young_daly_s": results[0]["young_daly_s"]}


def sweep(cluster_or_spec, values: dict, intervals, seeds, progress=None) -> dict:
    """Effective ratio against the checkpoint interval (``intervals``: seconds, or text such as ``5m:4h``), each
    interval over the same ``seeds`` (an int: that many from the parameters' seed; or a list), beside the Young/Daly
    optimum ``sqrt(2 x blocked x MTBF)`` [S8]."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.2))
    if isinstance(intervals, str):
        try:
            intervals = parse_durations(intervals)
        except UsageError as e:
            raise ParamError("sweep_interval", str(e)) from None
    intervals = [float(i) for i in intervals]
    if not intervals or min(intervals) <= 0 or max(intervals) >= ctx.wall_s:
        raise ParamError("sweep_interval", "intervals must be more than 0 and shorter than the run")
    seeds = _seeds(ctx, seeds)
    rows, k, total = [], 0, len(intervals) * len(seeds)
    for interval in intervals:
        eff = []
        for s in seeds:
            eff.append(_Timeline(ctx, s, interval, record=False).run().effective_ratio)
            k += 1
            if progress:
                progress(0.2 + 0.8 * k / total, f"interval {interval / 60:.1f} min, seed {s}")
        rows.append({"interval_s": interval, "effective_ratio": _stats(eff)})
    means = np.array([r["effective_ratio"]["mean"] for r in rows])
    best = int(np.argmax(means))
    return {"intervals_s": intervals, "rows": rows, "seeds": seeds, "best_interval_s": intervals[best],
            "best_effective_ratio": float(means[best]), "young_daly_s": ctx.young_daly_s(),
            "checkpoint_cost_s": ctx.checkpoint["blocked_s"], "mtbf_s": ctx.mtbf_s()}
