from django.apps import AppConfig
from django.db import transaction
from django.db.models.signals import post_delete


def _delete_with_cluster(sender, cluster, **kwargs) -> dict:
    """A cluster's runs, scenarios, their schedules and its jobs go with it (twin.inventory's ``cluster_deleting``)."""
    from twin.runs.actions import delete_cluster_runs
    return delete_cluster_runs(cluster)


def _refuse_cluster_delete(sender, cluster, user, **kwargs) -> str | None:
    """A user deleting a cluster that other users' runs depend on is refused unless staff (twin.inventory's
    ``cluster_delete_refusal``, :func:`twin.runs.ownership.cluster_refusal`)."""
    from twin.runs.ownership import cluster_refusal
    return cluster_refusal(user, cluster)


def _delete_run_files(sender, instance, **kwargs):
    """A deleted run's files (twin/runs/files.py) go once the deletion commits: by the API, a sweep's children,
    a cluster's runs, the admin."""
    from twin.runs import files
    run_id = instance.pk
    transaction.on_commit(lambda: files.delete(run_id))


class RunsConfig(AppConfig):
    """Simulation runs executed by Celery workers: scenarios, runs, sweeps, schedules and their results."""

    name = "twin.runs"
    label = "runs"
    verbose_name = "Simulation runs"

    def ready(self):
        from twin.live import meta
        from twin.runs.models import SimulationRun
        meta.set_run_lookup(lambda run_id: SimulationRun.objects.filter(pk=run_id).first())
        post_delete.connect(_delete_run_files, sender=SimulationRun, dispatch_uid="runs-delete-files")
        from twin.inventory import changelog
        from twin.runs.models import CalibrationProfile
        changelog.LOGGED_ABOVE.add(CalibrationProfile._meta.model_name)     # twin.runs.actions.save_calibration
        from twin.inventory.signals import cluster_delete_refusal, cluster_deleting
        cluster_deleting.connect(_delete_with_cluster, dispatch_uid="runs-delete-with-cluster")
        cluster_delete_refusal.connect(_refuse_cluster_delete, dispatch_uid="runs-refuse-cluster-delete")
