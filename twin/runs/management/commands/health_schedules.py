"""python manage.py health_schedules [--hour H]: a nightly fabric-health scenario and schedule per cluster."""
from django.core.management.base import BaseCommand

from twin.runs.actions import ensure_health_schedules


class Command(BaseCommand):
    help = "Create (if missing) a 'fabric-health-<cluster>' scenario and a nightly schedule for every cluster."

    def add_arguments(self, parser):
        parser.add_argument("--hour", type=int, default=3, help="hour of the day, UTC (default 3)")
        parser.add_argument("--minute", type=int, default=0)

    def handle(self, *args, hour, minute, **options):
        for task in ensure_health_schedules(hour=hour, minute=minute):
            self.stdout.write(f"{task.name}: {task.crontab}")
