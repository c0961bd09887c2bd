"""Real Celery workers for the runs tests: processes started with ``celery -A twin worker --pool=solo`` against the
test database (a file on SQLite, ``test_<name>`` on PostgreSQL) and the real Redis (REDIS_URL), on a queue of
their own (TWIN_CELERY_QUEUE), so that no other worker on the same Redis can take the tests' tasks.

Tests that use workers are ``@pytest.mark.django_db(transaction=True)``: a worker sees committed rows only.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from twin.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]
QUEUE = f"twin-tests-{uuid.uuid4().hex[:10]}"
# Before anything sends a task: this process and the workers use the session's own queue.
os.environ["TWIN_CELERY_QUEUE"] = QUEUE
settings.CELERY_TASK_DEFAULT_QUEUE = QUEUE
celery_app.conf.task_default_queue = QUEUE


def _database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Worker:
    """One ``celery worker --pool=solo`` process."""

    def __init__(self, name: str, log_dir: Path):
        self.name, self.log_dir, self.proc = name, log_dir, None
        self.hostname = f"{name}@{QUEUE}"

    def start(self):
        env = {**os.environ, "DATABASE_URL": _database_url(), "TWIN_CELERY_QUEUE": QUEUE,
               "DJANGO_SETTINGS_MODULE": "twin.settings", "PYTHONUNBUFFERED": "1"}
        env.pop("TWIN_TEST_DATABASE_NAME", None)
        self.log = open(self.log_dir / f"{self.name}.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "twin", "worker", "--pool=solo", "-Q", QUEUE, "-n", self.hostname,
             "--without-gossip", "--without-mingle", "-l", "info"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL: the worker dies mid-task, as on an OOM kill or a lost machine."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.alive:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()

    def tail(self, n=4000) -> str:
        self.log.flush()
        return (self.log_dir / f"{self.name}.log").read_bytes()[-n:].decode(errors="replace")


class Workers:
    """The session's workers; :meth:`ensure` (re)starts any that is not running and waits for their ping."""

    def __init__(self, log_dir: Path, n: int = 2):
        self.all = [Worker(f"w{i + 1}", log_dir) for i in range(n)]

    @property
    def hostnames(self) -> set[str]:
        return {w.hostname for w in self.all}

    def by_hostname(self, hostname: str) -> Worker:
        return next(w for w in self.all if w.hostname == hostname)

    def ensure(self, timeout: float = 60.0):
        for w in self.all:
            if not w.alive:
                w.start()
        deadline = time.monotonic() + timeout
        waiting = set(self.hostnames)
        while waiting:
            for w in self.all:
                if not w.alive:
                    raise RuntimeError(f"worker {w.name} exited:\n{w.tail()}")
            replies = celery_app.control.ping(destination=list(waiting), timeout=0.5)
            for reply in replies:
                waiting -= set(reply)
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"workers {sorted(waiting)} did not answer ping within {timeout} s:\n"
                                   + "\n".join(self.by_hostname(h).tail() for h in waiting))
        return self

    def stop(self):
        for w in self.all:
            w.stop()


@pytest.fixture(scope="session")
def _worker_pool(django_db_setup, django_db_blocker, tmp_path_factory):
    pool = Workers(tmp_path_factory.mktemp("celery"))
    try:
        yield pool
    finally:
        pool.stop()  # before the test database is dropped


@pytest.fixture
def workers(_worker_pool, transactional_db):
    """Two running workers (restarted if a test killed one)."""
    return _worker_pool.ensure()


@pytest.fixture
def runner(db):
    """A client with a token of a user who may start, cancel and schedule runs and edit the inventory."""
    user = User.objects.create_user("runner")
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label__in=("runs", "django_celery_beat", "inventory")))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@pytest.fixture
def demo(db):
    """demo-256, built through the build_cluster command (the worker reads it from the same database)."""
    import io

    from django.core.management import call_command

    from twin.inventory.models import Cluster
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return Cluster.objects.get(name="demo-256")
