"""The one Celery app. Settings come from Django's under the CELERY_ namespace; tasks are found per app."""
import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

from sim.core.memory import reuse_freed_memory

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")

app = Celery("twin")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect           # the worker (a solo pool runs tasks in it; a prefork pool's children inherit it)
@worker_process_init.connect   # and each pool process, whatever it inherited
def _large_runs_reuse_memory(**kwargs):
    """Each worker process runs simulations as ``python -m sim`` does: freed arrays reused, no huge-page compaction
    (sim/core/memory.py; at 600k GPUs it was half the run's time)."""
    reuse_freed_memory()
