"""The ``failures`` run kind: a long training job's wall clock under failures (:mod:`sim.failures`), on the cluster
as the inventory holds it (failed links and switches as they are, as the ``job`` kind reads it), its parameters the
engine's own declaration (:data:`sim.params.FAILURES`), so the API, the form and ``python -m sim failures`` refuse
the same inputs in the same words.

One timeline takes seconds, so a Monte Carlo over many seeds, and the checkpoint-interval sweep, fan out over the
workers (``Kind.fan_out``): one child run per checkpoint interval and chunk of at most TWIN_FAILURES_SEEDS_PER_CHILD
seeds, each a ``failures`` run of its own that simulates its seeds in one process; the parent merges them with
:func:`sim.failures.summarize` (and, for a sweep, :func:`sim.failures.sweep_result`), its progress the mean of its
children's. A run with one interval and one chunk computes in its own worker.

Injected failures (``inject``: ``gpu:<GPU name>@10h``...) name the inventory's real items; the API refuses an unknown
name (a 400 naming ``inject``) and nothing in the inventory changes: a what-if is simulated, never applied.

Live frames (:mod:`twin.live.frames`): ``failure_state`` (the timeline's state, the simulated time reached, the
productive hours and the effective ratio so far, interruptions, lost hours, the seed) and ``failure_events`` (each
failure so far: time, category, the item it hit as its inventory position, consequence, lost work), published as the
engine advances (its progress callback) and once each seed ends; the Reliability page replays a finished run from
its summary.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.errors import ParamError
from sim.layout import FABRIC_BACKEND
from sim.params import FAILURES
from sim.progress import span
from twin.live import frames
from twin.runs import limits
from twin.runs.constants import setting
from twin.runs.registry import Headline, Kind, register

KIND = "failures"
HEADLINE = (Headline("effective_ratio", "effective training time (productive / wall)", "pct"),
            Headline("interruptions_per_day", "interruptions per day", "text"),
            Headline("optimal_interval_s", "simulated optimal checkpoint interval (s)", "text"))
# What a child keeps of every seed's result besides the first (whose timeline the page replays): the engine's
# figures without the per-event and per-segment lists, which summarize() does not need.
TIMELINE_KEYS = ("segments", "events")


# ------------------------------------------------------------------------------------------------ fan-out
def intervals_of(params: dict) -> list[float]:
    """The checkpoint intervals (seconds) a run simulates: the sweep's, else its one interval."""
    from sim.failures import sweep_intervals
    return sweep_intervals(params)


def fan_out(params: dict) -> list[dict]:
    """One child per checkpoint interval and chunk of at most TWIN_FAILURES_SEEDS_PER_CHILD seeds (seeds
    ``seed .. seed + seeds - 1``, as the CLI numbers them), each with one interval and no sweep; none when that is
    one child (the run computes in its own worker)."""
    chunk = setting("TWIN_FAILURES_SEEDS_PER_CHILD")
    seeds, first = params["seeds"], params["seed"]
    swept = params.get("sweep_interval") is not None
    children = []
    for interval in intervals_of(params):
        for start in range(0, seeds, chunk):
            children.append({**params, "seed": first + start, "seeds": min(chunk, seeds - start),
                             "sweep_interval": None,
                             "checkpoint_interval": f"{interval:g}" if swept else params["checkpoint_interval"]})
    return children if len(children) > 1 else []


# ------------------------------------------------------------------------------------------------ live frames
class LiveTimeline:
    """Turns the engine's progress into the run's live frames: the run's percentage over all its seeds, and the
    ``failure_state`` / ``failure_events`` sections of the seed being simulated."""

    def __init__(self, progress: Callable, items: "ItemIndex", seeds: list[int], hours: float):
        self.progress, self.items, self.seeds, self.hours = progress, items, seeds, hours

    def seed_progress(self, k: int) -> Callable:
        """The engine's progress callback for the k-th seed: its share of the run, and the timeline's state."""
        report = span(self.progress, k / len(self.seeds), (k + 1) / len(self.seeds))
        seed = self.seeds[k]

        def on_progress(fraction, message="", state=None):
            report(fraction, message)
            if state is not None:
                self.publish(state, seed, k, force=False)
        return on_progress

    def publish(self, state: dict, seed: int, done: int, *, force: bool, fraction=None) -> None:
        """A ``failure_state`` row and the ``failure_events`` rows of ``state`` (the engine's state so far)."""
        row = {"state": state["state"], "t_hours": state["t_hours"], "hours": self.hours,
               "productive_hours": state["productive_hours"], "effective_ratio": state.get("effective_ratio"),
               "interruptions": state["interruptions"], "lost_hours": state["lost_hours"], "seed": seed,
               "seeds_done": done, "seeds": len(self.seeds)}
        events = [self.items.event_row(e) for e in state.get("events", [])]
        self.progress(fraction, failure=row, failures=events, force=force)


class ItemIndex:
    """Positions of the layout's items in the live frames' orders (GPU: GPU.index; host: Host rows by id; link:
    backend Link rows by id; switch: Switch rows by id), from the layout the run read (:func:`layout_from_db`
    keeps those orders), by name."""

    def __init__(self, layout):
        from sim.names import item_names
        names = item_names(layout)
        backend = np.flatnonzero(np.asarray(layout.link_fabric) == FABRIC_BACKEND)
        self.position = {
            "gpu": {n: i for i, n in enumerate(names["gpu"])},
            "host": {n: i for i, n in enumerate(names["host"])},
            "link": {names["link"][j]: i for i, j in enumerate(backend.tolist())},
            "switch": {n: i for i, n in enumerate(names["switch"])},
            "nic": {n: i for i, n in enumerate(names["nic"])},
        }

    def event_row(self, e: dict) -> dict:
        kind = e.get("item_kind") or "none"
        pos = self.position.get(kind, {}).get(e.get("item"), -1)
        return {"t_hours": e["t_hours"], "category": e["category"], "item_kind": kind if pos >= 0 else "none",
                "item": pos, "consequence": e["consequence"], "lost_hours": e.get("lost_hours")}


# ----------------------------------------------------------------------------------------------------- kind
def failures(layout, params: dict, progress: Callable, *, run=None) -> tuple[dict, dict]:
    """The run's seeds at its one checkpoint interval, one timeline after the other in this worker (a run the
    parent fanned out, or one small enough not to fan out): each seed's figures, the first seed's whole timeline
    (the page's replay), and their distribution (:func:`sim.failures.summarize`)."""
    from sim.failures import simulate
    from sim.topology import topology_from_layout
    topo = topology_from_layout(layout)
    seeds = list(range(params["seed"], params["seed"] + params["seeds"]))
    live = LiveTimeline(progress, ItemIndex(layout), seeds, params["days"] * 24.0)
    progress(0.0, "placing the job")
    results = []
    for k, seed in enumerate(seeds):
        res = simulate(topo, params, seed, progress=live.seed_progress(k))
        live.publish(final_state(res), seed, k + 1, force=True, fraction=(k + 1) / len(seeds))
        results.append(res if k == 0 else strip_timeline(res))
    return chunk_summary(params, results), {}


def final_state(res: dict) -> dict:
    """The engine's state at the end of a timeline, in the shape of its progress states."""
    last = res["segments"][-1]["state"] if res.get("segments") else "training"
    return {"state": last, "t_hours": res["wall_hours"], "productive_hours": res["productive_hours"],
            "effective_ratio": res["effective_ratio"], "interruptions": res["interruptions"],
            "lost_hours": res["lost_hours"], "events": res.get("events", [])}


def strip_timeline(res: dict) -> dict:
    return {k: v for k, v in res.items() if k not in TIMELINE_KEYS}


def chunk_summary(params: dict, results: list[dict]) -> dict:
    """What a run of one interval says about its seeds: the distribution, each seed's figures, the first
    seed's timeline, and the headline figures."""
    from sim.failures import summarize
    dist = summarize(results)
    return {"checkpoint_interval": params["checkpoint_interval"], "seeds": len(results),
            "first_seed": results[0]["seed"], "replay": results[0],
            "per_seed": [strip_timeline(r) for r in results], "distribution": dist,
            **headline_figures(dist)}


def headline_figures(dist: dict) -> dict:
    return {"effective_ratio": dist["effective_ratio"], "interruptions_per_day": dist["interruptions_per_day"]}


def merge(params: dict, children: list[dict]) -> dict:
    """The parent's summary from its children (each one interval and chunk of seeds): per interval the
    distribution over all its seeds; with a sweep, the simulated optimum beside Young/Daly
    (:func:`sim.failures.sweep_result`); the replayed timeline is the first seed's at the run's own interval."""
    from sim.failures import summarize, sweep_result
    by_interval: dict[str, list[dict]] = {}
    replay = None
    for c in children:
        s = c["summary"]
        by_interval.setdefault(c["params"]["checkpoint_interval"], []).extend(s["per_seed"])
        if replay is None or (s["first_seed"] == params["seed"] and replay["seed"] != params["seed"]):
            replay = s["replay"]
    workers = sorted({c["worker"] for c in children if c["worker"]})
    if params.get("sweep_interval") is None:
        results = next(iter(by_interval.values()))
        dist = summarize(results)
        return {"checkpoint_interval": params["checkpoint_interval"], "seeds": len(results),
                "first_seed": params["seed"], "replay": replay, "per_seed": results, "distribution": dist,
                "children": len(children), "workers": workers, **headline_figures(dist)}
    sweep = sweep_result(params, {float(k): v for k, v in by_interval.items()})
    return {"seeds": params["seeds"], "first_seed": params["seed"], "replay": replay, "sweep": sweep,
            "children": len(children), "workers": workers, "optimal_interval_s": sweep["optimal_interval_s"],
            **headline_figures(sweep["best"])}


# ------------------------------------------------------------------------------------- checks on the cluster
def _check_failures(values: dict, cluster) -> None:
    """The job's GPUs against the cluster's usable GPUs; days and timelines within the twin's limits; every
    injected failure's item a real item of the cluster's inventory."""
    n = values.get("gpus")
    if n is not None and n > (usable := limits.usable_gpus(cluster)):
        raise ParamError("gpus", f"{n:,} GPUs asked, {cluster.name} has {usable:,} usable")
    limits.check_failures(values["days"], values["seeds"], len(intervals_of(values)))
    _check_injected(values, cluster)


# The inventory model holding each kind of injected item, by the name the inventory and sim.names give it.
def _inventory_models() -> dict:
    from twin.inventory.models import GPU, NIC, Host, Link, Switch
    return {"gpu": GPU, "host": Host, "link": Link, "switch": Switch, "nic": NIC}


def _check_injected(values: dict, cluster) -> None:
    """Each injected failure's item must be an item of ``cluster`` of the kind it names (a 400 on ``inject``
    naming the item and the cluster)."""
    from sim.failures import parse_injections
    models = _inventory_models()
    wanted: dict[str, set[str]] = {}
    for inj in parse_injections(values.get("inject")):
        if inj.item is not None:
            wanted.setdefault(inj.item_kind, set()).add(inj.item)
    for kind, names in wanted.items():
        found = set(models[kind].objects.filter(cluster=cluster, name__in=names).values_list("name", flat=True))
        missing = sorted(names - found)
        if missing:
            raise ParamError("inject", f"{cluster.name} has no {kind} named {missing[0]!r}"
                                       f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}")


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
    """What the page draws with, from the engine's declarations: categories (label, consequence) and states."""
    from sim.failure_rates import CATEGORIES
    return {"categories": {n: {"label": c.label, "consequence": c.consequence} for n, c in CATEGORIES.items()},
            "states": list(frames.failure_states().values())}


def failed_parts(cluster, run) -> dict:
    """The failures of ``run``'s replayed timeline with the GPUs each takes down, resolved in the inventory by
    the item's name: a GPU; a host's GPUs; a NIC's or backend NIC cable's GPU; a leaf switch's GPUs (a failure
    deeper in the fabric takes down no GPU: the job is re-routed)."""
    from twin.web import gpu_data
    from twin.inventory.models import GPU, NIC, Host, Link, Switch
    replay = (run.summary or {}).get("replay") or {}
    events = replay.get("events", [])
    st = gpu_data.structure(cluster)
    names: dict[str, set] = {}
    for e in events:
        if e.get("item"):
            names.setdefault(e.get("item_kind"), set()).add(e["item"])

    def ids(model, kind):
        return dict(model.objects.filter(cluster=cluster, name__in=names.get(kind, ())).values_list("name", "id"))

    gpu_ids, host_ids, link_ids = ids(GPU, "gpu"), ids(Host, "host"), ids(Link, "link")
    switch_ids, nic_ids = ids(Switch, "switch"), ids(NIC, "nic")
    host_gpus = {}
    if host_ids:
        for host, gpu in GPU.objects.filter(host_id__in=host_ids.values()).values_list("host_id", "id"):
            host_gpus.setdefault(host, []).append(gpu)

    def gpus_of(e) -> list[int]:
        kind, name = e.get("item_kind"), e.get("item")
        if kind == "gpu" and name in gpu_ids:
            pos = st.gpus([gpu_ids[name]])
        elif kind == "host" and name in host_ids:
            pos = st.gpus(host_gpus.get(host_ids[name], []))
        elif kind == "link" and name in link_ids:
            pos = st.cable_gpu[st.cable_id == link_ids[name]]
        elif kind == "nic" and name in nic_ids:
            pos = st.cable_gpu[st.nic_id == nic_ids[name]]
        elif kind == "switch" and name in switch_ids:
            pos = st.cable_gpu[st.leaf_id == switch_ids[name]]
        else:
            return []
        return sorted(int(p) for p in np.asarray(pos) if p >= 0)

    out = [{**{k: e.get(k) for k in ("t_hours", "category", "item_kind", "item", "consequence", "lost_hours",
                                     "repair_hours")}, "gpus": gpus_of(e)} for e in events]
    return {"run": run.pk, "status": run.status, "hours": replay.get("wall_hours"), "gpus": len(st.gpus.ids),
            "events": out}


register(Kind(KIND, "Failures over time (a long job's interruptions, restarts and effective training time)",
              FAILURES, failures, headline=HEADLINE, best="effective_ratio", view="failures", form=False,
              brief=("gpus", "days", "checkpoint_interval", "seeds", "sweep_interval", "inject"),
              check=_check_failures, wants_run=True, fan_out=fan_out, merge=merge))
