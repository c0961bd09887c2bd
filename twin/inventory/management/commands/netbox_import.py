"""``python manage.py netbox_import --url URL --token T --site S --name NAME``: a twin cluster from a NetBox site
(docs/netbox.md)."""
from django.core.management.base import BaseCommand, CommandError

from twin.inventory.netbox.client import NetBox, NetBoxError
from twin.inventory.netbox.importer import ImportRefused, import_site


class Command(BaseCommand):
    help = ("Build a twin cluster from a NetBox site's devices, interfaces and cables (tiers inferred from roles and "
            "cabling), or, if it exists, update its statuses from NetBox through the change log. One transaction: "
            "a refusal leaves nothing.")

    def add_arguments(self, parser):
        parser.add_argument("--url", required=True, help="NetBox's base URL (http://host:port)")
        parser.add_argument("--token", required=True, help="a NetBox API token (v1 or v2 nbt_...)")
        parser.add_argument("--site", required=True, help="the NetBox site's slug")
        parser.add_argument("--name", required=True, help="the twin cluster's name")

    def handle(self, *args, url, token, site, name, **options):
        try:
            nb = NetBox(url, token)
            nb.status()
            result = import_site(nb, site, name)
        except NetBoxError as e:
            raise CommandError(f"{e.option or 'netbox'}: {e}", returncode=2 if e.option else 1) from None
        except ImportRefused as e:
            raise CommandError(f"import refused: {e}", returncode=2) from None
        what = "built" if result.created else "updated"
        changed = ", ".join(f"{n:,} {k}" for k, n in result.statuses_changed.items()) or "none"
        self.stdout.write(self.style.SUCCESS(
            f"{name}: {what} from NetBox site {site}; statuses changed: {changed}; {result.seconds:.1f} s "
            f"({result.netbox_seconds:.1f} s waiting for NetBox)"))
