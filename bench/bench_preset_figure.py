"""Benchmark of a preset's page of figures (sim/fabric/preset_figure.py, ``python -m sim figure preset``).

Cases, each in its own process (its peak memory its own; wall time measured inside, from the spec on):

- the largest preset by GPUs (found among sim/presets, not named here: roadmap-600k today), its page with the
  defaults (one zone and the whole cluster capped at ``max_gpus`` = 24,576; 18 simulations, 19 message sizes);
- with ``--all``: every preset, the same way.

Prints, per preset: the topology's build, the simulations, the drawing and writing of the four files, the slowest
simulation, and the peak memory (max RSS). Goal: a page in seconds (issue 28: "capped at what runs in seconds").
Run: ``.venv/bin/python bench/bench_preset_figure.py [--all] [PRESET ...]``. It is not a test.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(preset: str) -> dict:
    """Run in a child process: the page of ``preset``, timed by step."""
    from sim.fabric.params import PRESET_FIGURE
    from sim.fabric.preset_figure import preset_figure, write_figure
    from sim.fabric.topology import load_topology

    t0 = time.perf_counter()
    _, topo = load_topology(preset)
    t1 = time.perf_counter()
    runs = []
    last = [t1]

    def on_run(done, total):
        now = time.perf_counter()
        runs.append(now - last[0])
        last[0] = now

    doc = preset_figure(topo, preset, PRESET_FIGURE.validate({}), on_run=on_run)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        write_figure(doc, out)
    t3 = time.perf_counter()
    slow = max(range(len(runs)), key=runs.__getitem__)
    r = doc["runs"][slow]
    return {"preset": preset, "gpus": topo.n_gpus, "jobs": [j["gpus"] for j in doc["jobs"]], "runs": len(runs),
            "build_s": t1 - t0, "simulate_s": t2 - t1, "write_s": t3 - t2, "total_s": t3 - t0,
            "slowest": f"{r['collective']} {r['config']} {r['gpus']:,} GPUs {runs[slow]:.2f} s",
            "peak_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    from sim.fabric.spec import load_spec, preset_names
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("presets", nargs="*", help="presets (default: the largest)")
    ap.add_argument("--all", action="store_true", help="every preset")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.child)))
        return
    presets = args.presets or (preset_names() if args.all else
                               [max(preset_names(), key=lambda p: load_spec(p).layout.gpus)])
    print(f"{'preset':<20} {'GPUs':>8} {'jobs':<14} {'build':>7} {'simulate':>9} {'write':>7} {'total':>7} "
          f"{'peak':>8}  slowest simulation")
    for p in presets:
        out = subprocess.run([sys.executable, __file__, "--child", p], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['preset']:<20} {r['gpus']:>8,} {','.join(map(str, r['jobs'])):<14} {r['build_s']:>6.2f}s "
              f"{r['simulate_s']:>8.2f}s {r['write_s']:>6.2f}s {r['total_s']:>6.2f}s {r['peak_MB']:>6.0f}MB  "
              f"{r['slowest']} ({r['runs']} simulations)")


if __name__ == "__main__":
    main()
