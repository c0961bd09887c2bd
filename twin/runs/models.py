"""Scenarios (saved parameters), simulation runs (one execution, its status and results), run arrays (large
results stored compactly: zlib-compressed numpy bytes in the dtype their kind declares), schedules' owners and
calibration profiles (named sets of parameter values per cluster that a run may name, :mod:`twin.runs.calibration`).

Runs, scenarios, schedules and calibration profiles belong to their creator (``created_by``, :class:`ScheduleOwner`): only the owner, or a
user holding the model's "manage any" permission declared here, may change them (:mod:`twin.runs.ownership`).

``kind`` is a plain string validated against the registry of kinds (:mod:`twin.runs.registry`) by the API, not a
database choice: a new kind needs no migration."""
from __future__ import annotations

import zlib

import numpy as np
from django.conf import settings
from django.db import models
from django.utils import timezone

from twin.runs.choices import JobState, RunStatus
from twin.runs.constants import setting
from twin.runs.registry import is_parent


class Scenario(models.Model):
    """A named, saved set of parameters of one simulation kind on one cluster. Runs made from it form its history
    (``GET /api/runs/scenarios/<id>/trend/``); schedules start it periodically."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    kind = models.CharField(max_length=32, help_text="a registered run kind (twin.runs.registry)")
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="scenarios")
    params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["name"]
        permissions = [("manage_any_scenario", "Can edit or delete any user's scenarios")]

    def __str__(self):
        return self.name


class SimulationRun(models.Model):
    """One execution of a simulation kind by a Celery worker: status, progress, timings, the worker that ran it
    and its heartbeat, the error text, the summary (JSON) and the inventory state it ran on. Large arrays are
    :class:`RunArray` rows."""

    kind = models.CharField(max_length=32, db_index=True, help_text="a registered run kind (twin.runs.registry)")
    params = models.JSONField(default=dict, blank=True)
    cluster = models.ForeignKey("inventory.Cluster", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="runs",
                                help_text="the cluster it ran on; null only for a run that builds or deletes a "
                                          "cluster (twin.runs.clusters): until its build succeeds, or once deleted")
    scenario = models.ForeignKey(Scenario, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children",
                               help_text="the sweep this run is one combination of")
    schedule = models.ForeignKey("django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="twin_runs", help_text="the schedule that started it (its notes keep "
                                                                     "the schedule's name once it is deleted)")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True)
    progress = models.FloatField(default=0.0, help_text="percent, 0-100")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    error = models.TextField(blank=True)
    notes = models.TextField(blank=True, help_text="what happened on the way: lost workers, requeues")
    summary = models.JSONField(null=True, blank=True)
    inventory_state = models.JSONField(null=True, blank=True,
                                       help_text="cluster id, non-active item counts and a hash of the statuses")
    celery_task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=255, blank=True, help_text="hostname of the worker running it")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="times a worker started it")
    cancel_requested = models.BooleanField(default=False)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="runs_status_heartbeat")]
        permissions = [("manage_any_run", "Can cancel or delete any user's runs")]

    def __str__(self):
        return f"run {self.pk} ({self.kind}, {self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)

    def stalled(self, now=None) -> str:
        """Why this run looks stalled, or "": a running run (not a parent, a sweep or a fanned-out run, whose
        children work) whose worker has sent no heartbeat for TWIN_RUNS_STALE_SECONDS. Derived when read, so every
        reader (API, runs list, run page) shows it even while no worker and no sweeper is alive."""
        if self.status != RunStatus.RUNNING or is_parent(self):
            return ""
        stale = setting("TWIN_RUNS_STALE_SECONDS")
        age = ((now or timezone.now()) - self.heartbeat_at).total_seconds() if self.heartbeat_at else None
        if age is not None and age < stale:
            return ""
        since = f"for {age:.0f} s" if age is not None else "since it started"
        return f"no heartbeat from {self.worker or 'its worker'} {since} (TWIN_RUNS_STALE_SECONDS is {stale})"


class CalibrationProfile(models.Model):
    """A named set of values of the engine's numeric parameters on one cluster (e.g. ``gemm_efficiency`` fitted
    to measurements, docs/calibration.md): a run that names it (its ``calibration`` parameter) takes these values
    for the parameters its kind declares, unless it gives them itself (:mod:`twin.runs.calibration`). ``values``
    are checked by each parameter's own declaration when saved through the API (:func:`twin.runs.calibration.
    checked_values`); ``intervals`` (name -> [low, high], the fit's 95 % interval), ``summary`` (the fit's
    before/after errors), ``holdout`` (the fit's held-out error: what the values are worth on measurements they were
    not fitted to) and ``refused`` (the parameters the fit would not apply, the data cannot determine them, each
    with the measurement that would) are optional."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="calibrations")
    name = models.SlugField(max_length=100, help_text="unique per cluster: letters, digits, - and _")
    values = models.JSONField(default=dict, blank=True, help_text="parameter name -> number")
    intervals = models.JSONField(default=dict, blank=True, help_text="parameter name -> [low, high] (optional)")
    summary = models.JSONField(default=dict, blank=True, help_text="the fit's before/after errors (optional)")
    holdout = models.JSONField(default=dict, blank=True, help_text="the fit's held-out error: method, folds, count, "
                                                                   "median_abs_error (optional)")
    refused = models.JSONField(default=list, blank=True, help_text="parameters the fit refused to apply: "
                                                                   "[{name, reason, would}] (optional)")
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="runs_calibration_unique_name")]
        permissions = [("manage_any_calibration", "Can edit or delete any user's calibration profiles")]

    def __str__(self):
        return self.name


class ScheduleOwner(models.Model):
    """Who owns a schedule (a django-celery-beat PeriodicTask, which has no owner of its own): its creator, whose
    runs the schedule starts. A schedule without a row (made in the admin, or by the system: nightly health) is
    nobody's: only "manage any" holders change it, and its runs have no owner."""

    task = models.OneToOneField("django_celery_beat.PeriodicTask", on_delete=models.CASCADE, primary_key=True,
                                related_name="twin_owner")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")

    class Meta:
        permissions = [("manage_any_schedule", "Can edit or delete any user's schedules")]

    def __str__(self):
        return f"schedule {self.task_id} of user {self.user_id}"


class RunArray(models.Model):
    """A large result array of a run (e.g. per-link utilization), stored as zlib-compressed raw bytes with its
    dtype and shape. The dtype is the one the run's kind declares for the array (``Kind.arrays``: float16 for a
    utilization, whose heatmap needs 3 significant digits); an undeclared float array is kept as float32, or as
    float64 when float32 would not hold its values (past its range, or tiny ones it would round to 0)."""

    run = models.ForeignKey(SimulationRun, on_delete=models.CASCADE, related_name="arrays")
    name = models.CharField(max_length=64)
    dtype = models.CharField(max_length=16)
    shape = models.JSONField()
    data = models.BinaryField()

    class Meta:
        ordering = ["run", "name"]
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="runs_array_unique_name")]

    def __str__(self):
        return f"{self.name} of run {self.run_id}"

    @classmethod
    def pack(cls, run, name: str, array: np.ndarray, dtype: str | None = None) -> "RunArray":
        """``array`` stored as ``dtype`` (declared by the kind); see the class for the default."""
        array = np.asarray(array)
        if dtype is not None:
            array = array.astype(dtype)
        elif array.dtype.kind == "f" and array.dtype.itemsize > 4:
            with np.errstate(over="ignore", under="ignore"):
                small = array.astype(np.float32)
            if _holds(small, array):
                array = small
        array = np.ascontiguousarray(array)
        return cls(run=run, name=name, dtype=array.dtype.str, shape=list(array.shape),
                   data=zlib.compress(array.tobytes(), 6))

    def unpack(self) -> np.ndarray:
        return np.frombuffer(zlib.decompress(bytes(self.data)), dtype=np.dtype(self.dtype)).reshape(self.shape)


def _holds(small: np.ndarray, array: np.ndarray) -> bool:
    """Whether ``small`` (float32) is ``array`` to float32's own precision: same infinities and NaNs, every finite
    value within a relative 2**-23."""
    finite = np.isfinite(array)
    if not np.array_equal(finite, np.isfinite(small)):
        return False
    a, b = array[finite], small[finite].astype(np.float64)
    return bool(np.all(np.abs(a - b) <= np.abs(a) * 2.0**-23))


class Job(models.Model):
    """A training job on a cluster: its model and 4D layout, the GPU of every rank, its state and its step model's
    results. Jobs are written by runs (``job`` and ``schedule`` kinds, :mod:`twin.capabilities.jobs.kinds`) through
    :mod:`twin.runs.job_actions`, never by the API.

    The placement is rank -> ``GPU.index`` (cluster order), stored as int32 differences between consecutive ranks,
    zlib-compressed (:meth:`pack_gpus`: 16,384 ranks are 64 KB raw, a few hundred bytes when ranks follow hosts);
    ``gpu_min`` and
    ``gpu_max`` bound the indexes so a GPU -> job lookup reads only the jobs whose range holds the GPU."""

    name = models.CharField(max_length=100)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="jobs")
    run = models.ForeignKey(SimulationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs",
                            help_text="the run that placed and simulated it")
    model = models.CharField(max_length=64, blank=True, help_text="model preset (e.g. llama3-405b) or 'custom'")
    params = models.JSONField(default=dict, blank=True, help_text="the job's layout and model parameters")
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED, db_index=True)
    n_gpus = models.PositiveIntegerField(default=0, help_text="ranks (GPUs) of the job")
    gpu_min = models.IntegerField(null=True, blank=True, help_text="lowest GPU index it holds")
    gpu_max = models.IntegerField(null=True, blank=True, help_text="highest GPU index it holds")
    placement = models.BinaryField(blank=True, default=b"", help_text="rank -> GPU index: zlib of int32 LE deltas")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    results = models.JSONField(null=True, blank=True, help_text="the step model's figures (sim.jobs.job result)")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    whatif = models.CharField(max_length=200, blank=True,
                              help_text="what this what-if varies (e.g. 'placement random'); empty: a real job. A "
                                        "what-if is simulated, never holds GPUs")
    whatif_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="whatifs",
                                  help_text="the job this what-if varies")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["cluster", "state"], name="runs_job_cluster_state")]
        permissions = [("manage_any_job", "Can release any user's jobs")]

    def __str__(self):
        return f"job {self.name} ({self.state})"

    @staticmethod
    def pack_gpus(gpus) -> bytes:
        """Rank -> GPU as int32 differences from the previous rank (the first from 0), zlib-compressed: ranks laid
        along hosts are runs of 1s (16,384 of them fit in a few hundred bytes)."""
        g = np.asarray(gpus, dtype=np.int64).ravel()
        return zlib.compress(np.diff(g, prepend=0).astype("<i4").tobytes(), 6)

    def set_gpus(self, gpus) -> None:
        g = np.asarray(gpus, dtype=np.int64).ravel()
        self.placement = self.pack_gpus(g)
        self.n_gpus = int(g.size)
        self.gpu_min, self.gpu_max = (int(g.min()), int(g.max())) if g.size else (None, None)

    @property
    def gpus(self) -> np.ndarray:
        """Rank -> GPU index (int32)."""
        raw = bytes(self.placement or b"")
        if not raw:
            return np.zeros(0, dtype=np.int32)
        return np.cumsum(np.frombuffer(zlib.decompress(raw), dtype="<i4"), dtype=np.int64).astype(np.int32)
