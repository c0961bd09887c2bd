"""``python manage.py netbox_export CLUSTER --url URL --token T``: write a twin cluster into NetBox (docs/netbox.md)."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from twin.inventory.models import Cluster
from twin.inventory.netbox.client import PARALLEL, NetBox, NetBoxError
from twin.inventory.netbox.export import export_cluster, planned_objects


class Command(BaseCommand):
    help = ("Write a cluster into NetBox over its REST API: site, locations, racks, device types, roles, devices, "
            "interfaces, cables, inventory items, statuses. Idempotent: a second run updates what changed.")

    def add_arguments(self, parser):
        parser.add_argument("cluster", help="the twin cluster's name")
        parser.add_argument("--url", required=True, help="NetBox's base URL (http://host:port)")
        parser.add_argument("--token", required=True, help="a NetBox API token with write access (v1 or v2 nbt_...)")
        parser.add_argument("--parallel", type=int, default=PARALLEL,
                            help=f"bulk requests in flight at once (default {PARALLEL})")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, cluster, url, token, parallel, no_progress, **options):
        if parallel < 1:
            raise CommandError(f"--parallel: {parallel} is not a positive number of requests", returncode=2)
        found = Cluster.objects.filter(name=cluster).first()
        if found is None:
            raise CommandError(f"cluster: {cluster!r} is not a cluster in the inventory", returncode=2)
        try:
            nb = NetBox(url, token, parallel=parallel)
            version = nb.status()["netbox-version"]
        except NetBoxError as e:
            raise CommandError(f"{e.option or 'netbox'}: {e}", returncode=2) from None
        bar = tqdm(total=planned_objects(found), unit=" objects", disable=no_progress, mininterval=0.5,
                   dynamic_ncols=True)

        def progress(what, n):
            bar.set_description(f"{cluster}: {what}", refresh=False)
            bar.update(n)

        try:
            result = export_cluster(found, nb, progress)
        except NetBoxError as e:
            raise CommandError(f"{e.option or 'netbox'}: {e}", returncode=2 if e.option else 1) from None
        finally:
            bar.close()
        made = ", ".join(f"{n:,} {k}" for k, n in result.created.items()) or "nothing"
        changed = ", ".join(f"{n:,} {k}" for k, n in result.updated.items()) or "nothing"
        self.stdout.write(self.style.SUCCESS(
            f"{cluster} -> NetBox {version} at {url}: created {made}; updated {changed}; "
            f"{result.seconds:.1f} s ({result.netbox_seconds:.1f} s waiting for NetBox, {result.requests} requests)"))
