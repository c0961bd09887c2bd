"""Simulation runs: scenarios, runs executed by Celery workers, sweeps across workers, schedules, results."""
