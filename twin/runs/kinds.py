"""Simulation kinds: what a run computes, as plain functions over the engine (``sim``).

Each kind is ``fn(layout, params, progress) -> (summary, arrays)``: ``layout`` is the cluster read from the
database (:func:`twin.inventory.adapter.layout_from_db`, failed and drained items included), ``params`` the
validated parameters (see the ``*Params`` serializers: each gives defaults and field errors), ``progress`` a
callable ``progress(percent, link_util=None, gpu_state=None)`` that the kind calls as it advances (it also raises
:class:`RunCancelled` when the run was cancelled). ``summary`` is JSON, ``arrays`` maps names to numpy arrays
(stored as :class:`twin.runs.models.RunArray`).

Arrays a kind returns (the live view uses the same layouts):

- ``link_utilization``: float, one value per cable of the backend fabric, in the order of the inventory's
  ``Link`` rows of that fabric by id; the busier direction's time-averaged utilization (0..1) during the largest
  message size; 0 for inactive cables.
- ``gpu_state``: uint8 per GPU (cluster index order), codes of :data:`twin.live.frames.GPU_STATES`.

- ``figure``: no arrays; its summary holds the figure's panels (:mod:`sim.figures`).

``sweep`` is not a function here: a sweep fans out into child runs of another kind (:mod:`twin.runs.tasks`); this
module validates its ranges (:class:`SweepParams`) and merges its children's summaries (:func:`merge_sweep`).
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
from rest_framework import serializers

from sim import figures
from sim.errors import UsageError
from sim.units import parse_sizes
from sim.collectives import ALGORITHMS, COLLECTIVES, DTYPES, CollectiveError, canonical
from sim.layout import FABRIC_BACKEND, STATUS_ACTIVE
from sim.netsim import run_collective
from sim.placement import PLACEMENTS, place
from sim.routing import ROUTINGS, NoPathError, default_routing
from sim.topology import topology_from_layout
from twin.live.frames import GPU_IDLE, GPU_IN_JOB, GPU_UNUSABLE
from twin.runs.choices import RunKind
from twin.runs.constants import MAX_FIGURE_JOBS, MAX_FIGURE_SEEDS, MAX_SWEEP_CHILDREN

GB = 1e9


class RunCancelled(Exception):
    """Raised by the progress callback when the run's cancellation was requested."""


# ------------------------------------------------------------------------------------------------ parameters
class _SizesField(serializers.CharField):
    """Message sizes as ``python -m sim collective --sizes`` takes them (``1M:1G``, ``8M,64M``)."""

    def to_internal_value(self, data):
        text = super().to_internal_value(data)
        try:
            parse_sizes(text)
        except UsageError as e:
            raise serializers.ValidationError(str(e)) from None
        return text


class CollectiveParams(serializers.Serializer):
    """Parameters of ``collective``: the options of ``python -m sim collective``, plus ``seeds`` (run with the
    seeds ``seed .. seed + seeds - 1`` and report the spread: ECMP's outcome depends on the hash seed)."""

    collective = serializers.CharField(default="allgather", help_text=f"one of {', '.join(COLLECTIVES)}")
    gpus = serializers.IntegerField(default=64, min_value=2)
    placement = serializers.ChoiceField(choices=PLACEMENTS, default="topology")
    routing = serializers.ChoiceField(choices=ROUTINGS, default=None, allow_null=True,
                                      help_text="null: the fabric's default (ecmp on RoCE, dmodk on InfiniBand)")
    qps = serializers.IntegerField(default=1, min_value=1, max_value=1024)
    sizes = _SizesField(default="1M:1G")
    algorithm = serializers.ChoiceField(choices=ALGORITHMS, default="ring")
    seed = serializers.IntegerField(default=0, min_value=0)
    seeds = serializers.IntegerField(default=1, min_value=1, max_value=10000)
    type = serializers.ChoiceField(choices=DTYPES, default="float")
    channels = serializers.IntegerField(default=None, allow_null=True, min_value=1, max_value=64)
    hottest = serializers.IntegerField(default=5, min_value=0, max_value=100)

    def validate_collective(self, value):
        try:
            return canonical(value)
        except CollectiveError as e:
            raise serializers.ValidationError(str(e)) from None

    def validate(self, attrs):
        cluster = self.context.get("cluster")
        if cluster is not None:
            from twin.inventory.models import GPU
            total = GPU.objects.filter(cluster=cluster).count()
            if attrs["gpus"] > total:
                raise serializers.ValidationError({"gpus": [f"{attrs['gpus']:,} GPUs asked, {cluster.name} has "
                                                            f"{total:,}"]})
        if attrs["algorithm"] == "tree" and attrs["collective"] != "allreduce":
            raise serializers.ValidationError({"algorithm": ["tree is for allreduce only"]})
        return attrs


class FabricHealthParams(serializers.Serializer):
    """Parameters of ``fabric_health``: a ring AllGather over every usable GPU (or ``gpus`` of them) under the
    current inventory; ``threshold`` is the normalized busbw under which the fabric is reported unhealthy."""

    gpus = serializers.IntegerField(default=None, allow_null=True, min_value=2,
                                    help_text="null: every usable GPU of the cluster")
    sizes = _SizesField(default="1G")
    routing = serializers.ChoiceField(choices=ROUTINGS, default=None, allow_null=True)
    qps = serializers.IntegerField(default=1, min_value=1, max_value=1024)
    seed = serializers.IntegerField(default=0, min_value=0)
    hottest = serializers.IntegerField(default=10, min_value=0, max_value=100)
    threshold = serializers.FloatField(default=0.8, min_value=0.0, max_value=1.0)


FIGURE_CHOICES = ("allgather-scale",)


def default_figure_jobs(n_gpus: int) -> list[int]:
    """The job sizes of ``python -m sim figure`` that fit ``n_gpus``: its full-scale defaults, else its quick ones."""
    return ([n for n in figures.DEFAULT_JOBS if n <= n_gpus] or [n for n in figures.QUICK_JOBS if n <= n_gpus])


class FigureParams(serializers.Serializer):
    """Parameters of ``figure``: the published AllGather figure (``python -m sim figure allgather-scale``) on the
    run's cluster as the inventory has it. ``jobs``: job sizes in GPUs (default: :func:`default_figure_jobs` of
    the cluster's GPUs); ``seeds``: placement and hash seeds per configuration; ``background``: include the
    busy-cluster series (other jobs filling the cluster)."""

    figure = serializers.CharField(default="allgather-scale", help_text=f"one of {', '.join(FIGURE_CHOICES)}")
    jobs = serializers.ListField(child=serializers.IntegerField(min_value=2), default=None, allow_null=True,
                                 allow_empty=False, max_length=MAX_FIGURE_JOBS,
                                 help_text="job sizes in GPUs; null: the figure's defaults that fit the cluster")
    seeds = serializers.IntegerField(default=figures.DEFAULT_SEEDS, min_value=1, max_value=MAX_FIGURE_SEEDS)
    background = serializers.BooleanField(default=True)

    def validate_figure(self, value):
        if value == "roce-vs-ib":
            raise serializers.ValidationError(
                "roce-vs-ib compares two clusters and a run reads one: run allgather-scale on each cluster and "
                "compare the runs, or use python -m sim figure roce-vs-ib")
        if value not in FIGURE_CHOICES:
            raise serializers.ValidationError(f"unknown figure {value!r}: choose one of {', '.join(FIGURE_CHOICES)}")
        return value

    def validate(self, attrs):
        if attrs["jobs"] is not None:
            attrs["jobs"] = sorted(set(attrs["jobs"]))
        cluster = self.context.get("cluster")
        if cluster is None:
            return attrs                    # no cluster to check against: the run resolves jobs on its topology
        from twin.inventory.models import GPU
        total = GPU.objects.filter(cluster=cluster).count()
        jobs = attrs["jobs"] or default_figure_jobs(total)
        if not jobs:
            raise serializers.ValidationError({"jobs": [f"{cluster.name} has {total} GPUs: too few for a job"]})
        too_big = [n for n in jobs if n > total]
        if too_big:
            asked = ", ".join(map(str, too_big))
            raise serializers.ValidationError({"jobs": [f"{asked} GPUs asked, {cluster.name} has {total:,}"]})
        attrs["jobs"] = jobs
        return attrs


class SweepParams(serializers.Serializer):
    """Parameters of ``sweep``: a base ``kind`` with its ``params`` and, in ``sweep``, a list of values per
    parameter; one child run per combination (the cartesian product, at most MAX_SWEEP_CHILDREN)."""

    kind = serializers.ChoiceField(choices=[k for k in RunKind.values if k != RunKind.SWEEP])
    params = serializers.DictField(default=dict)
    sweep = serializers.DictField(child=serializers.ListField(allow_empty=False))

    def validate(self, attrs):
        kind, base, axes = attrs["kind"], attrs["params"], attrs["sweep"]
        if not axes:
            raise serializers.ValidationError({"sweep": ["give at least one parameter with a list of values"]})
        known = set(PARAMS[kind]().fields)
        unknown = sorted(set(axes) - known)
        if unknown:
            raise serializers.ValidationError({"sweep": [f"{kind} has no parameter {', '.join(unknown)}"]})
        n = int(np.prod([len(v) for v in axes.values()]))
        if n > MAX_SWEEP_CHILDREN:
            raise serializers.ValidationError({"sweep": [f"{n} combinations, at most {MAX_SWEEP_CHILDREN}"]})
        validate_params(kind, base, self.context.get("cluster"), field="params")
        for combo in combinations(axes):
            try:
                validate_params(kind, {**base, **combo}, self.context.get("cluster"), field="sweep")
            except serializers.ValidationError as e:
                raise serializers.ValidationError({"sweep": {"combination": combo, "errors": e.detail["sweep"]}})
        return attrs


def combinations(axes: dict) -> list[dict]:
    """The cartesian product of the sweep's axes, in order (the last axis varies fastest).

    >>> combinations({"routing": ["ecmp", "eecmp"], "qps": [1, 16]})
    [{'routing': 'ecmp', 'qps': 1}, {'routing': 'ecmp', 'qps': 16}, {'routing': 'eecmp', 'qps': 1}, {'routing': 'eecmp', 'qps': 16}]
    """
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def validate_params(kind: str, params, cluster=None, field: str = "params") -> dict:
    """``params`` of ``kind`` with the defaults filled in; raises a DRF ValidationError ``{field: {name: [...]}}``
    naming each bad parameter."""
    if kind not in PARAMS:
        raise serializers.ValidationError({"kind": [f"unknown kind {kind!r}: choose one of {', '.join(PARAMS)}"]})
    if not isinstance(params, dict):
        raise serializers.ValidationError({field: ["expected an object of parameters"]})
    s = PARAMS[kind](data=params, context={"cluster": cluster})
    if not s.is_valid():
        raise serializers.ValidationError({field: s.errors})
    unknown = sorted(set(params) - set(s.fields))
    if unknown:
        raise serializers.ValidationError({field: {n: [f"unknown parameter of {kind}"] for n in unknown}})
    return dict(s.validated_data)


# --------------------------------------------------------------------------------------------------- helpers
def backend_cable_utilization(topo, directed: np.ndarray) -> np.ndarray:
    """Per backend cable (inventory ``Link`` rows of the backend fabric, by id) the larger utilization of its two
    directions; ``directed`` is per directed link of ``topo`` (``topo.link_cable`` maps them to layout links)."""
    backend = np.flatnonzero(np.asarray(topo.layout.link_fabric) == FABRIC_BACKEND)
    out = np.zeros(backend.size, dtype=np.float32)
    np.maximum.at(out, np.searchsorted(backend, np.asarray(topo.link_cable)), np.asarray(directed, np.float32))
    return out


def gpu_states(topo, job_gpus=None) -> np.ndarray:
    state = np.where(np.asarray(topo.gpu_usable), GPU_IDLE, GPU_UNUSABLE).astype(np.uint8)
    if job_gpus is not None:
        state[np.asarray(job_gpus)] = GPU_IN_JOB
    return state


def _rows(result) -> list[dict]:
    return result.to_dict()["rows"]


def _hottest(result) -> list[dict]:
    return [{"link": h.link, "name": h.name, "utilization": h.utilization, "flows": h.n_flows} for h in result.hottest]


# ----------------------------------------------------------------------------------------------------- kinds
def collective(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """A collective over the backend fabric, as ``python -m sim collective`` runs it (same engine functions),
    once per seed. Summary: the nccl-tests rows of the first seed, its normalized busbw at the largest size
    (``norm_busbw``) and the large-message limit, and with several seeds their spread; arrays: link utilization
    (mean over seeds) and GPU states."""
    topo = topology_from_layout(layout)
    usable = int(np.asarray(topo.gpu_usable).sum())
    if params["gpus"] > usable:
        raise CollectiveError(f"asked for {params['gpus']:,} GPUs but the cluster has only {usable:,} usable "
                              f"(of {topo.n_gpus:,})")
    sizes = parse_sizes(params["sizes"])
    routing = params["routing"] or default_routing(topo.kind)
    n_seeds = params["seeds"]
    util = np.zeros(int(np.sum(np.asarray(layout.link_fabric) == FABRIC_BACKEND)), dtype=np.float64)
    per_seed, first, gpus = [], None, None
    progress(0.0, gpu_state=gpu_states(topo))
    for i in range(n_seeds):
        seed = params["seed"] + i
        gpus = place(topo, params["gpus"], params["placement"], seed)
        result = run_collective(topo, gpus, params["collective"], sizes, algorithm=params["algorithm"],
                                routing=routing, qps=params["qps"], seed=seed, dtype=params["type"],
                                channels=params["channels"], hottest=params["hottest"] if i == 0 else 0,
                                progress=lambda f, msg='', i=i: progress(100.0 * (i + f) / n_seeds))
        cable = backend_cable_utilization(topo, result.link_utilization())
        util += cable
        first = first or result
        per_seed.append({"seed": seed, "norm_busbw": result.rows[-1].norm, "limit_norm_busbw": result.limit_norm})
        progress(100.0 * (i + 1) / n_seeds, link_util=cable, gpu_state=gpu_states(topo, gpus))
    norms = np.array([s["norm_busbw"] for s in per_seed])
    doc = first.to_dict()
    summary = {
        "collective": doc["collective"], "algorithm": doc["algorithm"], "ranks": doc["ranks"], "hosts": doc["hosts"],
        "fabric": doc["fabric"], "routing": routing, "qps": params["qps"], "placement": params["placement"],
        "roofline_GBps": doc["roofline_GBps"], "rows": doc["rows"],
        "busbw_GBps": doc["rows"][-1]["busbw_GBps"], "norm_busbw": float(norms.mean()),
        "limit_norm_busbw": doc["limit_norm_busbw"], "hottest_links": _hottest(first),
        "seeds": per_seed if n_seeds > 1 else None,
        "norm_busbw_min": float(norms.min()), "norm_busbw_max": float(norms.max()),
    }
    return summary, {"link_utilization": util / n_seeds, "gpu_state": gpu_states(topo, gpus)}


def fabric_health(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The nightly check: a ring AllGather over every usable GPU (or ``gpus``, placed topology-aware) under the
    current inventory, failed links and switches included. Reports the normalized busbw, the non-active links and
    switches of the backend fabric, the GPUs no job can use, and the hottest links; ``healthy`` when the
    normalized busbw reaches ``threshold`` and every flow found a path."""
    topo = topology_from_layout(layout)
    backend_links = np.asarray(layout.link_fabric) == FABRIC_BACKEND
    backend_switches = np.asarray(layout.switch_fabric) == FABRIC_BACKEND
    usable = int(np.asarray(topo.gpu_usable).sum())
    n = usable if params["gpus"] is None else min(params["gpus"], usable)
    summary = {
        "gpus": int(topo.n_gpus), "usable_gpus": usable, "unreachable_gpus": int(topo.n_gpus - usable),
        "job_gpus": n,
        "non_active_links": int(np.sum(backend_links & (np.asarray(layout.link_status) != STATUS_ACTIVE))),
        "non_active_switches": int(np.sum(backend_switches & (np.asarray(layout.switch_status) != STATUS_ACTIVE))),
        "routing": params["routing"] or default_routing(topo.kind), "qps": params["qps"],
        "threshold": params["threshold"],
    }
    progress(0.0, gpu_state=gpu_states(topo))
    if n < 2:
        return {**summary, "healthy": False, "norm_busbw": 0.0, "problem": f"only {n} usable GPUs"}, \
            {"gpu_state": gpu_states(topo)}
    gpus = place(topo, n, "topology", params["seed"])
    try:
        result = run_collective(topo, gpus, "allgather", parse_sizes(params["sizes"]), routing=summary["routing"],
                                qps=params["qps"], seed=params["seed"], hottest=params["hottest"],
                                progress=lambda f, msg='': progress(100.0 * f))
    except NoPathError as e:
        return {**summary, "healthy": False, "norm_busbw": 0.0, "problem": f"unroutable: {e}"}, \
            {"gpu_state": gpu_states(topo, gpus)}
    norm = result.rows[-1].norm
    cable = backend_cable_utilization(topo, result.link_utilization())
    progress(100.0, link_util=cable, gpu_state=gpu_states(topo, gpus))
    summary.update({
        "rows": _rows(result), "busbw_GBps": result.rows[-1].busbw / GB, "norm_busbw": norm,
        "limit_norm_busbw": result.limit_norm, "roofline_GBps": result.roofline / GB,
        "hottest_links": _hottest(result), "healthy": bool(norm >= params["threshold"]),
    })
    return summary, {"link_utilization": cable, "gpu_state": gpu_states(topo, gpus)}


def figure(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The published AllGather figure on this cluster (:func:`sim.figures.run_series`, the series of
    :func:`sim.figures.allgather_series` for the cluster's fabric), progress after every simulated run. Summary:
    the per-series, per-job-size min/median/max of the normalized busbw limit (:func:`sim.figures.summarize`),
    the series (labels, groups, colours and line styles of the published drawing), the panels and the jobs."""
    topo = topology_from_layout(layout)
    jobs = params["jobs"] or default_figure_jobs(int(np.asarray(topo.gpu_usable).sum()))
    series = [s for s in figures.allgather_series(topo.kind) if params["background"] or not s.background]
    progress(0.0)
    rows = figures.run_series(topo, layout.spec.name, series, jobs, params["seeds"], figures.GIB,
                              on_run=lambda done, total: progress(100.0 * done / total))
    if not rows:
        raise CollectiveError(f"no job size of {jobs} fits the cluster's usable GPUs")
    summary = {
        "figure": params["figure"], "fabric": topo.kind, "jobs": sorted(set(jobs) & {r["gpus"] for r in rows}),
        "seeds": params["seeds"], "size": figures.GIB, "background": params["background"], "runs": len(rows),
        "metric": "norm_busbw_limit: AllGather (ring) busbw / roofline as the message size grows",
        "series": [{**asdict(s), "color": figures.STYLE[s.key][0], "dash": figures.STYLE[s.key][1]}
                   for s in series],
        "panels": [{"title": title, "series": keys} for title, keys in figures.SCALE_PANELS],
        "summary": figures.summarize(rows),
    }
    return summary, {}


def merge_sweep(parent_params: dict, children: list[dict]) -> dict:
    """The sweep's summary from its children (dicts with ``id``, ``params``, ``status``, ``worker``, ``summary``,
    ``error``, in combination order): one row per combination with its headline figures, and the best one."""
    axes = parent_params["sweep"]
    rows = []
    for c in children:
        s = c["summary"] or {}
        rows.append({"run": c["id"], **{k: c["params"].get(k) for k in axes}, "status": c["status"],
                     "worker": c["worker"], "norm_busbw": s.get("norm_busbw"), "busbw_GBps": s.get("busbw_GBps"),
                     "limit_norm_busbw": s.get("limit_norm_busbw"), "error": c["error"] or None})
    done = [r for r in rows if r["norm_busbw"] is not None]
    best = max(done, key=lambda r: r["norm_busbw"]) if done else None
    return {"kind": parent_params["kind"], "axes": axes, "children": rows, "succeeded": len(done),
            "failed": len(rows) - len(done), "workers": sorted({r["worker"] for r in rows if r["worker"]}),
            "best": best, "norm_busbw": best["norm_busbw"] if best else None}


@dataclass(frozen=True)
class Kind:
    params: type
    run: Callable | None


KINDS = {
    RunKind.COLLECTIVE: Kind(CollectiveParams, collective),
    RunKind.FABRIC_HEALTH: Kind(FabricHealthParams, fabric_health),
    RunKind.SWEEP: Kind(SweepParams, None),
    RunKind.FIGURE: Kind(FigureParams, figure),
}
PARAMS = {str(k): v.params for k, v in KINDS.items()}
