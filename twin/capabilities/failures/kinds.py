"""The ``failures`` run kind: a long training job's wall clock under failures (:mod:`sim.failures.timeline`), on the cluster
as the inventory holds it (failed links and switches as they are, as the ``job`` kind reads it), its parameters the
engine's own declaration (:data:`sim.failures.params.FAILURES`), so the API, the form and ``python -m sim failures`` refuse
the same inputs in the same words.

One 54-day timeline of a 16k-GPU job takes seconds, so a Monte Carlo over many seeds, and the checkpoint-interval
sweep, fan out over the workers (``Kind.fan_out``): one child run per checkpoint interval and chunk of at most
TWIN_FAILURES_SEEDS_PER_CHILD seeds, each a ``failures`` run of its own that simulates its seeds in one process on
one preparation; the parent merges them (:func:`merge`: :func:`sim.failures.summary.summarize`, and for a sweep the shape of
:func:`sim.failures.sweep.sweep`), its progress the mean of its children's. A run with one interval and one chunk
computes in its own worker.

Injected failures (``inject``: ``gpu:<GPU name>@10h``...) name the inventory's real items; the API refuses an unknown
name (a 400 naming ``inject``) and nothing in the inventory changes: a what-if is simulated, never applied.

Live frames (:mod:`twin.capabilities.failures.live`): as a seed's timeline is simulated, after its failures (at most
TWIN_LIVE_TICK_HZ frames a second), ``failure_state`` (the job's state at that simulated hour: training, degraded,
down; its productive hours and effective ratio so far, interruptions) and ``failure_events`` (each failure so far:
time, category, the item it hit as its inventory position, consequence, lost work); at each seed's end the same for
the whole timeline. The Reliability page replays a finished run from its summary.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from sim.core.errors import ParamError
from sim.failures.rates import CATEGORIES
from sim.failures.timeline import STATES
from sim.fabric.layout import FABRIC_BACKEND
from sim.failures.params import FAILURES
from sim.core.progress import weighted
from sim.core.units import parse_duration, parse_durations
from twin.inventory import gpu_grid
from twin.runs import limits
from twin.runs.constants import setting
from twin.runs.registry import Headline, Kind, register

KIND = "failures"
HEADLINE = (Headline("effective_ratio", "effective training time (productive / wall), mean over seeds", "pct"),
            Headline("interruptions_per_day", "interruptions per day, mean over seeds", "num"),
            Headline("optimal_interval_s", "simulated optimal checkpoint interval", "s"))
# What a run keeps of every seed's result but the first (whose timeline the page replays): the engine's figures
# without the timeline's segments and its events, which summarize() does not need.
TIMELINE_KEYS = ("timeline", "events")


# ------------------------------------------------------------------------------------------------ fan-out
def intervals_of(params: dict) -> list[float]:
    """The checkpoint intervals (seconds) a run simulates: its sweep's (``sweep_interval``), else its one."""
    if params.get("sweep_interval"):
        return parse_durations(params["sweep_interval"])
    return [parse_duration(params["checkpoint_interval"])]


# A child run's first failure seed (its parameters are the parent's, so the job is placed by the same ``seed``, as
# the CLI places it once for all its seeds). The twin's own key: never passed to the engine.
FIRST_SEED = "first_failure_seed"


def first_seed(params: dict) -> int:
    return params.get(FIRST_SEED, params["seed"])


def engine_params(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != FIRST_SEED}


def fan_out(params: dict) -> list[dict]:
    """One child per checkpoint interval and chunk of at most TWIN_FAILURES_SEEDS_PER_CHILD failure seeds (seeds
    ``seed .. seed + seeds - 1``, as the CLI numbers them), each with one interval and no sweep; none when that is
    one child (the run computes in its own worker)."""
    chunk = setting("TWIN_FAILURES_SEEDS_PER_CHILD")
    seeds, first = params["seeds"], params["seed"]
    swept = bool(params.get("sweep_interval"))
    children = []
    for interval in intervals_of(params):
        for start in range(0, seeds, chunk):
            children.append({**params, FIRST_SEED: first + start, "seeds": min(chunk, seeds - start),
                             "sweep_interval": None,
                             "checkpoint_interval": repr(interval) if swept else params["checkpoint_interval"]})
    return children if len(children) > 1 else []


# ------------------------------------------------------------------------------------------------ live frames
def item_kind(event: dict) -> str:
    """The kind of item (:data:`sim.failures.inject.ITEM_KINDS`) an engine event names: its category's unit (a GPU, a
    host, the job), or for a network failure a link (a cable's name joins its two ports with "~") or a switch."""
    c = CATEGORIES[event["category"]]
    if event["category"] == "network":
        return "link" if "~" in event["item"] else "switch"
    return c.unit


class ItemIndex:
    """Positions of named items in the live frames' orders (GPU: GPU.index; host: Host rows by id; link: backend
    Link rows by id, the link_util order; switch: Switch rows by id), from the names of the layout the run read
    (:func:`twin.inventory.adapter.layout_from_db` keeps those orders; the engine names items the same way,
    :meth:`sim.failures.prepare.Prepared.names`)."""

    def __init__(self, names: dict, layout):
        backend = np.flatnonzero(np.asarray(layout.link_fabric) == FABRIC_BACKEND)
        self.position = {"gpu": {n: i for i, n in enumerate(names["gpu"])},
                         "host": {n: i for i, n in enumerate(names["host"])},
                         "link": {names["link"][j]: i for i, j in enumerate(backend.tolist())},
                         "switch": {n: i for i, n in enumerate(names["switch"])}}

    def event_row(self, e: dict) -> dict:
        """An engine event as a ``failure_events`` row (hours; the item as its position, -1 for the job)."""
        kind = item_kind(e)
        return {"t_hours": e["time"] / 3600.0, "category": e["category"], "item_kind": kind,
                "item": self.position.get(kind, {}).get(e["item"], -1), "consequence": e["consequence"],
                "lost_hours": e["lost_work"] / 3600.0}


def failure_row(state: str, t_s: float, wall_s: float, productive_s: float, effective_ratio: float,
                interruptions: int, seed: int, done: int, seeds: int) -> dict:
    """A ``failure_state`` row (FAILURE_FIELDS) at simulated time ``t_s`` of a ``wall_s`` timeline."""
    return {"state": state, "t_hours": t_s / 3600.0, "hours": wall_s / 3600.0,
            "productive_hours": productive_s / 3600.0, "effective_ratio": effective_ratio,
            "interruptions": interruptions, "lost_hours": (t_s - productive_s) / 3600.0,
            "seed": seed, "seeds_done": done, "seeds": seeds}


def state_row(res: dict, done: int, seeds: int) -> dict:
    """The ``failure_state`` row of a finished timeline: its last state, the figures at its end."""
    tl = res.get("timeline") or {}
    last = tl["states"][tl["state"][-1]] if tl.get("state") else STATES[0]
    return failure_row(last, res["wall_s"], res["wall_s"], res["productive_s"], res["effective_ratio"],
                       res["interruptions"], res["seed"], done, seeds)


class LiveTimeline:
    """The engine's ``on_failure`` for one seed: each failure's row kept (one at a time, not rebuilt), and the
    state with the rows so far handed to the run's publisher at most TWIN_LIVE_TICK_HZ times a second (the engine
    simulates hundreds of failures a second; encoding every one would cost more than the simulation)."""

    def __init__(self, progress: Callable, items: "ItemIndex", seed: int, k: int, seeds: int, hours: float):
        from django.conf import settings
        self.progress, self.items, self.seed, self.k, self.seeds = progress, items, seed, k, seeds
        self.wall_s = hours * 3600.0
        self.rows: list[dict] = []
        self.every = 1.0 / settings.TWIN_LIVE_TICK_HZ
        self.next_at = 0.0

    def failure(self, now: dict, event: dict | None) -> None:
        if event is not None:
            self.rows.append(self.items.event_row(event))
        t = time.monotonic()
        if t < self.next_at:
            return
        self.next_at = t + self.every
        row = failure_row(now["state"], now["time"], self.wall_s, now["productive_s"], now["effective_ratio"],
                          now["interruptions"], self.seed, self.k, self.seeds)
        self.progress(None, failure_state=row, failure_events=self.rows, force=True)


# ----------------------------------------------------------------------------------------------------- kind
def failures(layout, params: dict, progress: Callable, *, run=None) -> tuple[dict, dict]:
    """The run's seeds at its one checkpoint interval, one timeline after the other in this worker on one
    preparation (:func:`sim.failures.prepare.prepare`: the job placed, its healthy step and checkpoint solved once; step
    re-solves cached by fabric state): each seed's figures, the first seed's whole timeline (the page's replay),
    and their distribution (:func:`sim.failures.summary.summarize`). Each seed's end goes out as a live frame: its state
    and figures, and its failures."""
    from sim.failures.timeline import simulate
    seeds = list(range(first_seed(params), first_seed(params) + params["seeds"]))
    values = engine_params(params)
    progress(0.0, "placing the job, solving its step and its checkpoint")
    reports = weighted(progress, [PREPARE_WEIGHT] + [1.0] * len(seeds))
    ctx = prepared(layout, values, run, reports[0])
    items = ItemIndex(ctx.names(), layout)
    results = []
    for k, seed in enumerate(seeds):
        live = LiveTimeline(progress, items, seed, k, len(seeds), values["days"] * 24.0)
        res = simulate(ctx, values, seed, progress=reports[k + 1], on_failure=live.failure)
        progress(None, failure_state=state_row(res, k + 1, len(seeds)),
                 failure_events=[items.event_row(e) for e in res["events"]], force=True)
        results.append(res if k == 0 else strip_timeline(res))
    return json_safe(chunk_summary(params, results)), {}


# The preparation's share of a run's work, in timelines: placing a 16k-GPU job and solving its step and its
# checkpoint take about as long as four 54-day timelines (docs/reliability.md, Speed); nothing when this process
# kept it from an earlier child.
PREPARE_WEIGHT = 4.0
# The last preparations of this worker process, by what they depend on: the children of one fanned-out run that
# land on the same process share one (its placement, healthy step, checkpoint costs, and the step times of the
# fabric states solved so far).
_PREPARED: dict[tuple, object] = {}
PREPARED_KEPT = 2


def prepared(layout, values: dict, run, progress):
    """:func:`sim.failures.prepare.prepare` of ``values`` on ``layout``, or this process's earlier one for the same
    cluster, inventory state (the run's status hash) and parameters but the seed count."""
    import json

    from sim.failures.prepare import prepare
    state = (getattr(run, "inventory_state", None) or {}).get("status_hash")
    if run is None or state is None:
        return prepare(layout, values, progress)
    key = (run.cluster_id, str(run.cluster.built_at), state,
           json.dumps({k: v for k, v in values.items() if k != "seeds"}, sort_keys=True, default=str))
    if key not in _PREPARED:
        ctx = prepare(layout, values, progress)
        while len(_PREPARED) >= PREPARED_KEPT:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = ctx
    progress(1.0, "prepared")
    return _PREPARED[key]


def json_safe(obj):
    """``obj`` with every non-finite float as None: the engine says ``inf`` for the MTBF (and Young/Daly) of a job
    with no crash rate, which JSON, and the database's JSON column, cannot hold."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def strip_timeline(res: dict) -> dict:
    return {k: v for k, v in res.items() if k not in TIMELINE_KEYS}


def chunk_summary(params: dict, results: list[dict]) -> dict:
    """What a run of one interval says about its seeds: their distribution, each seed's figures, the first
    seed's timeline (``replay``), and the headline figures."""
    from sim.failures.published import published
    from sim.failures.summary import summarize
    dist = summarize(results)
    return {"checkpoint_interval": params["checkpoint_interval"], "seeds": len(results),
            "first_seed": results[0]["seed"], "replay": results[0],
            "per_seed": [strip_timeline(r) for r in results], "distribution": dist, **headline_figures(dist),
            "published": published(params, results[0], dist)}


def headline_figures(dist: dict) -> dict:
    return {"effective_ratio": dist["effective_ratio"]["mean"],
            "interruptions_per_day": dist["interruptions_per_day"]["mean"]}


def sweep_of(by_interval: dict[float, list[dict]]) -> dict:
    """:func:`sim.failures.sweep.sweep`'s result from the timelines of each interval (the children's, the same seeds at
    every interval): per interval the effective ratio's distribution (:func:`sim.failures.summary.summarize`), the interval
    of the best mean, and Young/Daly from the same preparation."""
    from sim.failures.summary import summarize
    intervals = sorted(by_interval)
    dists = [summarize(by_interval[i]) for i in intervals]
    means = np.array([d["effective_ratio"]["mean"] for d in dists])
    best = int(np.argmax(means))
    first = by_interval[intervals[0]][0]
    return {"intervals_s": intervals, "rows": [{"interval_s": i, "effective_ratio": d["effective_ratio"]}
                                               for i, d in zip(intervals, dists)],
            "seeds": dists[0]["seeds"], "best_interval_s": intervals[best],
            "best_effective_ratio": float(means[best]), "young_daly_s": first["young_daly_s"],
            "checkpoint_cost_s": first["checkpoint"]["cost_s"],
            "checkpoint_durable_s": first["checkpoint"]["durable_s"],
            "store_gap_s": first["checkpoint"]["store_gap_s"], "mtbf_s": first["mtbf_s"],
            "best": dists[best]}


def merge(params: dict, children: list[dict]) -> dict:
    return json_safe(_merge(params, children))


def _merge(params: dict, children: list[dict]) -> dict:
    """The parent's summary from its children (each one interval and chunk of seeds): the distribution over all
    its seeds (at the best interval, with a sweep), each seed's figures, the first seed's timeline at the run's
    own interval (``replay``), the workers that ran them; with a sweep, :func:`sim.failures.sweep.sweep`'s result."""
    from sim.failures.published import published
    from sim.failures.summary import summarize
    by_interval: dict[float, list[dict]] = {}
    replay = None
    own = parse_duration(params["checkpoint_interval"])
    for c in sorted(children, key=lambda c: first_seed(c["params"])):
        s, interval = c["summary"], parse_duration(c["params"]["checkpoint_interval"])
        by_interval.setdefault(interval, []).extend(s["per_seed"])
        if replay is None or (interval == own and replay["checkpoint"]["interval_s"] != own):
            replay = s["replay"]
    workers = sorted({c["worker"] for c in children if c["worker"]})
    out = {"seeds": params["seeds"], "first_seed": params["seed"], "replay": replay, "children": len(children),
           "workers": workers}
    if not params.get("sweep_interval"):
        results = by_interval[own]
        dist = summarize(results)
        return {**out, "checkpoint_interval": params["checkpoint_interval"], "per_seed": results,
                "distribution": dist, **headline_figures(dist), "published": published(params, replay, dist)}
    sweep = sweep_of(by_interval)
    best = by_interval[sweep["best_interval_s"]]
    dist = sweep.pop("best")
    return {**out, "checkpoint_interval": params["checkpoint_interval"], "per_seed": best,
            "distribution": dist, "sweep": sweep, "optimal_interval_s": sweep["best_interval_s"],
            "published": published(params, replay, dist),
            "effective_ratio": sweep["best_effective_ratio"],
            "interruptions_per_day": summarize(best)["interruptions_per_day"]["mean"]}


# ------------------------------------------------------------------------------------- checks on the cluster
def _check_failures(values: dict, cluster) -> None:
    """The job's GPUs against the cluster's usable GPUs; days within the twin's limit (its timelines are its cost,
    checked as every kind's); every injected failure's item a real item of the cluster's inventory."""
    n = values.get("gpus")
    if n is not None and n > (usable := gpu_grid.usable_gpus(cluster)):
        raise ParamError("gpus", f"{n:,} GPUs asked, {cluster.name} has {usable:,} usable")
    limits.check_failures(values["days"])
    _check_injected(values, cluster)


# ------------------------------------------------------------------------------------- cost and time
GPU_DAYS = "TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND"


def cost(values: dict, cluster) -> dict:
    """Its timelines: seeds x checkpoint intervals (per run at most TWIN_FAILURES_MAX_TIMELINES)."""
    return {"timelines": values["seeds"] * len(intervals_of(values))}


def estimate(values: dict, cluster) -> float:
    """Seconds of its timelines (and its preparation, PREPARE_WEIGHT timelines) in one process: a timeline's
    failures, and the step re-solves after each, grow with the job's GPUs x days, simulated at
    TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND (bench/bench_limits.py). A run that fans out is bounded by its longest
    child (:func:`twin.runs.limits.seconds_of`)."""
    gpus = values.get("gpus") or int(np.prod([values.get(k) or 1 for k in ("tp", "cp", "pp", "dp")]))
    timelines = cost(values, cluster)["timelines"] + PREPARE_WEIGHT
    return limits.per_second(timelines * gpus * values["days"], GPU_DAYS)


# The inventory model holding each kind of injected item, by the name the inventory and sim.fabric.names give it.
def _inventory_models() -> dict:
    from twin.inventory.models import GPU, Host, Link, Switch
    return {"gpu": GPU, "host": Host, "link": Link, "switch": Switch}


def _check_injected(values: dict, cluster) -> None:
    """Each injected failure's item must be an item of ``cluster`` of the kind it names (a 400 on ``inject``
    naming the item and the cluster); whether the job uses it is the engine's check once the job is placed."""
    from sim.failures.inject import parse_injections
    models = _inventory_models()
    wanted: dict[str, set[str]] = {}
    for inj in parse_injections(values.get("inject"), values["days"] * 86400.0):
        if inj.kind in models:
            wanted.setdefault(inj.kind, set()).add(inj.name)
    for kind, names in wanted.items():
        found = set(models[kind].objects.filter(cluster=cluster, name__in=names).values_list("name", flat=True))
        missing = sorted(names - found)
        if missing:
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            raise ParamError("inject", f"{cluster.name} has no {kind} named {missing[0]!r}{more}")


# ------------------------------------------------------------------------------------------------ the page
def example_items(cluster) -> dict:
    """A real item of each kind an injection may name (the form's hint): the first GPU, a backend cable, a leaf."""
    from twin.inventory.choices import FabricRole
    models = _inventory_models()
    gpu = models["gpu"].objects.filter(cluster=cluster).order_by("index").values_list("name", flat=True).first()
    link = (models["link"].objects.filter(cluster=cluster, fabric__role=FabricRole.BACKEND).order_by("-id")
            .values_list("name", flat=True).first())
    switch = (models["switch"].objects.filter(cluster=cluster, fabric__role=FabricRole.BACKEND).order_by("id")
              .values_list("name", flat=True).first())
    return {"gpu": gpu, "link": link, "switch": switch}


def client_tables() -> dict:
    """What the page draws with, from the engine's declarations: each category's label and consequence, the
    timeline's states and the phases of lost time."""
    from sim.failures.timeline import PHASES
    return {"categories": {n: {"label": c.label, "consequence": c.consequence} for n, c in CATEGORIES.items()},
            "states": list(STATES), "phases": list(PHASES)}


def failed_parts(cluster, run) -> dict:
    """The failures of ``run``'s replayed timeline with the GPUs each takes down, resolved in the inventory by
    the item's name (hours): a GPU; a host's GPUs; a backend NIC cable's GPU; a leaf switch's GPUs. A failure
    deeper in the fabric takes down no GPU (the job is re-routed, slower), nor does a job-wide one (software)."""
    from twin.inventory.models import GPU, Host, Link, Switch
    from twin.inventory import gpu_grid
    replay = (run.summary or {}).get("replay") or {}
    events = replay.get("events", [])
    st = gpu_grid.structure(cluster)
    names: dict[str, set] = {}
    for e in events:
        names.setdefault(item_kind(e), set()).add(e["item"])

    def ids(model, kind):
        return dict(model.objects.filter(cluster=cluster, name__in=names.get(kind, ())).values_list("name", "id"))

    gpu_ids, host_ids, link_ids, switch_ids = ids(GPU, "gpu"), ids(Host, "host"), ids(Link, "link"), \
        ids(Switch, "switch")
    host_gpus: dict[int, list[int]] = {}
    for host, gpu in GPU.objects.filter(host_id__in=host_ids.values()).values_list("host_id", "id"):
        host_gpus.setdefault(host, []).append(gpu)

    def gpus_of(kind: str, name: str) -> list[int]:
        if kind == "gpu" and name in gpu_ids:
            pos = st.gpus([gpu_ids[name]])
        elif kind == "host" and name in host_ids:
            pos = st.gpus(host_gpus.get(host_ids[name], []))
        elif kind == "link" and name in link_ids:
            pos = st.cable_gpu[st.cable_id == link_ids[name]]
        elif kind == "switch" and name in switch_ids:
            pos = st.cable_gpu[st.leaf_id == switch_ids[name]]
        else:
            return []
        return sorted(int(p) for p in np.asarray(pos) if p >= 0)

    from sim.failures.rates import parse_overrides, repair_hours
    repair = repair_hours(parse_overrides(run.params.get("repair_h"), "repair_h"))
    out = []
    for e in events:
        kind, t = item_kind(e), e["time"] / 3600.0
        until = e["until"] / 3600.0 if e.get("until") is not None else t + repair[e["category"]]
        out.append({"t_hours": t, "until_hours": until, "category": e["category"], "item_kind": kind,
                    "item": e["item"], "consequence": e["consequence"], "lost_hours": e["lost_work"] / 3600.0,
                    "gpus": gpus_of(kind, e["item"])})
    return {"run": run.pk, "status": run.status, "hours": (replay.get("wall_s") or 0) / 3600.0,
            "gpus": len(st.gpus.ids), "events": out}


# The API schema's names of the failures parameters' choice sets that another kind's parameter shares (settings'
# ENUM_NAME_OVERRIDES): a checkpoint's sync / async (the checkpoint kind's ``mode`` too), and the stores with none.
def checkpoint_modes() -> tuple:
    return FAILURES.by_name["checkpoint_mode"].choices


def failure_stores() -> tuple:
    return FAILURES.by_name["store"].choices


register(Kind(KIND, "Failures over time (a long job's interruptions, restarts and effective training time)",
              FAILURES, failures, headline=HEADLINE, best="effective_ratio", view="failures", form=False,
              brief=("gpus", "days", "checkpoint_interval", "seeds", "sweep_interval", "inject"),
              check=_check_failures, cost=cost, estimate=estimate, drives="seeds", throughputs=(GPU_DAYS,),
              wants_run=True, fan_out=fan_out, merge=merge,
              main=("gpus", "days", "checkpoint_interval", "spares", "seeds", "sweep_interval", "inject")))
