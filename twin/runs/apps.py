from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Simulation runs executed by Celery workers: scenarios, runs, sweeps, schedules and their results."""

    name = "twin.runs"
    label = "runs"
    verbose_name = "Simulation runs"
