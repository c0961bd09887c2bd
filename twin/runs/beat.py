"""Celery beat's scheduler (``CELERY_BEAT_SCHEDULER``): django-celery-beat's ``DatabaseScheduler`` that

- skips a schedule row Celery cannot read (a crontab written before the API checked them, or by hand in the
  admin or the database): the row is disabled with a log line naming it, where the stock scheduler crashes beat
  on it at every start;
- runs the runs sweeper in beat's own process every TWIN_RUNS_SWEEP_SECONDS (:func:`sweep`): a lost worker's
  run is requeued or failed, and a queued run whose message the broker lost is sent again, with no worker alive
  to run a sweeper task (web, worker and beat may be separate processes), the temporary files of runs no
  longer running are removed (on beat's machine), and a NetBox transfer whose worker died is failed.
"""
from __future__ import annotations

import logging
import time

from django.db import close_old_connections
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import DatabaseScheduler

from twin.inventory.netbox.transfers import sweep_lost_transfers
from twin.runs import actions, tempfiles
from twin.runs.constants import setting

log = logging.getLogger("twin.runs")


def sweep(stale_after: float | None = None, max_attempts: int | None = None) -> list[dict]:
    """One pass of the sweeper: lost workers' runs, then queued runs the broker lost, then the temporary files of
    runs no longer running (:func:`twin.runs.tempfiles.sweep_temp_dirs`), then NetBox transfers whose worker died
    (:func:`twin.inventory.netbox.transfers.sweep_lost_transfers`) (also ``manage.py sweep_runs``). Each dict says
    what it acted on (``run`` or ``netbox_transfer``: its id), its ``outcome`` and ``reason``."""
    stale_after = setting("TWIN_RUNS_STALE_SECONDS") if stale_after is None else stale_after
    return (actions.sweep_stuck_runs(stale_after=stale_after, max_attempts=max_attempts) + actions.requeue_lost_runs()
            + tempfiles.sweep_temp_dirs() + sweep_lost_transfers(stale_after))


class Scheduler(DatabaseScheduler):
    _next_sweep = 0.0

    def all_as_schedule(self):
        schedule = {}
        for model in self.enabled_models():
            try:
                model.schedule                              # Celery parses the crontab here
                schedule[model.name] = self.Entry(model, app=self.app)
            except Exception as e:  # noqa: BLE001 - any row Celery cannot read is skipped, not fatal
                log.error("schedule %r (id %s) disabled: Celery cannot read it: %s: %s",
                          model.name, model.pk, type(e).__name__, e)
                PeriodicTask.objects.filter(pk=model.pk).update(enabled=False)
        return schedule

    def tick(self, *args, **kwargs):
        delay = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now >= self._next_sweep:
            period = setting("TWIN_RUNS_SWEEP_SECONDS")
            self._next_sweep = now + period
            try:
                close_old_connections()
                sweep()                                     # each run it acts on is logged by the action
            except Exception:  # noqa: BLE001 - a failed pass (database or broker away) is retried next period
                log.exception("sweeper failed; next pass in %s s", period)
        return min(delay, max(0.1, self._next_sweep - time.monotonic()))
