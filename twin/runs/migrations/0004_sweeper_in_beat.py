"""The runs sweeper runs in beat's own process (twin.runs.beat), no longer as a periodic task a worker must take:
the periodic task row beat wrote for it from the former CELERY_BEAT_SCHEDULE goes."""
from django.db import migrations

FORMER_TASK = "twin.runs.tasks.sweep_stuck_runs"


def forwards(apps, schema_editor):
    apps.get_model("django_celery_beat", "PeriodicTask").objects.filter(task=FORMER_TASK).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0003_kind_without_choices"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
