"""Real server processes for the tests (and bench/bench_ui.py): Celery workers (``celery -A twin worker
--pool=solo``) and a daphne web server (``twin.asgi:application``), against the database this process uses (the
pytest-django test database: a file on SQLite, ``test_<name>`` on PostgreSQL) and the real Redis (REDIS_URL), each
worker on a queue of its own (TWIN_CELERY_QUEUE) so that no other worker on the same Redis takes the tasks.

The processes see committed rows only: tests that use them commit their data (``transactional_db``, or
``django_db_blocker.unblock()`` outside any test transaction).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.db import connection

from twin.celery import app as celery_app
from twin.redis_server import free_port

ROOT = Path(__file__).resolve().parents[1]


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value, and return that; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)
    return value


def database_url() -> str:
    """DATABASE_URL of the database this process is connected to (the test database during tests)."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def server_env(queue: str, **extra: str) -> dict:
    """The environment of a server process: this process's, on its database, sending runs to ``queue``."""
    env = {**os.environ, "DATABASE_URL": database_url(), "TWIN_CELERY_QUEUE": queue,
           "DJANGO_SETTINGS_MODULE": "twin.settings", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("TWIN_TEST_DATABASE_NAME", None)      # DATABASE_URL already names the test database
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)    # a test-process escape hatch; the servers run as in production
    return env


class ServerProcess:
    """A child process in its own session, its output appended to ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, log_dir: Path):
        self.name, self.log_dir, self.proc, self.log = name, Path(log_dir), None, None

    def _spawn(self, argv: list[str], env: dict, cwd: Path = ROOT):
        if self.log is not None:      # a restart after the process died (killed or crashed): close the old handle
            self.log.close()
        self.log = open(self.log_dir / f"{self.name}.log", "ab")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL: the process dies mid-task, as on an OOM kill or a lost machine."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def kill_group(self):
        """SIGKILL to the whole process group (the process and anything it started): a host lost at once."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.alive:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.log is not None:
            self.log.close()
            self.log = None

    def tail(self, n=4000) -> str:
        if self.log is not None:
            self.log.flush()
        return (self.log_dir / f"{self.name}.log").read_bytes()[-n:].decode(errors="replace")


def stop_all(*processes: ServerProcess):
    """Stop several processes side by side: each told to end (SIGTERM) before any is waited for."""
    for p in processes:
        if p.alive:
            p.proc.terminate()
    for p in processes:
        p.stop()


class Worker(ServerProcess):
    """One ``celery worker --pool=solo`` process on ``queue`` (default: the queue this process sends to)."""

    def __init__(self, name: str, log_dir: Path, queue: str | None = None, env: dict | None = None):
        super().__init__(name, log_dir)
        self.queue = queue or settings.CELERY_TASK_DEFAULT_QUEUE
        self.hostname = f"{name}@{self.queue}"
        self.extra_env = env or {}

    def start(self):
        self._spawn([sys.executable, "-m", "celery", "-A", "twin", "worker", "--pool=solo", "-Q", self.queue,
                     "-n", self.hostname, "--without-gossip", "--without-mingle", "-l", "info"],
                    server_env(self.queue, **self.extra_env))


# What a worker on another machine is given by the team (docs/operations.md, "Workers on several machines").
SHARED_WITH_REMOTE_HOSTS = ("DATABASE_URL", "REDIS_URL")


class HostWorker(Worker):
    """A worker as another machine runs it: its own directory (cwd, HOME and TWIN_VAR_DIR, so its own var/ and
    secret key), the code on PYTHONPATH, and from this machine only ``SHARED_WITH_REMOTE_HOSTS`` plus ``env`` (the
    deployment's settings: TWIN_RUN_KIND_MODULES, the run limits), not this process's environment."""

    def __init__(self, name: str, log_dir: Path, host_dir: Path, queue: str | None = None, env: dict | None = None):
        super().__init__(name, log_dir, queue, env)
        self.host_dir = Path(host_dir)

    def start(self):
        self.host_dir.mkdir(parents=True, exist_ok=True)
        here = server_env(self.queue)
        env = {name: here[name] for name in SHARED_WITH_REMOTE_HOSTS if name in here}
        if "REDIS_URL" not in env:
            env["REDIS_URL"] = settings.REDIS_URL
        env |= {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1",
                "HOME": str(self.host_dir), "TWIN_VAR_DIR": str(self.host_dir / "var"),
                "TWIN_CELERY_QUEUE": self.queue, **self.extra_env}
        self._spawn([sys.executable, "-m", "celery", "-A", "twin", "worker", "--pool=solo", "-Q", self.queue,
                     "-n", self.hostname, "--without-gossip", "--without-mingle", "-l", "info"], env,
                    cwd=self.host_dir)


class Workers:
    """A set of workers; :meth:`ensure` (re)starts any that is not running and waits for their ping."""

    def __init__(self, log_dir: Path, n: int = 2, queue: str | None = None, env: dict | None = None,
                 hosts_dir: Path | None = None):
        """``hosts_dir``: each worker a :class:`HostWorker` in ``hosts_dir/<name>``, as on a machine of its own."""
        self.all = [Worker(f"w{i + 1}", log_dir, queue, env) if hosts_dir is None
                    else HostWorker(f"w{i + 1}", log_dir, Path(hosts_dir) / f"w{i + 1}", queue, env) for i in range(n)]

    @property
    def hostnames(self) -> set[str]:
        return {w.hostname for w in self.all}

    def by_hostname(self, hostname: str) -> Worker:
        return next(w for w in self.all if w.hostname == hostname)

    def launch(self):
        """Start any worker that is not running, without waiting for it (:meth:`ensure` waits)."""
        for w in self.all:
            if not w.alive:
                w.start()
        return self

    def ensure(self, timeout: float = 60.0):
        self.launch()
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
        stop_all(*self.all)


class Daphne(ServerProcess):
    """``daphne twin.asgi:application`` on 127.0.0.1:``port``; :meth:`start` returns once it answers HTTP.
    :meth:`stop` then :meth:`start` again is a real outage of the server (open WebSockets drop)."""

    def __init__(self, log_dir: Path, queue: str, port: int | None = None, env: dict | None = None):
        super().__init__("daphne", log_dir)
        self.queue, self.port, self.extra_env = queue, port or free_port(), env or {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0):
        return self.launch().wait_up(timeout)

    def launch(self):
        """Start the process, without waiting for it to answer (:meth:`wait_up`): its start-up (a few seconds of
        imports) can overlap the caller's own work."""
        self._spawn([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                     "twin.asgi:application"], server_env(self.queue, **self.extra_env))
        return self

    def wait_up(self, timeout: float = 60.0):
        """Return once the started process answers HTTP (/healthz); fail if it exits or stays silent."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive:
                raise RuntimeError(f"daphne exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not answer on port {self.port} within {timeout} s:\n{self.tail()}")
            time.sleep(0.1)
