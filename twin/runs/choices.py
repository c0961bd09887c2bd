"""Choices of the runs app. Run kinds are not choices: they are registered objects (:mod:`twin.runs.registry`)."""
from django.db import models

from twin.live.status import RUN_STATUSES

# Life of a run: queued -> running -> succeeded | failed | cancelled (a lost worker's run may go back to queued
# once, see :func:`twin.runs.actions.sweep_stuck_runs`). The statuses are declared once, in the live layer below
# this app (twin/live/status.py: the frames' status byte reads the same list).
RunStatus = models.TextChoices("RunStatus", [(value.upper(), (value, label)) for value, label in RUN_STATUSES])


FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


class JobState(models.TextChoices):
    """Life of a training job in the twin (:class:`twin.runs.models.Job`): queued (its run waits for a worker) ->
    running (placed: it holds its GPUs; its step simulated, then its results recorded, until it is released) ->
    finished (released: its GPUs free again; a what-if, once its step is simulated: it never held any) | failed
    (refused or unplaceable: the error says why). Only running jobs that are not what-ifs hold GPUs
    (:func:`twin.runs.job_actions.holding`)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    FINISHED = "finished", "Finished"
    FAILED = "failed", "Failed"
