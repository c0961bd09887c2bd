"""``python manage.py create_api_token <username> [--create] [--write]``: print a user's API token."""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of a user (made if absent). Scripts send it as 'Authorization: Token <key>'."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true", help="create the user when it does not exist")
        parser.add_argument("--write", action="store_true",
                            help="grant the user add/change/delete on every inventory model and on runs, scenarios "
                                 "and schedules")
        parser.add_argument("--reset", action="store_true", help="replace the user's token with a new one")

    def handle(self, *args, username, create, write, reset, **options):
        User = get_user_model()
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create:
                raise CommandError(f"no user named {username!r} (use --create to make one)")
            user = User.objects.create_user(username=username)
        if write:
            user.user_permissions.add(*Permission.objects.filter(
                content_type__app_label__in=("inventory", "runs", "django_celery_beat")))
        if reset:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
