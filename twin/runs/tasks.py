"""Celery tasks of the runs app (auto-discovered by the one app in twin/celery.py).

``execute_run`` runs any run by id: it marks it running (worker hostname, heartbeat), reads the cluster from the
database, calls its kind's ``run`` (:mod:`twin.runs.registry`) with a :class:`Reporter`, stores the results and
ends the run succeeded, failed (with the error text) or cancelled: REST -> action -> task -> kind -> engine, the
engine's progress going back through the reporter to the database and the live publisher
(:mod:`twin.runs.publishing`). Actions send these tasks by name; this module imports them, not the reverse.

Late acks and reject-on-worker-lost (settings) put a killed worker's message back in the queue; a heartbeat thread
keeps ``heartbeat_at`` fresh while the engine computes, so the sweeper (:mod:`twin.runs.beat`, in beat's own
process) can tell a lost worker from a long computation.
"""
from __future__ import annotations

import logging
import threading
import time

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from sim.core.errors import ParamError

from twin.runs import actions, cancelling, publishing, registry
from twin.runs.calibration import KEY as CALIBRATION
from twin.runs.choices import RunStatus
from twin.runs.constants import HEARTBEAT_INTERVAL, PROGRESS_DB_INTERVAL, setting
from twin.runs.kinds import RunCancelled, RunRefused
from twin.runs.models import SimulationRun

log = logging.getLogger("twin.runs")


class Heartbeat(threading.Thread):
    """Writes ``heartbeat_at`` of a running run every HEARTBEAT_INTERVAL seconds until stopped."""

    def __init__(self, run_id: int):
        super().__init__(name=f"heartbeat-{run_id}", daemon=True)
        self.run_id, self.stop_event = run_id, threading.Event()

    def run(self):
        try:
            while not self.stop_event.wait(HEARTBEAT_INTERVAL):
                SimulationRun.objects.filter(pk=self.run_id, status=RunStatus.RUNNING).update(
                    heartbeat_at=timezone.now())
        except Exception:  # noqa: BLE001 - a missed heartbeat is the sweeper's business
            log.exception("run %s: heartbeat failed", self.run_id)
        finally:
            connection.close()

    def stop(self):
        self.stop_event.set()
        self.join(timeout=10)


class Reporter:
    """The progress callback handed to a kind, in the engine's terms (:mod:`sim.core.progress`):
    ``reporter(fraction, message="", *, force=False, **sections)`` (``sections``: live sections by name, any
    registered one, :func:`twin.live.frames.build_sections`; ``force``: past the publisher's throttle) with
    ``fraction`` the share of the work done (0..1; None: arrays only; the message is for the CLI's bar, a run does
    not keep it). The run's percentage is ``100 * fraction``, the number the CLI's bar shows for the same work.
    Writes progress and heartbeat at most every PROGRESS_DB_INTERVAL seconds, raises RunCancelled once cancellation
    was requested, and passes every report to the live publisher (which throttles itself)."""

    def __init__(self, run: SimulationRun):
        self.run = run
        self.percent, self.last = 0.0, 0.0

    def __call__(self, fraction=None, message="", *, force=False, **sections):
        if fraction is not None:
            self.percent = max(self.percent, min(100.0, 100.0 * float(fraction)))
        now = time.monotonic()
        if now - self.last >= PROGRESS_DB_INTERVAL:
            self.last = now
            rows = SimulationRun.objects.filter(pk=self.run.pk)
            rows.update(progress=self.percent, heartbeat_at=timezone.now())
            if self.run.parent_id is not None:     # a child's progress moves its parent's (sweep, fan-out)
                actions.sweep_progress(self.run.parent_id, force=False)
            if rows.values_list("cancel_requested", flat=True).first():
                raise RunCancelled()
        publishing.progress(self.run, self.percent, force=force, **sections)


class SideReporter:
    """The reporter of a run that works inside one database transaction (``Kind.lifecycle``: a cluster's build or
    delete), where the progress a :class:`Reporter` writes would stay invisible until the end and its live frames
    would wait for the commit: ``reporter(fraction, message="", **sections)`` only keeps the share done (and raises
    :class:`RunCancelled` once a cancellation was seen), while a thread of its own, on its own connection, every
    PROGRESS_DB_INTERVAL, publishes it live, reads whether the run was cancelled (:mod:`twin.runs.cancelling`, then
    its row), and writes its progress and heartbeat. On SQLite, which takes one writer at a time, the run's row keeps
    its progress and heartbeat until the transaction ends (the live frames carry them meanwhile)."""

    def __init__(self, run: SimulationRun):
        self.record, self.percent, self.sent = run, 0.0, -1.0
        self.cancelled, self.stopping = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"progress-{run.pk}", daemon=True)

    def __call__(self, fraction=None, message="", *, force=False, **sections):
        if fraction is not None:
            self.percent = max(self.percent, min(100.0, 100.0 * float(fraction)))
        if self.cancelled.is_set():
            raise RunCancelled()

    def start(self):
        self.thread.start()

    def stop(self):
        """Stop the thread (before the work's transaction writes the run's end)."""
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def _loop(self):
        writes = connection.vendor != "sqlite"
        rows = SimulationRun.objects.filter(pk=self.record.pk)
        try:
            while not self.stopping.wait(PROGRESS_DB_INTERVAL):
                try:
                    if self.percent != self.sent:
                        self.sent = self.percent
                        publishing.progress(self.record, self.sent)
                    if cancelling.asked(self.record.pk) or rows.filter(cancel_requested=True).exists():
                        self.cancelled.set()
                    if writes:
                        rows.filter(status=RunStatus.RUNNING).update(progress=self.sent, heartbeat_at=timezone.now())
                except Exception:  # noqa: BLE001 - the next beat tries again; the sweeper judges a silent run
                    log.exception("run %s: progress not reported", self.record.pk)
        finally:
            connection.close()


def run_in_one_transaction(run: SimulationRun, kind) -> None:
    """Run a ``Kind.lifecycle`` kind (``run(None, params, reporter, run=run)``) and end its run in one transaction:
    a failure, a refusal (:class:`RunRefused`, its message the run's error) or a cancellation rolls its work back.
    Its ``run.cluster``, set by the kind (the cluster a build made), is saved with the run's end."""
    reporter = SideReporter(run)
    reporter.start()
    try:
        with transaction.atomic():
            summary, arrays = kind.run(None, run.params, reporter, run=run)
            reporter.stop()
            SimulationRun.objects.filter(pk=run.pk).update(cluster=run.cluster)
            actions.succeed_run(run, summary, arrays)
        return
    except RunCancelled:
        outcome = None
    except RunRefused as e:
        outcome = str(e)
    except SoftTimeLimitExceeded:
        outcome = f"time limit: stopped after {setting('TWIN_RUNS_SOFT_TIME_LIMIT')} s"
    except Exception as e:  # noqa: BLE001 - the error text goes on the run
        log.exception("run %s failed", run.pk)
        outcome = f"{type(e).__name__}: {e}"
    finally:
        reporter.stop()
    run.cluster = None                         # nothing was kept
    if outcome is None:
        actions.cancelled_run(run)
    else:
        actions.fail_run(run, outcome)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=setting("TWIN_RUNS_SOFT_TIME_LIMIT"), time_limit=setting("TWIN_RUNS_TIME_LIMIT"))
def execute_run(self, run_id: int):
    """Run the SimulationRun ``run_id`` (any kind); never raises, so a sweep's chord always reaches its callback."""
    close_old_connections()
    run = actions.start_run(run_id, task_id=self.request.id, worker=self.request.hostname or "")
    if run is None:
        return run_id
    try:
        kind = registry.get(run.kind)
    except ValueError as e:                    # a kind this worker does not know (TWIN_RUN_KIND_MODULES)
        actions.fail_run(run, f"this worker ({run.worker}) has no run kind {run.kind!r}: {e}")
        return run_id
    if kind.run is None:                       # a sweep: its children do the work
        actions.fan_out_sweep(run)
        return run_id
    if run.parent_id is None and (children := kind.children_params(run.params)):
        actions.fan_out(run, children)         # e.g. a failures Monte Carlo: chunks of seeds over the workers
        return run_id
    if kind.lifecycle:                         # a cluster's build or delete: the run writes the inventory itself
        run_in_one_transaction(run, kind)
        return run_id
    heartbeat = Heartbeat(run.pk)
    heartbeat.start()
    try:
        from twin.inventory.adapter import layout_from_db
        layout = layout_from_db(run.cluster)
        actions.record_inventory_state(run, actions.inventory_state(run.cluster, layout))
        extra = {"run": run} if kind.wants_run else {}
        params = {k: v for k, v in run.params.items() if k != CALIBRATION}    # applied already: the engine's own
        summary, arrays = kind.run(layout, params, Reporter(run), **extra)
        heartbeat.stop()
        actions.succeed_run(run, summary, arrays)
    except RunCancelled:
        heartbeat.stop()
        actions.cancelled_run(run)
    except SoftTimeLimitExceeded:
        heartbeat.stop()
        actions.fail_run(run, f"time limit: stopped after {setting('TWIN_RUNS_SOFT_TIME_LIMIT')} s")
    except Exception as e:  # noqa: BLE001 - the error text goes on the run
        heartbeat.stop()
        log.exception("run %s failed", run_id)
        actions.fail_run(run, f"{type(e).__name__}: {e}")
    finally:
        heartbeat.stop()
    return run_id


@shared_task(acks_late=True)
def finish_sweep_task(parent_id: int):
    """Chord callback of a sweep: merge the children's summaries into the parent's."""
    actions.finish_sweep(parent_id)
    return parent_id


@shared_task(bind=True)
def run_scenario(self, scenario_id: int):
    """Start a run of a saved scenario (what a django-celery-beat schedule calls), as the schedule's owner: beat
    names the schedule in the message's ``periodic_task_name`` header; a schedule with no owner (the system's, or
    one made in the admin) starts runs with no owner. The run records the schedule that made it."""
    from django_celery_beat.models import PeriodicTask

    from twin.runs.models import Scenario
    from twin.runs.ownership import schedule_owner
    scenario = Scenario.objects.select_related("cluster").filter(pk=scenario_id).first()
    if scenario is None:
        log.warning("schedule names scenario %s, which no longer exists", scenario_id)
        return None
    name = (self.request.headers or {}).get("periodic_task_name") or getattr(self.request, "periodic_task_name", None)
    task = PeriodicTask.objects.filter(name=name, task=self.name).first() if name else None
    user = schedule_owner(task) if task is not None else None
    try:
        return actions.create_run_from_scenario(scenario, user=user, schedule=task).pk
    except (ValidationError, ParamError) as e:     # a limit reached, or parameters today's declaration refuses
        detail = e.detail if isinstance(e, ValidationError) else e.errors
        log.warning("schedule %r: scenario %s not started: %s", name, scenario_id, detail)
        return None
