"""Clusters built, rebuilt and deleted as runs (the Clusters page and ``/api/clusters/``): the kinds
``cluster_build`` (a preset, or a spec uploaded as TOML or JSON; ``replace``: rebuild a cluster that exists, from
its stored spec or a new one) and ``cluster_delete``. ``manage.py build_cluster`` does the same work in its own
process; as runs, a build goes to a worker with its progress counted from the rows written and deleted (live frames
on the run's stream), and is cancelled, listed and kept like any other run.

Each runs in one transaction with its run's end (:func:`twin.runs.tasks.run_in_one_transaction`): a failure or a
cancellation leaves the inventory as it was. Its parameters name the cluster (``name``): its run has no ``cluster``
while it works (a build's is set once built; a delete's stays empty), so that no other run's deletion takes it along.

The estimates (the Clusters page's, and the time limit's check) divide the rows a run writes and deletes by the rows
per second this twin's own cluster runs took (:func:`throughput`: the newest finished ones, their summaries), or,
before it has any, by the settings ``TWIN_RUNS_BUILD_ROWS_PER_SECOND`` and ``TWIN_RUNS_DELETE_ROWS_PER_SECOND``
(measured by bench/bench_build.py).

Who may: a build takes ``inventory.add_cluster``, a delete ``inventory.delete_cluster``, a rebuild both (and
``runs.add_simulationrun``, which starts any run); deleting or replacing a cluster that another user's runs depend on
takes staff (:func:`twin.runs.ownership.cluster_refusal`), checked when the run is asked for and again when its
worker starts it.
"""
from __future__ import annotations

import time
from functools import cache, lru_cache

from django.db.models import Q

from sim.core.errors import ParamError, SpecError
from sim.fabric.layout import expand
from sim.fabric.spec import PRESETS_DIR, SPEC_FORMATS, ClusterSpec, load_spec, parse_spec, preset_names, read_spec_text
from twin.inventory.builder import build_cluster, cluster_rows, delete_cluster, total_rows
from twin.inventory.models import GPU, Cluster, Host, Zone
from twin.runs import limits, ownership
from twin.runs.choices import ACTIVE, RunStatus
from twin.runs.constants import setting
from twin.runs.kinds import RunRefused
from twin.runs.models import SimulationRun
from twin.runs.registry import Headline, Kind, register

BUILD, DELETE = "cluster_build", "cluster_delete"
KINDS = (BUILD, DELETE)
BUILD_RATE, DELETE_RATE = "TWIN_RUNS_BUILD_ROWS_PER_SECOND", "TWIN_RUNS_DELETE_ROWS_PER_SECOND"
MAX_SPEC_BYTES = 256 * 1024     # an uploaded spec's text at most (the largest preset's is under 4 KiB)
MEASURED_RUNS = 20              # the newest succeeded cluster runs a throughput is measured over
PERMISSIONS = {BUILD: ("runs.add_simulationrun", "inventory.add_cluster"),
               DELETE: ("runs.add_simulationrun", "inventory.delete_cluster")}
REBUILD_PERMISSIONS = tuple(dict.fromkeys(PERMISSIONS[BUILD] + PERMISSIONS[DELETE]))


def permission_refusal(user, perms) -> str:
    """Why ``user`` may not start a cluster run that takes ``perms`` (:data:`PERMISSIONS`), "" when they may: the
    API's 403 and the Clusters page's disabled buttons say the same."""
    if user is None or not user.is_authenticated:
        return "log in to build, rebuild or delete a cluster"
    lacking = [p for p in perms if not user.has_perm(p)]
    return f"this needs the permission{'s' if len(lacking) > 1 else ''} {', '.join(map(repr, lacking))}" \
        if lacking else ""


# ------------------------------------------------------------------------------------------------------ specs
def spec_figures(spec: ClusterSpec) -> dict:
    """What a list of clusters shows of a spec: its size, GPUs, fabric and the rows its build writes."""
    lo = spec.layout
    return {"name": spec.name, "title": spec.title, "description": spec.description, "gpus": lo.gpus,
            "gpu_model": lo.gpu, "hosts": lo.hosts, "zones": lo.zones, "buildings": lo.buildings,
            "fabric": spec.backend.kind, "storage": [s.name for s in spec.storage], "rows": total_rows(expand(spec))}


@cache
def _preset_figures(name: str, mtime: float) -> dict:
    return spec_figures(load_spec(name))


@lru_cache(maxsize=64)
def _cluster_figures(cluster_id: int, built_at) -> dict:
    cluster = Cluster.objects.get(pk=cluster_id)
    try:
        return spec_figures(parse_spec(cluster.spec))
    except SpecError:                 # a spec the catalog no longer reads: what the rows say
        return {"name": cluster.name, "title": cluster.title, "description": cluster.description,
                "gpus": GPU.objects.filter(cluster=cluster).count(), "gpu_model": "",
                "hosts": Host.objects.filter(cluster=cluster).count(),
                "zones": Zone.objects.filter(cluster=cluster).count(), "buildings": 1, "fabric": "", "storage": [],
                "rows": cluster_rows(cluster)}


def cluster_figures(cluster: Cluster) -> dict:
    """A built cluster's :func:`spec_figures`, from the spec it was built from (kept per build of it)."""
    return _cluster_figures(cluster.pk, cluster.built_at)


def preset_of(source: dict) -> str | None:
    """The preset whose spec ``source`` is (a cluster built from it), or None."""
    name = source.get("name") if isinstance(source, dict) else None
    return name if name in preset_names() and load_spec(name).source == source else None


def preset_figures() -> list[dict]:
    """Every preset's :func:`spec_figures`, each kept while its file is unchanged (expanding roadmap-600k takes
    0.6 s)."""
    return [_preset_figures(n, (PRESETS_DIR / f"{n}.toml").stat().st_mtime) for n in preset_names()]


def spec_of(values: dict) -> tuple[ClusterSpec, str | None]:
    """The spec a build asks for: ``preset`` (a name), or ``spec`` (a table, or a file's text in ``format``, TOML
    unless it says JSON), under ``name`` when given; its preset's name or None. Raises ParamError naming the field
    (a spec's own fields under ``spec``: ``backend.leaf.uplinks: ...``)."""
    preset, spec, name = values.get("preset"), values.get("spec"), values.get("name")
    if (preset is None) == (spec is None):
        raise ParamError("preset", "give a preset's name or a spec (not both)")
    try:
        if preset is not None:
            if preset not in preset_names():
                raise ParamError("preset", f"{str(preset)[:64]!r} is not a preset: one of {', '.join(preset_names())}")
            data = dict(load_spec(preset).source)
        elif isinstance(spec, str):
            if len(spec.encode()) > MAX_SPEC_BYTES:
                raise ParamError("spec", f"{len(spec.encode()):,} bytes, at most {MAX_SPEC_BYTES:,}")
            fmt = values.get("format") or ("json" if spec.lstrip().startswith("{") else "toml")
            if fmt not in SPEC_FORMATS:
                raise ParamError("format", f"{str(fmt)[:16]!r}: one of {', '.join(SPEC_FORMATS)}")
            data = read_spec_text(spec, fmt)
        elif isinstance(spec, dict):
            data = dict(spec)
        else:
            raise ParamError("spec", "expected a table (an object) or a spec file's text")
        if name is not None:
            data["name"] = name
        return parse_spec(data), preset
    except SpecError as e:            # "spec: backend.leaf.uplinks: 7 ...", as /api/inventory/clusters/ says it
        raise ParamError("name" if e.field == "name" and name is not None else "spec", str(e)) from None


# ------------------------------------------------------------------------------------------------ estimates
def throughput() -> dict:
    """Rows written and deleted per second: summed over the newest MEASURED_RUNS succeeded cluster runs of this
    twin that did each (their summaries' rows and seconds), else the settings (bench/bench_build.py).
    ``{"write", "delete": rows/s, "write_runs", "delete_runs": how many runs measured them (0: the setting)}``."""
    out = {}
    for what, setting_name in (("write", BUILD_RATE), ("delete", DELETE_RATE)):
        rows = seconds = n = 0
        for summary in (SimulationRun.objects.filter(kind__in=KINDS, status=RunStatus.SUCCEEDED,
                                                     **{f"summary__{what}_s__gt": 0})
                        .order_by("-finished_at").values_list("summary", flat=True)[:MEASURED_RUNS]):
            rows, seconds, n = rows + summary[f"rows_{what}"], seconds + summary[f"{what}_s"], n + 1
        out[what] = rows / seconds if n else float(setting(setting_name))
        out[f"{what}_runs"] = n
    return out


def estimate_seconds(write: int, delete: int = 0, rates: dict | None = None) -> float:
    """Seconds to write ``write`` rows and delete ``delete`` rows at :func:`throughput`'s rates."""
    rates = rates or throughput()
    return write / rates["write"] + delete / rates["delete"]


def _cost(values: dict, cluster) -> dict[str, int]:
    return {"rows": values["rows"]["write"] + values["rows"]["delete"]}


def _estimate(values: dict, cluster) -> float:
    return estimate_seconds(values["rows"]["write"], values["rows"]["delete"])


# --------------------------------------------------------------------------------------------- asking for one
def active_run(name: str) -> SimulationRun | None:
    """The queued or running cluster run that builds or deletes the cluster called ``name``, if any."""
    return SimulationRun.objects.filter(kind__in=KINDS, status__in=ACTIVE, params__name=name).order_by("id").first()


class Busy(Exception):
    """Another cluster run on the same name is queued or running (the API answers 409)."""


def _not_busy(name: str) -> None:
    busy = active_run(name)
    if busy is not None:
        raise Busy(f"{name} is being {'deleted' if busy.kind == DELETE else 'built'} by run #{busy.pk} "
                       f"({busy.status}): wait for it, or cancel it")


def build_params(values: dict, user) -> dict:
    """A build's parameters from a request (``preset`` or ``spec``/``format``, ``name``, ``replace``), checked:
    the spec parsed (a ParamError naming the field), the name free (or, to replace, built and not another user's
    runs' unless ``user`` is staff: :class:`RunRefused`), no other cluster run on it (:class:`Busy`), its rows
    within TWIN_RUNS_MAX_RUN_ROWS and its estimate within the time limit."""
    unknown = sorted(set(values) - {"preset", "spec", "format", "name", "replace"})
    if unknown:
        raise ParamError({k: ["unknown field: give preset or spec (and format), name, replace"] for k in unknown})
    spec, preset = spec_of(values)
    replace = values.get("replace", False)
    if not isinstance(replace, bool):
        raise ParamError("replace", "expected true or false")
    existing = Cluster.objects.filter(name=spec.name).first()
    where = "name" if values.get("name") is not None else "preset" if preset else "spec"
    if existing is not None and not replace:
        raise ParamError(where, f"a cluster named {spec.name} already exists: rebuild it (replace: true) or delete "
                                f"it first")
    if existing is None and replace:
        raise ParamError("replace", f"no cluster named {spec.name} to replace: it does not exist (build it with "
                                    f"replace: false)")
    if existing is not None and (why := ownership.cluster_refusal(user, existing)):
        raise RunRefused(why)
    _not_busy(spec.name)
    params = {"name": spec.name, "preset": preset or preset_of(spec.source), "spec": spec.source, "replace": replace,
              "rows": {"write": total_rows(expand(spec)), "delete": cluster_rows(existing) if existing else 0}}
    limits.check_run(KIND_BUILD, params, None)
    return params


def delete_params(cluster: Cluster, user) -> dict:
    """A delete's parameters, checked as :func:`build_params` checks a replace."""
    if why := ownership.cluster_refusal(user, cluster):
        raise RunRefused(why)
    _not_busy(cluster.name)
    params = {"name": cluster.name, "rows": {"write": 0, "delete": cluster_rows(cluster)}}
    limits.check_run(KIND_DELETE, params, None)
    return params


def _started_elsewhere(values, cluster) -> dict:
    """The validation every generic path (``POST /api/runs/``, scenarios, sweeps) calls: refused, naming where."""
    raise ParamError("kind", "cluster runs are started by POST /api/clusters/ (a build or a rebuild) and "
                             "DELETE /api/clusters/<name>/, which check who may (docs/api.md)")


# ------------------------------------------------------------------------------------------------- the work
class _Rows:
    """The run's progress: rows written and deleted so far over the total, reported as each table is done (a
    cancellation raises from the reporter, inside the transaction: nothing is kept)."""

    def __init__(self, progress, total: int):
        self.progress, self.total, self.done = progress, max(1, total), 0

    def __call__(self, table: str, rows: int) -> None:
        self.done += rows
        self.progress(min(1.0, self.done / self.total), str(table))


def _owner_allows(run, cluster: Cluster) -> None:
    """A delete or replace checked again as its worker starts it: a run of another user may depend on the cluster
    since it was asked for."""
    if why := ownership.cluster_refusal(run.created_by, cluster):
        raise RunRefused(f"refused when it started: {why}")


def run_build(layout, params: dict, progress, *, run) -> tuple[dict, dict]:
    """Build (or replace) the cluster of ``params`` in the task's transaction; sets ``run.cluster`` to it."""
    spec = parse_spec(params["spec"])
    existing = Cluster.objects.filter(name=spec.name).first()
    if existing is not None and not params["replace"]:
        raise RunRefused(f"a cluster named {spec.name} was built meanwhile: rebuild it (replace) to build it again")
    rows = _Rows(progress, total_rows(expand(spec)) + (cluster_rows(existing) if existing else 0))
    summary = {"name": spec.name, "preset": params.get("preset"), "gpus": spec.layout.gpus, "replaced": None}
    if existing is not None:
        _owner_allows(run, existing)
        start = time.perf_counter()
        change = delete_cluster(existing, user=run.created_by, progress=rows)
        summary.update(rows_delete=change.before["rows"], delete_s=time.perf_counter() - start,
                       replaced=change.before["with_it"])
    start = time.perf_counter()
    result = build_cluster(spec, progress=rows, user=run.created_by)
    summary.update(cluster=result.cluster.pk, rows_write=result.rows, write_s=time.perf_counter() - start)
    run.cluster = result.cluster
    return summary, {}


def run_delete(layout, params: dict, progress, *, run) -> tuple[dict, dict]:
    """Delete the cluster of ``params`` in the task's transaction."""
    cluster = Cluster.objects.filter(name=params["name"]).first()
    if cluster is None:
        raise RunRefused(f"no cluster named {params['name']}: deleted meanwhile")
    _owner_allows(run, cluster)
    start = time.perf_counter()
    change = delete_cluster(cluster, user=run.created_by, progress=_Rows(progress, cluster_rows(cluster)))
    return {"name": cluster.name, "rows_delete": change.before["rows"], "delete_s": time.perf_counter() - start,
            "with_it": change.before["with_it"]}, {}


def _describe(params: dict) -> str:
    name = params.get("name", "?")
    if "spec" not in params:
        return f"delete {name}"
    source = f"preset {params['preset']}" if params.get("preset") else "uploaded spec"
    return f"{'rebuild' if params.get('replace') else 'build'} {name} from {source}"


def runs_of(name: str):
    """The cluster runs that built or deleted the cluster called ``name`` (newest first)."""
    return SimulationRun.objects.filter(Q(kind__in=KINDS) & Q(params__name=name)).order_by("-id")


COMMON = {"validate": _started_elsewhere, "lifecycle": True, "wants_run": True, "cost": _cost,
          "estimate": _estimate, "throughputs": (BUILD_RATE, DELETE_RATE), "drives": "spec", "describe": _describe}
KIND_BUILD = register(Kind(BUILD, "Cluster build", None, run_build, headline=(
    Headline("rows_write", "rows written", "int"), Headline("write_s", "build time", "s")), **COMMON))
KIND_DELETE = register(Kind(DELETE, "Cluster delete", None, run_delete, headline=(
    Headline("rows_delete", "rows deleted", "int"), Headline("delete_s", "delete time", "s")), **COMMON))
