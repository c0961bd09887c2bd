"""``python manage.py create_api_token <username> [--create] [--write] [--reset]``: make an API token and print it.

Only a hash of the token is stored (twin.api.models): it is printed this once; run again for another token."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from twin.api.models import ApiToken


class Command(BaseCommand):
    help = ("Make an API token for a user and print it (shown once: only its hash is kept). Scripts send it as "
            "'Authorization: Token <token>'.")

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true", help="create the user when it does not exist")
        parser.add_argument("--write", action="store_true",
                            help="grant the user add/change/delete on every inventory model and on runs, scenarios "
                                 "and schedules")
        parser.add_argument("--reset", action="store_true", help="revoke the user's other tokens")
        parser.add_argument("--description", default="", help="what the token is for (shown in the admin)")

    @transaction.atomic
    def handle(self, *args, username, create, write, reset, description, **options):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create:
                raise CommandError(f"no user named {username!r} (use --create to make one)")
            user = User.objects.create_user(username=username)
        if write:
            # the model permissions only: a "manage any user's runs" permission is granted by hand (docs/api.md)
            user.user_permissions.add(*Permission.objects.filter(
                content_type__app_label__in=("inventory", "runs", "django_celery_beat"),
                codename__regex=r"^(add|change|delete|view)_"))
        if reset:
            ApiToken.objects.filter(user=user).delete()
        _row, token = ApiToken.issue(user, description[:200])
        self.stdout.write(token)
