"""Every write of the runs app goes through these functions (Zulip's ``do_*`` habit): each runs under
``transaction.atomic`` and sends Celery messages and live frames only after the commit (``on_commit``).

A run's life: :func:`create_run` (queued; the task is enqueued after the commit) -> :func:`start_run` (the worker
marks it running with its hostname and a heartbeat) -> :func:`succeed_run` / :func:`fail_run` /
:func:`cancelled_run`. :func:`cancel_run` asks a run to stop; :func:`sweep_stuck_runs` requeues once, then fails, a
run whose worker stopped sending heartbeats, and closes sweeps whose children all ended.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone
from rest_framework import serializers

from sim.core.errors import ParamError
from sim.fabric.layout import STATUS_ACTIVE
from twin.inventory import changelog
from twin.inventory.choices import ChangeAction
from twin.runs import calibration, cancelling, job_actions, limits, publishing, registry, schedules
from twin.runs.choices import ACTIVE, FINISHED, RunStatus
from twin.runs.constants import EXECUTE_RUN_TASK, FINISH_SWEEP_TASK, PROGRESS_DB_INTERVAL, SCHEDULE_TASK, setting
from twin.runs.sweep import combinations, merge_sweep
from twin.runs.models import CalibrationProfile, Job, RunArray, Scenario, ScheduleOwner, SimulationRun
from twin.runs.params import validate_params
from twin.runs.registry import SWEEP, is_parent

log = logging.getLogger("twin.runs")


def _publish_finished(run_id: int):
    run = SimulationRun.objects.filter(pk=run_id).first()
    if run is not None:
        publishing.finished(run)


# ---------------------------------------------------------------------------------------------------- enqueue
def _enqueue(run_id: int, task_id: str):
    """Send the run's task by name (the tasks module imports this one, not the reverse)."""
    from twin.celery import app
    app.send_task(EXECUTE_RUN_TASK, args=(run_id,), task_id=task_id)


# The PostgreSQL advisory lock that serializes the active-run check of every creation (SQLite's IMMEDIATE
# transactions already serialize writers): two users racing cannot both pass TWIN_RUNS_MAX_ACTIVE.
ACTIVE_RUNS_LOCK = 0x7477696E_0024


def active_load(user=None) -> int:
    """Runs doing work that are queued or running and not asked to stop (``user``'s, or everyone's): a top-level
    run counts as its active children once it has fanned out, before as the runs it will fan out to
    (``Kind.tasks``: a sweep's combinations, a failures run's chunks), a run without children once."""
    runs = SimulationRun.objects.filter(parent=None, status__in=ACTIVE, cancel_requested=False)
    if user is not None:
        runs = runs.filter(created_by=user)
    rows = runs.annotate(n_children=Count("children"),
                         n_active=Count("children", filter=Q(children__status__in=ACTIVE,
                                                             children__cancel_requested=False)))
    load = 0
    for kind, params, n_children, n_active in rows.values_list("kind", "params", "n_children", "n_active"):
        if n_children:
            load += n_active
            continue
        try:
            load += registry.get(kind).tasks(params)
        except (ParamError, KeyError, TypeError, ValueError):    # a kind no longer registered, older parameters
            load += 1
    return load


def _check_active(user, kind: str, params: dict) -> None:
    """Room for a run of ``kind`` with ``params`` (counted as :meth:`Kind.tasks` runs) under
    TWIN_RUNS_MAX_ACTIVE_PER_USER (``user``'s) and TWIN_RUNS_MAX_ACTIVE (everyone's); called in the transaction
    that creates the run, under a lock, so that creations racing are counted one after the other."""
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ACTIVE_RUNS_LOCK])
    if user is not None:
        get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
    try:
        limits.check_active(active_load(user) if user is not None else 0, active_load(),
                            registry.get(kind).tasks(params))
    except ParamError as e:
        raise serializers.ValidationError(e.errors) from None


def create_run(kind: str, params: dict, cluster, *, scenario: Scenario | None = None, user=None,
               parent: SimulationRun | None = None, enqueue: bool = True, validated: bool = False,
               schedule=None) -> SimulationRun:
    """A queued run of ``kind`` on ``cluster``; its task is enqueued once the transaction commits. ``schedule``:
    the PeriodicTask that started it, recorded on the run (its ``schedule``, and its name in the notes, which outlive
    the schedule).
    Raises a DRF ValidationError naming the bad parameter, or ``active_runs`` when the runs it adds would take
    ``user``'s active runs over TWIN_RUNS_MAX_ACTIVE_PER_USER or everyone's over TWIN_RUNS_MAX_ACTIVE (a child run
    is counted with its parent, when the parent is created)."""
    if not validated:
        params = validate_params(kind, params, cluster)
    with transaction.atomic():
        if parent is None:
            _check_active(user, kind, params)
        run = SimulationRun.objects.create(kind=kind, params=params, cluster=cluster, scenario=scenario,
                                           parent=parent, created_by=user, celery_task_id=str(uuid.uuid4()),
                                           schedule=schedule,
                                           notes=_note("", f"started by schedule {schedule.name!r}") if schedule
                                           else "")
        hook = registry.get(kind).on_create
        if hook is not None:
            hook(run)
        transaction.on_commit(lambda: publishing.created(run))
        if enqueue:
            transaction.on_commit(lambda: _enqueue(run.pk, run.celery_task_id))
    return run


def create_run_from_scenario(scenario: Scenario, user=None, schedule=None) -> SimulationRun:
    return create_run(scenario.kind, scenario.params, scenario.cluster, scenario=scenario, user=user,
                      schedule=schedule)


def create_whatifs(original: Job, vary: str, values: list, user=None) -> list[SimulationRun]:
    """Runs of ``original``'s kind, each its parameters with ``vary`` set to one of ``values`` (``cluster``: the
    same parameters on the cluster of that name), whose jobs are what-ifs of it
    (:func:`twin.runs.job_actions.make_whatif`: named for what they vary, never holding GPUs). All or none are made
    (one transaction); a bad value is a ValidationError naming ``values``."""
    from twin.inventory.models import Cluster
    run = original.run
    if run is None or registry.get(run.kind).on_create is None:
        raise serializers.ValidationError({"job": [f"job {original.pk} was not submitted as a job run: it has no "
                                                   "parameters to vary"]})
    made = []
    with transaction.atomic():
        for value in values:
            cluster, params = run.cluster, dict(run.params)
            if vary == "cluster":
                cluster = Cluster.objects.filter(name=str(value)).first()
                if cluster is None:
                    raise serializers.ValidationError({"values": [f"no cluster named {str(value)[:64]!r}"]})
            else:
                params[vary] = value
            try:
                params = validate_params(run.kind, params, cluster)
            except serializers.ValidationError as e:
                raise serializers.ValidationError({"values": [f"{vary} {str(value)[:64]}: {_first_error(e.detail)}"]}
                                                  ) from None
            child = create_run(run.kind, params, cluster, user=user, validated=True)
            job = Job.objects.filter(run=child).order_by("id").first()
            if job is not None:
                job_actions.make_whatif(job, original, f"{vary} {value}")
            made.append(child)
    return made


def _first_error(detail) -> str:
    """The first message of a DRF error detail, with the field it names (``gpus: ...``)."""
    while isinstance(detail, dict):
        key, detail = next(iter(detail.items()))
        if not isinstance(detail, dict | list):
            return f"{key}: {detail}"
        if isinstance(detail, list) and detail and not isinstance(detail[0], dict | list):
            return f"{key}: {detail[0]}"
    if isinstance(detail, list) and detail:
        return _first_error(detail[0])
    return str(detail)


def cancel_run(run: SimulationRun) -> SimulationRun:
    """Ask ``run`` (and a sweep's children) to stop. A queued run ends cancelled at once and its message is
    revoked; a running one stops at its next progress report (the kind's progress callback raises). Finished
    runs are left as they are."""
    from twin.celery import app
    if not run.finished:
        cancelling.ask(run.pk)              # before the row: a run inside one transaction reads it there
    with transaction.atomic():
        run = SimulationRun.objects.select_for_update().get(pk=run.pk)
        if run.finished:
            return run
        run.cancel_requested = True
        fields = ["cancel_requested"]
        if run.status == RunStatus.QUEUED and run.kind != SWEEP:
            run.status, run.finished_at = RunStatus.CANCELLED, timezone.now()
            fields += ["status", "finished_at"]
            job_actions.fail_jobs_of_run(run, "run cancelled before it started")
            transaction.on_commit(lambda: _publish_finished(run.pk))
        run.save(update_fields=fields)
        children = list(run.children.filter(status__in=ACTIVE))
        for child in children:
            cancel_run(child)
        if run.parent_id is None and run.kind != SWEEP:
            # Children stay in their chord: their tasks see the cancellation and return, so the callback still runs.
            task_id = run.celery_task_id
            transaction.on_commit(lambda: app.control.revoke(task_id))
    return run


def delete_run(run: SimulationRun) -> None:
    """Cancel ``run`` (and a sweep's children), then delete it with its arrays and children; once committed, its
    stream and its cluster's stream say ``{"type": "run_deleted", "run": id}`` (the runs list drops its row)."""
    cancel_run(run)
    run_id, cluster_id = run.pk, run.cluster_id
    with transaction.atomic():
        SimulationRun.objects.filter(pk=run_id).delete()
        transaction.on_commit(lambda: publishing.deleted(run_id, cluster_id))


def delete_cluster_runs(cluster) -> dict[str, int]:
    """What the runs app keeps of ``cluster``, deleted with it (the ``cluster_deleting`` receiver, inside the
    cluster's delete transaction, docs/runs.md): its runs (active ones cancelled first, as :func:`delete_run` does;
    their arrays and children with them, their stored files once the deletion commits), its scenarios, the
    schedules that start them, and its jobs. The runs that built it stay, without it (``Kind.lifecycle``: their
    parameters name it). Returns the counts deleted."""
    from django_celery_beat.models import PeriodicTask
    with transaction.atomic():
        SimulationRun.objects.filter(cluster=cluster, kind__in=registry.lifecycle_kinds()).update(cluster=None)
        runs = SimulationRun.objects.filter(cluster=cluster)
        for run in runs.filter(status__in=ACTIVE, parent=None):
            cancel_run(run)                 # queued messages revoked once it commits; a running one stops
        scenario_ids = set(Scenario.objects.filter(cluster=cluster).values_list("id", flat=True))
        schedules = [t.pk for t in PeriodicTask.objects.select_for_update().filter(task=SCHEDULE_TASK).only("kwargs")
                     if json.loads(t.kwargs or "{}").get("scenario_id") in scenario_ids]
        PeriodicTask.objects.filter(pk__in=schedules).delete()
        jobs = Job.objects.filter(cluster=cluster).delete()[0]
        n_runs = runs.count()
        runs.delete()
        Scenario.objects.filter(pk__in=scenario_ids).delete()
    return {"runs": n_runs, "scenarios": len(scenario_ids), "schedules": len(schedules), "jobs": jobs}


# -------------------------------------------------------------------------------------------------- scenarios
def save_scenario(*, name: str, kind: str, cluster, params: dict | None = None, description: str = "",
                  user=None, instance: Scenario | None = None) -> Scenario:
    """Create (or update ``instance``) a scenario: its parameters validated for its kind and cluster (a DRF
    ValidationError naming the bad field), then saved in one transaction."""
    params = validate_params(kind, params or {}, cluster)
    with transaction.atomic():
        scenario = instance or Scenario(created_by=user)
        scenario.name, scenario.kind, scenario.cluster = name, kind, cluster
        scenario.params, scenario.description = params, description
        scenario.save()
    return scenario


def delete_scenario(scenario: Scenario) -> None:
    """Delete a scenario and the schedules that start it (its runs stay, without their scenario)."""
    from django_celery_beat.models import PeriodicTask
    with transaction.atomic():
        for task in PeriodicTask.objects.select_for_update().filter(task=SCHEDULE_TASK):
            if json.loads(task.kwargs or "{}").get("scenario_id") == scenario.pk:
                task.delete()
        scenario.delete()


# ------------------------------------------------------------------------------------------ calibration profiles
def _profile_fields(profile: CalibrationProfile) -> dict:
    """What the change log keeps of a profile (its summary, the fit's errors, is not a setting: left out)."""
    return {"name": profile.name, "cluster": profile.cluster_id, "values": profile.values,
            "intervals": profile.intervals, "notes": profile.notes}


def _log_profile(action: str, profile: CalibrationProfile, user, before=None, after=None) -> None:
    changelog.write([changelog.entry(action, CalibrationProfile, profile.pk, profile.name, profile.cluster_id, user,
                                     before=before, after=after)])


def save_calibration(*, cluster, name: str, values, intervals=None, summary=None, notes: str = "", user=None,
                     instance: CalibrationProfile | None = None, holdout=None, refused=None) -> CalibrationProfile:
    """Create (or update ``instance``) a calibration profile: ``values`` checked by each parameter's declaration
    and ``intervals`` against them (:mod:`twin.runs.calibration`; a DRF ValidationError ``{"values": {name:
    [...]}}``), then saved with its change-log entry (the inventory's change log, ``model`` calibrationprofile:
    what changed, before and after) in one transaction."""
    try:
        values = calibration.checked_values(values)
    except ParamError as e:
        raise serializers.ValidationError({"values": e.errors}) from None
    try:
        intervals = calibration.checked_intervals(intervals, values)
    except ParamError as e:
        raise serializers.ValidationError({"intervals": e.errors}) from None
    try:
        holdout, refused = calibration.checked_holdout(holdout), calibration.checked_refused(refused)
    except ParamError as e:
        raise serializers.ValidationError(e.errors) from None
    summary = summary or {}
    if not isinstance(summary, dict) or len(json.dumps(summary)) > calibration.MAX_SUMMARY_CHARS:
        raise serializers.ValidationError({"summary": [f"expected an object of at most "
                                                       f"{calibration.MAX_SUMMARY_CHARS:,} characters as JSON"]})
    with transaction.atomic():
        profile = instance or CalibrationProfile(created_by=user)
        if profile.pk is None:
            profile.created_by, before = profile.created_by or user, None
        else:                           # as stored (the admin hands over its object already edited)
            before = _profile_fields(CalibrationProfile.objects.select_for_update().get(pk=profile.pk))
        profile.cluster, profile.name, profile.values = cluster, name, values
        profile.intervals, profile.summary, profile.notes = intervals, summary, notes
        profile.holdout, profile.refused = holdout, refused
        profile.save()
        if before is None:
            _log_profile(ChangeAction.CREATE, profile, user, after=_profile_fields(profile))
        else:
            old, new = changelog.diff(before, _profile_fields(profile))
            if new:
                _log_profile(ChangeAction.UPDATE, profile, user, before=old, after=new)
    return profile


def delete_calibration(profile: CalibrationProfile, user=None) -> None:
    """Delete a profile, logged. Runs that used it keep their record of it (its name, id and the values applied)."""
    with transaction.atomic():
        _log_profile(ChangeAction.DELETE, profile, user, before=_profile_fields(profile))
        profile.delete()


# ------------------------------------------------------------------------------------------ worker side
def start_run(run_id: int, task_id: str, worker: str) -> SimulationRun | None:
    """Mark the run running on ``worker``; None when this message must not run it (stale message of a requeued
    run, run finished or cancelled). A redelivered message of a run whose worker died (status still running)
    starts it again, up to TWIN_RUNS_MAX_ATTEMPTS times."""
    now = timezone.now()
    with transaction.atomic():
        run = SimulationRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.celery_task_id != task_id or run.finished:
            return None
        if run.cancel_requested:
            _finish(run, RunStatus.CANCELLED, now)
            return None
        if run.status == RunStatus.RUNNING:
            reason = f"worker lost ({run.worker or 'unknown'}); redelivered to {worker}"
            run.notes = _note(run.notes, reason)
            if run.attempts >= setting("TWIN_RUNS_MAX_ATTEMPTS"):
                run.error = f"{reason}; gave up after {run.attempts} attempts"
                _finish(run, RunStatus.FAILED, now, extra=["notes", "error"])
                return None
        run.status, run.worker, run.heartbeat_at = RunStatus.RUNNING, worker, now
        run.started_at = run.started_at or now
        run.attempts += 1
        run.save(update_fields=["status", "worker", "heartbeat_at", "started_at", "attempts", "notes"])
    # the first frame goes out now, before the kind loads the cluster (0.7 s for 24k GPUs)
    publishing.progress(run, 0.0, force=True)
    return run


def _note(notes: str, text: str) -> str:
    stamp = timezone.now().strftime("%Y-%m-%d %H:%M:%S")
    return f"{notes}\n{stamp} {text}".strip()


def _finish(run: SimulationRun, status: str, now=None, extra=()):
    run.status, run.finished_at = status, now or timezone.now()
    fields = ["status", "finished_at", *extra]
    record = (run.params or {}).get(calibration.KEY) if isinstance(run.params, dict) else None
    if status == RunStatus.SUCCEEDED and isinstance(run.summary, dict) and isinstance(record, dict):
        run.summary[calibration.KEY] = record       # the result says which profile and values it ran with
        fields += [] if "summary" in fields else ["summary"]
    if status != RunStatus.SUCCEEDED:           # its training jobs (job runs) end with it
        job_actions.fail_jobs_of_run(run, run.error or f"run {status}")
    if status == RunStatus.SUCCEEDED:
        run.progress = 100.0
        fields.append("progress")
    run.save(update_fields=fields)
    transaction.on_commit(lambda: publishing.finished(run))
    if run.parent_id is not None:
        parent_id = run.parent_id
        transaction.on_commit(lambda: sweep_progress(parent_id))


def sweep_progress(parent_id: int, force: bool = True) -> float | None:
    """A running parent's progress (a sweep, a fanned-out run), saved and published: the mean of its children's
    own progress, an ended child counting whole (a parent computes nothing itself: without this its progress
    stays 0 until its last child ends). Called when a child ends and, unforced, when a child reports progress
    (:class:`twin.runs.tasks.Reporter`); an unforced call publishes at most once per PROGRESS_DB_INTERVAL in this
    process. None when the parent is not running."""
    counts = SimulationRun.objects.filter(parent_id=parent_id).aggregate(
        n=Count("id"), done=Count("id", filter=~Q(status__in=ACTIVE)),
        active=Sum("progress", filter=Q(status__in=ACTIVE)))
    parent = SimulationRun.objects.filter(pk=parent_id, status=RunStatus.RUNNING).first()
    if parent is None or not counts["n"]:
        return None
    # Never backwards: children end on several workers at once, each computing this from what it saw (a slower one
    # may write after a faster one), and the sum of floats varies in its last bits with the order of the rows.
    value = round(min(100.0, (100.0 * counts["done"] + (counts["active"] or 0.0)) / counts["n"]), 6)
    SimulationRun.objects.filter(pk=parent_id, status=RunStatus.RUNNING, progress__lt=value).update(progress=value)
    parent.progress = max(value, parent.progress)
    now = time.monotonic()
    if force or now - _parent_published.get(parent_id, 0.0) >= PROGRESS_DB_INTERVAL:
        _parent_published[parent_id] = now
        publishing.progress_once(parent, parent.progress)
    return parent.progress


_parent_published: dict[int, float] = {}     # parent run id -> when this process last published its progress


def inventory_state(cluster, layout) -> dict:
    """What inventory a run saw: the cluster, counts of non-active items and a hash of every status array."""
    h = hashlib.sha256()
    counts = {}
    for name in ("gpu_status", "nic_status", "switch_status", "port_status", "link_status"):
        a = np.ascontiguousarray(getattr(layout, name), dtype=np.int8)
        h.update(name.encode())
        h.update(a.tobytes())
        counts[name.removesuffix("_status") + "s"] = {"total": int(a.size),
                                                      "non_active": int(np.sum(a != STATUS_ACTIVE))}
    return {"cluster": cluster.pk, "cluster_name": cluster.name, "counts": counts, "status_hash": h.hexdigest()}


def record_inventory_state(run: SimulationRun, state: dict) -> None:
    SimulationRun.objects.filter(pk=run.pk).update(inventory_state=state)
    run.inventory_state = state


def succeed_run(run: SimulationRun, summary: dict, arrays: dict) -> None:
    """Store the results, each array in the dtype its kind declares, and mark the run succeeded (one
    transaction)."""
    dtypes = registry.get(run.kind).arrays
    with transaction.atomic():
        RunArray.objects.filter(run=run).delete()
        RunArray.objects.bulk_create([RunArray.pack(run, name, a, dtypes.get(name))
                                      for name, a in arrays.items() if a is not None])
        run.summary = json.loads(json.dumps(summary, default=_json_default))
        _finish(run, RunStatus.SUCCEEDED, extra=["summary"])


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def fail_run(run: SimulationRun, error: str) -> None:
    with transaction.atomic():
        run.error = error
        _finish(run, RunStatus.FAILED, extra=["error"])


def cancelled_run(run: SimulationRun) -> None:
    with transaction.atomic():
        _finish(run, RunStatus.CANCELLED)


# ------------------------------------------------------------------------------------------------------ sweeps
def fan_out_sweep(parent: SimulationRun) -> list[SimulationRun]:
    """One queued child run per combination of the sweep's ranges; after the commit they go out as a Celery chord
    (children on any worker) whose callback, :func:`finish_sweep`, merges their summaries."""
    p = parent.params
    return _fan_out(parent, [(p["kind"], {**p["params"], **combo}, False) for combo in combinations(p["sweep"])])


def fan_out(parent: SimulationRun, children: list[dict]) -> list[SimulationRun]:
    """The child runs of a run whose kind fans out (``Kind.fan_out``: ``children`` are their validated
    parameters, of the parent's kind), sent and merged as a sweep's are: a chord, then :func:`finish_sweep`."""
    return _fan_out(parent, [(parent.kind, params, True) for params in children])


def _fan_out(parent: SimulationRun, children: list[tuple[str, dict, bool]]) -> list[SimulationRun]:
    from celery import chord, signature
    with transaction.atomic():
        children = [create_run(kind, params, parent.cluster, scenario=None, parent=parent, enqueue=False,
                               user=parent.created_by, validated=validated) for kind, params, validated in children]
        sigs = [signature(EXECUTE_RUN_TASK, args=(c.pk,), immutable=True).set(task_id=c.celery_task_id)
                for c in children]
        callback = signature(FINISH_SWEEP_TASK, args=(parent.pk,), immutable=True)
        transaction.on_commit(lambda: chord(sigs)(callback))
    return children


def finish_sweep(parent_id: int) -> SimulationRun | None:
    """Merge the children's summaries into the sweep's summary and end it: cancelled if cancellation was asked,
    succeeded if any child succeeded, else failed. Does nothing while a child is still active or once ended."""
    with transaction.atomic():
        parent = SimulationRun.objects.select_for_update().filter(pk=parent_id).first()
        if parent is None or parent.finished:
            return parent
        children = list(parent.children.order_by("id").values("id", "params", "status", "worker", "summary", "error"))
        if any(c["status"] in ACTIVE for c in children):
            return parent
        if parent.kind == SWEEP:
            status = _merge_sweep(parent, children)
        else:
            status = _merge_fan_out(parent, children)
        _finish(parent, status, extra=["summary", "error"])
    return parent


def _merge_sweep(parent: SimulationRun, children: list[dict]) -> str:
    """A sweep succeeds when any child did: its summary ranks those that did. A merge that fails (the base kind is
    not registered in this process, say) fails this sweep with the reason, and never the sweeper's other work."""
    try:
        parent.summary = merge_sweep(parent.params, children)
    except Exception as e:  # noqa: BLE001 - the error text goes on the run
        log.exception("run %s: merging its children failed", parent.pk)
        parent.error = f"merging the child runs failed: {type(e).__name__}: {e}"
        return RunStatus.FAILED
    if parent.cancel_requested:
        return RunStatus.CANCELLED
    if parent.summary["succeeded"]:
        return RunStatus.SUCCEEDED
    parent.error = f"all {len(children)} child runs failed"
    return RunStatus.FAILED


def _merge_fan_out(parent: SimulationRun, children: list[dict]) -> str:
    """A fanned-out run is one result: it succeeds only when every child did, its summary their merge by its kind
    (``Kind.merge``); otherwise it fails naming the first child that did not succeed."""
    if parent.cancel_requested:
        return RunStatus.CANCELLED
    bad = [c for c in children if c["status"] != RunStatus.SUCCEEDED]
    if bad:
        parent.error = (f"{len(bad)} of {len(children)} child runs did not succeed; run {bad[0]['id']} "
                        f"{bad[0]['status']}: {bad[0]['error'] or 'no error text'}")
        return RunStatus.FAILED
    try:
        parent.summary = json.loads(json.dumps(registry.get(parent.kind).merge(parent.params, children),
                                               default=_json_default))
    except Exception as e:  # noqa: BLE001 - the error text goes on the run
        log.exception("run %s: merging its children failed", parent.pk)
        parent.error = f"merging the child runs failed: {type(e).__name__}: {e}"
        return RunStatus.FAILED
    return RunStatus.SUCCEEDED


# ----------------------------------------------------------------------------------------------------- sweeper
def sweep_stuck_runs(stale_after: float | None = None, max_attempts: int | None = None, now=None) -> list[dict]:
    """Runs whose worker went silent: a running run (not a sweep parent) with no heartbeat for ``stale_after``
    seconds (TWIN_RUNS_STALE_SECONDS) is requeued if it has been tried fewer than ``max_attempts`` times
    (TWIN_RUNS_MAX_ATTEMPTS), else failed with the reason "worker lost (no heartbeat since ...)". Sweeps whose
    children all ended are closed. Returns what it did, one dict per run."""
    stale_after = setting("TWIN_RUNS_STALE_SECONDS") if stale_after is None else stale_after
    max_attempts = setting("TWIN_RUNS_MAX_ATTEMPTS") if max_attempts is None else max_attempts
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after)
    done = []
    stuck = (SimulationRun.objects.filter(status=RunStatus.RUNNING, heartbeat_at__lt=cutoff)
             .exclude(kind=SWEEP).only("id", "kind", "params", "parent_id"))
    for run_id in [r.pk for r in stuck if not is_parent(r)]:
        with transaction.atomic():
            run = SimulationRun.objects.select_for_update().get(pk=run_id)
            if run.status != RunStatus.RUNNING or run.heartbeat_at is None or run.heartbeat_at >= cutoff:
                continue
            reason = (f"worker lost (no heartbeat since {run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC from "
                      f"{run.worker or 'unknown worker'})")
            run.notes = _note(run.notes, reason)
            if run.cancel_requested:
                _finish(run, RunStatus.CANCELLED, now, extra=["notes"])
                outcome = "cancelled"
            elif run.attempts < max_attempts:
                run.status, run.celery_task_id, run.worker, run.heartbeat_at = RunStatus.QUEUED, str(uuid.uuid4()), "", None
                run.notes = _note(run.notes, f"requeued (attempt {run.attempts + 1} of {max_attempts})")
                run.save(update_fields=["status", "celery_task_id", "worker", "heartbeat_at", "notes"])
                # A sweep child goes out alone: its chord waits for the lost message, so the sweeper (below)
                # closes the sweep once every child ended.
                transaction.on_commit(lambda r=run: _enqueue(r.pk, r.celery_task_id))
                outcome = "requeued"
            else:
                run.error = f"{reason}; tried {run.attempts} times"
                _finish(run, RunStatus.FAILED, now, extra=["notes", "error"])
                outcome = "failed"
        log.warning("run %s: %s: %s", run_id, reason, outcome)
        done.append({"run": run_id, "outcome": outcome, "reason": reason})
    parents = (SimulationRun.objects.filter(status=RunStatus.RUNNING, started_at__lt=cutoff, children__isnull=False)
               .distinct())
    for parent_id in list(parents.exclude(children__status__in=ACTIVE).values_list("id", flat=True)):
        parent = finish_sweep(parent_id)
        if parent is not None and parent.status in FINISHED:
            done.append({"run": parent_id, "outcome": f"sweep closed ({parent.status})", "reason": "children ended"})
    return done


def requeue_lost_runs(grace: float | None = None, now=None) -> list[dict]:
    """Queued runs whose message the broker lost (Redis restarted or flushed): a queued run older than ``grace``
    seconds (TWIN_RUNS_REQUEUE_GRACE_SECONDS) whose task id is neither in the queue nor unacknowledged
    (:func:`twin.runs.broker.held`) is sent again under a new task id, so that a message that was only in flight
    meanwhile is refused as stale by :func:`start_run` and the run still runs once. Nothing is sent when the
    broker cannot be read. The database is the source of truth for what must run."""
    from twin.runs import broker
    grace = setting("TWIN_RUNS_REQUEUE_GRACE_SECONDS") if grace is None else grace
    cutoff = (now or timezone.now()) - timedelta(seconds=grace)
    queued = dict(SimulationRun.objects.filter(status=RunStatus.QUEUED, cancel_requested=False,
                                               created_at__lt=cutoff).values_list("id", "celery_task_id"))
    if not queued:
        return []
    held = broker.held(list(queued.values()))
    if held is None:
        return []
    done = []
    for run_id, task_id in queued.items():
        if task_id in held:
            continue
        with transaction.atomic():
            run = SimulationRun.objects.select_for_update().filter(pk=run_id).first()
            if run is None or run.status != RunStatus.QUEUED or run.celery_task_id != task_id:
                continue
            reason = "its message is no longer in the broker"
            run.celery_task_id = str(uuid.uuid4())
            run.notes = _note(run.notes, f"re-sent: {reason}")
            run.save(update_fields=["celery_task_id", "notes"])
            transaction.on_commit(lambda r=run: _enqueue(r.pk, r.celery_task_id))
        log.warning("run %s: %s: re-sent", run_id, reason)
        done.append({"run": run_id, "outcome": "re-sent", "reason": reason})
    return done


# ---------------------------------------------------------------------------------------------------- schedules
def save_schedule(*, scenario: Scenario, name: str, crontab: dict | None = None, interval: dict | None = None,
                  enabled: bool = True, instance=None, user=None):
    """Create or update the django-celery-beat PeriodicTask that starts ``scenario`` on a crontab
    (``{"minute", "hour", "day_of_week", "day_of_month", "month_of_year"}``, the missing fields at their default)
    or an interval (``{"every": 6, "period": "hours"}``), validated first (:mod:`twin.runs.schedules`: a DRF
    ValidationError ``{"crontab": {field: [...]}}``). A crontab is the schedule's own row, edited in place: no
    other schedule shares it, so editing one never moves another. A new schedule belongs to ``user``
    (:class:`twin.runs.models.ScheduleOwner`; None: the system's), and the runs it starts are that user's."""
    from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask
    if (crontab is None) == (interval is None):
        raise serializers.ValidationError({"crontab": ["give exactly one of crontab and interval"]})
    key, check = ("crontab", schedules.validated_crontab) if crontab is not None else \
        ("interval", lambda d: schedules.validated_interval(d["every"], d["period"]))
    try:
        fields = check(crontab if crontab is not None else interval)
    except ParamError as e:
        raise serializers.ValidationError({key: e.errors}) from None
    with transaction.atomic():
        task = instance or PeriodicTask(task=SCHEDULE_TASK)
        old_crontab = task.crontab if task.pk else None
        task.name, task.enabled = name, enabled
        task.kwargs = json.dumps({"scenario_id": scenario.pk})
        task.crontab = task.interval = None
        if crontab is not None:
            own = old_crontab is not None and not PeriodicTask.objects.filter(crontab=old_crontab).exclude(
                pk=task.pk).exists()
            row = old_crontab if own else CrontabSchedule()
            for k, v in fields.items():
                setattr(row, k, v)
            row.save()
            task.crontab = row
        else:
            task.interval = (IntervalSchedule.objects.filter(**fields).order_by("id").first()
                             or IntervalSchedule.objects.create(**fields))
        created = task.pk is None
        task.save()
        if created:
            ScheduleOwner.objects.create(task=task, user=user)
        if old_crontab is not None and task.crontab != old_crontab and not old_crontab.periodictask_set.exists():
            old_crontab.delete()
    return task


def delete_schedule(task) -> None:
    with transaction.atomic():
        task.delete()


def ensure_health_schedules(hour: int = 3, minute: int = 0) -> list:
    """A ``fabric-health-<cluster>`` scenario and a nightly schedule for it, per cluster (idempotent)."""
    from django_celery_beat.models import PeriodicTask

    from twin.inventory.models import Cluster
    made = []
    for cluster in Cluster.objects.all():
        with transaction.atomic():
            scenario, _ = Scenario.objects.get_or_create(
                name=f"fabric-health-{cluster.name}",
                defaults={"kind": "fabric_health", "cluster": cluster,
                          "params": validate_params("fabric_health", {}, cluster),
                          "description": "Nightly fabric health: AllGather over every usable GPU."})
            name = f"nightly fabric health {cluster.name}"
            existing = PeriodicTask.objects.filter(name=name).first()
            if existing is None:
                existing = save_schedule(scenario=scenario, name=name,
                                         crontab={"minute": minute, "hour": hour, "day_of_week": "*",
                                                  "day_of_month": "*", "month_of_year": "*"})
            made.append(existing)
    return made
