"""The web processes, one command for the compose set-up, the load benchmark and the launcher:
``python -m twin.webserver [--serve both|http|websockets] [--host H] [--port P] [--workers N]``.

- ``http`` (compose's ``web`` service): gunicorn serving ``twin.wsgi``, TWIN_WEB_WORKERS processes (default twice
  the CPUs) of TWIN_WEB_THREADS threads each (one thread: gunicorn's sync workers). A plain request costs about half of what it
  costs through the ASGI stack, where each one crosses between the event loop and its view's thread.
- ``websockets`` (compose's ``live`` service, to which the proxy sends ``/ws/``): uvicorn serving ``twin.asgi``
  (Channels), TWIN_WEB_WORKERS processes; it answers HTTP too (its health check).
- ``both`` (the launcher, ``scripts/run`` with TWIN_WEB_WORKERS above 1: one port and no proxy): uvicorn serving
  ``twin.asgi`` for HTTP and WebSockets.

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
THREADS_ENV = "TWIN_WEB_THREADS"
WORKERS_DEFAULT_MAX = 8     # the compose default is the CPU count, at most this (each process holds its own caches)
HTTP_PROCESSES_PER_CPU = 2  # the HTTP service's default: two single-threaded processes per CPU, so that one waiting on
                            # PostgreSQL or sending a large export leaves the CPU to another (bench_load: 2 -> 4
                            # processes on 2 CPUs took /healthz beside 8 DOT downloads from 58 to 46 ms p99)
THREADS_DEFAULT = 1         # gunicorn's sync workers: the best throughput and p99 on 2 cores (docs/operations.md)
DB_POOL_DEFAULT = 8         # connections per web process (8 processes: 64, under PostgreSQL's 100)
HTTP_TIMEOUT = 300          # seconds a request may run before gunicorn restarts its process (a 24k cluster's
                            # deletion through the API takes tens of seconds; nothing legitimate takes minutes)
SERVE = ("both", "http", "websockets")


def cpu_count() -> int:
    """CPUs this process may run on (its affinity, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not Linux
        return os.cpu_count() or 1


def workers(default: int) -> int:
    """TWIN_WEB_WORKERS, at least 1; ``default`` when unset or empty. SettingError names it when it is bad."""
    return env.env_int(WORKERS_ENV, default, minimum=1)


def default_workers(serve: str) -> int:
    """TWIN_WEB_WORKERS, else the default of the ``serve`` role: the CPU count (HTTP_PROCESSES_PER_CPU times it for
    ``http``), at most WORKERS_DEFAULT_MAX."""
    per_cpu = HTTP_PROCESSES_PER_CPU if serve == "http" else 1
    return workers(min(per_cpu * cpu_count(), WORKERS_DEFAULT_MAX))


def threads() -> int:
    """TWIN_WEB_THREADS, at least 1 (threads per HTTP process). SettingError names it when it is bad."""
    return env.env_int(THREADS_ENV, THREADS_DEFAULT, minimum=1)


def command(host: str, port: int, n_workers: int | None = None, serve: str = "both") -> list[str]:
    """This module's command line (the launcher's, the benchmark's); ``n_workers`` None: TWIN_WEB_WORKERS or the
    CPU count."""
    workers_args = [] if n_workers is None else ["--workers", str(n_workers)]
    return [sys.executable, "-m", "twin.webserver", "--serve", serve, "--host", host, "--port", str(port),
            *workers_args]


def uvicorn_command(host: str, port: int, n_workers: int) -> list[str]:
    """uvicorn serving ``twin.asgi`` with ``n_workers`` processes. Django has no lifespan protocol (turned off, not
    probed); no access log (the proxy is the place for one; it costs every request)."""
    return [sys.executable, "-m", "uvicorn", "twin.asgi:application", "--host", host, "--port", str(port),
            "--workers", str(n_workers), "--lifespan", "off", "--no-access-log"]


def gunicorn_command(host: str, port: int, n_workers: int, n_threads: int) -> list[str]:
    """gunicorn serving ``twin.wsgi`` with ``n_workers`` processes of ``n_threads`` threads (sync workers for one).
    No access log (as above); the workers' heartbeat files in memory where there is /dev/shm (a container's disk
    can stall them)."""
    tmp_dir = ["--worker-tmp-dir", "/dev/shm"] if os.path.isdir("/dev/shm") else []
    return [sys.executable, "-m", "gunicorn", "twin.wsgi:application", "--bind", f"{host}:{port}",
            "--workers", str(n_workers), "--threads", str(n_threads),
            "--worker-class", "gthread" if n_threads > 1 else "sync", "--timeout", str(HTTP_TIMEOUT), "--keep-alive", "0", *tmp_dir]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m twin.webserver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--serve", choices=SERVE, default="both",
                        help="both: HTTP and WebSockets (uvicorn, one port); http: HTTP only (gunicorn); "
                             "websockets: the live streams (uvicorn) behind a proxy that sends /ws/ there")
    parser.add_argument("--host", default="0.0.0.0", help="address to serve on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    parser.add_argument("--workers", type=int, default=None,
                        help=f"web processes (default: {WORKERS_ENV}, else the CPUs (twice that for http), at most "
                             f"{WORKERS_DEFAULT_MAX})")
    args = parser.parse_args(argv)
    try:
        n = args.workers if args.workers is not None else default_workers(args.serve)
        if n < 1:
            raise env.SettingError("--workers", f"{n} is below 1")
        n_threads = threads()
        env.env_int("TWIN_DB_POOL_SIZE", 0, minimum=0)      # a bad value named here, not in each process
    except env.SettingError as e:
        print(f"twin: {e}", file=sys.stderr)
        return 2
    if not os.environ.get("TWIN_DB_POOL_SIZE", "").strip():
        os.environ["TWIN_DB_POOL_SIZE"] = str(DB_POOL_DEFAULT)
    plural = "es" if n > 1 else ""
    if args.serve == "http":
        argv = gunicorn_command(args.host, args.port, n, n_threads)
        what = f"HTTP on {args.host}:{args.port}, {n} gunicorn process{plural} of {n_threads} thread(s)"
    else:
        argv = uvicorn_command(args.host, args.port, n)
        served = "WebSockets" if args.serve == "websockets" else "HTTP and WebSockets"
        what = f"{served} on {args.host}:{args.port}, {n} uvicorn worker process{plural}"
    print(f"twin: {what}", flush=True)
    os.execv(argv[0], argv)
    return 0    # not reached


if __name__ == "__main__":
    sys.exit(main())
