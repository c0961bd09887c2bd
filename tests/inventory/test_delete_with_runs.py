"""A cluster's runs, scenarios, the schedules of those scenarios, its jobs and the runs' stored files go with it
(docs/runs.md, docs/inventory.md), whether it is deleted through the API or replaced by ``build_cluster --replace``:
before, both ended in "FOREIGN KEY constraint failed" (a 409, an IntegrityError traceback). Another cluster's rows
stay. Runs on SQLite by default and on PostgreSQL with DATABASE_URL."""
import io
import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from twin.api.models import ApiToken
from twin.inventory.models import GPU, Cluster, ObjectChange
from twin.runs import files
from twin.runs.actions import save_schedule
from twin.runs.choices import RunStatus
from twin.runs.models import Job, RunArray, Scenario, SimulationRun

pytestmark = pytest.mark.django_db(transaction=True)


def build(name, *args):
    out = io.StringIO()
    call_command("build_cluster", name, "--no-progress", *args, stdout=out)
    return out.getvalue()


def populate(cluster, tmp_path, settings, tag):
    """Two runs (one a sweep child) with an array and stored dumps, a scenario with a schedule, a job."""
    settings.TWIN_RUN_FILES_DIR = str(tmp_path / "run-files")
    scenario = Scenario.objects.create(name=f"s-{tag}", kind="fabric_health", cluster=cluster, params={})
    save_schedule(scenario=scenario, name=f"nightly-{tag}", crontab={"minute": "0", "hour": "3"})
    parent = SimulationRun.objects.create(kind="sweep", cluster=cluster, status=RunStatus.SUCCEEDED, scenario=scenario)
    child = SimulationRun.objects.create(kind="debug", cluster=cluster, status=RunStatus.SUCCEEDED, parent=parent)
    RunArray.pack(child, "x", [1.0, 2.0]).save()
    folder = tmp_path / f"dumps-{tag}"
    folder.mkdir()
    (folder / "nccl_trace_rank_0").write_bytes(b"x")
    files.pack_folder(child.pk, folder)
    Job.objects.create(name=f"j-{tag}", cluster=cluster, run=child)
    return [parent.pk, child.pk]


def what_is_left(cluster_id):
    return {"runs": SimulationRun.objects.filter(cluster_id=cluster_id).count(),
            "scenarios": Scenario.objects.filter(cluster_id=cluster_id).count(),
            "jobs": Job.objects.filter(cluster_id=cluster_id).count(),
            "gpus": GPU.objects.filter(cluster_id=cluster_id).count()}


def schedules():
    return sorted(PeriodicTask.objects.filter(task="twin.runs.tasks.run_scenario").values_list("name", flat=True))


@pytest.fixture
def writer(db):
    user = User.objects.create_user("deleter")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client


def test_api_delete_of_a_cluster_deletes_its_runs_scenarios_schedules_jobs_and_files(writer, tmp_path, settings):
    build("demo-256")
    demo = Cluster.objects.get(name="demo-256")
    other = Cluster.objects.create(name="other", spec="")
    runs = populate(demo, tmp_path, settings, "demo")
    kept = populate(other, tmp_path, settings, "other")
    assert all(files.stored(r) for r in runs[1:])
    r = writer.delete(f"/api/inventory/clusters/{demo.pk}/")
    assert r.status_code == 204, r.content[:300]
    assert what_is_left(demo.pk) == {"runs": 0, "scenarios": 0, "jobs": 0, "gpus": 0}
    assert not SimulationRun.objects.filter(pk__in=runs).exists() and not RunArray.objects.filter(run_id__in=runs)
    assert files.stored(runs[1]) is None and not files.run_dir(runs[1]).exists()
    assert schedules() == ["nightly-other"]
    # the other cluster's rows and files stay
    assert what_is_left(other.pk)["runs"] == 2 and files.stored(kept[1]) is not None
    change = ObjectChange.objects.filter(model="cluster", object_id=demo.pk, action="delete").get()
    assert change.before["with_it"] == {"runs": 2, "scenarios": 1, "schedules": 1, "jobs": 1}


def test_build_cluster_replace_deletes_them_and_says_how_many(tmp_path, settings):
    build("demo-256")
    old = Cluster.objects.get(name="demo-256")
    runs = populate(old, tmp_path, settings, "demo")
    out = build("demo-256", "--replace")
    assert "demo-256: replaced; deleted with the old cluster: 2 runs, 1 scenarios, 1 schedules, 1 jobs" in out, out
    new = Cluster.objects.get(name="demo-256")
    assert new.pk != old.pk and what_is_left(old.pk) == {"runs": 0, "scenarios": 0, "jobs": 0, "gpus": 0}
    assert files.stored(runs[1]) is None and schedules() == []
    again = build("demo-256", "--replace")
    assert "deleted with the old cluster: 0 runs, 0 scenarios, 0 schedules, 0 jobs" in again, again


def test_a_failed_delete_keeps_the_runs_and_their_files(tmp_path, settings):
    """All or nothing: a delete the database refuses (a rack of another cluster in one of its zones) after the runs
    went leaves them, their schedules and their files in place."""
    from twin.inventory.models import Rack
    build("demo-256")
    demo = Cluster.objects.get(name="demo-256")
    other = Cluster.objects.create(name="other", spec="")
    runs = populate(demo, tmp_path, settings, "demo")
    stray = Rack.objects.filter(cluster=demo).first()
    stray.pk, stray.cluster, stray.name, stray.serial = None, other, "other.stray", "STRAY-1"
    stray.save()
    r = APIClient()
    user = User.objects.create_superuser("root")
    r.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    assert r.delete(f"/api/inventory/clusters/{demo.pk}/").status_code == 409
    assert what_is_left(demo.pk)["runs"] == 2 and files.stored(runs[1]) is not None
    assert schedules() == ["nightly-demo"]
