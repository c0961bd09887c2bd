"""Run kinds are registered objects (twin.runs.registry), validated by the API: the database keeps a plain string,
so adding a kind needs no migration."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0002_figure_kind'),
    ]

    operations = [
        migrations.AlterField(
            model_name='scenario',
            name='kind',
            field=models.CharField(help_text='a registered run kind (twin.runs.registry)', max_length=32),
        ),
        migrations.AlterField(
            model_name='simulationrun',
            name='kind',
            field=models.CharField(db_index=True, help_text='a registered run kind (twin.runs.registry)',
                                   max_length=32),
        ),
    ]
