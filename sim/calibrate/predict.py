"""Predictions of measurements (docs/calibration.md "Predictions and errors"): each entry's observations from its
kind's engine entry point, the one a user's run of that kind calls (:class:`Predictor`), with reuse of the
expensive parts, and each entry on its own preset when it names one.
"""
from __future__ import annotations

import math

import numpy as np

from sim.calibrate.measurements import KINDS, Entry, check_gpu
from sim.core import fitted
from sim.core.errors import ParamError, UsageError
from sim.core.progress import silent
from sim.fabric.entry import run_collective
from sim.failures.entry import run_failures
from sim.jobs.job import STEP_ONLY, solve_job
from sim.power.entry import run_power
from sim.storage.entry import run_checkpoint

GB = 1e9                          # the measurements' GB/s are decimal (nccl-tests' convention)


def _job(topo, solved, values, e: Entry) -> list[float]:
    r = solved.result(topo, values)
    got = {"step_time_s": r.step_time, "tokens_per_s": r.tokens_per_s,
           "tokens_per_s_per_gpu": r.tokens_per_s / r.gpus.size, "tflops_per_gpu": r.tflops_per_gpu, "mfu": r.mfu}
    return [float(got[o.quantity]) for o in e.observations]


def _checkpoint(run, values, e: Entry) -> list[float]:
    r = run.result
    rate = r.bytes / r.durable_seconds / GB if r.durable_seconds > 0 else math.inf
    got = {"blocked_s": r.blocked_seconds, "durable_s": r.durable_seconds, "write_gbps": rate, "read_gbps": rate}
    return [float(got[o.quantity]) for o in e.observations]


def _failures(run, values, e: Entry) -> list[float]:
    s = run.doc["summary"]
    per_day = s["interruptions_per_day"]["mean"]
    got = {"interruptions": per_day * values["days"], "effective_ratio": s["effective_ratio"]["mean"],
           "mtbf_hours": 24.0 / per_day if per_day > 0 else math.inf}
    return [float(got[o.quantity]) for o in e.observations]


def _power(run, values, e: Entry) -> list[float]:
    r = run.result
    case = r.case
    sp, draw = case.draw.sp, case.draw
    figures = case.figures(int(case.job.params["batch_tokens"]))
    n = float(draw.stage_n.sum())
    hosts = r.hosts()
    got = {"gpu_mean_w": float(draw.stage_n @ sp.energy) / (n * sp.step_s),
           "gpu_peak_w": float(sp.watts[draw.stage_n > 0].max()),
           "cluster_peak_mw": figures["cluster_peak_mw"], "swing_mw": figures["cluster_swing_mw"],
           "energy_per_token_j": figures["energy_per_token_j"],
           "gpu_energy_per_token_j": figures["gpu_energy_per_token_j"],
           "node_mean_kw": hosts["mean_kw"], "node_peak_kw": hosts["peak_kw"]}
    return [float(got[o.quantity]) for o in e.observations]


# The kinds whose run is read whole (each a document of figures): the engine entry point, and the reader of an
# entry's quantities from its result. Entries of the same kind, preset and parameters share one run (a corpus
# often gives several figures of one run as entries of their own).
ENGINES = {"checkpoint": run_checkpoint, "restore": run_checkpoint, "failures": run_failures, "power": run_power}
READERS = {"checkpoint": _checkpoint, "restore": _checkpoint, "failures": _failures, "power": _power}


def _collective(row, e: Entry) -> list[float]:
    got = {"busbw_gbps": row.busbw / GB, "algbw_gbps": row.algbw / GB, "time_us": row.time * 1e6}
    return [float(got[o.quantity]) for o in e.observations]


def _batch_key(e: Entry) -> tuple:
    """Collective entries with the same cluster and parameters but their one size are one run (all their sizes, as
    an nccl-tests log's rows are): the same rows as a run per size, one routing and solve."""
    return e.cluster, tuple(sorted((n, repr(v)) for n, v in e.values.items() if n != "sizes"))


class Predictor:
    """The entries' predictions for given parameter values, each engine run at most once per set of the values its
    kind declares (and a job's solve once per set of its non-:data:`STEP_ONLY` values; collective entries that differ
    only in their size in one run of all their sizes). An entry with its own
    ``cluster`` (a preset) runs there, each preset's topology loaded once; the others on ``cluster``.
    ``runs``: engine runs done, ``evaluations``: predictions asked for."""

    def __init__(self, cluster, entries: list[Entry], progress=None):
        self.cluster, self.entries = cluster, entries
        self.progress = progress or silent
        self.runs = self.evaluations = 0
        self._cache: dict = {}
        self._solves: dict = {}
        self._presets: dict = {}
        self.n_obs = sum(len(e.observations) for e in entries)
        self.measured = np.array([o.measured for e in entries for o in e.observations])
        # (observations,) the position of each observation's entry
        self.obs_entry = np.array([k for k, e in enumerate(entries) for _ in e.observations], dtype=int)
        self._batches: dict = {}          # collective entries' batch key -> their sizes
        self._rows: dict = {}             # (batch key, own values) -> {size: row}
        self._results: dict = {}          # (kind, preset, values) -> a checkpoint, failures or power run
        for e in entries:
            if e.kind == "collective":
                self._batches.setdefault(_batch_key(e), set()).add(e.observations[0].size)
        if cluster is None and any(e.cluster is None for e in entries):
            missing = next(e for e in entries if e.cluster is None)
            raise UsageError(f"{label(missing)}: names no cluster and the fit was given none")
        for e in entries:
            if e.kind == "nccl-tests":
                topo = self.topology(e)
                check_gpu(e, topo.gpu_model.get("slug"), topo.layout.spec.name, topo.gpu_model.get("name"))

    def topology(self, e: Entry):
        """The cluster ``e`` runs on: its preset (loaded once), else the run's."""
        if e.cluster is None:
            return self.cluster
        if e.cluster not in self._presets:
            from sim.fabric.topology import load_topology
            self._presets[e.cluster] = load_topology(e.cluster)[1]
        return self._presets[e.cluster]

    def start_cluster(self):
        """The cluster a parameter's start is taken on (NULL_MEANS): the run's, else the first entry's."""
        return self.cluster if self.cluster is not None else self.topology(self.entries[0])

    def predict(self, theta: dict[str, float], say=None, only=None) -> np.ndarray:
        """(observations,) every entry's predictions with ``theta`` (name -> value) set where declared; ``only``
        (entry positions): those entries alone, the others' observations NaN."""
        self.evaluations += 1
        out = np.full(self.n_obs, np.nan)
        k0 = 0
        for k, e in enumerate(self.entries):
            n = len(e.observations)
            if only is None or k in only:
                out[k0:k0 + n] = self.entry(k, theta)
            k0 += n
            if say is not None:
                say((k + 1) / len(self.entries), f"predicted {label(e)} ({e.kind}, {e.name})")
        return out

    def entry(self, k: int, theta: dict[str, float]) -> list[float]:
        e = self.entries[k]
        own = tuple(sorted((n, v) for n, v in theta.items() if reads(e.kind, n)))
        key = (k, own)
        if key not in self._cache:
            try:
                self._cache[key] = self._run(k, e, dict(own))
            except ParamError as err:
                raise ParamError({f"{label(e)}.{f}": v for f, v in err.errors.items()}) from None
            except (UsageError, ValueError) as err:
                raise UsageError(f"{label(e)} ({e.kind}, {e.name}): {err}") from None
        return self._cache[key]

    def _run(self, k: int, e: Entry, own: dict) -> list[float]:
        values = {**e.values, **own}
        topo = self.topology(e)
        if e.kind == "job":
            solved = {n: v for n, v in own.items() if n not in STEP_ONLY}
            skey = (k, tuple(sorted(solved.items())))
            if skey not in self._solves:
                self.runs += 1
                self._solves[skey] = solve_job(topo, values)
            return _job(topo, self._solves[skey], values, e)
        if e.kind == "collective":
            bkey = (_batch_key(e), tuple(sorted(own.items())))
            if bkey not in self._rows:
                self.runs += 1
                sizes = ",".join(str(n) for n in sorted(self._batches[bkey[0]]))
                rows = run_collective(topo, {**values, "sizes": sizes}).seeded.median.result.rows
                self._rows[bkey] = {r.size: r for r in rows}
            return _collective(self._rows[bkey][e.observations[0].size], e)
        if e.kind in READERS:
            rkey = (e.kind, e.cluster, tuple(sorted((n, repr(v)) for n, v in values.items())))
            if rkey not in self._results:
                self.runs += 1
                self._results[rkey] = ENGINES[e.kind](topo, values)
            return READERS[e.kind](self._results[rkey], values, e)
        self.runs += 1
        run = run_collective(topo, values, source=("hosts" if values.get("hosts") else "gpu_list"))
        if e.log.ranks and (values.get("hosts") or values.get("gpu_list")) and run.values["gpus"] != len(e.log.ranks):
            field_name = "hosts" if values.get("hosts") else "gpu_list"
            raise ParamError(field_name, f"lists {run.values['gpus']:,} ranks but the log's Rank lines "
                                         f"{len(e.log.ranks):,}")
        times = {r.size: r.time for r in run.seeded.median.result.rows}
        return [times[o.size] for o in e.observations]


def reads(kind: str, name: str) -> bool:
    """Whether entries of ``kind`` take ``name`` from a fit: a parameter its ParamSet declares, and for a fitted
    factor a kind its declaration lists (:data:`sim.core.fitted.FACTORS`: a failures timeline takes the job's
    parameters but its counts do not inform the step's factors, so a fit does not re-run it for them; it runs
    with their fitted values)."""
    if name not in KINDS[kind].by_name:
        return False
    try:
        return kind in fitted.factor(name).kinds
    except KeyError:                                 # not a fitted factor: every kind declaring it takes it
        return True


def label(e: Entry) -> str:
    """``entry[i]``, after the file's name when the entry came from a named file (a corpus)."""
    return f"{e.origin}: {e.where}" if e.origin else e.where
