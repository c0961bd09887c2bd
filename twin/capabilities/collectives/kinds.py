"""The collective kinds (collective, fabric health, the published figure, a preset's page of figures), each registered as one :class:`twin.runs.registry.Kind`: what a run computes, as plain
functions over the engine (``sim``).

A kind's ``run(layout, params, progress) -> (summary, arrays)``: ``layout`` is the cluster read from the database
(:func:`twin.inventory.adapter.layout_from_db`, failed and drained items included), ``params`` the parameters
validated by the kind's :mod:`sim.core.params` declaration, ``progress(fraction, message="", *, force=False,
**sections)`` the run's reporter (live sections by name: these kinds send ``link_util`` and ``gpu_state``):
``fraction`` is the share of the work done as the engine counts it (the same numbers the CLI's progress bar shows);
it raises :class:`RunCancelled` once the run was cancelled.

Arrays (the live view uses the same layouts; their dtypes are declared by each kind):

- ``link_utilization``: one value per cable of the backend fabric, in the order of the inventory's ``Link`` rows
  of that fabric by id; the busier direction's time-averaged utilization (0..1) during the largest message size,
  in the median run; 0 for inactive cables.
- ``gpu_state``: per GPU (cluster index order), codes of :data:`twin.live.sections.GPU_STATES`.

Figures over several seeds are ``{"median", "min", "max"}`` (:meth:`sim.fabric.seeds.SeededResult.stats`); the
nccl-tests ``rows``, ``hottest_links`` and ``link_utilization`` are the median run's, which ``table_of`` names.
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Callable

import numpy as np

from sim.fabric import figures, preset_figure as preset_page
from sim.fabric.collectives import MAX_ALLTOALL_TRANSFERS, CollectiveError
from sim.core.errors import ParamError
from sim.fabric.hostlist import HostIndex, ListError, given_placement, order_note
from sim.fabric.layout import FABRIC_BACKEND, STATUS_ACTIVE
from sim.fabric.nccl import ring_channels
from sim.fabric.params import COLLECTIVE, FABRIC_HEALTH, FIGURE, GIVEN, PRESET_FIGURE
from sim.fabric.paths import NoPathError
from sim.fabric.routing import resolve_routing
from sim.fabric.entry import run_collective
from sim.fabric.seeds import SeededResult, run_collective_seeds
from sim.fabric.topology import topology_from_layout
from twin.inventory import gpu_grid
from twin.runs.kinds import backend_cable_utilization, gpu_states
from twin.runs import limits
from twin.runs.registry import Headline, Kind, register


# Arrays of the collective kinds: a utilization needs 3 significant digits (a heatmap colour); states are codes.
LINK_ARRAYS = {"link_utilization": "float16", "gpu_state": "uint8"}
COLLECTIVE_HEADLINE = (Headline("norm_busbw", "normalized busbw at the largest size"),
                       Headline("busbw_GBps", "busbw at the largest size", "GBps"),
                       Headline("limit_norm_busbw", "large-message limit (bandwidth term)"))


def _hottest(result) -> list[dict]:
    return [{"link": h.link, "name": h.name, "utilization": h.utilization, "flows": h.n_flows} for h in result.hottest]


def seeded_summary(res: SeededResult) -> dict:
    """What a collective over seeds says: each headline figure as ``{median, min, max}``, the median run's
    nccl-tests rows and hottest links (``table_of`` says which run), and every seed's figures."""
    m = res.median
    doc = m.result.to_dict()
    which = "median run" if len(res.runs) > 1 else "the run"
    return {
        "collective": doc["collective"], "algorithm": doc["algorithm"], "algorithm_choice": doc["algorithm_choice"],
        "ranks": doc["ranks"], "hosts": doc["hosts"],
        "fabric": doc["fabric"], "routing": doc["routing"], "qps": doc["qps"], "roofline_GBps": doc["roofline_GBps"],
        "seeds": len(res.runs), **res.stats(),
        "protocol": doc["protocol"], "latency_us_by_protocol": doc["latency_us_by_protocol"],
        "table_of": f"{which} (seed {m.seed})", "median_seed": m.seed,
        "rows": doc["rows"], "hottest_links": _hottest(m.result), "per_seed": res.per_seed(),
    }


def _usable(topo) -> int:
    return int(np.asarray(topo.gpu_usable).sum())


# ----------------------------------------------------------------------------------------------------- kinds
def collective(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """A collective over the backend fabric, as ``python -m sim collective`` runs it: the same
    :func:`sim.fabric.seeds.run_collective_seeds`, once per seed, with the same progress fractions. Each seed's link
    utilization goes to the live view as it ends; the stored arrays are the median run's."""
    topo = topology_from_layout(layout)
    usable = _usable(topo)
    if params["gpus"] > usable:
        raise CollectiveError(f"asked for {params['gpus']:,} GPUs but the cluster has only {usable:,} usable "
                              f"(of {topo.n_gpus:,})")
    progress(0.0, "placing the job", gpu_state=gpu_states(topo))

    def on_seed(i, run):
        cable = backend_cable_utilization(topo, run.result.link_utilization())
        progress(None, link_util=cable, gpu_state=gpu_states(topo, run.gpus))

    res = run_collective_seeds(topo, params, progress, on_seed=on_seed)
    summary = {**seeded_summary(res), "placement": params["placement"]}
    if params["placement"] == GIVEN:
        summary["intra_order"] = params["intra_order"]
        summary["order_note"] = order_note(HostIndex.of_topology(topo), res.median.gpus, params["intra_order"])
    m = res.median
    return summary, {"link_utilization": backend_cable_utilization(topo, m.result.link_utilization()),
                     "gpu_state": gpu_states(topo, m.gpus)}


def fabric_health(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The nightly check: a ring AllGather over every usable GPU (or ``gpus``, placed topology-aware) under the
    current inventory, failed links and switches included, through the same seeded collective as ``collective``
    (one seed). Reports the normalized busbw, the non-active links and switches of the backend fabric, the GPUs no
    job can use, and the hottest links; ``healthy`` when the normalized busbw reaches ``threshold`` and every flow
    found a path."""
    topo = topology_from_layout(layout)
    backend_links = np.asarray(layout.link_fabric) == FABRIC_BACKEND
    backend_switches = np.asarray(layout.switch_fabric) == FABRIC_BACKEND
    usable = _usable(topo)
    n = usable if params["gpus"] is None else min(params["gpus"], usable)
    routing = resolve_routing(params["routing"], topo.kind)
    summary = {
        "gpus": int(topo.n_gpus), "usable_gpus": usable, "unreachable_gpus": int(topo.n_gpus - usable),
        "job_gpus": n,
        "non_active_links": int(np.sum(backend_links & (np.asarray(layout.link_status) != STATUS_ACTIVE))),
        "non_active_switches": int(np.sum(backend_switches & (np.asarray(layout.switch_status) != STATUS_ACTIVE))),
        "routing": routing, "qps": params["qps"], "hash": params["hash"], "udp_sport": params["udp_sport"],
        "threshold": params["threshold"],
    }
    nothing = {"median": 0.0, "min": 0.0, "max": 0.0}
    progress(0.0, "placing the AllGather", gpu_state=gpu_states(topo))
    if n < 2:
        return {**summary, "healthy": False, "norm_busbw": nothing, "problem": f"only {n} usable GPUs"}, \
            {"gpu_state": gpu_states(topo)}
    job = COLLECTIVE.validate({"collective": "allgather", "gpus": n, "placement": "topology", "routing": routing,
                               "qps": params["qps"], "hash": params["hash"], "udp_sport": params["udp_sport"],
                               "sizes": params["sizes"], "seed": params["seed"],
                               "hottest": params["hottest"]})
    try:
        res = run_collective(topo, job, progress).seeded
    except NoPathError as e:
        return {**summary, "healthy": False, "norm_busbw": nothing, "problem": f"unroutable: {e}"}, \
            {"gpu_state": gpu_states(topo)}
    m = res.median
    cable = backend_cable_utilization(topo, m.result.link_utilization())
    progress(1.0, link_util=cable, gpu_state=gpu_states(topo, m.gpus))
    summary.update(seeded_summary(res))
    summary["healthy"] = bool(summary["norm_busbw"]["median"] >= params["threshold"])
    return summary, {"link_utilization": cable, "gpu_state": gpu_states(topo, m.gpus)}


def default_figure_jobs(n_gpus: int) -> list[int]:
    """The job sizes of ``python -m sim figure`` that fit ``n_gpus``: its full-scale defaults, else its quick ones."""
    return [n for n in figures.DEFAULT_JOBS if n <= n_gpus] or [n for n in figures.QUICK_JOBS if n <= n_gpus]


# The normalized busbw limit of two series at the largest job each ran: the optimized configuration, and the
# fragmented one routed out of the box by hashing (5-tuple ECMP on RoCE).
# What the published figure reports (Gangidi et al., SIGCOMM 2024: docs/sources.md), per panel of
# sim.fabric.figures.SCALE_PANELS and the series groups it speaks of: drawn beside the simulated curves as the published
# claim, not as data points.
PUBLISHED = {
    "source": "Gangidi et al., RDMA over Ethernet for Distributed AI Training at Meta Scale, SIGCOMM 2024",
    "metric": "normalized AllGather busbw (% of roofline) at message sizes where roofline performance is expected",
    "claims": [
        {"panel": 0, "groups": ["a"], "low": 0.90, "high": 1.00, "label": "small clusters: 90 %+ out of the box"},
        {"panel": 0, "groups": ["b"], "low": 0.10, "high": 0.90, "label": "large cluster, unoptimized: 10-90 %"},
        {"panel": 1, "groups": ["b"], "low": 0.10, "high": 0.90, "label": "large cluster, unoptimized: 10-90 %"},
        {"panel": 2, "groups": ["c"], "low": 0.90, "high": 1.00,
         "label": "optimized (topology-aware scheduling, routing and collective-library changes): 90 %+"},
        {"panel": 3, "groups": ["c"], "low": 0.90, "high": 1.00,
         "label": "optimized, with a centralized TE controller in some zones: 90 %+"},
    ],
}


FIGURE_HEADLINE = (Headline("optimized_norm_busbw", "optimized (c), largest job"),
                   Headline("baseline_norm_busbw", "fragmented, hashed (b), largest job"))
FIGURE_HEADLINE_SERIES = {"optimized_norm_busbw": "c", "baseline_norm_busbw": "b-ecmp"}


def figure(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The published AllGather figure on this cluster (:func:`sim.fabric.figures.run_series`, the series of
    :func:`sim.fabric.figures.allgather_series` for the cluster's fabric); progress is the share of its simulated runs
    done. Summary: the per-series, per-job-size min/median/max of the normalized busbw limit
    (:func:`sim.fabric.figures.summarize`), the series (labels, groups, colours and line styles of the published
    drawing), the panels, the jobs, and as headline the optimized (c) and 5-tuple ECMP (b) series at the largest
    job each ran."""
    topo = topology_from_layout(layout)
    jobs = params["jobs"] or default_figure_jobs(_usable(topo))
    series = [s for s in figures.allgather_series(topo.kind) if params["background"] or not s.background]
    progress(0.0, "placing the first job")
    rows = figures.run_series(topo, layout.spec.name, series, jobs, params["seeds"], params["size"],
                              on_run=lambda done, total: progress(done / total, f"{done} of {total} runs"),
                              hash=params["hash"])
    if not rows:
        raise CollectiveError(f"no job size of {jobs} fits the cluster's usable GPUs")
    points = figures.summarize(rows)
    summary = {
        "figure": params["figure"], "fabric": topo.kind, "jobs": sorted(set(jobs) & {r["gpus"] for r in rows}),
        "seeds": params["seeds"], "size": params["size"], "background": params["background"], "hash": params["hash"],
        "runs": len(rows),
        "metric": "norm_busbw_limit: AllGather (ring) busbw / roofline as the message size grows",
        "series": [{**asdict(s), "color": figures.STYLE[s.key][0], "dash": figures.STYLE[s.key][1]}
                   for s in series],
        "panels": [{"title": title, "series": keys} for title, keys in figures.SCALE_PANELS],
        "summary": points,
    }
    for key, series_key in FIGURE_HEADLINE_SERIES.items():
        mine = [p for p in points if p["series"] == series_key]
        top = max(mine, key=lambda p: p["gpus"]) if mine else None
        summary[key] = {k: top[k] for k in ("median", "min", "max")} if top else None
    return summary, {}


PRESET_FIGURE_HEADLINE = (Headline("allreduce_busbw_GBps", "optimized AllReduce busbw, largest job", "GBps"),
                          Headline("allreduce_norm", "its share of the roofline"),
                          Headline("local_share", "AllGather bytes between hosts kept on a leaf (rail)"))


def preset_figure(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """A cluster's page of figures (:func:`sim.fabric.preset_figure.preset_figure`), on the cluster as its inventory
    is now: busbw by message size against the roofline and rail-local vs cross-rail traffic, with the published
    figures of the preset it was built from (``layout.spec.name``) beside them. Progress: the flows of the runs done.
    The summary is the engine's document, its headline figures at the top level."""
    topo = topology_from_layout(layout)
    progress(0.0, "placing the first job")
    doc = preset_page.preset_figure(topo, layout.spec.name, params, progress, preset=layout.spec.name)
    return {**doc, **doc["headline"]}, {}


# ------------------------------------------------------------------------------------- checks on the cluster
# The checks of parameters that need the cluster, applied by the API before a run is queued (the run itself checks
# usable GPUs again: the inventory may change in between), and each kind's cost (twin.runs.limits).
def _check_gpus(values: dict, cluster) -> None:
    """A job may not ask for more GPUs than the cluster has usable (GPU, NIC, port, cable, leaf all active)."""
    asked = values["gpus"]
    if asked is not None and asked > (usable := gpu_grid.usable_gpus(cluster)):
        raise ParamError("gpus", f"{asked:,} GPUs asked, {cluster.name} has {usable:,} usable")


def host_index(cluster) -> HostIndex:
    """What a host or GPU list is read against, from the inventory: its host names (by id, the layout's host
    order), each GPU's host and slot (by index) and whether a job can use it (:func:`gpu_grid.usable_mask`)."""
    from twin.inventory.models import GPU, Host
    hosts = list(Host.objects.filter(cluster=cluster).order_by("id").values_list("id", "name"))
    host_ids = np.array([h for h, _ in hosts], dtype=np.int64)
    rows = np.array(list(GPU.objects.filter(cluster=cluster).order_by("index").values_list("host_id", "slot")),
                    dtype=np.int64).reshape(-1, 2)
    return HostIndex(cluster.name, [n for _, n in hosts], np.searchsorted(host_ids, rows[:, 0]), rows[:, 1],
                     gpu_grid.usable_mask(cluster))


def _check_given(values: dict, cluster) -> None:
    """A host or GPU list read against the cluster's inventory (unknown hosts, unusable or repeated GPUs: a 400
    naming the field and the line); ``gpus`` becomes the list's rank count when it was left out."""
    if values["placement"] != GIVEN:
        return
    try:
        ranks = given_placement(host_index(cluster), values["hosts"], values["gpu_list"], values["gpus"])
    except ListError as e:
        raise ParamError(e.source, f"line {e.line}: {e.reason}" if e.line else e.reason) from None
    values["gpus"] = int(ranks.size)
    if values["root"] >= values["gpus"]:
        raise ParamError("root", f"must be a rank of the job (below gpus, {values['gpus']:,})")


def _check_collective(values: dict, cluster) -> None:
    """A host or GPU list against the inventory, usable GPUs, and an AllToAll's N (N - 1) x qps transfers within
    the engine's own budget (``sim.fabric.collectives.MAX_ALLTOALL_TRANSFERS``), refused here rather than after the run
    started."""
    _check_given(values, cluster)
    _check_gpus(values, cluster)
    n, qps = values["gpus"], values["qps"]
    if values["collective"] == "alltoall" and n * (n - 1) * qps > MAX_ALLTOALL_TRANSFERS:
        raise ParamError("gpus", f"alltoall over {n:,} GPUs with {qps} queue pairs is {n * (n - 1) * qps:,} "
                                 f"transfers (N x (N-1) x qps), more than the engine's {MAX_ALLTOALL_TRANSFERS:,}")


def _check_figure(values: dict, cluster) -> None:
    """Figure jobs must fit the cluster's usable GPUs; without jobs, the figure's defaults that fit are recorded."""
    usable = gpu_grid.usable_gpus(cluster)
    jobs = values["jobs"] or default_figure_jobs(usable)
    if not jobs:
        raise ParamError("jobs", f"{cluster.name} has {usable} usable GPUs: too few for a job")
    too_big = [n for n in jobs if n > usable]
    if too_big:
        raise ParamError("jobs", f"{', '.join(map(str, too_big))} GPUs asked, {cluster.name} has {usable:,} usable")
    values["jobs"] = jobs


def _check_preset_figure(values: dict, cluster) -> None:
    """Its jobs must fit the cluster's usable GPUs (its default jobs always do)."""
    usable = gpu_grid.usable_gpus(cluster)
    too_big = [n for n in values["jobs"] or () if n > usable]
    if too_big:
        raise ParamError("jobs", f"{', '.join(map(str, too_big))} GPUs asked, {cluster.name} has {usable:,} usable")
    if usable < 2:
        raise ParamError("jobs", f"{cluster.name} has {usable} usable GPUs: too few for a job")


def _preset_figure_cost(values: dict, cluster) -> int:
    """Flows of its runs: every collective and configuration on each job (default: one leaf group, one zone and the
    whole cluster, each at most max_gpus, counted as three jobs of max_gpus at most), N x channels x QPs per run (a
    ring AllReduce solves its two phases' flows: counted twice)."""
    usable = gpu_grid.usable_gpus(cluster)
    jobs = values["jobs"] or [min(usable, values["max_gpus"])] * 3
    per_pair = sum(max(c.qps_per_pair // 2, 1) for c in preset_page.CONFIGS)    # 2 connections per GPU pair
    per_job = _nccl_channels(cluster) * per_pair * (len(preset_page.PRESET_COLLECTIVES) + 1)
    return {"flows": sum(jobs) * per_job}


def _collective_cost(values: dict, cluster) -> int:
    """Flows of a collective over its seeds: per seed, N (N - 1) x qps for AllToAll, else N x channels x qps (a
    ring or chain per channel; channels default to NCCL's own count for the hosts, :func:`sim.fabric.nccl.ring_channels`)."""
    n, qps = values["gpus"], values["qps"]
    per_seed = n * (n - 1) if values["collective"] == "alltoall" else \
        n * (values["channels"] or _nccl_channels(cluster, values))
    return {"flows": per_seed * qps * values["seeds"]}


def _nccl_channels(cluster, values: dict | None = None) -> int:
    """NCCL's channel count for jobs filling the cluster's hosts (under the run's NCCL_MIN/MAX_NCHANNELS)."""
    values = values or {}
    return ring_channels(gpu_grid.gpus_per_host(cluster), min_channels=values.get("min_channels"),
                         max_channels=values.get("max_channels"))


def _fabric_health_cost(values: dict, cluster) -> int:
    """Flows of its one ring AllGather over ``gpus`` (default: every usable GPU)."""
    n = values["gpus"] or gpu_grid.usable_gpus(cluster)
    return {"flows": n * _nccl_channels(cluster) * values["qps"]}


def _figure_cost(values: dict, cluster) -> int:
    """Flows of every series' ring AllGather at every job size and seed (NCCL's channels on the cluster's hosts;
    the series are the same on either fabric)."""
    series = len(figures.allgather_series("roce"))
    return {"flows": sum(values["jobs"]) * values["seeds"] * series * _nccl_channels(cluster)}


def _seconds(cost):
    """A flows kind's time estimate (:func:`twin.runs.limits.flows_estimate`)."""
    return lambda values, cluster: limits.flows_estimate(values, cluster, cost)


# ------------------------------------------------------------------------------------------------ registration
register(Kind("collective", "Collective (nccl-tests style)", COLLECTIVE, collective,
              headline=COLLECTIVE_HEADLINE, best="norm_busbw", arrays=LINK_ARRAYS, view="collective", form=True,
              main=("collective", "gpus", "placement", "routing", "qps", "sizes", "algorithm", "seeds", "seed"),
              brief=("collective", "gpus", "placement", "routing", "qps", "sizes"), check=_check_collective,
              cost=_collective_cost, estimate=_seconds(_collective_cost), throughputs=(limits.FLOWS_PER_SECOND,)))
register(Kind("fabric_health", "Fabric health (large AllGather under the current inventory)", FABRIC_HEALTH,
              fabric_health, headline=COLLECTIVE_HEADLINE, best="norm_busbw", arrays=LINK_ARRAYS,
              view="fabric_health", brief=("gpus", "sizes", "routing"), check=_check_gpus, cost=_fabric_health_cost,
              estimate=_seconds(_fabric_health_cost), throughputs=(limits.FLOWS_PER_SECOND,)))
register(Kind("figure", "Figure (the published AllGather result: normalized busbw against job size)", FIGURE,
              figure, headline=FIGURE_HEADLINE, best="optimized_norm_busbw", view="figure", published=PUBLISHED,
              brief=("figure", "jobs", "seeds"), check=_check_figure, cost=_figure_cost,
              estimate=_seconds(_figure_cost), throughputs=(limits.FLOWS_PER_SECOND,)))
register(Kind("preset_figure", "Preset figures (busbw against the roofline, rail-local vs cross-rail traffic)",
              PRESET_FIGURE, preset_figure, headline=PRESET_FIGURE_HEADLINE, best="allreduce_norm",
              view="preset_figure", brief=("max_gpus", "jobs", "sizes"), check=_check_preset_figure,
              cost=_preset_figure_cost, estimate=_seconds(_preset_figure_cost),
              throughputs=(limits.FLOWS_PER_SECOND,)))
