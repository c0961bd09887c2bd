"""Run the whole twin from one command: ``python -m twin.launcher [--host H] [--port P] [--no-build]``.

A small process supervisor (``scripts/run`` calls it):

1. checks the settings, the database and Redis; a bad one is reported as one line ``twin: NAME: reason`` (exit 2);
2. uses REDIS_URL when it is set, else starts the embedded Redis (twin/redis_server.py) and hands its URL on;
3. runs ``manage.py migrate --noinput`` when a migration is not applied yet (a second start skips it) and
   ``manage.py ensure_admin`` (a first superuser; in this process, no Django start of its own);
4. starts the web (daphne, HTTP + WebSocket; uvicorn with TWIN_WEB_WORKERS processes when that is above 1,
   twin/webserver.py) and, once its HTTP port answers (so that they do not slow its start on a small machine), a
   Celery worker and Celery beat, each in its own session (process group), with their output prefixed by name, and
   prints ``Twin running at http://HOST:PORT/``;
5. then builds the default clusters that are absent in the background (``manage.py build_cluster --defaults``,
   skipped with ``--no-build`` or when all exist), their progress on the overview page
   (twin/inventory/build_status.py), and asks once for each cluster's fabric and GPU page data, so that their first
   visitor finds it cached;
6. restarts a process that dies on its own, saying so, after a back-off that doubles from RESTART_DELAY up to
   RESTART_DELAY_MAX (reset once it has run for RESTART_RESET seconds), so one crashing child (beat on a bad schedule,
   a worker killed by the kernel) never takes the web and the others down;
7. on Ctrl-C / SIGTERM stops them all (SIGTERM, up to 10 s, then SIGKILL of the whole group; a build half-way gets
   SIGINT and rolls back), then the embedded Redis, and exits 0.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse, urlunparse

from django.core.exceptions import ImproperlyConfigured

from twin import env, webserver

STOP_TIMEOUT = 10.0  # seconds a process gets to stop after SIGTERM before its whole group is killed
READY_TIMEOUT = 120.0  # seconds the web gets to answer on its port
RESTART_DELAY = 1.0  # seconds before a child that died is started again; doubles at each death in a row ...
RESTART_DELAY_MAX = 60.0  # ... up to this
RESTART_RESET = 60.0  # a child that ran this long before dying starts again after RESTART_DELAY
MANAGE_PY = str(env.BASE_DIR / "manage.py")
ADMIN_PASSWORD_FILE = env.VAR_DIR / "admin-password"  # written by manage.py ensure_admin


def _port_from_env() -> int:
    raw = os.environ.get("TWIN_PORT", "8000")
    try:
        port = int(raw)
    except ValueError:
        raise env.SettingError("TWIN_PORT", f"{raw!r} is not a port number") from None
    if not 0 < port < 65536:
        raise env.SettingError("TWIN_PORT", f"{port} is not between 1 and 65535")
    return port


def _connect_host(host: str) -> str:
    """Where to knock to see whether a server bound to ``host`` answers."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def _url_host(host: str) -> str:
    host = _connect_host(host)
    return f"[{host}]" if ":" in host else host


def _redact(url: str) -> str:
    """The URL with its password (if any) hidden, for printing."""
    parsed = urlparse(url)
    if parsed.password is None:
        return url
    netloc = parsed.netloc.rsplit("@", 1)
    return urlunparse(parsed._replace(netloc=netloc[0].split(":")[0] + ":***@" + netloc[1]))


def _answers(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _warm_pages(base: str) -> None:
    """Ask the web process once for each cluster's fabric and GPU page data, so that it reads and caches their
    structure now rather than on the first visitor's click (best effort: any failure is left to that visitor)."""
    import json
    import urllib.request
    try:
        with urllib.request.urlopen(f"{base}api/inventory/clusters/?brief=1&limit=1000", timeout=30) as r:
            names = [c["name"] for c in json.load(r)["results"]]
        for name in names:
            for page in ("fabric.json", "gpus.json"):
                with urllib.request.urlopen(f"{base}clusters/{name}/{page}", timeout=60) as r:
                    r.read()
    except Exception:
        pass


def _child_setup() -> None:
    """In the child, before exec: Linux sends it SIGTERM if the launcher dies (even by SIGKILL): no orphans."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


@dataclass
class Child:
    name: str
    title: str
    args: list[str]
    proc: subprocess.Popen | None = None
    reader: threading.Thread | None = field(default=None, repr=False)
    started_at: float = 0.0
    restarts: int = 0
    delay: float = RESTART_DELAY
    restart_at: float | None = None     # when a child that died is started again

    @property
    def pid(self) -> int:
        return self.proc.pid


class Launcher:
    def __init__(self, host: str, port: int, build: bool, web_workers: int = 1):
        self.host, self.port, self.build, self.web_workers = host, port, build, web_workers
        self.children: list[Child] = []
        self.step: subprocess.Popen | None = None
        self.builder: Child | None = None   # build_cluster --defaults in the background, while it runs
        self.announced: list[str] = []      # default clusters shown as waiting on the overview, until the build ends
        self.redis_handle = None
        self.redis_desc = ""
        self.stop_signal: int | None = None
        self.force = False
        self.out_lock = threading.Lock()
        self.child_env = dict(os.environ)

    # -- output --------------------------------------------------------------------------------------------------
    def say(self, line: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        with self.out_lock:
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):
                pass

    def _pump(self, child: Child) -> None:
        prefix = f"{child.name:<6} | "
        for raw in iter(child.proc.stdout.readline, b""):
            self.say(prefix + raw.decode(errors="replace").rstrip())
        child.proc.stdout.close()

    # -- signals -------------------------------------------------------------------------------------------------
    def on_signal(self, signum: int, frame) -> None:
        """Note the signal. The line is written straight to the file descriptor, not through ``say``: the handler runs
        in the main thread between two of its bytecodes, maybe inside ``say`` holding ``out_lock``, which it would wait
        for forever (seen: a Ctrl-C just after a line of the launcher's own hung it)."""
        if self.stop_signal is None:
            self.stop_signal = signum
            try:
                os.write(sys.stdout.fileno(),
                         f"\ntwin: {signal.Signals(signum).name} received, stopping (again to kill at once)\n".encode())
            except (OSError, ValueError, AttributeError):
                pass
        else:
            self.force = True

    # -- steps ---------------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Settings, database, free HTTP port, Redis: any problem is a SettingError naming the variable. What needs
        only the settings is checked before Django loads the apps (seconds of CPU), so that a bad value is said at
        once; the embedded Redis is started after that load, so that nothing is started when it fails."""
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
        import django
        from django.conf import settings
        from django.db import connections

        settings.INSTALLED_APPS     # noqa: B018 - reads the settings module: a bad value is a SettingError here
        env.check_database()
        connections.close_all()
        if _answers(_connect_host(self.host), self.port):
            raise env.SettingError("TWIN_PORT", f"{self.host}:{self.port} is already in use "
                                                f"(stop what runs there, or pick another port with --port)")
        if os.environ.get("REDIS_URL"):
            env.check_redis(settings.REDIS_URL)
            self.redis_desc = f"external {_redact(settings.REDIS_URL)}"
        django.setup()
        if not os.environ.get("REDIS_URL"):
            from twin.redis_server import ensure_redis

            url, self.redis_handle = ensure_redis()
            env.check_redis(url)
            self.child_env["REDIS_URL"] = os.environ["REDIS_URL"] = url
            self.redis_desc = (f"pid {self.redis_handle.pid:<7} embedded {url}" if self.redis_handle
                               else f"reused {url} (a Redis that was already running)")
        self.child_env["DJANGO_SETTINGS_MODULE"] = os.environ["DJANGO_SETTINGS_MODULE"]
        self.child_env["PYTHONUNBUFFERED"] = "1"

    def run_step(self, name: str, args: list[str]) -> int:
        """A one-shot command with its output straight on the terminal (progress bars); stoppable by a signal."""
        self.say(f"twin: {name}")
        self.step = subprocess.Popen(args, cwd=env.BASE_DIR, env=self.child_env, stdin=subprocess.DEVNULL,
                                     start_new_session=True, preexec_fn=_child_setup)
        try:
            interrupted = False
            while True:
                try:
                    return self.step.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
                if self.stop_signal and not interrupted:
                    interrupted = True  # Django commands roll back their transaction on KeyboardInterrupt
                    self.step.send_signal(signal.SIGINT)
                    self._stop_group([Child(name, name, args, self.step)], first=None)
        finally:
            self.step = None

    def migrations_pending(self) -> bool:
        """Whether a migration is not applied yet (read in this process: a second start skips ``migrate``'s own
        Django start); when that cannot be told, True, and ``migrate`` says what is wrong."""
        from django.db import connections
        from django.db.migrations.executor import MigrationExecutor
        try:
            executor = MigrationExecutor(connections["default"])
            return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))
        except Exception:       # noqa: BLE001 - migrate itself reports it
            return True
        finally:
            connections.close_all()

    def ensure_admin(self) -> bool:
        """``manage.py ensure_admin`` in this process (a query once a superuser exists); whether it went well."""
        from django.core.management import call_command
        from django.db import connections
        try:
            call_command("ensure_admin")
            return True
        except Exception as e:     # noqa: BLE001 - said in one line, as a failed step is
            self.say(f"twin: ensure_admin failed: {e}", err=True)
            return False
        finally:
            connections.close_all()

    def absent_defaults(self) -> list[str]:
        """The default clusters (TWIN_DEFAULT_CLUSTERS) not built yet, announced as waiting on the overview page; a
        name that is no spec is kept, for ``build_cluster`` to refuse it."""
        from django.conf import settings
        from django.db import connections

        from sim.core.errors import SpecError
        from sim.fabric.spec import load_spec
        from twin.inventory import build_status
        from twin.inventory.models import Cluster
        names = []
        for given in settings.TWIN_DEFAULT_CLUSTERS:
            try:
                names.append(load_spec(given).name)
            except SpecError:
                names.append(given)
        try:
            have = set(Cluster.objects.filter(name__in=names).values_list("name", flat=True))
        finally:
            connections.close_all()
        self.announced = [n for n in names if n not in have]
        for name in self.announced:
            build_status.report(name, build_status.WAITING)
        return self.announced

    def unannounce(self) -> None:
        """The overview no longer shows as waiting what the build did not get to (it stopped, failed or never
        started)."""
        if self.announced:
            from twin.inventory import build_status
            build_status.finished(*self.announced)
            self.announced = []

    def start_web(self) -> None:
        py = sys.executable
        if self.web_workers > 1:
            title, args = (f"uvicorn on {self.host}:{self.port}, {self.web_workers} workers",
                           webserver.command(self.host, self.port, self.web_workers))
        else:
            title, args = (f"daphne on {self.host}:{self.port}",
                           [py, "-m", "daphne", "-b", self.host, "-p", str(self.port), "twin.asgi:application"])
        self.children = [Child("web", title, args)]
        self._spawn(self.children[0])

    def start_celery(self) -> None:
        """The worker and beat, started once the web answers."""
        py = sys.executable
        for name, title, args in [
            ("worker", "celery worker, concurrency 2",
             [py, "-m", "celery", "-A", "twin", "worker", "-l", "info", "--concurrency", "2"]),
            ("beat", "celery beat", [py, "-m", "celery", "-A", "twin", "beat", "-l", "info"]),
        ]:
            self.children.append(Child(name, title, args))
            self._spawn(self.children[-1])

    def start_build(self, names: list[str]) -> None:
        """``manage.py build_cluster --defaults`` in the background (one line per cluster; the bar is the overview
        page's); never restarted: a failure is said and the twin serves on."""
        self.builder = Child("build", f"building {', '.join(names)} (progress on the overview page)",
                             [sys.executable, MANAGE_PY, "build_cluster", "--defaults", "--no-progress"])
        self._spawn(self.builder)

    def _watch_build(self, url: str) -> None:
        code = self.builder.proc.poll()
        if code is None:
            return
        self.builder.reader.join(timeout=2)
        if code == 0:
            self.say(f"twin: default clusters built in {time.monotonic() - self.builder.started_at:.1f} s")
        else:
            self.say(f"twin: build_cluster --defaults failed (exit code {code}); the twin serves on without them "
                     f"(see above; build them with: python manage.py build_cluster <preset>)", err=True)
        self.builder = None
        self.unannounce()
        threading.Thread(target=_warm_pages, name="warm-pages", daemon=True, args=(url,)).start()

    def _spawn(self, child: Child) -> None:
        """Start ``child`` in its own session with its output pumped, prefixed by its name."""
        child.proc = subprocess.Popen(child.args, cwd=env.BASE_DIR, env=self.child_env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                      preexec_fn=_child_setup)
        child.started_at, child.restart_at = time.monotonic(), None
        child.reader = threading.Thread(target=self._pump, args=(child,), name=f"pump-{child.name}", daemon=True)
        child.reader.start()

    def _watch(self, child: Child) -> None:
        """Restart ``child`` if it died, after its back-off; say what happened."""
        now = time.monotonic()
        if child.restart_at is None:
            code = child.proc.poll()
            if code is None:
                return
            try:
                os.killpg(child.pid, signal.SIGKILL)       # what it left in its group (Celery pool processes)
            except (ProcessLookupError, PermissionError):
                pass
            if now - child.started_at >= RESTART_RESET:
                child.delay = RESTART_DELAY
            child.restart_at = now + child.delay
            self.say(f"twin: {child.name} ({child.title}) exited with code {code}; restarting it in "
                     f"{child.delay:.0f} s", err=True)
            child.delay = min(child.delay * 2, RESTART_DELAY_MAX)
        elif now >= child.restart_at:
            child.restarts += 1
            self._spawn(child)
            self.say(f"twin: {child.name} restarted (pid {child.pid}, restart {child.restarts})")

    def supervise(self, to_build: list[str] = ()) -> int:
        url = f"http://{_url_host(self.host)}:{self.port}/"
        started, ready = time.monotonic(), False
        while not self.stop_signal:
            for child in self.children:
                self._watch(child)
            if self.builder is not None:
                self._watch_build(url)
            if not ready:
                if _answers(_connect_host(self.host), self.port):
                    ready = True
                    self.start_celery()
                    if to_build:
                        self.start_build(list(to_build))
                    else:
                        threading.Thread(target=_warm_pages, name="warm-pages", daemon=True, args=(url,)).start()
                    lines = ["", f"Twin running at {url}"]
                    lines += [f"  {c.name:<7} pid {c.pid:<7} {c.title}" for c in self.children]
                    if self.builder is not None:
                        lines += [f"  {'build':<7} pid {self.builder.pid:<7} {self.builder.title}"]
                    lines += [f"  {'redis':<7} {self.redis_desc}"]
                    if ADMIN_PASSWORD_FILE.exists():
                        lines.append(f"  log in as admin, password in {ADMIN_PASSWORD_FILE}")
                    lines += ["Press Ctrl-C to stop.", ""]
                    self.say("\n".join(lines))
                elif time.monotonic() - started > READY_TIMEOUT:
                    self.say(f"twin: web did not answer on {url} within {READY_TIMEOUT:.0f} s; stopping", err=True)
                    return 1
            time.sleep(0.2)
        return 0

    # -- stopping ------------------------------------------------------------------------------------------------
    def _stop_group(self, children: list[Child], first: int | None = signal.SIGTERM) -> None:
        """Send ``first`` to each leader, wait up to STOP_TIMEOUT, SIGKILL the groups of those still there."""
        for child in children:
            if first is not None and child.proc.poll() is None:
                try:
                    child.proc.send_signal(first)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline and not self.force and any(c.proc.poll() is None for c in children):
            time.sleep(0.1)
        for child in children:
            if child.proc.poll() is None:
                self.say(f"twin: {child.name} did not stop within {STOP_TIMEOUT:.0f} s; killing it", err=True)
            # Also sweeps what the leader left in its group (e.g. Celery pool processes).
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            child.proc.wait()

    def shutdown(self) -> None:
        if self.builder is not None:           # SIGINT: the build's transaction rolls back
            self._stop_group([self.builder], first=signal.SIGINT)
            self.say(f"twin: stopped build ({self.builder.proc.returncode}); what it had not finished is not kept")
            self.builder = None
        self.unannounce()
        if self.children:
            self._stop_group(self.children)
            for child in self.children:
                if child.reader:
                    child.reader.join(timeout=2)
            self.say("twin: stopped " + ", ".join(f"{c.name} ({c.proc.returncode})" for c in self.children))
            self.children = []
        if self.redis_handle:
            self.redis_handle.stop()
            self.redis_handle = None

    def run(self) -> int:
        self.check()
        if self.migrations_pending():
            code = self.run_step("migrate", [sys.executable, MANAGE_PY, "migrate", "--noinput"])
            if self.stop_signal:
                return 0
            if code != 0:
                self.say(f"twin: migrate failed (exit code {code})", err=True)
                return 1
        else:
            self.say("twin: migrate: the database is up to date")
        if self.stop_signal:
            return 0
        if not self.ensure_admin():
            return 1
        to_build = self.absent_defaults() if self.build else []
        if self.stop_signal:
            return 0
        self.start_web()
        return self.supervise(to_build)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m twin.launcher", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=os.environ.get("TWIN_HOST") or "127.0.0.1",
                        help="address to serve on (env TWIN_HOST; default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port to serve on (env TWIN_PORT; default 8000)")
    parser.add_argument("--no-build", action="store_true", help="skip `manage.py build_cluster --defaults`")
    args = parser.parse_args(argv)

    os.umask(0o077)     # what the twin writes (database, logs, Redis' files) is its owner's alone
    launcher = None
    try:
        port = args.port if args.port is not None else _port_from_env()
        if not 0 < port < 65536:
            raise env.SettingError("TWIN_PORT", f"{port} is not between 1 and 65535")
        launcher = Launcher(args.host, port, build=not args.no_build, web_workers=webserver.workers(default=1))
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, launcher.on_signal)
        return launcher.run()
    except env.SettingError as e:
        print(f"twin: {e}", file=sys.stderr)
        return 2
    except ImproperlyConfigured as e:
        print(f"twin: settings: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    finally:
        if launcher:
            launcher.shutdown()


if __name__ == "__main__":
    sys.exit(main())
