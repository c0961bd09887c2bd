"""Benchmark: build clusters from scratch into fresh databases; print wall time and peak memory of each build.

    .venv/bin/python bench/bench_build.py                      # meta-roce-24k and roadmap-131k into SQLite
    .venv/bin/python bench/bench_build.py --postgres postgres://postgres@127.0.0.1:5432/postgres
    .venv/bin/python bench/bench_build.py --presets meta-roce-24k meta-ib-24k

Each build runs as its own ``manage.py build_cluster`` process after ``migrate`` into an empty database (a temp
SQLite file, or a PostgreSQL database created and dropped here), so the figures are what a user sees; then the
cluster is deleted in another process. Beside the seconds it prints the rows written a second (the command's own
count and time) and deleted a second: the throughputs of the Clusters page's estimates until a twin has measured its
own cluster runs, ``TWIN_RUNS_BUILD_ROWS_PER_SECOND`` and ``TWIN_RUNS_DELETE_ROWS_PER_SECOND`` (twin/runs/clusters.py).
Budgets (issue 2): meta-roce-24k at most 60 s and 2 GB into SQLite and into PostgreSQL; 100k+ preset 5 minutes.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent


def run(args, env):
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)


DELETE = ("import time; from twin.inventory.builder import delete_cluster; from twin.inventory.models import Cluster; "
          "c = Cluster.objects.get(name={name!r}); t = time.perf_counter(); n = delete_cluster(c).before['rows']; "
          "print('deleted', n, time.perf_counter() - t)")


def build(preset: str, database_url: str, var_dir: str) -> tuple[float, float, float, float]:
    """Seconds and peak RSS (MB) of one build_cluster process into a migrated, empty database; rows written a
    second (the command's own figures) and rows deleted a second (the cluster deleted by another process)."""
    env = {**os.environ, "DATABASE_URL": database_url, "TWIN_VAR_DIR": var_dir}
    run(["migrate", "--noinput", "-v0"], env)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "manage.py", "build_cluster", preset, "--no-progress"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this process's own rusage: its peak resident memory
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"build of {preset} failed:\n{output}")
    built = re.search(r"built ([0-9,]+) rows .* in ([0-9.]+) s", output)
    deleted = subprocess.run([sys.executable, "manage.py", "shell", "-c", DELETE.format(name=preset)], cwd=ROOT,
                             env=env, check=True, capture_output=True, text=True).stdout.split()
    rows, took = int(built[1].replace(",", "")), float(built[2])
    return seconds, usage.ru_maxrss / 1024, rows / took, int(deleted[-2]) / float(deleted[-1])


def postgres_database(admin_url: str, name: str):
    """Create an empty database ``name`` on the server of ``admin_url``; return its URL and a dropper."""
    import psycopg

    def sql(statement):
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(statement)

    sql(f'DROP DATABASE IF EXISTS "{name}"')
    sql(f'CREATE DATABASE "{name}"')
    url = urlunparse(urlparse(admin_url)._replace(path=f"/{name}"))
    return url, lambda: sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["meta-roce-24k", "roadmap-131k"])
    parser.add_argument("--postgres", help="URL of a PostgreSQL server database to create bench databases from")
    parser.add_argument("--no-sqlite", action="store_true")
    args = parser.parse_args()
    print(f"{'preset':<16} {'database':<11} {'seconds':>8} {'peak MB':>8} {'written/s':>10} {'deleted/s':>10}")
    for preset in args.presets:
        targets = [] if args.no_sqlite else ["sqlite"]
        targets += ["postgresql"] if args.postgres else []
        for target in targets:
            with tempfile.TemporaryDirectory() as tmp:
                if target == "sqlite":
                    url, drop = f"sqlite:///{tmp}/bench.sqlite3", (lambda: None)
                else:
                    url, drop = postgres_database(args.postgres, "twin_bench")
                try:
                    seconds, peak, written, deleted = build(preset, url, tmp)
                finally:
                    drop()
            print(f"{preset:<16} {target:<11} {seconds:>8.1f} {peak:>8.0f} {written:>10,.0f} {deleted:>10,.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
