"""A twin with one Celery worker for the benches that time a run kind through a real worker (bench_debug_run.py,
bench_failures_runs.py): the database of its own migrated, the cluster built once (kept with ``--keep``), the worker
on a queue of its own, and the run's progress sampled as its live frames carry it. Not a test."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENDED = ("succeeded", "failed", "cancelled")


@contextmanager
def twin_with_worker(*, database_url: str, redis_url: str, queue: str, name: str, cluster: str, tmp: Path,
                     concurrency: int, keep: bool, env: dict | None = None):
    """Yield ``(cluster row, worker process)`` once the worker answers a ping; stop the worker after, and remove a
    SQLite database unless ``keep``. ``env`` adds settings for this process and the worker."""
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "DJANGO_SETTINGS_MODULE": "twin.settings", "SECRET_KEY": secrets.token_urlsafe(50),
           "TWIN_CELERY_QUEUE": queue, "TWIN_LIVE_KEY_PREFIX": f"twin:{name}:", "PYTHONUNBUFFERED": "1",
           **(env or {})}
    os.environ.update(env)
    Path(database_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)

    import django
    django.setup()
    from django.core.management import call_command

    from twin.inventory.models import Cluster
    if not Cluster.objects.filter(name=cluster).exists():
        t = time.perf_counter()
        call_command("build_cluster", cluster, "--no-progress")
        print(f"built {cluster} in {time.perf_counter() - t:.0f} s")
    row = Cluster.objects.get(name=cluster)

    log = open(tmp / "worker.log", "w")
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "twin", "worker", "--concurrency",
                               str(concurrency), "-Q", queue, "-l", "warning", "-n", f"{name}-{os.getpid()}@%h"],
                              cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        from twin.celery import app
        deadline = time.monotonic() + 60
        while not app.control.ping(timeout=0.5) and time.monotonic() < deadline:
            time.sleep(0.5)
        yield row, worker
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
        if not keep and database_url.startswith("sqlite:///"):
            for suffix in ("", "-wal", "-shm"):
                Path(database_url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)


def sample_progress(run_id: int, t0: float, limit_s: float, name: str) -> tuple[list[tuple[float, float]], float]:
    """Every 0.2 s until the run ends: ``(seconds since t0, percent)`` at each change of its progress, and the
    seconds from ``t0`` (time.monotonic(), taken before the run was created) to its end. Exits naming the bench when
    that passes ``limit_s``."""
    from django.db import connection

    from twin.runs.models import SimulationRun
    connection.close()          # the worker's writes, not a transaction of this process's, are what is read
    samples = []
    while True:
        r = SimulationRun.objects.filter(pk=run_id).values("status", "progress").first()
        now = time.monotonic() - t0
        if not samples or r["progress"] != samples[-1][1]:
            samples.append((now, r["progress"]))
        if r["status"] in ENDED:
            return samples, now
        if now > limit_s:
            sys.exit(f"{name}: the run did not end in {limit_s:.0f} s")
        time.sleep(0.2)
