"""Benchmark of the storage engine (sim/storage/checkpoint.py, sim/storage/fanout.py) against the budgets of issue 13.

Cases (each in its own process, so its peak memory is its own):

- ``checkpoint``: 16,384 GPUs x 4 GiB, async, to meta-roce-24k's Tectonic cluster (every server and SSD of the
  preset in the solve), the default parameters of ``python -m sim checkpoint``. Budget: 2 s wall, 2 GB.
  Timed from the expanded layout (spec parsing and expansion are reported apart, as the twin holds the layout).
- ``fanout``: 24,576 clients opening and reading the same 100 files on Hammerspace, with the sweep 1k..24k.
  Budget: 2 s wall.
- ``spread``: the checkpoint's durable time against the ``spread`` aggregation (4, 8, 16, 32) and the event
  merging (exact vs 3 % on 2,048 GPUs): how far the defaults are from the finer model.

Run: ``.venv/bin/python bench/bench_storage.py [CASE ...]`` (default: checkpoint fanout). Prints figures; it is not
a test.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("checkpoint", "fanout", "spread")
BUDGETS = {"checkpoint": (2.0, 2048), "fanout": (2.0, None), "spread": (None, None)}


def _layout():
    from sim.fabric.layout import expand
    from sim.fabric.spec import load_spec
    t = time.perf_counter()
    lay = expand(load_spec("meta-roce-24k"))
    return lay, time.perf_counter() - t


def case_checkpoint() -> dict:
    from sim.storage.checkpoint import run_checkpoint
    from sim.storage.params import CHECKPOINT
    lay, setup = _layout()
    params = CHECKPOINT.validate({"gpus": 16384, "bytes_per_gpu": "4G", "store": "tectonic", "mode": "async"})
    t = time.perf_counter()
    r = run_checkpoint(lay, params)
    wall = time.perf_counter() - t
    return {"wall_s": wall, "setup_s": setup, "flows": r.flows, "events": r.events, "servers": len(r.servers),
            "ssds": int(r.server_ssds.sum()), "blocked_s": r.blocked_seconds, "durable_s": r.durable_seconds,
            "peak_TBps": r.peak_rate / 1e12, "mean_TBps": r.mean_rate / 1e12,
            "bottleneck": f"{r.bottlenecks[0].tier}: {r.bottlenecks[0].name}" if r.bottlenecks else None}


def case_fanout() -> dict:
    from sim.storage.params import STORAGE_FANOUT
    from sim.storage.fanout import run_fanout
    lay, setup = _layout()
    params = STORAGE_FANOUT.validate({"store": "hammerspace", "clients": 24576})
    t = time.perf_counter()
    r = run_fanout(lay, params)
    wall = time.perf_counter() - t
    return {"wall_s": wall, "setup_s": setup, "seconds_24576": r.run.seconds, "limit": r.run.limit,
            "sweep": {x.clients: round(x.seconds, 3) for x in r.sweep}}


def case_spread() -> dict:
    import sim.storage.checkpoint as ck
    from sim.storage.params import CHECKPOINT
    lay, _ = _layout()
    out = {}
    for s in (4, 8, 16, 32):
        t = time.perf_counter()
        r = ck.run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=16384, spread=s)))
        out[f"spread {s}"] = {"durable_s": round(r.durable_seconds, 3), "flows": r.flows,
                              "wall_s": round(time.perf_counter() - t, 2)}
    for m in (0.0, 3e-2):
        ck.EVENT_MERGE = m
        r = ck.run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=2048)))
        out[f"2,048 GPUs merge {m:g}"] = {"durable_s": round(r.durable_seconds, 4), "events": r.events}
    return out


def run_case(name: str) -> dict:
    doc = globals()[f"case_{name}"]()
    doc["max_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help=f"some of {', '.join(CASES)} (default: checkpoint fanout)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child)))
        return 0
    for name in args.cases or ["checkpoint", "fanout"]:
        if name not in CASES:
            ap.error(f"unknown case {name!r}: choose from {', '.join(CASES)}")
        proc = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True)
        if proc.returncode:
            print(f"{name}: failed\n{proc.stderr}")
            continue
        doc = json.loads(proc.stdout)
        wall_budget, mem_budget = BUDGETS[name]
        print(f"== {name}")
        for k, v in doc.items():
            print(f"   {k:<16} {v:.3f}" if isinstance(v, float) else f"   {k:<16} {v}")
        if wall_budget is not None:
            ok = doc["wall_s"] <= wall_budget and (mem_budget is None or doc["max_rss_MB"] <= mem_budget)
            mem = f", {doc['max_rss_MB']:.0f} MB vs {mem_budget} MB" if mem_budget else ""
            print(f"   budget           {doc['wall_s']:.2f} s vs {wall_budget} s{mem}: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
