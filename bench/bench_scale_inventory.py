"""Benchmark: the inventory at roadmap scale (issue 17): build, check, serve and delete a 600k-GPU cluster.

    .venv/bin/python bench/bench_scale_inventory.py --postgres postgres://postgres@127.0.0.1:5432/postgres
    .venv/bin/python bench/bench_scale_inventory.py --postgres ... --preset roadmap-350k --keep

Creates the PostgreSQL database ``--database`` (default ``twin_bench_scale``) on the server of ``--postgres``,
migrates it, then:
1. builds ``--preset`` with ``manage.py build_cluster`` in a process of its own: wall time and peak RSS of that
   process (``bench_build.build``);
2. runs ``manage.py check_cluster`` on it (wall time; it must find no violation);
3. measures the server time of REST calls in this process (Django's test client, median of ``--repeat``): 1,000-item
   pages deep in the largest tables by offset and by cursor, filtered lists, and the topology endpoints;
4. deletes the cluster (``builder.delete_cluster``, as the API's DELETE does) and times it;
and drops the database (unless ``--keep``). ``--skip-build`` measures 2-4 on a database that holds the cluster already,
``--skip-check`` leaves out 2.
Budgets (issue 17): build at most 5 minutes and 6 GB peak; a 1,000-item page at most 100 ms server time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT), str(BENCH)]

from bench_build import build, postgres_database  # noqa: E402

# The throttle counts every API call in Redis: without a Redis reachable each request waits for a refused connection.
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")

BUILD_SECONDS, BUILD_PEAK_MB, PAGE_MS = 300, 6144, 100


def _manage(args, env) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - start


def _api_cases(cluster) -> list[tuple[str, str, bool]]:
    """(label, URL, is a 1,000-item page held to the page budget)."""
    from twin.inventory.choices import ZoneKind
    from twin.inventory.models import GPU, Link, Port, Switch, Zone

    c = cluster.name
    n_gpus, n_ports, n_links = (m.objects.filter(cluster=cluster).count() for m in (GPU, Port, Link))
    gpu = lambda index: GPU.objects.get(cluster=cluster, index=index)  # noqa: E731
    src, same_zone, far = gpu(0), gpu(100), gpu(n_gpus - 1)
    zone = Zone.objects.filter(cluster=cluster, kind=ZoneKind.COMPUTE).order_by("-id").first()
    leaf = Switch.objects.filter(cluster=cluster, tier=0).order_by("id").first()
    spine = Switch.objects.filter(cluster=cluster, tier=1).order_by("id").first()
    return [
        (f"GPUs, 1,000 at offset {n_gpus - 2000:,}", f"/api/inventory/gpus/?cluster={c}&limit=1000&offset={n_gpus - 2000}", True),
        (f"ports, 1,000 at offset {n_ports - 2000:,}", f"/api/inventory/ports/?cluster={c}&limit=1000&offset={n_ports - 2000}", True),
        (f"links, 1,000 at offset {n_links - 2000:,}", f"/api/inventory/links/?cluster={c}&limit=1000&offset={n_links - 2000}", True),
        ("links, 1,000 by cursor", f"/api/inventory/links/?cluster={c}&limit=1000&pagination=cursor", True),
        ("ports, 1,000, no cluster filter", "/api/inventory/ports/?limit=1000&offset=1000", True),
        ("GPUs of a zone, 1,000", f"/api/inventory/gpus/?zone={zone.name}&limit=1000", True),
        ("links, tier 2, 1,000", f"/api/inventory/links/?cluster={c}&tier=2&limit=1000", True),
        ("links, failed, 1,000", f"/api/inventory/links/?cluster={c}&status=failed&limit=1000", True),
        ("ports of a switch by name", f"/api/inventory/ports/?switch={spine.name}&limit=1000", True),
        ("GPUs, search q=", f"/api/inventory/gpus/?cluster={c}&q={far.name}&limit=1000", True),
        ("switch neighbours (spine)", f"/api/inventory/switches/{spine.id}/neighbors/", False),
        ("switch neighbours (leaf)", f"/api/inventory/switches/{leaf.id}/neighbors/", False),
        ("paths, GPU 0 -> last GPU", f"/api/topology/paths/?src_gpu={src.id}&dst_gpu={far.id}", False),
        ("paths, GPU 0 -> GPU 100", f"/api/topology/paths/?src_gpu={src.id}&dst_gpu={same_zone.id}", False),
        ("cluster summary", f"/api/inventory/clusters/{cluster.id}/summary/", False),
    ]


def _measure_api(cluster, repeat: int) -> list[tuple[str, float, float, int, bool]]:
    """Per case: the first request's time (its list counted), then the median of ``repeat`` more (a count of
    50k rows or more kept: twin/api/counts.py); the CPU time of this process (Django's side, not the database's)
    beside each."""
    from django.test import Client

    client = Client()
    # The process's first request costs ~0.3 s of CPU whatever it asks (Django, DRF and the URL conf initialise
    # lazily), which a running server has paid long before: one 1-row list per endpoint first, which counts none of
    # the lists below.
    start = time.perf_counter()
    for endpoint in ("gpus", "ports", "links", "switches"):
        client.get(f"/api/inventory/{endpoint}/?id=1&limit=1", HTTP_ACCEPT="application/json")
    print(f"  (process warm-up: {(time.perf_counter() - start) * 1000:.0f} ms)", flush=True)
    out = []
    for label, url, page in _api_cases(cluster):
        times, cpu = [], []
        for _ in range(1 + repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.get(url, HTTP_ACCEPT="application/json")
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            if response.status_code != 200:
                sys.exit(f"{url}: HTTP {response.status_code}: {response.content[:300]!r}")
        first, then = times[0] * 1000, statistics.median(times[1:]) * 1000
        out.append((label, first, then, len(response.content), page))
        over = page and max(first, then) > PAGE_MS
        print(f"  {label:<40} {first:>7.1f} ({cpu[0] * 1000:>5.1f}) {then:>7.1f} "
              f"({statistics.median(cpu[1:]) * 1000:>5.1f}) {len(response.content):>11,}"
              + ("  (over budget)" if over else ""), flush=True)
    return out


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432/postgres",
                        help="URL of a database on the PostgreSQL server to create the bench database from")
    parser.add_argument("--database", default="twin_bench_scale", help="name of the database to create (and drop)")
    parser.add_argument("--preset", default="roadmap-600k", help="preset name or spec file")
    parser.add_argument("--repeat", type=int, default=5, help="requests per API case (median)")
    parser.add_argument("--skip-build", action="store_true", help="the database holds the cluster already")
    parser.add_argument("--skip-check", action="store_true", help="do not run check_cluster")
    parser.add_argument("--keep", action="store_true", help="keep the database and the cluster")
    args = parser.parse_args()

    from sim.fabric.spec import load_spec
    name = load_spec(args.preset).name
    var_dir = tempfile.mkdtemp(prefix="bench-scale-")
    if args.skip_build:
        from urllib.parse import urlparse, urlunparse
        url, drop = urlunparse(urlparse(args.postgres)._replace(path=f"/{args.database}")), (lambda: None)
    else:
        url, drop = postgres_database(args.postgres, args.database)
    env = {**os.environ, "DATABASE_URL": url, "TWIN_VAR_DIR": var_dir}
    figures = []
    try:
        if not args.skip_build:
            print(f"building {args.preset} into PostgreSQL {args.database} ...", flush=True)
            seconds, peak = build(args.preset, url, var_dir)
            figures += [("build_cluster, seconds", seconds, BUILD_SECONDS), ("build_cluster, peak RSS MB", peak,
                                                                             BUILD_PEAK_MB)]
            print(f"  {seconds:.1f} s, peak {peak:,.0f} MB", flush=True)
        if not args.skip_check:
            seconds = _manage(["check_cluster", name], env)
            figures.append(("check_cluster, seconds", seconds, None))
            print(f"check_cluster: {seconds:.1f} s, no violations", flush=True)

        os.environ.update(DATABASE_URL=url, TWIN_VAR_DIR=var_dir, DJANGO_SETTINGS_MODULE="twin.settings")
        import django
        django.setup()
        from django.db import connection

        from twin.inventory.builder import delete_cluster
        from twin.inventory.models import Cluster
        cluster = Cluster.objects.get(name=name)
        print(f"API server time, in process: ms of the first request (CPU ms of this process), median ms of "
              f"{args.repeat} more (CPU); bytes. Load average {_load()}", flush=True)
        timed = _measure_api(cluster, args.repeat)
        print(f"load average {_load()}", flush=True)
        figures.append(("slowest 1,000-item page, ms", max(then for _, _, then, _, page in timed if page), PAGE_MS))
        figures.append(("  same, first request", max(first for _, first, _, _, page in timed if page), PAGE_MS))
        if not args.keep:
            start = time.perf_counter()
            delete_cluster(cluster)
            figures.append(("delete_cluster, seconds", time.perf_counter() - start, None))
        connection.close()
    finally:
        if not args.keep:
            drop()
    print(f"\n{'figure':<32} {'measured':>10} {'budget':>8}")
    for label, value, budget in figures:
        verdict = "" if budget is None else ("  ok" if value <= budget else "  MISSED")
        print(f"{label:<32} {value:>10,.1f} {'' if budget is None else f'{budget:,}':>8}{verdict}")


if __name__ == "__main__":
    main()
