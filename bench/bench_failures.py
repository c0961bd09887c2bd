"""Benchmark of the failures engine (sim/failures/timeline.py) against the budgets of issue 15.

Cases (each in its own process):

- ``timeline``: one 54-day timeline of Llama 3 405B on 16,384 GPUs of meta-roce-24k (TP 8 x PP 16 x DP 128,
  Meta's rates, checkpoints every 30 min on the Tectonic model): several hundred failures, the step re-solved on the
  fabric after each change of its failed cables and switches (cached by fabric state). Budget: 5 s. Reported apart:
  the preparation (placement, healthy step, the checkpoint and restore simulations: once per job, shared by every
  seed) and the timeline itself (its re-solves included).
- ``seeds``: 100 seeds of the same job in one process (one preparation; the fabric-state cache shared by the
  seeds). The budget of issue 15 (2 minutes over two workers) is the twin's fan-out, measured by the twin.

Run: ``.venv/bin/python bench/bench_failures.py [CASE ...]`` (default: all). Prints figures; it is not a test.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("timeline", "seeds")
BUDGETS = {"timeline": 5.0, "seeds": None}
VALUES = {"model": "llama3-405b", "gpus": 16384, "tp": 8, "pp": 16, "dp": 128, "days": 54,
          "checkpoint_interval": "30m"}


def _topo():
    from sim.fabric.topology import load_topology
    return load_topology("meta-roce-24k")[1]


def case_timeline() -> dict:
    from sim.failures.prepare import prepare
    from sim.failures.timeline import Timeline
    topo = _topo()
    t0 = time.perf_counter()
    ctx = prepare(topo, VALUES)
    t1 = time.perf_counter()
    tl = Timeline(ctx, 0, ctx.checkpoint["interval_s"]).run()
    r = tl.to_dict()
    t2 = time.perf_counter()
    return {"wall": t2 - t0, "prepare": t1 - t0, "timeline": t2 - t1,
            "failures": sum(r["failures_by_category"].values()),
            "interruptions": r["interruptions"], "degradations": r["degradations"],
            "fabric_states": r["solves"]["fabric_states"], "solve_seconds": r["solves"]["seconds"],
            "effective_ratio": r["effective_ratio"], "segments": len(r["timeline"]["start"])}


def case_seeds() -> dict:
    from sim.failures.prepare import prepare
    from sim.failures.summary import summarize
    from sim.failures.timeline import simulate_seeds
    topo = _topo()
    t0 = time.perf_counter()
    ctx = prepare(topo, VALUES)
    t1 = time.perf_counter()
    results = simulate_seeds(ctx, VALUES, 100)
    t2 = time.perf_counter()
    s = summarize(results)
    return {"wall": t2 - t0, "prepare": t1 - t0, "seeds_wall": t2 - t1, "fabric_states": len(ctx.steps) - 1,
            "solve_seconds": ctx.solve_seconds, "effective": s["effective_ratio"],
            "interruptions_per_day": s["interruptions_per_day"]}


def _child(case: str) -> None:
    print(json.dumps(globals()[f"case_{case}"]()))


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--child":
        _child(argv[1])
        return 0
    cases = argv or list(CASES)
    for case in cases:
        out = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True, text=True, cwd=ROOT)
        if out.returncode:
            print(f"{case}: failed\n{out.stderr}")
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        budget = BUDGETS[case]
        verdict = "" if budget is None else f" (budget {budget:g} s: {'ok' if r['wall'] <= budget else 'OVER'})"
        print(f"{case}: {r['wall']:.2f} s wall{verdict}")
        for k, v in r.items():
            if k != "wall":
                print(f"  {k}: {json.dumps(v) if isinstance(v, dict) else (f'{v:.4g}' if isinstance(v, float) else v)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
