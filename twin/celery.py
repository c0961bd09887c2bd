"""The one Celery app. Settings come from Django's under the CELERY_ namespace; tasks are found per app."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")

app = Celery("twin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
