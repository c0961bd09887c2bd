"""A real ``celery beat`` process for the tests, with the twin's scheduler (CELERY_BEAT_SCHEDULER), against the
test database and the session's queue (tests/processes.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from django.conf import settings

from tests.processes import ServerProcess, server_env


class Beat(ServerProcess):
    """``celery -A twin beat`` waking at least every ``max_interval`` seconds, sending to ``queue`` (default: the
    session's); ``env`` adds settings read from the environment (TWIN_RUNS_STALE_SECONDS, REDIS_URL)."""

    def __init__(self, log_dir: Path, env: dict | None = None, max_interval: int = 1, queue: str | None = None):
        super().__init__("beat", log_dir)
        self.extra_env, self.max_interval = env or {}, max_interval
        self.queue = queue or settings.CELERY_TASK_DEFAULT_QUEUE

    def start(self):
        self._spawn([sys.executable, "-m", "celery", "-A", "twin", "beat", "-l", "info",
                     "--max-interval", str(self.max_interval), "--pidfile", str(self.log_dir / "beat.pid"),
                     "-s", str(self.log_dir / "beat-schedule")],
                    server_env(self.queue, **self.extra_env))
        return self
