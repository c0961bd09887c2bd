"""python manage.py sweep_runs [--stale-after S] [--max-attempts N]: what beat's sweeper (twin.runs.beat) does, once."""
from django.core.management.base import BaseCommand

from twin.runs.beat import sweep


class Command(BaseCommand):
    help = ("Requeue or fail runs whose worker stopped sending heartbeats; close sweeps whose children ended; "
            "send again queued runs whose broker message is gone; remove temporary files of runs no longer running; "
            "fail NetBox transfers whose worker died.")

    def add_arguments(self, parser):
        parser.add_argument("--stale-after", type=float, default=None,
                            help="seconds without a heartbeat (default: TWIN_RUNS_STALE_SECONDS)")
        parser.add_argument("--max-attempts", type=int, default=None,
                            help="requeue while tried fewer times (default: TWIN_RUNS_MAX_ATTEMPTS)")

    def handle(self, *args, stale_after, max_attempts, **options):
        done = sweep(stale_after=stale_after, max_attempts=max_attempts)
        for d in done:
            what = f"NetBox transfer {d['netbox_transfer']}" if "netbox_transfer" in d else f"run {d['run']}"
            self.stdout.write(f"{what}: {d['outcome']}: {d['reason']}")
        self.stdout.write(f"{len(done)} swept")
