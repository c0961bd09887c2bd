"""Constants of the runs app. The timing knobs and the limits are settings, read through :func:`setting`: a
Django setting of that name, else the environment variable of that name, else the default below."""
import os

from django.conf import settings

from twin.env import env_int

PROGRESS_DB_INTERVAL = 0.5      # seconds between two progress writes of a running run (heartbeat included)
HEARTBEAT_INTERVAL = 5.0        # seconds between two heartbeats of a running run while the engine computes
TREND_LIMIT = 1000              # points a trend returns at most

# Celery task names: actions send tasks by name, so the tasks module imports actions and not the reverse.
EXECUTE_RUN_TASK = "twin.runs.tasks.execute_run"
FINISH_SWEEP_TASK = "twin.runs.tasks.finish_sweep_task"
SCHEDULE_TASK = "twin.runs.tasks.run_scenario"

DEFAULTS = {
    "TWIN_RUNS_STALE_SECONDS": 45,      # a running run without a heartbeat for this long lost its worker
    "TWIN_RUNS_MAX_ATTEMPTS": 2,        # a lost run is requeued until it has been tried this many times
    "TWIN_RUNS_SOFT_TIME_LIMIT": 50 * 60,
    "TWIN_RUNS_TIME_LIMIT": 55 * 60,
    # The sweeper runs in beat's own process (twin.runs.beat), this often: no worker needed to see a lost one.
    "TWIN_RUNS_SWEEP_SECONDS": env_int("TWIN_RUNS_SWEEP_SECONDS", 15, minimum=1),
    # A queued run older than this whose message the broker no longer holds (Redis restarted, flushed) is sent again.
    "TWIN_RUNS_REQUEUE_GRACE_SECONDS": env_int("TWIN_RUNS_REQUEUE_GRACE_SECONDS", 60, minimum=1),
    # Limits on what one request may make the workers do (twin.runs.limits), each refused with a 400 naming it.
    # Seeds of one run: the engine's bound of its kind (the seeds parameter's maximum, e.g. 100 for collective,
    # sim.failures.params.MAX_FAILURE_SEEDS for failures) is the limit; this setting may only lower it (None: the
    # engine's):
    "TWIN_RUNS_MAX_SEEDS": env_int("TWIN_RUNS_MAX_SEEDS", None, minimum=1),
    # Combinations a sweep may fan out to:
    "TWIN_RUNS_MAX_SWEEP_CHILDREN": env_int("TWIN_RUNS_MAX_SWEEP_CHILDREN", 256, minimum=1),
    # A run's cost (its kind's Kind.cost): the flows it routes and solves, summed over its simulated runs:
    "TWIN_RUNS_MAX_RUN_FLOWS": env_int("TWIN_RUNS_MAX_RUN_FLOWS", 50_000_000, minimum=1),
    # A sweep's cost: the sum of its children's:
    "TWIN_RUNS_MAX_SWEEP_FLOWS": env_int("TWIN_RUNS_MAX_SWEEP_FLOWS", 200_000_000, minimum=1),
    # A failures run (twin.capabilities.failures.kinds): the job's wall-clock days, its timelines (seeds x checkpoint
    # intervals of a sweep), and the seeds one child of its fan-out simulates (a Monte Carlo of more fans out):
    "TWIN_FAILURES_MAX_DAYS": env_int("TWIN_FAILURES_MAX_DAYS", 365, minimum=1),
    "TWIN_FAILURES_MAX_TIMELINES": env_int("TWIN_FAILURES_MAX_TIMELINES", 1200, minimum=1),
    "TWIN_FAILURES_SEEDS_PER_CHILD": env_int("TWIN_FAILURES_SEEDS_PER_CHILD", 10, minimum=1),
    # Active (queued or running) runs one user may have; a sweep counts once, its children not:
    "TWIN_RUNS_MAX_ACTIVE_PER_USER": env_int("TWIN_RUNS_MAX_ACTIVE_PER_USER", 10, minimum=1),
    # Schedules: two starts of one schedule at least this far apart (a crontab by its closest two firings).
    "TWIN_SCHEDULE_MIN_INTERVAL_SECONDS": env_int("TWIN_SCHEDULE_MIN_INTERVAL_SECONDS", 300, minimum=1),
    # Where runs keep their files (twin/runs/files.py; twin/settings.py sets it from the environment):
    "TWIN_RUN_FILES_DIR": os.environ.get("TWIN_RUN_FILES_DIR") or "var/run-files",
    # Ranks of one debug rehearsal (twin/capabilities/debug/kinds.py; its dumps are one file per rank):
    "TWIN_DEBUG_MAX_RANKS": env_int("TWIN_DEBUG_MAX_RANKS", 32768, minimum=1),
    # Extra modules that register run kinds (twin.runs.registry), comma-separated in the environment.
    "TWIN_RUN_KIND_MODULES": tuple(m.strip() for m in os.environ.get("TWIN_RUN_KIND_MODULES", "").split(",")
                                   if m.strip()),
}


def setting(name: str):
    return getattr(settings, name, DEFAULTS[name])
