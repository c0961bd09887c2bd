"""Constants of the runs app (the timing knobs are settings, read through :func:`setting`)."""
from django.conf import settings

PROGRESS_DB_INTERVAL = 0.5      # seconds between two progress writes of a running run (heartbeat included)
HEARTBEAT_INTERVAL = 5.0        # seconds between two heartbeats of a running run while the engine computes
MAX_SWEEP_CHILDREN = 256        # combinations a sweep may fan out to
MAX_FIGURE_JOBS = 12            # job sizes a figure run may ask for
MAX_FIGURE_SEEDS = 16           # seeds per configuration of a figure run
TREND_LIMIT = 1000              # points a trend returns at most

DEFAULTS = {
    "TWIN_RUNS_STALE_SECONDS": 45,      # a running run without a heartbeat for this long lost its worker
    "TWIN_RUNS_MAX_ATTEMPTS": 2,        # a lost run is requeued until it has been tried this many times
    "TWIN_RUNS_SOFT_TIME_LIMIT": 50 * 60,
    "TWIN_RUNS_TIME_LIMIT": 55 * 60,
}


def setting(name: str):
    return getattr(settings, name, DEFAULTS[name])
