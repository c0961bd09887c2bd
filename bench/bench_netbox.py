"""Benchmark: a cluster written into a real NetBox and read back; where the time goes, twin side against NetBox side.

    .venv/bin/python bench/bench_netbox.py                          # demo-256, a NetBox of its own (tests/netbox/env)
    .venv/bin/python bench/bench_netbox.py --preset meta-roce-24k   # hours of NetBox time: run it in the background
    .venv/bin/python bench/bench_netbox.py --url URL --token T      # an existing NetBox (its site is overwritten)

Steps, each timed: build the cluster into a fresh SQLite database, the first export, a second export of the unchanged
cluster (reads only), an import into a new cluster, and the engine's collective on both clusters (equal results:
the round trip's check). For each step: wall time, the NetBox side (wall time waiting for NetBox, per endpoint and
method: ``nb.by_endpoint``) and the twin side (the rest: reading the inventory, building payloads, inferring and
building the cluster). Issue 28's budget: the twin side at most 10 % of an export and of an import of meta-roce-24k.
Needs REDIS_URL's db for the NetBox it starts (NetBox's own keys): use your own db number.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _setup(tmp: str) -> None:
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
    os.environ.setdefault("TWIN_VAR_DIR", tmp)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", "--noinput", verbosity=0)


def _split(label: str, wall: float, nb, before: dict[str, float], top: int) -> None:
    by = {k: v - before.get(k, 0.0) for k, v in nb.by_endpoint.items()}
    netbox = sum(by.values())
    print(f"{label:<28} {wall:>9.1f} s   NetBox {netbox:>9.1f} s   twin {wall - netbox:>8.1f} s "
          f"({100 * (wall - netbox) / wall:4.1f} %)", flush=True)
    for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
        if v >= 0.05:
            print(f"    {k:<40} {v:>9.1f} s")


class _Steps:
    """A progress callback printing, as each kind of object is done, its count, the wall time since the step began
    and the NetBox side so far: a long run's rates per kind, even if it is stopped before the end."""

    def __init__(self, nb, t0: float):
        self.nb, self.t0, self.what, self.n = nb, t0, None, 0

    def __call__(self, what: str, n: int) -> None:
        if what != self.what:
            self.print()
            self.what, self.n = what, 0
        self.n += n
        if self.n % 20000 < n:
            self.print()

    def print(self):
        if self.what:
            print(f"    ... {self.what}: {self.n:,} at {time.perf_counter() - self.t0:8.1f} s "
                  f"(NetBox so far {self.nb.seconds:8.1f} s)", flush=True)


def _null_netbox(parallel: int):
    """A NetBox that answers at once (an empty site; every object created gets the next id): an export against it
    costs the twin side only, which is how ``--twin-only`` measures it on clusters whose real export takes hours."""
    from twin.inventory.netbox.client import NetBox

    class NullNetBox(NetBox):
        def __init__(self):
            super().__init__("http://null.invalid", "x", parallel=parallel)
            self.next_id = 0

        def _call(self, method, path, **kw):
            if method == "GET":
                return {"count": 0, "next": None, "results": [], "netbox-version": "null"}
            body = kw.get("json") or []
            out = []
            for o in body:
                self.next_id += 1
                out.append({**o, "id": self.next_id})
            return out

    return NullNetBox()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="demo-256")
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--parallel", type=int, default=None, help="bulk requests in flight (client.PARALLEL)")
    p.add_argument("--top", type=int, default=8, help="endpoints listed per step")
    p.add_argument("--no-check", action="store_true", help="skip the collective on both clusters")
    p.add_argument("--steps", action="store_true", help="print each kind of object as it is done (long runs)")
    p.add_argument("--twin-only", action="store_true",
                   help="the export's twin side alone: a first export into a NetBox that answers at once")
    args = p.parse_args()
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        _setup(tmp)
        from django.core.management import call_command

        from twin.inventory.models import Cluster
        from twin.inventory.netbox.client import PARALLEL, NetBox
        from twin.inventory.netbox.export import export_cluster
        from twin.inventory.netbox.importer import import_site
        if args.twin_only:
            call_command("build_cluster", args.preset, "--no-progress", stdout=open(os.devnull, "w"))
            nb = _null_netbox(args.parallel or PARALLEL)
            t0 = time.perf_counter()
            r = export_cluster(Cluster.objects.get(name=args.preset), nb)
            print(f"{args.preset}: first export's twin side {time.perf_counter() - t0:.1f} s "
                  f"({sum(r.created.values()):,} objects: {json.dumps(r.created)})")
            return 0
        if args.url:
            url, token = args.url, args.token
        else:
            from tests.netbox import env
            server = env.serve(f"netbox_bench_{os.getpid()}")
            url, token = server.url, server.token
        try:
            parallel = args.parallel or PARALLEL
            print(f"{args.preset} through NetBox at {url} ({parallel} requests in flight)", flush=True)
            t0 = time.perf_counter()
            call_command("build_cluster", args.preset, "--no-progress", stdout=open(os.devnull, "w"))
            print(f"{'build_cluster':<28} {time.perf_counter() - t0:>9.1f} s", flush=True)
            cluster = Cluster.objects.get(name=args.preset)
            nb = NetBox(url, token, parallel=parallel)
            for label in ("first export", "second export (unchanged)"):
                before, t0 = dict(nb.by_endpoint), time.perf_counter()
                r = export_cluster(cluster, nb, _Steps(nb, t0) if args.steps else None)
                _split(label, time.perf_counter() - t0, nb, before, args.top)
                print(f"    created {json.dumps(r.created)}; updated {json.dumps(r.updated)}", flush=True)
            before, t0 = dict(nb.by_endpoint), time.perf_counter()
            r = import_site(nb, args.preset, "nb-import", progress=_Steps(nb, t0) if args.steps else None)
            _split("import (new cluster)", time.perf_counter() - t0, nb, before, args.top)
            if not args.no_check:
                from tests.netbox.checks import collective_result
                t0 = time.perf_counter()
                same = collective_result(cluster) == collective_result(Cluster.objects.get(name="nb-import"))
                print(f"{'collective on both':<28} {time.perf_counter() - t0:>9.1f} s   equal: {same}", flush=True)
                if not same:
                    return 1
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
