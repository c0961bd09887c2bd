"""Benchmark: the web tier under load, on loopback, run as the team set-up runs it but without Docker.

    .venv/bin/python bench/bench_load.py [--web split|uvicorn|daphne] [--workers N] [--quick] [--idle-seconds 300]

Starts PostgreSQL's database ``twin_bench_load`` (created when absent; ``--database-url``), the machine's Redis on
database 9 (``--redis-url``; a Celery queue and live keys of its own), the web as docker-compose.yml runs it
(``--web split``: ``python -m twin.webserver --serve http``, gunicorn, for HTTP and ``--serve websockets``, uvicorn,
for the WebSockets, each with TWIN_WEB_WORKERS processes, as the proxy splits them; ``--web uvicorn``: one uvicorn
set for both, as ``scripts/run`` with TWIN_WEB_WORKERS above 1; ``--web daphne``: one daphne process, as
``scripts/run``) and a Celery worker; builds meta-roce-24k once (kept for the next run). Then, each loop bounded in
time:

1. ``GET /api/inventory/gpus/?limit=100``, 32 connections for ``--seconds`` (wrk): requests/s, p50/p99, errors
   (budget: >= 120 req/s, p99 <= 300 ms, 0 errors);
2. ``/healthz`` asked every 20 ms (one client) while 8 clients download the backend fabric's DOT export in a loop
   (wrk), gzip accepted and not (budget: p99 < 50 ms); idle first, for comparison;
3. 100 WebSocket clients on the cluster stream (``?index=0``) while ``--runs`` collective runs started through the
   API execute: every client must receive every run's final frame; then ``--idle-seconds`` of silence, after which
   one more run's final frame must reach every client (none dropped).

The load generator is wrk (Debian's ``apt-get install wrk``; the bench stops and says so when it is missing): one
thread in C, so the server keeps the CPU. The WebSocket clients are asyncio in this process (bench/bench_live.py's).
Prints a table of each figure against its budget. ``--quick``: a smoke run of about a minute.
"""
import argparse
import asyncio
import http.client
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_live import WS, wait_port  # noqa: E402  (the minimal WebSocket client)

from twin.redis_server import free_port  # noqa: E402

CLUSTER = "meta-roce-24k"
GPUS_URL = "/api/inventory/gpus/?limit=100"
GPUS_CLIENTS = 32
DOT_CLIENTS = 8
HEALTH_EVERY = 0.02         # seconds between two /healthz probes
RUN_PARAMS = {"collective": "allgather", "gpus": 256, "sizes": "1M:64M"}
RUN_TIMEOUT = 300.0         # seconds a run may take before the bench gives up on it
FINAL_WAIT = 20.0           # seconds the clients get to receive a final frame after its run ended in the database


def run(args, env, **kw):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True, **kw)


def create_database(url: str) -> None:
    """CREATE DATABASE for ``url`` when it does not exist (through the server's ``postgres`` database)."""
    import psycopg
    from urllib.parse import urlparse, urlunparse
    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    with psycopg.connect(urlunparse(parsed._replace(path="/postgres")), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
            print(f"created database {name}")


class Servers:
    """The web (as compose runs it, or daphne) and a Celery worker, each a child in its own session with a log."""

    def __init__(self, env, tmp: Path, web: str, http_port: int, ws_port: int):
        self.env, self.tmp, self.procs = env, tmp, []
        from twin.webserver import command
        if web == "daphne":
            self.start("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(http_port),
                               "twin.asgi:application"])
        elif web == "uvicorn":
            self.start("web", command("127.0.0.1", http_port))
        else:
            self.start("web", command("127.0.0.1", http_port, serve="http"))
            self.start("live", command("127.0.0.1", ws_port, serve="websockets"))
        for (_, proc, _), port in zip(self.procs, (http_port, ws_port)):
            wait_port(port, proc, timeout=60)
        self.start("worker", [sys.executable, "-m", "celery", "-A", "twin", "worker", "-l", "warning"])

    def start(self, name, cmd):
        log = open(self.tmp / f"{name}.log", "w")
        self.procs.append((name, subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                                  start_new_session=True), log))

    def stop(self):
        import signal
        for name, proc, log in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)     # what it left in its group (uvicorn's, Celery's children)
            except ProcessLookupError:
                pass
            proc.wait()
            log.close()


# -- HTTP load --------------------------------------------------------------------------------------------------

def wrk(url: str, connections: int, seconds: float, headers=()) -> dict:
    """wrk's figures: requests/s, p50 and p99 in ms, errors (socket errors, non-2xx/3xx), requests done."""
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s"]
    for h in headers:
        cmd += ["-H", h]
    out = subprocess.run(cmd + [url], capture_output=True, text=True, check=True).stdout

    def ms(label):
        m = re.search(rf"^\s+{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)] if m else float("nan")

    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", out):
        errors += int(m.group(1))
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50": ms("50"), "p99": ms("99"),
            "errors": errors, "requests": int(re.search(r"(\d+) requests in", out).group(1)), "raw": out}


def probe_health(port: int, seconds: float) -> list[float]:
    """``/healthz`` latencies in ms, one request every HEALTH_EVERY s on a kept-alive connection, for ``seconds``."""
    conn, lat = http.client.HTTPConnection("127.0.0.1", port, timeout=10), []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        lat.append((time.perf_counter() - t0) * 1000)
        assert response.status == 200, response.status
        time.sleep(HEALTH_EVERY)
    conn.close()
    return lat


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98] if len(values) >= 2 else float("nan")


def health_under_downloads(port: int, dot_url: str, seconds: float, gzip: bool) -> dict:
    """/healthz latencies while DOT_CLIENTS clients download ``dot_url`` over and over."""
    headers = ["Accept-Encoding: gzip"] if gzip else []
    cmd_seconds = seconds + 2       # wrk runs a little longer than the probe, which starts after wrk does
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        load = pool.submit(wrk, dot_url, DOT_CLIENTS, cmd_seconds, headers)
        time.sleep(1.0)
        lat = probe_health(port, seconds)
        downloads = load.result()
    return {"p50": statistics.median(lat), "p99": p99(lat), "max": max(lat), "probes": len(lat),
            "downloads_per_s": downloads["rps"], "errors": downloads["errors"]}


# -- WebSockets -------------------------------------------------------------------------------------------------

class Listener:
    """One WebSocket client on the cluster stream: the run ids of the final frames it received, and whether its
    connection ended."""

    def __init__(self, port: int):
        self.port, self.finals, self.closed = port, set(), None

    async def start(self):
        self.ws = await WS.connect(self.port, f"/ws/clusters/{CLUSTER}/?index=0")
        op, data = await self.ws.recv()
        assert op == 1 and json.loads(data)["type"] == "meta", data[:200]
        self.task = asyncio.create_task(self.loop())

    async def loop(self):
        from twin.live import frames
        try:
            while True:
                op, data = await self.ws.recv()
                if op == 8:
                    self.closed = f"closed by the server {data[:2].hex()}"
                    return
                if op == 2:
                    frame = frames.decode(data)
                    if frame.final:
                        self.finals.add(frame.run_id)
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            self.closed = repr(e)

    async def stop(self):
        self.task.cancel()
        await self.ws.close()


def api(port: int, token: str, method: str, path: str, body=None) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Token {token}", "Content-Type": "application/json",
                                              "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


async def runs_reach_everyone(port, token, listeners, n_runs) -> dict:
    """Start ``n_runs`` runs through the API, wait for them to end; how many clients got every final frame."""
    loop = asyncio.get_running_loop()
    ids = []
    for _ in range(n_runs):
        made = await loop.run_in_executor(None, api, port, token, "POST", "/api/runs/",
                                          {"kind": "collective", "cluster": CLUSTER, "params": RUN_PARAMS})
        ids.append(made["id"])
    t0 = time.monotonic()
    statuses = {}
    while time.monotonic() - t0 < RUN_TIMEOUT:
        for run_id in ids:
            if run_id not in statuses:
                row = await loop.run_in_executor(None, api, port, token, "GET", f"/api/runs/{run_id}/")
                if row["status"] in ("succeeded", "failed", "cancelled"):
                    statuses[run_id] = row["status"]
        if len(statuses) == len(ids):
            break
        await asyncio.sleep(0.5)
    ended = time.monotonic()
    while time.monotonic() - ended < FINAL_WAIT and not all(set(ids) <= c.finals for c in listeners):
        await asyncio.sleep(0.1)
    return {"runs": ids, "statuses": statuses, "seconds": ended - t0,
            "complete": sum(set(ids) <= c.finals for c in listeners)}


async def websockets(port, ws_port, token, n_clients, n_runs, idle_seconds) -> dict:
    """The clients on ``ws_port``; the runs started and followed through the API on ``port``."""
    listeners = [Listener(ws_port) for _ in range(n_clients)]
    for i in range(0, n_clients, 20):          # in waves, as browsers arrive
        await asyncio.gather(*(c.start() for c in listeners[i:i + 20]))
    during = await runs_reach_everyone(port, token, listeners, n_runs)
    await asyncio.sleep(idle_seconds)
    dropped = [c.closed for c in listeners if c.closed]
    after = await runs_reach_everyone(port, token, listeners, 1)
    await asyncio.gather(*(c.stop() for c in listeners), return_exceptions=True)
    return {"during": during, "dropped": dropped, "after": after}


# -- the benchmark ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--web", choices=("split", "uvicorn", "daphne"), default="split",
                    help="split: HTTP on gunicorn and WebSockets on uvicorn, as compose runs them; uvicorn: both on "
                         "uvicorn processes; daphne: one daphne process")
    ap.add_argument("--workers", type=int, default=None,
                    help="TWIN_WEB_WORKERS (default: the compose default, the CPU count)")
    ap.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/twin_bench_load")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each HTTP phase")
    ap.add_argument("--clients", type=int, default=100, help="WebSocket clients")
    ap.add_argument("--runs", type=int, default=3, help="collective runs started while the clients listen")
    ap.add_argument("--idle-seconds", type=float, default=300.0, help="silence the clients must survive")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 5 s phases, 1 run, 10 s idle")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.runs, args.idle_seconds = 5.0, 1, 10.0
    if not shutil.which("wrk"):
        sys.exit("bench_load: wrk is missing; install it with `apt-get install wrk` (Debian)")

    tmp = Path(tempfile.mkdtemp(prefix="bench_load_"))
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "TWIN_WEB_WORKERS")}
    env.update(DATABASE_URL=args.database_url, REDIS_URL=args.redis_url, DJANGO_SETTINGS_MODULE="twin.settings",
               SECRET_KEY=secrets.token_urlsafe(50), TWIN_VAR_DIR=str(tmp / "var"), PYTHONUNBUFFERED="1",
               TWIN_CELERY_QUEUE="bench-load", TWIN_LIVE_KEY_PREFIX="twin:bench-load:",
               ALLOWED_HOSTS="127.0.0.1,localhost",
               # every client of the bench comes from one address: the throttle still counts each call (its cost is
               # measured) but must not refuse the load the budgets are about
               TWIN_API_RATE_ANON="100000000/min", TWIN_API_RATE_USER="100000000/min")
    if args.workers is not None:
        env["TWIN_WEB_WORKERS"] = str(args.workers)
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY",
                                            "TWIN_VAR_DIR", "TWIN_CELERY_QUEUE", "TWIN_LIVE_KEY_PREFIX")})
    started = time.monotonic()
    create_database(args.database_url)
    run(["manage.py", "migrate", "--noinput", "-v", "0"], env)

    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from twin.inventory.choices import FabricRole
    from twin.inventory.models import Cluster, Fabric
    if not Cluster.objects.filter(name=CLUSTER).exists():
        call_command("build_cluster", CLUSTER, "--no-progress")
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    fabric = Fabric.objects.get(cluster__name=CLUSTER, role=FabricRole.BACKEND)
    token = run(["manage.py", "create_api_token", "bench-load", "--create", "--write"], env,
                capture_output=True, text=True).stdout.strip()
    connection.close()

    if args.web == "daphne":
        n_web = 1
    else:
        from twin.webserver import default_workers
        n_web = args.workers or default_workers("http" if args.web == "split" else "both")
    port = free_port()
    ws_port = free_port() if args.web == "split" else port
    base = f"http://127.0.0.1:{port}"
    servers = Servers(env, tmp, args.web, port, ws_port)
    try:
        for path in (GPUS_URL, f"/api/inventory/fabrics/{fabric.id}/dot/"):   # each process's first render
            for _ in range(2 * n_web):
                urllib.request.urlopen(base + path, timeout=120).read()
        gpus = wrk(base + GPUS_URL, GPUS_CLIENTS, args.seconds, ["Accept: application/json"])
        idle = probe_health(port, min(args.seconds, 5.0))
        dot_url = f"{base}/api/inventory/fabrics/{fabric.id}/dot/"
        dot_gz = health_under_downloads(port, dot_url, args.seconds, gzip=True)
        dot_plain = health_under_downloads(port, dot_url, args.seconds, gzip=False)
        live = asyncio.run(websockets(port, ws_port, token, args.clients, args.runs, args.idle_seconds))
    finally:
        servers.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    from twin.webserver import default_workers, threads
    web = {"daphne": "one daphne process",
           "uvicorn": f"python -m twin.webserver, {n_web} uvicorn processes",
           "split": f"python -m twin.webserver: HTTP {n_web} gunicorn processes of {threads()} thread(s), "
                    f"WebSockets {args.workers or default_workers('websockets')} uvicorn processes"}[args.web]
    print(f"\nweb: {web}; PostgreSQL {args.database_url.rsplit('/', 1)[-1]}; {len(os.sched_getaffinity(0))} CPUs; "
          f"HTTP phases {args.seconds:g} s; whole run {time.monotonic() - started:.0f} s")
    rows = [
        (f"gpus?limit=100, {GPUS_CLIENTS} clients: requests/s", f"{gpus['rps']:.0f}", ">= 120", gpus["rps"] >= 120),
        ("  p50 ms", f"{gpus['p50']:.0f}", "", None),
        ("  p99 ms", f"{gpus['p99']:.0f}", "<= 300", gpus["p99"] <= 300),
        ("  errors", f"{gpus['errors']}", "0", gpus["errors"] == 0),
        ("/healthz p99 ms, idle", f"{p99(idle):.1f}", "", None),
    ]
    for label, d in (("gzip", dot_gz), ("plain", dot_plain)):
        rows += [(f"/healthz p99 ms, {DOT_CLIENTS} DOT downloads ({label})", f"{d['p99']:.1f}", "< 50",
                  d["p99"] < 50),
                 ("  DOT downloads/s; /healthz max ms", f"{d['downloads_per_s']:.1f}; {d['max']:.0f}", "", None)]
    during, after = live["during"], live["after"]
    rows += [
        (f"WS clients with every final frame ({len(during['runs'])} runs)",
         f"{during['complete']}/{args.clients}", f"{args.clients}/{args.clients}", during["complete"] == args.clients),
        ("  runs: status, seconds", f"{','.join(sorted(set(during['statuses'].values())))}, {during['seconds']:.0f}",
         "", None),
        (f"WS clients dropped while idle {args.idle_seconds:g} s", f"{len(live['dropped'])}", "0",
         not live["dropped"]),
        ("WS clients with the next run's final frame", f"{after['complete']}/{args.clients}",
         f"{args.clients}/{args.clients}", after["complete"] == args.clients),
    ]
    print(f"{'figure':<52} {'measured':>14} {'budget':>9}")
    for label, value, budget, ok in rows:
        print(f"{label:<52} {value:>14} {budget:>9} {'' if ok is None else ('OK' if ok else 'MISSED')}")
    if live["dropped"]:
        print("dropped:", "; ".join(sorted(set(live["dropped"])))[:300])


if __name__ == "__main__":
    main()
