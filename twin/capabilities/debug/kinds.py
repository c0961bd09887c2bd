"""The debugging run kinds (docs/debugging.md, "In the twin"): ``debug`` rehearses a hang or a slowdown of a
training job on the cluster as the inventory holds it (:func:`sim.debug.recorder.rehearse`: the job's collectives
with the injected fault, every rank's flight-recorder dump, then :func:`sim.debug.analyze.analyze` names the culprit),
and ``startup`` models the process groups' start-up over a range of scales (:func:`sim.debug.startup.model`). Their
parameters are the engine's declarations (:data:`sim.debug.params.DEBUG`, :data:`sim.debug.params.STARTUP`): the API, the CLI
and the forms refuse the same inputs in the same words.

The fault of a rehearsal (``inject``) is the engine's text, parsed by the engine alone
(:func:`sim.debug.faults.parse_fault`): ``hang:rank=R``, ``desync:rank=R``, ``slow:rank=R``, ``host:rank=R``,
``link:id=L``, where ``gpu=<GPU name>`` or ``host=<Host name>`` may stand for ``rank=R`` (the rank on that GPU; a
host's first rank) and ``link:id=<Link name>`` for the link's number, names as :mod:`sim.fabric.names` makes them
(the inventory's). The API checks that the item exists in the cluster and, for a GPU or a host, that the job holds
it (the job is placed as the run will place it, on the usable GPUs of the inventory as it is), else a 400 naming
``inject``; the worker hands the engine the numbers the engine resolved the names to (:func:`engine_inject`).

The dumps (one pickle per rank, PyTorch's format) are made in memory by the engine's writer, rank by rank, and
handed as numpy records straight to the engine's analyzer (:class:`sim.debug.writer.DumpSet`,
:func:`sim.debug.analyze.analyze_dumpset`: no file written or read back, nothing parsed: the bytes are the twin's
own); what they are made of is kept with the run as one compressed ``.npz`` (:mod:`sim.debug.dumpstate`, about
300 times smaller than the dumps; :mod:`twin.runs.files`), from which ``GET /api/runs/<id>/dumps/`` streams the
archive of the dumps when it is downloaded (:func:`sim.debug.archive.stream`: a tar.gz or zip of the folder of
every rank's dump, the bytes the writer writes, which PyTorch's fr_trace reads once unpacked; one rank's alone from
``.../dumps/<rank>/``). The summary is the
analyzer's result (docs/debugging.md) with the culprit's items completed from the inventory (GPUs, host and link ids) and the heatmap's cells moved to
arrays:

- ``rank_gpu`` (R,) int32: the GPU (GPU.index) of each rank;
- ``heatmap_state`` (rows, columns) uint8: the analyzer's heatmap ``state`` (0 absent, 1 scheduled, 2 started,
  3 completed), ``heatmap_started`` / ``heatmap_completed`` (rows,) int64: each row's last started / completed
  record id; the row labels, their level (rank or host) and the columns' record ids stay in the summary's
  ``heatmap`` (with ``culprit_rows``, the rows holding a culprit's rank, instead of every row's ranks);
- ``gpu_stop`` (G,) uint8: where each GPU's rank stopped, coded as the live ``debug_stop`` section
  (:func:`twin.capabilities.debug.live.debug_stop`: how many of the heatmap's collectives its row never started,
  the culprit's GPUs marked): the GPU page's ``?color=debug&run=<id>``.

Live frames: ``debug_progress`` at every progress report (stage and the fractions done of its four stages, each
counted from the work done in it: the simulation's own fraction; the ranks whose dump was made and read; the
analyzer's steps once every dump is read; the stages of the compact copy written; the run's percentage is their sum
weighted by STAGE_SPAN), then ``debug_stop`` with the last frame.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from sim.core.errors import ParamError
from sim.debug import dumpstate
from sim.debug.analyze import analyze_dumpset
from sim.debug.cluster import gpu_links
from sim.debug.entry import run_debug, run_startup
from sim.debug.faults import parse_fault, resolve_fault
from sim.debug.params import DEBUG, STARTUP
from sim.debug.writer import DumpSet
from sim.fabric.topology import topology_from_layout
from twin.capabilities.debug import live
from twin.capabilities.jobs.kinds import check_job, job_cost, place
from twin.runs import files
from twin.runs.registry import Headline, Kind, register

DEBUG_HEADLINE = (Headline("culprit_text", "culprit", "text"), Headline("ranks", "ranks", "int"),
                  Headline("dumps_bytes", "dumps kept (bytes)", "int"))
STARTUP_HEADLINE = (Headline("largest_text", "start-up at the largest scale", "text"),)
DEBUG_ARRAYS = {"rank_gpu": "int32", "heatmap_state": "uint8", "heatmap_started": "int64",
                "heatmap_completed": "int64", "gpu_stop": "uint8"}
# Stage shares of a rehearsal's progress (the run's percentage: each stage's fraction done times its width, summed),
# in the order a run goes through them: simulating the job, making every rank's dump and reading it into the
# analysis, matching the collectives, keeping the dumps' compact copy; widths about their share of the run's time
# at 16,384 ranks (bench/bench_debug_run.py).
STAGE_SPAN = {"simulating": (0.0, 0.25), "dumping": (0.25, 0.8), "analyzing": (0.8, 0.9), "packing": (0.9, 1.0)}
DUMPSET_SHARE = 0.15            # of "dumping": the windows of every stage's times taken from the simulation
ANALYSIS_READ = 0.8             # of sim.debug.analyze's progress: reading the dumps (the rest: matching them)
STARTED = 2                                     # the analyzer's heatmap state "started" (docs/debugging.md)


# --------------------------------------------------------------------------------------------- the fault
def _job_values(values: dict) -> dict:
    """The job's parameters of a rehearsal (JOB's, which DEBUG reuses), ``gpus`` from the layout if left out."""
    from sim.jobs.params import JOB
    out = {p.name: values[p.name] for p in JOB if p.name in values}
    if out.get("gpus") is None:
        out["gpus"] = int(np.prod([values.get(k) or 1 for k in ("tp", "cp", "pp", "dp")]))
    out.setdefault("hottest", JOB.by_name["hottest"].default)
    return out


def _place(topo, values: dict) -> np.ndarray:
    """Rank -> GPU of the rehearsed job, as the job kind places a job (the engine's placement and seed)."""
    return np.asarray(place(topo, _job_values(values)))


def engine_inject(values: dict, gpus: np.ndarray, topo) -> str | None:
    """The rehearsal's ``inject`` in the engine's terms: parsed by the engine (:func:`sim.debug.faults.parse_fault`)
    and its item names resolved by it on ``topo`` (the inventory's layout; :func:`sim.debug.faults.resolve_fault`,
    names as :mod:`sim.fabric.names` makes them) with the job's ranks on ``gpus``: a GPU becomes the ``rank`` on it,
    a host its first rank, a link its up link among the topology's directed links (the engine's ``id``, whose cable
    ``id % n_cables``, the Link row's position among the cluster's links by id, it slows in both directions)."""
    if values.get("inject") is None:
        return None
    return resolve_fault(parse_fault(values["inject"]), topo, gpus).text()


def _check_debug(values: dict, cluster) -> None:
    """The job's GPUs against the usable ones and TWIN_DEBUG_MAX_RANKS; the items the fault names exist and, for a
    GPU or a host, hold a rank of the job (placed on the inventory as it is, as the worker will place it), for a link,
    are an active link of the backend fabric; the fault in numbers passes the engine's checks (its op on the rank's
    stage)."""
    from twin.inventory.adapter import layout_from_db
    from twin.runs.constants import setting
    check_job(values, cluster)
    ranks, cap = _job_values(values)["gpus"], setting("TWIN_DEBUG_MAX_RANKS")
    if ranks > cap:
        raise ParamError("gpus", f"{ranks:,} ranks, at most {cap:,} (TWIN_DEBUG_MAX_RANKS)")
    names = parse_fault(values.get("inject")).names()
    if not names:
        return
    topo = topology_from_layout(layout_from_db(cluster))
    gpus = _place(topo, values) if names.keys() & {"gpu", "host"} else np.zeros(0, np.int64)
    DEBUG.validate({**values, "inject": engine_inject(values, gpus, topo)})


def _validate_debug(values, cluster) -> dict:
    """DEBUG's validation (the engine reads a fault naming inventory items and checks what it can without the
    cluster); with the cluster, the names resolved (:func:`_check_debug`) and the twin's limits, as every kind. The
    parameters keep the names."""
    from twin.runs import limits
    from twin.runs.registry import get
    out = DEBUG.validate(values)
    if cluster is not None:
        _check_debug(out, cluster)
        limits.check_run(get("debug"), out, cluster)
    return out


def _debug_cost(values: dict, cluster) -> dict:
    """The rehearsal simulates the job's step once (:func:`twin.capabilities.jobs.kinds.job_cost`, its flows)."""
    return {"flows": job_cost(values, cluster)}


DUMP_ENTRIES = "TWIN_RUNS_DUMP_ENTRIES_PER_SECOND"


def _debug_seconds(values: dict, cluster) -> float:
    """Its step's flows over TWIN_RUNS_FLOWS_PER_SECOND, and its ranks x entries simulated, dumped and analyzed
    over TWIN_RUNS_DUMP_ENTRIES_PER_SECOND (bench/bench_limits.py)."""
    from twin.runs import limits
    entries = _job_values(values)["gpus"] * values["entries"]
    return limits.flows_estimate(values, cluster, _debug_cost) + limits.per_second(entries, DUMP_ENTRIES)


def _startup_cost(values: dict, cluster) -> dict:
    """The job sizes it models."""
    from sim.debug.startup import parse_scales
    return {"scales": len(parse_scales(values["gpus"]))}


STARTUP_SCALES = "TWIN_RUNS_STARTUP_SCALES_PER_SECOND"


def _startup_seconds(values: dict, cluster) -> float:
    from twin.runs import limits
    return limits.per_second(_startup_cost(values, cluster)["scales"], STARTUP_SCALES)


# ----------------------------------------------------------------------------------------------- the kinds
def _percent(done: dict) -> float:
    """The run's share done (0..1): each stage's fraction done times its width in STAGE_SPAN."""
    return sum((hi - lo) * done[stage] for stage, (lo, hi) in STAGE_SPAN.items())


def _stage_progress(progress: Callable, stage: str, done: dict, ranks: int) -> Callable:
    """A progress callback for one stage: the engine's fraction ``f`` of it, in the run's share and in the
    ``debug_progress`` section (with the other stages' fractions as they are, the packing thread's included)."""
    def report(f=None, message="", **_):
        if f is None:
            return
        done[stage] = max(0.0, min(1.0, float(f)))
        progress(_percent(done), message, debug_progress=live.debug_progress(stage, **done, ranks=ranks))
    return report


def gpu_stop(n_gpus: int, rank_gpu: np.ndarray, heatmap: dict, state: np.ndarray, culprit_ranks) -> np.ndarray:
    """Per GPU the ``debug_stop`` code: on the heatmap's time axis, how many of its instants came after its rank's
    row stopped (its last event: the earliest stops lag most); on its record axis, of the heatmap's collectives that
    some row started, how many its rank's row never started (a host row: its least advanced rank); the culprit's GPUs
    marked, GPUs outside the job not in it."""
    rank_gpu = np.asarray(rank_gpu, dtype=np.int64)
    if heatmap.get("axis") == "time":
        stopped = np.asarray([np.nan if x is None else x for x in heatmap.get("stopped_s", [])], dtype=np.float64)
        times = np.asarray(heatmap.get("times_s", []), dtype=np.float64)
        lag_row = (times[None, :] > np.nan_to_num(stopped, nan=np.inf)[:, None]).sum(axis=1)
    elif state.size:
        reached = state >= STARTED
        lag_row = (reached.any(axis=0)[None, :] & ~reached).sum(axis=1)
    else:
        lag_row = np.zeros(len(state), int)
    lag = np.full(n_gpus, np.nan)
    for row, ranks in enumerate(heatmap.get("ranks", [])):
        ranks = np.asarray(ranks, dtype=np.int64)
        ranks = ranks[(ranks >= 0) & (ranks < rank_gpu.size)]
        lag[rank_gpu[ranks]] = lag_row[row]
    culprit = np.zeros(n_gpus, bool)
    ranks = np.asarray([r for r in culprit_ranks if 0 <= r < rank_gpu.size], dtype=np.int64)
    culprit[rank_gpu[ranks]] = True
    return live.debug_stop(lag, culprit)


def culprit_links(topo, cluster, gpus) -> list[dict]:
    """The backend links at the culprit's GPUs, the ones the analyzer names (:func:`sim.debug.cluster.gpu_links`,
    directed), as the inventory's Link rows, one per cable: its name and id (the fabric page's ``#links=``), and the
    directions (``directions``: the analyzer's names, :meth:`sim.fabric.topology.Topology.link_names`). A directed
    link's cable is the layout link ``topo.link_cable[e]``, the position of its row among the cluster's links by id
    (:mod:`twin.inventory.adapter`)."""
    from twin.inventory.models import Link
    directed = gpu_links(topo, gpus) if len(gpus) else np.zeros(0, np.int64)
    if not directed.size:
        return []
    names = topo.link_names(directed)
    position = np.asarray(topo.link_cable)[directed]
    row_ids = np.fromiter(Link.objects.filter(cluster=cluster).order_by("id").values_list("id", flat=True), np.int64)
    ids = [int(row_ids[p]) if 0 <= p < row_ids.size else None for p in position.tolist()]
    link_names = dict(Link.objects.filter(id__in=[i for i in ids if i is not None]).values_list("id", "name"))
    out: dict = {}
    for name, row in zip(names, ids):
        key = row if row is not None else name
        item = out.setdefault(key, {"name": link_names.get(row, name), "id": row, "directions": []})
        item["directions"].append(name)
    return list(out.values())


def _culprit(result: dict, rank_gpu: np.ndarray, cluster, topo) -> dict | None:
    """The analyzer's culprit with the inventory's rows: its ranks' GPUs (GPU.index), its hosts and links with
    their ids (the GPU page, the fabric page and the inventory pages link to them); None for a clean job."""
    from twin.inventory.models import Host
    c = result.get("culprit")
    if not c:
        return None
    c = dict(c)
    c["gpus"] = [int(rank_gpu[r]) for r in c.get("ranks", []) if 0 <= r < rank_gpu.size]
    host_ids = dict(Host.objects.filter(cluster=cluster, name__in=c.get("hosts", [])).values_list("name", "id"))
    c["hosts"] = [{"name": h, "id": host_ids.get(h)} for h in c.get("hosts", [])]
    c["links"] = culprit_links(topo, cluster, c["gpus"]) if c.get("links") else []
    return c


def _analysis_progress(progress: Callable, done: dict, ranks: int) -> Callable:
    """The analyzer's progress split in its two stages: reading the dumps (its first ANALYSIS_READ, after the
    DUMPSET_SHARE of "dumping" the windows took) and matching them ("analyzing")."""
    dumping = _stage_progress(progress, "dumping", done, ranks)
    analyzing = _stage_progress(progress, "analyzing", done, ranks)

    def report(f=None, message="", **_):
        if f is None:
            return
        if f < ANALYSIS_READ:
            dumping(DUMPSET_SHARE + (1 - DUMPSET_SHARE) * f / ANALYSIS_READ, message)
        else:
            done["dumping"] = 1.0
            analyzing((f - ANALYSIS_READ) / (1 - ANALYSIS_READ), message)
    return report


def debug(layout, params: dict, progress: Callable, *, run) -> tuple[dict, dict]:
    """Rehearse: place the job, simulate its collectives with the fault, make every rank's dump and analyze it,
    keep the dumps' compact copy with the run; see the module docstring."""
    topo = topology_from_layout(layout)
    gpus = _place(topo, params)
    n, done = int(gpus.size), {stage: 0.0 for stage in STAGE_SPAN}
    values = DEBUG.validate({**params, "inject": engine_inject(params, gpus, topo)})
    rehearsal = run_debug(topo, values, progress=_stage_progress(progress, "simulating", done, n)).rehearsal
    done["simulating"] = 1.0
    dumping = _stage_progress(progress, "dumping", done, n)
    dumps = DumpSet.of(rehearsal, progress=lambda f, message="": dumping(DUMPSET_SHARE * f, message))
    doc = rehearsal.to_dict()
    del rehearsal                               # its per-stage times (1 GB at 16,384 ranks): the windows are kept
    result = analyze_dumpset(dumps, cluster=topo, progress=_analysis_progress(progress, done, n))
    done["dumping"] = done["analyzing"] = 1.0
    packing = _stage_progress(progress, "packing", done, n)
    kept = files.write_archive(run.pk, lambda raw: dumpstate.save(dumps, raw, progress=packing),
                               name=files.DUMPS_STATE)
    written = dumps.nbytes()
    del dumps
    heatmap = dict(result.pop("heatmap", None) or {})
    state = np.asarray(heatmap.pop("state", []), dtype=np.uint8).reshape(len(heatmap.get("labels", [])), -1)
    started = np.asarray(heatmap.pop("last_started", []), dtype=np.int64)
    completed = np.asarray(heatmap.pop("last_completed", []), dtype=np.int64)
    culprit = _culprit(result, gpus, run.cluster, topo)
    blamed = set(culprit["ranks"]) if culprit else set()
    stop = gpu_stop(int(topo.n_gpus), gpus, heatmap, state, sorted(blamed))
    heatmap["culprit_rows"] = [i for i, rs in enumerate(heatmap.pop("ranks", [])) if blamed & set(rs)]
    progress(1.0, debug_progress=live.debug_progress("done", **{stage: 1 for stage in STAGE_SPAN}, ranks=n),
             debug_stop=stop, force=True)
    summary = {**result, "culprit": culprit, "heatmap": heatmap, "rehearsal": doc,
               "culprit_text": (culprit or {}).get("explanation") or "none: a clean job", "ranks": n,
               "inject": params.get("inject"), "engine_inject": values["inject"],
               "dumps_bytes": kept.stat().st_size, "dumps_written_bytes": written,
               "dumps_url": f"/api/runs/{run.pk}/dumps/",
               "dumps_read": f"tar xzf {files.dumps_folder(run.pk)}.tar.gz && python -m "
                             f"torch.distributed.flight_recorder.fr_trace {files.dumps_folder(run.pk)}"}
    arrays = {"rank_gpu": gpus, "heatmap_state": state, "heatmap_started": started, "heatmap_completed": completed,
              "gpu_stop": stop}
    return summary, arrays


def startup(layout, params: dict, progress: Callable) -> tuple[dict, dict]:
    """The start-up model over the run's scales (:func:`sim.debug.startup.model`; well under a second)."""
    progress(0.0, "modelling the start-up")
    doc = run_startup(None, STARTUP.validate(params)).to_dict()
    last = (doc.get("rows") or [None])[-1]
    doc["largest_text"] = f"{last['gpus']:,} ranks: {last['total_s']:.1f} s ({last['dominant']})" if last else ""
    progress(1.0)
    return doc, {}


def register_kinds() -> bool:
    """Register ``debug`` and ``startup`` (``sim.debug.params.DEBUG``, ``STARTUP``)."""
    register(Kind("debug", "Debug rehearsal (a fault injected into a job; flight-recorder dumps analyzed)", DEBUG,
                  debug, headline=DEBUG_HEADLINE, arrays=DEBUG_ARRAYS, view="debug",
                  brief=("model", "gpus", "tp", "pp", "dp", "inject"), validate=_validate_debug, cost=_debug_cost,
                  estimate=_debug_seconds, drives="gpus", throughputs=("TWIN_RUNS_FLOWS_PER_SECOND", DUMP_ENTRIES),
                  wants_run=True, files=("dumps",), main=("model", "gpus", "tp", "cp", "pp", "dp", "inject")))
    register(Kind("startup", "Process-group start-up (time to initialize every group over scale)", STARTUP, startup,
                  headline=STARTUP_HEADLINE, view="startup", brief=("gpus",), main=("gpus",), cost=_startup_cost,
                  estimate=_startup_seconds, drives="gpus", throughputs=(STARTUP_SCALES,)))
    return True


register_kinds()
