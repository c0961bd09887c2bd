"""The database is the source of truth for what must run, whatever happens to Redis and the workers: queued runs
whose messages Redis lost are sent again, a run whose worker died shows stalled over the API with no worker left,
and beat's own sweeper hands a killed worker's run to another worker. Real Redis (a private one where it is
restarted), real worker and beat processes. Given / when / then."""
import uuid
from datetime import timedelta

import pytest
import redis
from celery import Celery
from django.utils import timezone

import tests.runs.echo_kind  # noqa: F401 - registers the echo kind in this process too
from tests.processes import Worker, wait_for
from tests.runs.beat import Beat
from tests.runs.test_runs import running
from twin.redis_server import EmbeddedRedis, free_port
from twin.runs import broker
from twin.runs.actions import create_run, requeue_lost_runs
from twin.runs.constants import EXECUTE_RUN_TASK
from twin.runs.models import SimulationRun

ECHO = {"TWIN_RUN_KIND_MODULES": "tests.runs.echo_kind"}
# A run that lasts 4 s wherever it runs (tests/runs/echo_kind.py): long enough to kill its worker in the middle.
SLOWISH = {"n": 20, "pause": 0.2}


def _queued_echo_runs(demo, n):
    """Queued runs whose messages were never sent, created long enough ago to be past the grace period."""
    runs = [create_run("echo", {"n": 2}, demo, enqueue=False) for _ in range(n)]
    SimulationRun.objects.filter(pk__in=[r.pk for r in runs]).update(created_at=timezone.now() - timedelta(hours=1))
    return runs


@pytest.mark.django_db(transaction=True)
def test_queued_runs_survive_a_redis_restart(demo, tmp_path):
    # given a private Redis (never the machine's) holding the messages of two queued runs, no worker yet
    server = EmbeddedRedis(free_port(), directory=tmp_path / "redis").start()
    queue = f"restart-{uuid.uuid4().hex[:8]}"
    env = {**ECHO, "REDIS_URL": server.url, "TWIN_RUNS_REQUEUE_GRACE_SECONDS": "1", "TWIN_RUNS_SWEEP_SECONDS": "1"}
    worker, beat = Worker("w-restart", tmp_path, queue, env), Beat(tmp_path, env, queue=queue)
    try:
        runs = _queued_echo_runs(demo, 2)
        sender = Celery("sender", broker=server.url)
        for run in runs:
            sender.send_task(EXECUTE_RUN_TASK, args=(run.pk,), task_id=run.celery_task_id, queue=queue)
        client = redis.Redis.from_url(server.url)
        assert client.llen(queue) == 2
        # when Redis restarts (no persistence: its queues are gone)
        server.stop()
        server.start()
        assert client.llen(queue) == 0
        # and a worker and beat come up
        worker.start()
        beat.start()
        # then beat's sweeper sends the runs again, and the worker runs them
        for run in runs:
            done = wait_for(lambda r=run: SimulationRun.objects.filter(pk=r.pk, status="succeeded").first()
                            or not beat.alive, timeout=90, what=f"run {run.pk} to run after the restart")
            assert beat.alive, beat.tail()
            assert "re-sent: its message is no longer in the broker" in done.notes
            assert done.celery_task_id != run.celery_task_id
    finally:
        beat.stop()
        worker.stop()
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_queued_runs_whose_messages_are_deleted_from_redis_are_sent_again_and_run(workers, demo):
    # given queued runs whose messages are gone from Redis (deleted, or never arrived), and a fresh one
    lost = _queued_echo_runs(demo, 3)
    fresh = create_run("echo", {"n": 2}, demo, enqueue=False)
    # when the sweeper passes
    done = requeue_lost_runs()
    # then the lost ones are sent again (the fresh one is within its grace period) and the workers run them
    assert sorted(d["run"] for d in done) == sorted(r.pk for r in lost)
    for run in lost:
        wait_for(lambda r=run: SimulationRun.objects.filter(pk=r.pk, status="succeeded").exists(), timeout=30,
                 what=f"run {run.pk} to run")
    assert SimulationRun.objects.get(pk=fresh.pk).status == "queued"
    # and a second pass sends nothing twice
    assert requeue_lost_runs() == []


@pytest.mark.django_db(transaction=True)
def test_the_broker_is_read_for_the_messages_it_holds(settings):
    # given a message of a run task in a queue no worker reads
    from twin.celery import app
    queue, task_id = f"held-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    app.send_task(EXECUTE_RUN_TASK, args=(0,), task_id=task_id, queue=queue)
    default = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        # then the broker says it holds that task id and not another
        assert broker.held([task_id, str(uuid.uuid4())]) == {task_id}
    finally:
        app.conf.task_default_queue = default
        redis.Redis.from_url(app.conf.broker_url).delete(queue)
    # and a broker it cannot read says nothing (None), so that nothing is sent on a guess
    app.conf.broker_url, url = f"redis://127.0.0.1:{free_port()}/0", app.conf.broker_url
    try:
        assert broker.held([task_id]) is None
    finally:
        app.conf.broker_url = url


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_died_shows_stalled_over_the_api_with_no_worker_left(workers, runner, demo, settings):
    settings.TWIN_RUNS_STALE_SECONDS = 3
    # given a run in progress
    run_id = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": SLOWISH},
                         format="json").json()["id"]
    first = running(run_id)
    assert runner.get(f"/api/runs/{run_id}/").json()["stalled"] is False
    # when every worker dies (and no sweeper runs)
    for w in workers.all:
        w.kill()
    # then within the stale time the API shows it stalled, naming its worker, in the run and in the list
    body = wait_for(lambda: (b := runner.get(f"/api/runs/{run_id}/").json())["stalled"] and b, timeout=10,
                    what="the run to show stalled")
    assert body["status"] == "running" and first.worker in body["stalled_reason"]
    listed = runner.get("/api/runs/", {"id": run_id}).json()["results"]
    assert listed[0]["stalled"] is True


@pytest.mark.django_db(transaction=True)
def test_beat_s_sweeper_hands_a_killed_worker_s_run_to_the_other_worker(workers, runner, demo, tmp_path):
    # given web (this process), two workers and beat as separate processes, beat sweeping every second
    beat = Beat(tmp_path, {"TWIN_RUNS_STALE_SECONDS": "3", "TWIN_RUNS_SWEEP_SECONDS": "1",
                 "TWIN_RUN_KIND_MODULES": "tests.runs.echo_kind"}).start()
    try:
        run_id = runner.post("/api/runs/", {"kind": "echo", "cluster": "demo-256", "params": SLOWISH},
                             format="json").json()["id"]
        first = running(run_id)
        # when the worker running it is killed (its parent: a solo worker is one process)
        workers.by_hostname(first.worker).kill()
        # then beat requeues it and the other worker runs it to the end
        done = wait_for(lambda: SimulationRun.objects.filter(pk=run_id, status__in=("succeeded", "failed")).first(),
                        timeout=90, what="the run to end on the other worker")
        assert done.status == "succeeded" and done.attempts == 2 and done.worker != first.worker, done.notes
        assert "requeued" in done.notes and beat.alive
    finally:
        beat.stop()
