"""``python manage.py check_cluster <name>``: verify a built cluster; exit 1 and list violations when unsound."""
import time

from django.core.management.base import BaseCommand, CommandError

from twin.inventory.checks import check_cluster
from twin.inventory.models import Cluster


class Command(BaseCommand):
    help = ("Verify a built cluster: GPUs reach NICs and switch ports, no port used twice or beyond its model, "
            "link speeds match both ends, per-switch and per-tier counts match the spec. Exits 1 on any violation.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="cluster name (e.g. meta-roce-24k)")

    def handle(self, *args, name, **options):
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            known = ", ".join(Cluster.objects.values_list("name", flat=True)) or "none built"
            raise CommandError(f"no cluster named {name!r} (clusters: {known})")
        start = time.perf_counter()
        violations = check_cluster(cluster)
        for v in violations:
            self.stdout.write(str(v))
        seconds = time.perf_counter() - start
        if violations:
            raise CommandError(f"{name}: {len(violations)} violation(s) ({seconds:.1f} s)", returncode=1)
        self.stdout.write(self.style.SUCCESS(f"{name}: sound, no violations ({seconds:.1f} s)"))
