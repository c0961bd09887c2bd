"""The web processes: HTTP and WebSockets (``twin.asgi``, Channels) served by uvicorn with TWIN_WEB_WORKERS worker
processes. One command for the compose set-up, the load benchmark and the launcher (``scripts/run``, when
TWIN_WEB_WORKERS is above 1): ``python -m twin.webserver [--host H] [--port P] [--workers N]``.

One Python process runs Python on one core at a time (the GIL), so a busy page or export makes every other request
of the process wait; several processes share the port (the kernel hands each connection to one of them).
WebSocket clients of one cluster may sit in different processes: the live stream reaches them all through the
channel layer (Redis). On PostgreSQL each process keeps a pool of TWIN_DB_POOL_SIZE connections (default
DB_POOL_DEFAULT here; twin/settings.py) instead of connecting per request.
"""
from __future__ import annotations

import argparse
import os
import sys

from twin import env

WORKERS_ENV = "TWIN_WEB_WORKERS"
WORKERS_DEFAULT_MAX = 8     # the compose default is the CPU count, at most this (each process holds its own caches)
DB_POOL_DEFAULT = 8         # connections per web process (8 processes: 64, under PostgreSQL's 100)


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not Linux
        return os.cpu_count() or 1


def workers(default: int) -> int:
    """TWIN_WEB_WORKERS, at least 1; ``default`` when unset or empty. SettingError names it when it is bad."""
    return env.env_int(WORKERS_ENV, default, minimum=1)


def command(host: str, port: int, n_workers: int | None = None) -> list[str]:
    """This module's command line (the launcher's); ``n_workers`` None: TWIN_WEB_WORKERS or the CPU count."""
    workers_args = [] if n_workers is None else ["--workers", str(n_workers)]
    return [sys.executable, "-m", "twin.webserver", "--host", host, "--port", str(port), *workers_args]


def uvicorn_command(host: str, port: int, n_workers: int) -> list[str]:
    """uvicorn serving ``twin.asgi`` with ``n_workers`` processes. Django has no lifespan protocol (turned off, not
    probed); no access log (the proxy is the place for one; it costs every request)."""
    return [sys.executable, "-m", "uvicorn", "twin.asgi:application", "--host", host, "--port", str(port),
            "--workers", str(n_workers), "--lifespan", "off", "--no-access-log"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m twin.webserver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="0.0.0.0", help="address to serve on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    parser.add_argument("--workers", type=int, default=None,
                        help=f"web processes (default: {WORKERS_ENV}, else the CPUs, at most {WORKERS_DEFAULT_MAX})")
    args = parser.parse_args(argv)
    try:
        n = args.workers if args.workers is not None else workers(min(cpu_count(), WORKERS_DEFAULT_MAX))
        if n < 1:
            raise env.SettingError("--workers", f"{n} is below 1")
        env.env_int("TWIN_DB_POOL_SIZE", 0, minimum=0)      # a bad value named here, not in each process
    except env.SettingError as e:
        print(f"twin: {e}", file=sys.stderr)
        return 2
    if not os.environ.get("TWIN_DB_POOL_SIZE", "").strip():
        os.environ["TWIN_DB_POOL_SIZE"] = str(DB_POOL_DEFAULT)
    argv = uvicorn_command(args.host, args.port, n)
    print(f"twin: web on {args.host}:{args.port}, {n} uvicorn worker process{'es' if n > 1 else ''}", flush=True)
    os.execv(argv[0], argv)
    return 0    # not reached


if __name__ == "__main__":
    sys.exit(main())
