"""Choices of the runs app."""
from django.db import models


class RunStatus(models.TextChoices):
    """Life of a run: queued -> running -> succeeded | failed | cancelled (a lost worker's run may go back to
    queued once, see :func:`twin.runs.actions.sweep_stuck_runs`)."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)


class RunKind(models.TextChoices):
    """What a run simulates (:mod:`twin.runs.kinds`)."""

    COLLECTIVE = "collective", "Collective (nccl-tests style)"
    FABRIC_HEALTH = "fabric_health", "Fabric health (large AllGather under the current inventory)"
    SWEEP = "sweep", "Sweep (one child run per parameter combination)"
    FIGURE = "figure", "Figure (the published AllGather result: normalized busbw against job size)"
