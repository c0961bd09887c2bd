"""What the Validation page shows, as data: a finished ``validate`` run's result filtered by measurement kind and GPU
(its observations, and their |error| summarized again over what the filters leave), and a user's own measurements
against a calibration profile in the same shape (a finished ``calibrate`` run's observations: measured, predicted
with the fitted values and before them). Both the page's JSON and its tests read these functions; the browser
draws what they return."""
from __future__ import annotations

import numpy as np

from twin.runs.choices import RunStatus
from twin.runs.models import CalibrationProfile, SimulationRun

VALIDATE, CALIBRATE = "validate", "calibrate"
# The summary blocks of a validate result the page shows as they are (CONTRACTS.md, "sim/validation").
KEPT = ("overall", "kinds", "before", "cross_validated", "factors", "sources", "thresholds", "passed", "broken")
RECENT = 50                     # calibrate runs and profiles offered at most, newest first


def error_summary(errors) -> dict:
    """Count, median, p90 and max of the absolute relative errors ``errors`` (signed fractions; None skipped): the
    figures of the engine's summary, over any subset (np.percentile's linear interpolation for the p90)."""
    e = np.abs(np.array([x for x in errors if x is not None], dtype=np.float64))
    if not e.size:
        return {"count": 0, "median": None, "p90": None, "max": None}
    return {"count": int(e.size), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)),
            "max": float(e.max())}


def by_kind(observations: list[dict], error=lambda o: o.get("error")) -> dict:
    """:func:`error_summary` per measurement kind, in the order the kinds first appear."""
    kinds = dict.fromkeys(o.get("kind") for o in observations)
    return {k: error_summary(error(o) for o in observations if o.get("kind") == k) for k in kinds}


def choices_of(observations: list[dict]) -> dict:
    """The filters' choices: the kinds and GPUs present, each with its count, sorted by name."""
    out = {}
    for field in ("kind", "gpu"):
        counts: dict[str, int] = {}
        for o in observations:
            if o.get(field):
                counts[o[field]] = counts.get(o[field], 0) + 1
        out[field] = [{"value": v, "count": counts[v]} for v in sorted(counts)]
    return out


def filtered(observations: list[dict], kind: str | None, gpu: str | None) -> list[dict]:
    return [o for o in observations if (not kind or o.get("kind") == kind) and (not gpu or o.get("gpu") == gpu)]


def _finished_validations():
    return (SimulationRun.objects.filter(kind=VALIDATE, status=RunStatus.SUCCEEDED, summary__isnull=False)
            .order_by("-finished_at", "-id"))


def latest_validation() -> SimulationRun | None:
    """The last validate run that finished successfully (any cluster: the corpus is the same on every one)."""
    return _finished_validations().select_related("cluster").first()


def latest_validation_id() -> int | None:
    """:func:`latest_validation`'s id, its summary not read."""
    return _finished_validations().values_list("id", flat=True).first()


def run_brief(run: SimulationRun) -> dict:
    return {"id": run.id, "kind": run.kind, "status": run.status, "cluster": run.cluster.name, "params": run.params,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None}


def validation_view(run: SimulationRun | None, kind: str | None = None, gpu: str | None = None) -> dict:
    """A validate run's result for the page: the engine's blocks as they are (``result``), the choices of the
    filters (over every observation), and the observations the filters keep with their |error| summarized again
    (``selected``: overall and per kind). ``run`` None: ``{"run": None}`` (no validation has finished yet)."""
    if run is None:
        return {"run": None}
    s = run.summary or {}
    observations = s.get("observations") or []
    kept = filtered(observations, kind, gpu)
    return {"run": run_brief(run), "result": {k: s.get(k) for k in KEPT}, "choices": choices_of(observations),
            "filters": {"kind": kind, "gpu": gpu}, "observations": kept, "selected": selection(kept)}


def _before(o: dict):
    return (o.get("before") or {}).get("error")


def selection(kept: list[dict]) -> dict:
    """The kept observations' |error| summarized, overall and per kind, with the fitted factors (or the fit) and
    ``before`` them (the observations' ``before.error``, where they carry it)."""
    return {"overall": error_summary(o.get("error") for o in kept), "kinds": by_kind(kept),
            "before": {"overall": error_summary(_before(o) for o in kept), "kinds": by_kind(kept, _before)}}


# ------------------------------------------------------------------------------------------ the user's measurements
def _cluster_gpu(cluster) -> str | None:
    """The catalog slug of the cluster's GPU (its spec's), for the GPU filter."""
    from sim.core.errors import SpecError
    from sim.fabric.spec import parse_spec
    try:
        return parse_spec(cluster.spec).layout.gpu
    except (SpecError, KeyError, TypeError, ValueError):
        return None


def calibration_observations(run: SimulationRun) -> list[dict]:
    """A calibrate run's entries as the page's observations (the corpus's shape): ``predicted`` and ``error`` with the
    fitted values (the profile's), ``before`` without them; the source is the run."""
    gpu = _cluster_gpu(run.cluster)
    out = []
    for i, e in enumerate((run.summary or {}).get("entries") or []):
        after, before = e.get("after") or {}, e.get("before") or {}
        out.append({"id": f"run-{run.id}/{e.get('name')}/{i}", "source": f"calibrate run #{run.id}",
                    "kind": e.get("kind"), "gpu": gpu, "cluster": run.cluster.name, "label": e.get("label"),
                    "name": e.get("name"), "quantity": e.get("quantity"), "unit": "",
                    "measured": e.get("measured"), "predicted": after.get("predicted", e.get("predicted")),
                    "error": after.get("error", e.get("error")), "before": before,
                    "url": f"/experiments/{run.id}/", "where": f"entry {e.get('name')}", "note": "", "excused": None})
    return out


def calibration_runs() -> dict:
    """The calibrate runs that finished successfully and the calibration profiles (newest first, at most RECENT
    each), to choose from; their summaries are not read but the names fitted and the profile's run."""
    runs = (SimulationRun.objects.filter(kind=CALIBRATE, status=RunStatus.SUCCEEDED, summary__isnull=False)
            .order_by("-id").values("id", "cluster__name", "finished_at", "summary__fit")[:RECENT])
    profiles = (CalibrationProfile.objects.order_by("-id")
                .values("id", "name", "cluster__name", "summary__run")[:RECENT])
    return {"runs": [{"id": r["id"], "cluster": r["cluster__name"], "fit": r["summary__fit"] or [],
                      "finished_at": r["finished_at"].isoformat() if r["finished_at"] else None} for r in runs],
            "profiles": [{"id": p["id"], "name": p["name"], "cluster": p["cluster__name"], "run": p["summary__run"]}
                         for p in profiles]}


class NotFound(LookupError):
    """What was asked for is not there (a 404 saying which)."""


def calibration_view(run_id: int | None = None, profile_id: int | None = None, kind: str | None = None,
                     gpu: str | None = None) -> dict:
    """A user's measurements against a calibration profile: a finished calibrate run (``run_id``) or the run a profile
    was fitted by (``profile_id``: its ``summary.run``), its observations filtered and summarized before and after
    the fit, overall and per kind, and the fitted values."""
    profile = None
    if profile_id is not None:
        profile = CalibrationProfile.objects.select_related("cluster").filter(pk=profile_id).first()
        if profile is None:
            raise NotFound(f"no calibration profile {profile_id}")
        run_id = (profile.summary or {}).get("run")
        if run_id is None:
            raise NotFound(f"calibration profile {profile.name!r} names no calibrate run (its summary has no run)")
    run = SimulationRun.objects.select_related("cluster").filter(pk=run_id, kind=CALIBRATE).first()
    if run is None or run.status != RunStatus.SUCCEEDED or not run.summary:
        raise NotFound(f"no finished calibrate run {run_id}")
    observations = calibration_observations(run)
    kept = filtered(observations, kind, gpu)
    s = run.summary
    return {"run": run_brief(run),
            "profile": None if profile is None else {"id": profile.id, "name": profile.name,
                                                     "cluster": profile.cluster.name, "values": profile.values},
            "fit": s.get("fit") or [], "parameters": s.get("parameters") or {},
            "choices": choices_of(observations), "filters": {"kind": kind, "gpu": gpu}, "observations": kept,
            "selected": selection(kept)}
