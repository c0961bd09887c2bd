"""Constants of the runs app (the timing knobs are settings, read through :func:`setting`)."""
import os

from django.conf import settings

PROGRESS_DB_INTERVAL = 0.5      # seconds between two progress writes of a running run (heartbeat included)
HEARTBEAT_INTERVAL = 5.0        # seconds between two heartbeats of a running run while the engine computes
MAX_SWEEP_CHILDREN = 256        # combinations a sweep may fan out to
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
    # Extra modules that register run kinds (twin.runs.registry), comma-separated in the environment.
    "TWIN_RUN_KIND_MODULES": tuple(m.strip() for m in os.environ.get("TWIN_RUN_KIND_MODULES", "").split(",")
                                   if m.strip()),
}


def setting(name: str):
    return getattr(settings, name, DEFAULTS[name])
