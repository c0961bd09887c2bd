"""A throwaway live twin for the probes (bench/probe_api.py --start): ``python -m twin.launcher`` of a given checkout
on a fresh SQLite file and var/ directory in a temporary directory, a free port, the given REDIS_URL, a Celery queue
and Redis key prefixes of its own (so that nothing else on that Redis takes its tasks or shares its throttle
counters), building demo-256 only. :func:`stop` ends the launcher (it stops its children) and removes the directory.

    .venv/bin/python bench/probe_twin.py [--checkout DIR] [--keep]   # start one, print its URL, Ctrl-C stops it
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Twin:
    checkout: Path
    tmp: Path
    port: int
    proc: subprocess.Popen
    env: dict

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str, timeout: float = 600) -> str:
        """``manage.py ARGS`` of the twin's checkout, on the twin's database; its stdout."""
        out = subprocess.run([str(self.checkout / ".venv/bin/python"), "manage.py", *args], cwd=self.checkout,
                             env=self.env, capture_output=True, text=True, timeout=timeout)
        if out.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
        return out.stdout

    def log_tail(self, n: int = 3000) -> str:
        return (self.tmp / "launcher.log").read_bytes()[-n:].decode(errors="replace")


def start(checkout: Path, redis_url: str, timeout: float = 300.0, rates: bool = True) -> Twin:
    """Start the launcher of ``checkout`` and return once its web answers /healthz (demo-256 built).

    ``rates``: raise the API rate limits so the corpus measures the handlers, not the request throttle (the
    failed-login lockout keeps its defaults)."""
    checkout = Path(checkout).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="twin-probe-"))
    port, tag = free_port(), f"probe{os.getpid()}x{int(time.time())}"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}", "TWIN_VAR_DIR": str(tmp / "var"),
           "REDIS_URL": redis_url, "TWIN_PORT": str(port), "TWIN_DEFAULT_CLUSTERS": "demo-256",
           "TWIN_CELERY_QUEUE": tag, "TWIN_THROTTLE_KEY_PREFIX": f"twin:throttle:{tag}",
           "TWIN_LIVE_KEY_PREFIX": f"twin:live:{tag}:", "TWIN_RUN_FILES_DIR": str(tmp / "var/run-files"),
           "DJANGO_SETTINGS_MODULE": "twin.settings", "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)}
    if rates:
        env |= {"TWIN_API_RATE_ANON": "100000/min", "TWIN_API_RATE_USER": "100000/min"}
    for name in ("TWIN_TEST_DATABASE_NAME", "DJANGO_ALLOW_ASYNC_UNSAFE"):
        env.pop(name, None)
    log = open(tmp / "launcher.log", "ab")
    proc = subprocess.Popen([str(checkout / ".venv/bin/python"), "-m", "twin.launcher", "--port", str(port)],
                            cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    twin = Twin(checkout, tmp, port, proc, env)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            tail = twin.log_tail()
            stop(twin)
            raise RuntimeError(f"the launcher exited with {proc.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{twin.url}/healthz", timeout=2) as r:
                if r.status == 200:
                    return twin
        except OSError:
            pass
        if time.monotonic() > deadline:
            tail = twin.log_tail()
            stop(twin)
            raise RuntimeError(f"the twin did not answer within {timeout} s:\n{tail}")
        time.sleep(0.5)


def stop(twin: Twin, keep: bool = False) -> None:
    """SIGTERM to the launcher (it stops web, worker and beat), SIGKILL of its group after 30 s; remove its files."""
    if twin.proc.poll() is None:
        twin.proc.send_signal(signal.SIGTERM)
        try:
            twin.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(twin.proc.pid, signal.SIGKILL)
            twin.proc.wait(timeout=10)
    if not keep:
        shutil.rmtree(twin.tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkout", type=Path, default=HERE, help="the checkout whose twin to start (default: this one)")
    p.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (database, logs)")
    args = p.parse_args()
    twin = start(args.checkout, args.redis_url)
    print(f"twin of {args.checkout} at {twin.url} (files in {twin.tmp}); Ctrl-C stops it", flush=True)
    try:
        while twin.proc.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stop(twin, keep=args.keep)


if __name__ == "__main__":
    sys.exit(main())
