"""The team set-up with workers on several machines: three worker processes on this machine, each with the
environment a remote host would have (its own directory, HOME, var/ and secret key; only DATABASE_URL and REDIS_URL
shared: tests/processes.py HostWorker), share one sweep, its progress reaches the parent, and a host lost mid-sweep
(its process group SIGKILLed) loses no child run: beat's sweeper hands the child to another host
(docs/operations.md, "Workers on several machines"). Given / when / then."""
import uuid

import pytest

from tests.runs import echo_kind  # noqa: F401 - registers the echo kind in this process (the web side)
from tests.processes import Workers, wait_for
from tests.runs.beat import Beat
from twin.runs.models import SimulationRun

pytestmark = pytest.mark.django_db(transaction=True)

# Six children of 1.2 s each wherever they run (tests/runs/echo_kind.py): long enough to lose a host while one runs.
CHILD = {"pause": 0.2}
SWEEP = {"n": [6, 7, 8, 9, 10, 11]}
CHILDREN = 6


@pytest.fixture
def own_queue(settings):
    """A queue of this test's own (the session's workers, on the session queue, must not take its children)."""
    from twin.celery import app
    queue, default = f"hosts-{uuid.uuid4().hex[:8]}", app.conf.task_default_queue
    settings.CELERY_TASK_DEFAULT_QUEUE = app.conf.task_default_queue = queue
    yield queue
    app.conf.task_default_queue = default


def test_a_sweep_spreads_over_worker_hosts_and_survives_losing_one(runner, demo, tmp_path, own_queue):
    # given three worker hosts of their own and beat, sweeping every second, a run stale after 3 s of silence
    hosts = Workers(tmp_path, n=3, queue=own_queue, env={"TWIN_RUN_KIND_MODULES": "tests.runs.echo_kind"},
                    hosts_dir=tmp_path / "hosts")
    beat = Beat(tmp_path, {"TWIN_RUNS_STALE_SECONDS": "3", "TWIN_RUNS_SWEEP_SECONDS": "1",
                           "TWIN_RUN_KIND_MODULES": "tests.runs.echo_kind"}, queue=own_queue)
    try:
        hosts.ensure()
        beat.start()
        # when a sweep of six children is started
        r = runner.post("/api/runs/", {"kind": "sweep", "cluster": "demo-256",
                                       "params": {"kind": "echo", "params": CHILD, "sweep": SWEEP}},
                        format="json")
        assert r.status_code == 201, r.json()
        parent_id = r.json()["id"]
        # then every host takes children, and the parent's progress rises as they end
        seen_hosts, progress = set(), []

        def every_host_working():
            rows = SimulationRun.objects.filter(parent_id=parent_id).exclude(worker="").values_list("worker",
                                                                                                     "status")
            seen_hosts.update(w for w, _ in rows)
            progress.append(SimulationRun.objects.get(pk=parent_id).progress)
            # the child started last has the most left to run: its host is the one to lose
            return seen_hosts == hosts.hostnames and (SimulationRun.objects.filter(parent_id=parent_id,
                                                                                   status="running")
                                                      .order_by("-started_at").first())

        victim = wait_for(every_host_working, timeout=60, interval=0.05, what="every host to take a child")
        # when a host that is running a child is lost (its whole process group killed)
        lost = hosts.by_hostname(victim.worker)
        lost.kill_group()

        def ended():
            progress.append(SimulationRun.objects.get(pk=parent_id).progress)
            return SimulationRun.objects.filter(pk=parent_id, status__in=("succeeded", "failed")).first()

        parent = wait_for(ended, timeout=60, interval=0.05, what="the sweep to end")
        # then no child is lost: the lost host's child ran again on another host, and the sweep merged all six
        victim.refresh_from_db()
        assert victim.status == "succeeded" and victim.attempts == 2 and victim.worker != lost.hostname, victim.notes
        assert "worker lost" in victim.notes and "requeued" in victim.notes
        children = SimulationRun.objects.filter(parent_id=parent_id)
        assert children.count() == CHILDREN and set(children.values_list("status", flat=True)) == {"succeeded"}
        assert parent.status == "succeeded" and parent.summary["succeeded"] == CHILDREN
        # and the parent's progress went up step by step to 100
        assert progress == sorted(progress) and progress[-1] == 100.0
        assert len({p for p in progress if 0 < p < 100}) >= 2, progress
        assert beat.alive, beat.tail()
    finally:
        beat.stop()
        hosts.stop()
