"""``python manage.py netbox_import --url URL --token T --site S --name NAME``: a twin cluster from a NetBox site
(docs/netbox.md)."""
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from twin.inventory.netbox.client import PARALLEL, NetBox, NetBoxError
from twin.inventory.netbox.importer import ImportRefused, import_site, planned_reads


class Command(BaseCommand):
    help = ("Build a twin cluster from a NetBox site's devices, interfaces and cables (tiers inferred from roles and "
            "cabling), or, if it exists, update its statuses from NetBox through the change log. One transaction: "
            "a refusal leaves nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="NetBox's base URL (http://host:port)")
        parser.add_argument("--token", required=True, help="a NetBox API token (v1 or v2 nbt_...)")
        parser.add_argument("--site", required=True, help="the NetBox site's slug")
        parser.add_argument("--name", required=True, help="the twin cluster's name")
        parser.add_argument("--parallel", type=int, default=PARALLEL,
                            help=f"requests in flight at once (default {PARALLEL})")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args, url, token, site, name, parallel, no_progress, **options):
        if parallel < 1:
            raise CommandError(f"--parallel: {parallel} is not a positive number of requests", returncode=2)
        bar = None
        try:
            nb = NetBox(url, token, parallel=parallel)
            nb.status()
            bar = tqdm(total=planned_reads(nb, site), unit=" objects", disable=no_progress, mininterval=0.5,
                       dynamic_ncols=True)

            def progress(what, n):
                bar.set_description(f"{site}: {what}", refresh=False)
                bar.update(n)

            result = import_site(nb, site, name, progress=progress)
        except NetBoxError as e:
            raise CommandError(f"{e.option or 'netbox'}: {e}", returncode=2 if e.option else 1) from None
        except ImportRefused as e:
            raise CommandError(f"import refused: {e}", returncode=2) from None
        finally:
            if bar is not None:
                bar.close()
        what = "built" if result.created else "updated"
        changed = ", ".join(f"{n:,} {k}" for k, n in result.statuses_changed.items()) or "none"
        self.stdout.write(self.style.SUCCESS(
            f"{name}: {what} from NetBox site {site}; statuses changed: {changed}; {result.seconds:.1f} s "
            f"({result.netbox_seconds:.1f} s waiting for NetBox)"))
