"""The team set-up's web services (docker-compose.yml, deploy/Caddyfile): ``python -m twin.webserver --serve http``
(gunicorn, twin.wsgi) answers the pages and the API, ``--serve websockets`` (uvicorn, twin.asgi) the live streams
that the proxy sends it; each stops on SIGTERM with its worker processes."""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from websockets.sync.client import connect as ws_connect

from tests.test_launcher import alive, redis_url  # noqa: F401  (a fixture)
from twin import env
from twin.redis_server import free_port

ROOT = env.BASE_DIR


# Django's start, migrate and the build cost seconds of CPU each: one process does the set-up, once for the module.
SET_UP = ("import django; django.setup(); from django.core.management import call_command; "
          "call_command('migrate', interactive=False, verbosity=0); "
          "call_command('build_cluster', 'demo-256', no_progress=True)")


@pytest.fixture(scope="module")
def twin_env(tmp_path_factory, redis_url):  # noqa: F811
    """A SQLite file with demo-256 built, as the web service's migrate and build leave it."""
    state = tmp_path_factory.mktemp("twin")
    environment = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DEBUG", "TWIN_WEB_WORKERS")}
    environment.update(TWIN_VAR_DIR=str(state / "var"), DATABASE_URL=f"sqlite:///{state / 'twin.sqlite3'}",
                       REDIS_URL=redis_url, PYTHONUNBUFFERED="1", DJANGO_SETTINGS_MODULE="twin.settings")
    subprocess.run([sys.executable, "-c", SET_UP], cwd=ROOT, env=environment, check=True, capture_output=True,
                   timeout=120)
    return environment


def serve(environment, tmp_path, serve_what: str, workers: int):
    port = free_port()
    log = open(tmp_path / f"{serve_what}.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "twin.webserver", "--serve", serve_what, "--host", "127.0.0.1",
                             "--port", str(port), "--workers", str(workers)], cwd=ROOT, env=environment,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while env.port_is_free(port) and time.monotonic() < deadline:
        assert proc.poll() is None, (tmp_path / f"{serve_what}.log").read_text()
        time.sleep(0.2)
    return proc, port


def stop(proc) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    finally:
        if alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


def test_http_on_gunicorn_and_live_streams_on_uvicorn_each_stop_on_sigterm(twin_env, tmp_path):
    # given the two services as compose runs them (one worker process each: under its parent, as several would be;
    # each more is a Django start)
    http, http_port = serve(twin_env, tmp_path, "http", workers=1)
    live, live_port = serve(twin_env, tmp_path, "websockets", workers=1)
    try:
        # then the HTTP service is gunicorn and answers the API and the pages' static files
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/inventory/gpus/?limit=2", timeout=30) as r:
            assert r.headers["Server"].startswith("gunicorn")
            assert len(json.load(r)["results"]) == 2
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/static/js/twin.js", timeout=30) as r:
            assert r.status == 200
        # and the live service streams the cluster (its metadata first)
        with ws_connect(f"ws://127.0.0.1:{live_port}/ws/clusters/demo-256/?index=0", open_timeout=30) as ws:
            meta = json.loads(ws.recv(timeout=30))
        assert meta["type"] == "meta" and meta["cluster"]["name"] == "demo-256"
    finally:
        codes = [stop(http), stop(live)]
    # and SIGTERM stops each with its workers (uvicorn re-raises the signal once it has shut down)
    assert codes[0] == 0 and codes[1] in (0, -signal.SIGTERM)
    assert not alive(http.pid) and not alive(live.pid)


def test_threads_per_http_process_is_a_checked_setting(twin_env):
    result = subprocess.run([sys.executable, "-m", "twin.webserver", "--serve", "http", "--port", str(free_port())],
                            cwd=ROOT, env={**twin_env, "TWIN_WEB_THREADS": "0"}, capture_output=True, text=True,
                            timeout=30)
    assert (result.returncode, result.stderr.strip()) == (2, "twin: TWIN_WEB_THREADS: 0 is below 1")
