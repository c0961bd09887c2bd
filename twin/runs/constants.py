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

# The model permission that starts runs; cancelling a run, releasing a job and asking what-ifs take it too.
START_RUNS = "runs.add_simulationrun"

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
    # A run's cost (its kind's Kind.cost) is named amounts of work, each in a unit of twin.runs.limits.UNITS with a
    # cap per run and a cap per sweep (the sum over its children):
    # flows routed and solved, summed over its simulated runs (collectives, storage, jobs, debug's step):
    "TWIN_RUNS_MAX_RUN_FLOWS": env_int("TWIN_RUNS_MAX_RUN_FLOWS", 50_000_000, minimum=1),
    "TWIN_RUNS_MAX_SWEEP_FLOWS": env_int("TWIN_RUNS_MAX_SWEEP_FLOWS", 200_000_000, minimum=1),
    # failures timelines (seeds x checkpoint intervals; per run: TWIN_FAILURES_MAX_TIMELINES, below):
    "TWIN_RUNS_MAX_SWEEP_TIMELINES": env_int("TWIN_RUNS_MAX_SWEEP_TIMELINES", 4800, minimum=1),
    # jobs a scheduler run places (its synthetic arrivals, or the jobs of its jobs file):
    "TWIN_RUNS_MAX_RUN_ARRIVALS": env_int("TWIN_RUNS_MAX_RUN_ARRIVALS", 100_000, minimum=1),
    "TWIN_RUNS_MAX_SWEEP_ARRIVALS": env_int("TWIN_RUNS_MAX_SWEEP_ARRIVALS", 400_000, minimum=1),
    # job sizes a start-up run models:
    "TWIN_RUNS_MAX_RUN_SCALES": env_int("TWIN_RUNS_MAX_RUN_SCALES", 100, minimum=1),
    "TWIN_RUNS_MAX_SWEEP_SCALES": env_int("TWIN_RUNS_MAX_SWEEP_SCALES", 10_000, minimum=1),
    # observations a validate run predicts (the corpus's, or one kind's, times 1 + the cross-validation's folds):
    "TWIN_RUNS_MAX_RUN_OBSERVATIONS": env_int("TWIN_RUNS_MAX_RUN_OBSERVATIONS", 100_000, minimum=1),
    "TWIN_RUNS_MAX_SWEEP_OBSERVATIONS": env_int("TWIN_RUNS_MAX_SWEEP_OBSERVATIONS", 400_000, minimum=1),
    # Every run's estimated seconds (its kind's Kind.estimate, of its longest task) must fit TWIN_RUNS_SOFT_TIME_LIMIT.
    # The estimates divide by these throughputs of one worker, measured by bench/bench_limits.py on the development
    # machine (2 shared cores, load 4 to 9) and rounded down; set them from its figures on your workers.
    # Flows routed and solved a second (measured 114,000 to 179,000):
    "TWIN_RUNS_FLOWS_PER_SECOND": env_int("TWIN_RUNS_FLOWS_PER_SECOND", 100_000, minimum=1),
    # GPU-days of failures timelines a second (measured 109,000 to 117,000 on demo-256, 221,000 to 323,000 at 16,384
    # GPUs):
    "TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND": env_int("TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND", 100_000, minimum=1),
    # Scheduler: arrivals squared a second (1,000 arrivals: measured 22,000 to 74,000; it errs long for long queues,
    # 4,000 arrivals measured 137,000):
    "TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND": env_int("TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND", 25_000, minimum=1),
    # Flight-recorder entries (ranks x entries) simulated, dumped and analyzed a second (4,096 ranks: 97,000):
    "TWIN_RUNS_DUMP_ENTRIES_PER_SECOND": env_int("TWIN_RUNS_DUMP_ENTRIES_PER_SECOND", 800_000, minimum=1),
    # Job sizes the start-up model evaluates a second (measured 10,600 to 13,000):
    "TWIN_RUNS_STARTUP_SCALES_PER_SECOND": env_int("TWIN_RUNS_STARTUP_SCALES_PER_SECOND", 10_000, minimum=1),
    # Validation observations predicted a second (not yet measured by bench/bench_limits.py: issue 39's budget, the
    # whole corpus of at least 150 observations within 2 minutes, is about 1.25 a second; rounded down):
    "TWIN_RUNS_VALIDATION_OBSERVATIONS_PER_SECOND": env_int("TWIN_RUNS_VALIDATION_OBSERVATIONS_PER_SECOND", 1,
                                                            minimum=1),
    # Inventory rows a cluster's build writes a second, and a delete removes (twin.runs.clusters: the estimates of the
    # Clusters page and the time limit's check, until this twin has measured its own cluster runs). bench/bench_build.py
    # measured, for meta-roce-24k and meta-ib-24k, 53,700 to 74,100 written and 106,700 to 176,800 deleted on SQLite,
    # 35,800 written and 333,000 deleted on PostgreSQL (2 shared cores); rounded down:
    "TWIN_RUNS_BUILD_ROWS_PER_SECOND": env_int("TWIN_RUNS_BUILD_ROWS_PER_SECOND", 35_000, minimum=1),
    "TWIN_RUNS_DELETE_ROWS_PER_SECOND": env_int("TWIN_RUNS_DELETE_ROWS_PER_SECOND", 100_000, minimum=1),
    # A cluster run's rows (written plus deleted: a rebuild of roadmap-600k is 2 x 7.5 million):
    "TWIN_RUNS_MAX_RUN_ROWS": env_int("TWIN_RUNS_MAX_RUN_ROWS", 20_000_000, minimum=1),
    # A failures run (twin.capabilities.failures.kinds): the job's wall-clock days, its timelines (seeds x checkpoint
    # intervals of a sweep), and the seeds one child of its fan-out simulates (a Monte Carlo of more fans out):
    "TWIN_FAILURES_MAX_DAYS": env_int("TWIN_FAILURES_MAX_DAYS", 365, minimum=1),
    "TWIN_FAILURES_MAX_TIMELINES": env_int("TWIN_FAILURES_MAX_TIMELINES", 1200, minimum=1),
    "TWIN_FAILURES_SEEDS_PER_CHILD": env_int("TWIN_FAILURES_SEEDS_PER_CHILD", 10, minimum=1),
    # Active (queued or running, not asked to stop) runs that do work (twin.runs.limits.check_active): a sweep counts
    # as its children, a fanned-out run as its chunks, another run once. Per user, and over all users:
    "TWIN_RUNS_MAX_ACTIVE_PER_USER": env_int("TWIN_RUNS_MAX_ACTIVE_PER_USER", 256, minimum=1),
    "TWIN_RUNS_MAX_ACTIVE": env_int("TWIN_RUNS_MAX_ACTIVE", 1024, minimum=1),
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
