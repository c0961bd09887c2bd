"""The run kinds: each kind is one registered :class:`Kind` object, and everything that offers, validates, runs,
merges or draws a kind reads it from here: the model field (no database choices, so a new kind needs no
migration), the API (kind choices, parameter serializers and schema), the Celery task, the sweep merge, the
Experiments form and the browser's result views (by the ``view`` name the server sends).

Adding a kind is one :func:`register` call (docs/runs.md, "Adding a kind").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from sim.core.errors import ParamError
from sim.core.params import ParamSet
from sim.core.units import size_text
from twin.runs import limits
from twin.runs.constants import DEFAULTS

SWEEP = "sweep"                     # the kind that fans out into child runs of another kind


def usable_of(params: ParamSet | None, cluster) -> int | None:
    """The usable GPUs of ``cluster`` when a parameter of ``params`` has a default that fits them
    (:meth:`sim.core.params.Param.default_for`), else None (no cluster, or nothing to fit: not counted)."""
    if cluster is None or params is None or not any(p.fits for p in params):
        return None
    from twin.inventory.gpu_grid import usable_gpus
    return usable_gpus(cluster)


@dataclass(frozen=True)
class Headline:
    """One headline figure of a kind's summary: ``summary[key]`` is a number or, over several seeds,
    ``{"median", "min", "max"}``. ``format`` tells the browser how to print it: ``pct`` (a 0..1 share as %),
    ``error`` (a relative error as %, two decimals, lower is better: not coloured as a share), ``GBps``, ``int``, ``num`` (two decimals), ``s`` (seconds) or ``text``."""

    key: str
    label: str
    format: str = "pct"


@dataclass(frozen=True)
class Kind:
    """What a run kind is.

    - ``run(layout, params, progress) -> (summary, arrays)``: ``progress(fraction, message="", *, force=False,
      **sections)`` (``sections``: live sections by name, :func:`twin.live.frames.build_sections`) with
      ``fraction`` the share of the work done (0..1, the engine's own numbers); it raises :class:`RunCancelled`
      once the run was cancelled. ``None`` for a kind that computes nothing itself (sweep).
    - ``params``: the :class:`sim.core.params.ParamSet` its parameters are declared by (the API's serializer and the
      form are built from it); ``check(values, cluster)`` adds the checks that need the cluster (raises
      :class:`ParamError`); ``validate`` replaces both for a kind whose parameters are not a ParamSet (sweep).
    - ``headline``: the summary's headline figures, ``best`` the key a sweep ranks its children by (higher wins).
    - ``arrays``: name -> numpy dtype of every array it stores (never a silent float16: see ``RunArray.pack``).
    - ``view``: the name of the browser's result view (registered by a capability's browser module with ``registerView``, frontend/js/registry.js).
    - ``cost(values, cluster) -> {unit: amount}``: the work a run asks for, in the units of
      :data:`twin.runs.limits.UNITS` that mean something for it (``{"flows": n}``: flows routed and solved, summed
      over its simulated runs; ``{"timelines": n}``; ``{"arrivals": n}``; ``{"scales": n}``); the API refuses a
      run over a unit's cap per run and a sweep whose children sum over its cap per sweep. Every kind declares
      one (:func:`register` refuses a kind without), but the sweep, whose cost is its children's.
    - ``estimate(values, cluster) -> seconds``: how long a run of ``values`` computes in one worker process, from
      its cost over the throughput settings it names in ``throughputs`` (measured by bench/bench_limits.py); the
      API refuses a run whose longest task's estimate is over TWIN_RUNS_SOFT_TIME_LIMIT. Required as ``cost`` is.
    - ``drives``: the parameter a refusal of the run's cost or time names (the one to lower); ``cost`` if none.
    - ``form``: whether the Experiments runs form offers it; ``brief``: the parameters its one-line description
      always shows (the others only when they differ from their default); ``describe(params)`` and
      ``headline_of(summary)`` replace the generic line and headline (sweep: its base kind's, of the best child).
    - ``on_create(run)``: called in the transaction that queues a run of the kind (``job``: its queued Job row);
      ``wants_run``: ``run`` is also called with the run itself (``run=``), for kinds that write rows of their own.
    - ``main``: the parameters a form shows first (the others fold under "more parameters"); ``published``: the
      published figures its result view draws beside the simulated ones (the figure kind: the paper's claims).
    - ``files``: the files a run of the kind keeps beside its rows (:mod:`twin.runs.files`), by the name the runs API
      serves them under (``debug``: ``("dumps",)``, ``GET /api/runs/<id>/dumps/``).
    - ``fan_out(params) -> list[dict]``: the validated parameters of the child runs (of this same kind) that do a
      run's work over the workers, as a sweep's children do (``failures``: chunks of seeds, intervals); an empty
      list when the run computes in one process. Only a run without a parent fans out; ``merge(params, children)``
      then makes its summary from its children (dicts as :func:`twin.runs.kinds.merge_sweep` gets them).
    - ``lifecycle``: the run builds, rebuilds or deletes a cluster (:mod:`twin.runs.clusters`) instead of reading one:
      it names its cluster in its parameters (its ``cluster`` is null until a build succeeds, and once deleted), the
      task reads no layout and runs it and its end in one transaction (a failure or a cancellation leaves the
      inventory as it was), and only ``POST /api/clusters/`` starts one (which checks who may), never
      ``POST /api/runs/``, a scenario or a sweep.
    """

    name: str
    label: str
    params: ParamSet | None
    run: Callable[..., tuple[dict, dict]] | None
    headline: tuple[Headline, ...] = ()
    best: str | None = None
    arrays: dict[str, str] = field(default_factory=dict)
    view: str = "summary"
    form: bool = False
    brief: tuple[str, ...] = ()
    check: Callable[[dict, Any], None] | None = None
    cost: Callable[[dict, Any], dict[str, int]] | None = None
    estimate: Callable[[dict, Any], float] | None = None
    drives: str = "cost"
    throughputs: tuple[str, ...] = ()
    validate: Callable[[Any, Any], dict] | None = None
    describe: Callable[[dict], str] | None = None
    headline_of: Callable[[dict], list[dict]] | None = None
    on_create: Callable[[Any], None] | None = None
    wants_run: bool = False
    files: tuple[str, ...] = ()
    main: tuple[str, ...] = ()
    published: dict | None = None
    fan_out: Callable[[dict], list[dict]] | None = None
    merge: Callable[[dict, list[dict]], dict] | None = None
    lifecycle: bool = False

    def children_params(self, params: dict | None) -> list[dict]:
        """The parameters of the child runs a run of this kind with ``params`` (and no parent) fans out to: a
        sweep's combinations are made by :func:`twin.runs.actions.fan_out_sweep`; ``fan_out``'s list otherwise."""
        if self.fan_out is None or params is None:
            return []
        return self.fan_out(params)

    def tasks(self, params: dict | None) -> int:
        """How many runs do the work of a run of this kind with ``params`` (what the active-run limits count): a
        sweep's combinations, a fanned-out run's children, else the run itself."""
        if self.name == SWEEP:
            n = 1
            for values in ((params or {}).get("sweep") or {}).values():
                n *= max(1, len(values))
            return n
        return max(1, len(self.children_params(params)))

    def validated(self, values, cluster=None, *, alone: bool = False) -> dict:
        """``values`` parsed, checked and completed with the defaults; with the ``cluster``, also checked against it
        and against the twin's limits (:mod:`twin.runs.limits`; ``alone``: as a sweep's child, which computes all its
        work in one task). Raises :class:`ParamError`."""
        if self.validate is not None:
            return self.validate(values, cluster)
        out = self.params.validate(values, usable_of(self.params, cluster))
        if cluster is not None:
            if self.check is not None:
                self.check(out, cluster)
            limits.check_run(self, out, cluster, alone=alone)
        return out

    def text(self, params: dict | None) -> str:
        """The run's parameters in one line (lists and tables): the ``brief`` ones, then those not at default."""
        params = params or {}
        if self.describe is not None:
            return self.describe(params)
        if self.params is None:
            return " ".join(f"{k}={_value(v)}" for k, v in params.items())
        shown = [p for p in self.params
                 if p.name in params and (p.name in self.brief or params[p.name] != p.default)]
        return " · ".join(f"{p.name} {_value(params[p.name], p)}" for p in shown)

    def headline_values(self, summary: dict | None) -> list[dict]:
        """The headline figures of a run's summary as the browser prints them: key, label, format, value."""
        summary = summary or {}
        if self.headline_of is not None:
            return self.headline_of(summary)
        return [{"key": h.key, "label": h.label, "format": h.format, "value": summary.get(h.key)}
                for h in self.headline]


def _value(v, p=None) -> str:
    if v is None:
        return "default"
    if p is not None and p.type == "size" and isinstance(v, int):    # 4294967296 -> 4G, as the forms take it
        return size_text(v)
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    if isinstance(v, str) and "\n" in v.strip():                # a host or GPU list: its size, not its text
        lines = [x for x in (line.split("#", 1)[0].strip() for line in v.splitlines()) if x]
        return f"({len(lines):,} lines)"
    return str(v)


def is_parent(run) -> bool:
    """Whether ``run``'s work is done by child runs (so it sends no heartbeat of its own once they exist): a sweep,
    or a run without a parent whose kind fans it out (``Kind.fan_out``). Read from the run's own fields: no query."""
    if run.kind == SWEEP:
        return True
    if run.parent_id is not None:
        return False
    kind = kinds().get(run.kind)
    try:
        return kind is not None and bool(kind.children_params(run.params))
    except (KeyError, TypeError, ValueError):    # parameters of an older declaration: the run is its own work
        return False


def median_of(value):
    """The number a figure stands for: itself, or the median of a ``{"median", "min", "max"}`` figure."""
    if isinstance(value, dict):
        return value.get("median")
    return value


_KINDS: dict[str, Kind] = {}
_loaded = False


def register(kind: Kind) -> Kind:
    """Make ``kind`` known to the API, the workers, the form and the browser (replaces a kind of the same name).
    Every kind but the sweep declares its cost and its time estimate (:mod:`twin.runs.limits`): none is unbounded."""
    if kind.name != SWEEP:
        missing = [n for n in ("cost", "estimate") if getattr(kind, n) is None]
        if missing:
            raise ValueError(f"kind {kind.name} declares no {' and no '.join(missing)}: every kind bounds its work "
                             f"(Kind.cost, Kind.estimate; docs/runs.md, Limits)")
        unknown = [t for t in kind.throughputs if t not in DEFAULTS]
        if unknown:
            raise ValueError(f"kind {kind.name}: throughputs {unknown} are not settings of twin.runs.constants")
    _KINDS[kind.name] = kind
    _changed()
    return kind


def unregister(name: str) -> None:
    _KINDS.pop(name, None)
    _changed()


def _changed() -> None:
    """The API schema, which describes every kind, is built anew (twin/api/kept_schema.py)."""
    from twin.api import kept_schema
    kept_schema.forget()


def _load() -> None:
    """Import the modules that register kinds: every capability's ``kinds`` module
    (:func:`twin.discovery.modules`), the sweep, then those of ``TWIN_RUN_KIND_MODULES``."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from twin import discovery
    from twin.runs.constants import setting
    discovery.modules("kinds")
    importlib.import_module("twin.runs.sweep")
    importlib.import_module("twin.runs.clusters")
    for module in setting("TWIN_RUN_KIND_MODULES"):
        importlib.import_module(module)


def kinds() -> dict[str, Kind]:
    """Every kind, in registration order, the sweep (which runs the others) last."""
    _load()
    return dict(sorted(_KINDS.items(), key=lambda item: item[0] == SWEEP))


def get(name) -> Kind:
    """The kind called ``name``; raises :class:`ParamError` on ``kind`` naming the known ones."""
    _load()
    if isinstance(name, str) and name in _KINDS:
        return _KINDS[name]
    raise ParamError("kind", f"unknown kind {str(name)[:64]!r}: choose one of {', '.join(_KINDS)}")


def choices() -> list[tuple[str, str]]:
    """``(name, label)`` of every kind, for choice fields and filters (callable: read when used)."""
    return [(k.name, k.label) for k in kinds().values()]


def lifecycle_kinds() -> list[str]:
    """The kinds whose runs build, rebuild or delete a cluster (``Kind.lifecycle``)."""
    return [k.name for k in kinds().values() if k.lifecycle]


def client_info() -> dict[str, dict]:
    """What the browser needs of every kind: label, result view, headline figures, whether the form offers it, and
    its parameters in bytes (sizes that are not token counts: shown as KiB, MiB, GiB)."""
    return {k.name: {"label": k.label, "view": k.view, "form": k.form, "best": k.best,
                     "headline": [{"key": h.key, "label": h.label, "format": h.format} for h in k.headline],
                     "bytes": [p.name for p in (k.params or ()) if p.type == "size" and "token" not in p.name]}
            for k in kinds().values()}


def __getattr__(name):
    # settings.SPECTACULAR_SETTINGS names the kinds' enum "twin.runs.registry.RunKind": the kinds' choices, read when
    # the schema is built (after every kind registered).
    if name == "RunKind":
        return choices()
    raise AttributeError(name)
