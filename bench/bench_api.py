"""Benchmark: REST API server time with meta-roce-24k loaded (median of repeated requests, in-process).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/twin_bench .venv/bin/python bench/bench_api.py

Builds the cluster when absent (then ANALYZE). Prints, for 1,000-item pages of GPUs, ports and links (limit/offset
deep in the table, and cursor), the median server time and SQL query count, and the same for the equal-cost paths
between two GPUs in different zones. Budgets (issue 3): pages at most 150 ms, paths at most 100 ms.
"""
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from twin.inventory.models import GPU, Cluster  # noqa: E402

REPEAT = 15


def measure(client, url):
    times = []
    for _ in range(REPEAT):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url, HTTP_ACCEPT="application/json")
            times.append(time.perf_counter() - start)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return statistics.median(times) * 1000, len(queries), len(response.content)


def main():
    call_command("migrate", "--noinput", verbosity=0)
    if not Cluster.objects.filter(name="meta-roce-24k").exists():
        call_command("build_cluster", "meta-roce-24k", "--no-progress")
    cluster = Cluster.objects.get(name="meta-roce-24k")
    client = Client()
    src = GPU.objects.get(cluster=cluster, index=0)
    dst = GPU.objects.get(cluster=cluster, index=20_000)  # zone 6
    same_zone = GPU.objects.get(cluster=cluster, index=100)
    cases = [
        ("GPUs, 1,000 at offset 20,000", f"/api/inventory/gpus/?cluster={cluster.name}&limit=1000&offset=20000"),
        ("ports, 1,000 at offset 100,000", f"/api/inventory/ports/?cluster={cluster.name}&limit=1000&offset=100000"),
        ("links, 1,000 at offset 50,000", f"/api/inventory/links/?cluster={cluster.name}&limit=1000&offset=50000"),
        ("links, 1,000 by cursor", f"/api/inventory/links/?cluster={cluster.name}&limit=1000&pagination=cursor"),
        ("GPUs, 10 (query count check)", f"/api/inventory/gpus/?cluster={cluster.name}&limit=10"),
        ("paths, GPU 0 -> GPU 20000 (other zone)", f"/api/topology/paths/?src_gpu={src.id}&dst_gpu={dst.id}"),
        ("paths, GPU 0 -> GPU 100 (same zone)", f"/api/topology/paths/?src_gpu={src.id}&dst_gpu={same_zone.id}"),
    ]
    print(f"database: {connection.vendor}; median of {REPEAT} requests")
    print(f"{'request':<42} {'ms':>7} {'queries':>8} {'bytes':>10}")
    for label, url in cases:
        ms, queries, size = measure(client, url)
        print(f"{label:<42} {ms:>7.1f} {queries:>8} {size:>10,}")


if __name__ == "__main__":
    main()
