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
    """A NetBox that answers at once, keeping what is written: every object created gets the next id, and a list
    answers the objects of its endpoint shaped as NetBox answers them (nested references, choice values). An export
    and an import against it cost the twin's side only: ``--twin-only`` measures it on clusters whose real export
    takes hours."""
    from collections import defaultdict

    from twin.inventory.netbox.client import NetBox

    def ref(x, **more):
        return {"id": x, **more} if x is not None else None

    def choice(x):
        return {"value": x, "label": x}

    class NullNetBox(NetBox):
        def __init__(self):
            super().__init__("http://null.invalid", "x", parallel=parallel)
            self.next_id, self.made = 0, defaultdict(dict)

        def _shaped(self, endpoint: str, params: dict) -> list[dict]:
            made = self.made
            if endpoint == "dcim/cable-terminations":
                return [{"cable": c["id"], "cable_end": end, "termination_type": t["object_type"],
                         "termination_id": t["object_id"]}
                        for c in made["dcim/cables"].values() for end, side in (("A", "a_terminations"),
                                                                               ("B", "b_terminations"))
                        for t in c[side]]
            out = list(made[endpoint].values())
            if "slug" in params:
                out = [o for o in out if o.get("slug") == params["slug"]]
            roles, items = made["dcim/device-roles"], made["dcim/inventory-item-roles"]
            devices = made["dcim/devices"]
            if endpoint == "dcim/locations":
                out = [{**o, "parent": ref(o.get("parent"))} for o in out]
            elif endpoint == "dcim/racks":
                out = [{**o, "location": ref(o.get("location"))} for o in out]
            elif endpoint == "dcim/devices":
                out = [{**o, "role": ref(o["role"], slug=roles[o["role"]]["slug"]),
                        "device_type": ref(o["device_type"]), "rack": ref(o.get("rack")),
                        "location": ref(o.get("location")), "status": choice(o["status"])} for o in out]
            elif endpoint == "dcim/interfaces":
                if params.get("cabled") == "true":
                    cabled = {t["object_id"] for c in made["dcim/cables"].values()
                              for t in c["a_terminations"] + c["b_terminations"]}
                    out = [o for o in out if o["id"] in cabled]
                out = [{**o, "device": ref(o["device"], name=devices[o["device"]]["name"]),
                        "type": choice(o["type"])} for o in out]
            elif endpoint == "dcim/cables":
                out = [{**o, "status": choice(o["status"])} for o in out]
            elif endpoint == "dcim/inventory-items":
                out = [{**o, "device": ref(o["device"]), "role": ref(o["role"], slug=items[o["role"]]["slug"]),
                        "status": choice(o["status"])} for o in out]
            return out

        def _call(self, method, path, **kw):
            endpoint = path.strip("/")
            if method == "GET":
                if endpoint == "status":
                    return {"netbox-version": "null"}
                out = self._shaped(endpoint, kw.get("params") or {})
                return {"count": len(out), "next": None, "results": out}
            out = []
            for o in kw.get("json") or []:
                self.next_id += 1
                out.append({**o, "id": self.next_id})
                self.made[endpoint][self.next_id] = out[-1]
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
                  f"({sum(r.created.values()):,} objects: {json.dumps(r.created)})", flush=True)
            t0, before = time.perf_counter(), nb.seconds
            import_site(nb, args.preset, "nb-import")
            wall = time.perf_counter() - t0
            print(f"{args.preset}: import's twin side {wall - (nb.seconds - before):.1f} s (of {wall:.1f} s; the "
                  f"rest shaping the lists as NetBox answers them)")
            if not args.no_check:
                from tests.netbox.checks import collective_result
                same = collective_result(Cluster.objects.get(name=args.preset)) == collective_result(
                    Cluster.objects.get(name="nb-import"))
                print(f"{args.preset}: collective on both clusters equal: {same}")
                return 0 if same else 1
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
