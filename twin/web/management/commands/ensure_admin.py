"""Make sure someone can log in to a fresh twin: when no superuser exists, create ``admin`` with the password in
TWIN_ADMIN_PASSWORD, else a random one written to var/admin-password (readable by the owner only, never in the
repo). ``scripts/run`` calls it on every start; it changes nothing once a superuser exists."""
import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from twin import env

PASSWORD_FILE = env.VAR_DIR / "admin-password"


class Command(BaseCommand):
    help = "Create the 'admin' superuser on a twin that has none (password: TWIN_ADMIN_PASSWORD or var/admin-password)."

    def handle(self, *args, **options):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return
        password = os.environ.get("TWIN_ADMIN_PASSWORD")
        where = "TWIN_ADMIN_PASSWORD"
        if not password:
            password = secrets.token_urlsafe(12)
            PASSWORD_FILE.parent.mkdir(parents=True, exist_ok=True)
            env.private_file(PASSWORD_FILE).write_text(password + "\n")
            where = str(PASSWORD_FILE)
        User.objects.create_superuser("admin", password=password)
        self.stdout.write(f"created superuser 'admin' (password in {where})")
