"""A failures run's preparation, shared by all its seeds and checkpoint intervals (:class:`Prepared`): the
parameters validated, the cluster, the job placed and its healthy step solved, its checkpoint's costs, its network
items, the chosen failures resolved against the cluster's names, and the step under failed fabric items (solved
once per fabric state). It validates raw values with :data:`sim.failures.params.FAILURES`, so it sits above it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from sim.core.errors import ParamError, UsageError
from sim.core.progress import silent, span
from sim.core.units import parse_duration
from sim.fabric.layout import LINK_LEAF_SPINE, LINK_SPINE_CORE, STATUS_FAILED, ClusterLayout, expand
from sim.fabric.names import gpu_name, host_names, item_names
from sim.fabric.placement import place
from sim.fabric.spec import ClusterSpec, load_spec
from sim.fabric.topology import Topology, topology_from_layout
from sim.failures import rates as fr
from sim.failures.costs import checkpoint_costs
from sim.failures.detection import detection_seconds
from sim.failures.inject import Injection, parse_injections
from sim.failures.params import FAILURES
from sim.jobs.job import run_job
from sim.jobs.layout import model_of, on_gpu, resolve_job
from sim.jobs.traffic import job_traffic

NET_CABLE, NET_SWITCH = 0, 1
NET_CLASSES = ("nic cable", "leaf-spine cable", "spine-core cable", "leaf", "spine", "core")   # tier + kind


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
    traffic: object = None            # the job's transfers (sim.jobs.traffic.JobTraffic), built at the first re-solve
    solves: int = 0
    solve_seconds: float = 0.0
    _names: dict | None = None
    _detection: dict | None = None

    @property
    def wall_s(self) -> float:
        return self.params["days"] * 86400.0

    def units(self, unit: str) -> int:
        return {"gpu": int(self.gpus.size), "host": int(self.hosts.size), "job": 1,
                "network_item": int(self.net_id.size)}[unit]

    def n_items(self, category: str) -> int:
        return self.units(fr.CATEGORIES[category].unit)

    def names(self) -> dict:
        if self._names is None:
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
        """Mean time between failures that lose work (crashes, and thermal throttling, whose host is swapped out by
        a stop once the straggler is found) from the rates: the ``M`` of Young/Daly."""
        total = 0.0
        for name, c in fr.CATEGORIES.items():
            if c.consequence != "crash" and name != "thermal":
                continue
            lam = self.rates[name] * self.units(c.unit) / 3600.0
            if name == "network" and self.params["reroute"] and self.net_id.size:
                lam *= float(self.net_crash.mean())
            total += lam
        return 1.0 / total if total > 0 else math.inf

    def young_daly_s(self) -> float:
        """sqrt(2 x C x MTBF) [S8], C the training time one checkpoint costs (``cost_s``: its wait and what its
        drain takes from data loading, docs/reliability.md)."""
        return math.sqrt(2.0 * self.checkpoint["cost_s"] * self.mtbf_s())

    @property
    def detection_s(self) -> dict:
        """Seconds from a crash to its detection per category (:mod:`sim.failures.detection`)."""
        if self._detection is None:
            self._detection = detection_seconds(self.params, self.step_s)
        return self._detection


def _solve_step(ctx: Prepared, failed: frozenset) -> float | None:
    lay = ctx.layout
    link_status, switch_status = lay.link_status.copy(), lay.switch_status.copy()
    for kind, i in failed:
        (link_status if kind == NET_CABLE else switch_status)[i] = STATUS_FAILED
    topo = topology_from_layout(replace(lay, link_status=link_status, switch_status=switch_status))
    if ctx.traffic is None:
        ctx.traffic = job_traffic(ctx.topo, ctx.gpus, resolve_job(on_gpu(ctx.topo, ctx.params)))
    try:
        return float(run_job(topo, ctx.params, gpus=ctx.gpus, traffic=ctx.traffic).step_time)
    except (UsageError, ValueError):          # a GPU cut off, or a transfer with no path left (NoPathError)
        return None


def _cluster(cluster_or_spec):
    """``(name, layout, topology)`` of a preset name or spec path, a ClusterSpec, a ClusterLayout (the twin's, from
    its inventory, failed items included) or a Topology."""
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
    say = progress or silent
    if isinstance(cluster_or_spec, Prepared):
        return cluster_or_spec
    p = FAILURES.validate(values)
    name, layout, topo = _cluster(cluster_or_spec)
    usable = int(np.count_nonzero(topo.gpu_usable))
    if p["gpus"] > usable:
        raise ParamError("gpus", f"{p['gpus']:,} GPUs asked, {name} has {usable:,} usable")
    say(0.0, f"placing {p['gpus']:,} GPUs and solving the healthy step")
    job_p = {**p, "hottest": 0}
    try:
        gpus = np.asarray(place(topo, p["gpus"], p["placement"], p["seed"]))
    except ValueError as e:
        raise ParamError("gpus", str(e)) from None
    healthy = run_job(topo, job_p, gpus=gpus, progress=span(progress, 0.0, 0.4))
    hosts = np.unique(np.asarray(topo.gpu_host)[gpus])
    wall = p["days"] * 86400.0
    ckpt = checkpoint_costs(layout, topo, p, resolve_job(on_gpu(topo, job_p)), model_of(job_p), span(progress, 0.4, 0.9),
                            step_s=float(healthy.step_time), hosts=int(hosts.size))
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
                   rates=fr.rates(fr.parse_overrides(p["rates"], "rates"), p["rate_scale"],
                                  fr.fleet_scale(layout.spec.node_failure_rate)),
                   repair_s={k: 3600.0 * v for k, v in fr.repair_hours(fr.parse_overrides(p["repair_h"],
                                                                                            "repair_h")).items()},
                   injections=[])
    ctx.steps[frozenset()] = ctx.step_s
    ctx.injections = _resolve_injections(ctx, parse_injections(p["inject"], wall))
    say(1.0, f"step {ctx.step_s:.3f} s; checkpoint blocks {ckpt['blocked_s']:.2f} s, durable after "
             f"{ckpt['durable_s']:.2f} s, restore {ckpt['restore_s']:.2f} s ({ckpt['source']})")
    return ctx


def _network_items(topo, gpus: np.ndarray):
    """The job's network items: each GPU's NIC cable and its rack switch (no other path: a crash, cutting off its
    hosts; with NICs of several ports, every port's cable and leaf, whose failure moves the NIC's traffic to its
    other ports: re-routed, not a crash), then the fabric cables and switches above its leaves that its traffic may
    cross (other paths exist)."""
    gpu_host = np.asarray(topo.gpu_host)
    single = getattr(topo, "ports_per_nic", 1) == 1
    port_up = np.asarray(topo.gpu_uplink)[:, None] if single else np.asarray(topo.gpu_port_uplink)
    port_leaf = np.asarray(topo.gpu_leaf)[:, None] if single else np.asarray(topo.gpu_port_leaf)
    up = port_up[gpus].ravel()
    up = up[up >= 0]
    nic_cables = np.asarray(topo.link_cable)[up]
    nic_hosts = np.full(nic_cables.size, int(single), np.int64)
    gpu_leaf = port_leaf[gpus].ravel()
    job_hosts = np.repeat(gpu_host[gpus], port_leaf.shape[1])
    leaves = np.unique(gpu_leaf)
    pairs = np.unique(np.searchsorted(leaves, gpu_leaf) * (gpu_host.size + 1) + job_hosts)
    hosts_of_leaf = np.bincount(pairs // (gpu_host.size + 1), minlength=leaves.size).astype(np.int64)
    kinds, ids, crash, cut = [np.full(nic_cables.size, NET_CABLE)], [nic_cables], \
        [np.full(nic_cables.size, single)], [nic_hosts]
    kinds.append(np.full(leaves.size, NET_SWITCH))
    ids.append(np.asarray(topo.switch_layout_id)[leaves])
    crash.append(np.full(leaves.size, single))
    cut.append(hosts_of_leaf if single else np.zeros(leaves.size, np.int64))
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
