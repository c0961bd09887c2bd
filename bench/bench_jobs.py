"""Benchmark of the training-job engine (sim/jobs/job.py, sim/jobs/scheduler.py) against the budgets of issue 14.

Cases (each in its own process, so its peak memory is its own):

- ``step``: one step of Llama 3 405B on 16,384 GPUs of meta-roce-24k, TP 8 x PP 16 x DP 128, topology placement,
  E-ECMP, 16 QPs (the contract command): every parallel group's traffic in one solve. Budget: 2 s wall, 2 GB.
  Timed from the loaded topology (loading it is reported apart, as the twin holds it).
- ``jobs``: eight jobs of mixed sizes and models filling meta-roce-24k (8,192 + 2 x 4,096 + 3 x 2,048 + 2 x 1,024
  GPUs), solved together, then each alone for its slowdown. Budget: 5 s.
- ``schedule``: 1,000 synthetic arrivals over 30 days on meta-roce-24k under each policy. Budget: 30 s each.

Run: ``.venv/bin/python bench/bench_jobs.py [CASE ...]`` (default: all). Prints figures; it is not a test.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("step", "jobs", "schedule")
BUDGETS = {"step": (2.0, 2048), "jobs": (5.0, None), "schedule": (30.0, None)}
MIX = [("llama3-405b", 8192, 8, 16), ("llama3-70b", 4096, 8, 4), ("llama3-70b", 4096, 8, 8),
       ("llama3-70b", 2048, 8, 4), ("llama3-8b", 2048, 8, 1), ("llama3-8b", 2048, 4, 1),
       ("llama3-8b", 1024, 8, 1), ("llama3-8b", 1024, 2, 1)]


def _topo():
    from sim.fabric.topology import load_topology
    t = time.perf_counter()
    _, topo = load_topology("meta-roce-24k")
    return topo, time.perf_counter() - t


def case_step() -> dict:
    from sim.jobs.job import run_job
    from sim.jobs.params import JOB
    topo, load = _topo()
    p = JOB.validate({"model": "llama3-405b", "gpus": 16384, "tp": 8, "cp": 1, "pp": 16, "dp": 128, "seq": 8192,
                      "batch_tokens": "16M", "placement": "topology", "routing": "eecmp", "qps": 16})
    t = time.perf_counter()
    r = run_job(topo, p)
    wall = time.perf_counter() - t
    return {"wall": wall, "load": load, "flows": r.n_flows, "step_time": r.step_time, "mfu": r.mfu,
            "breakdown": {k: round(v, 4) for k, v in r.to_dict()["breakdown"].items()}}


def case_jobs() -> dict:
    from sim.jobs.job import run_jobs
    from sim.jobs.params import JOB
    topo, load = _topo()
    jobs = [JOB.validate({"model": m, "gpus": g, "tp": tp, "pp": pp, "dp": g // (tp * pp),
                          "batch_tokens": 8192 * (g // (tp * pp)) * 16, "routing": "eecmp", "qps": 16,
                          "placement": "topology", "recompute": "auto"}) for m, g, tp, pp in MIX]
    t = time.perf_counter()
    r = run_jobs(topo, jobs)
    wall = time.perf_counter() - t
    return {"wall": wall, "load": load, "gpus": sum(g for _, g, _, _ in MIX),
            "slowdowns": [round(s, 4) for s in r.slowdowns],
            "step_times": [round(j.step_time, 4) for j in r.together]}


def case_schedule() -> dict:
    from sim.jobs.params import SCHEDULE
    from sim.jobs.scheduler import run_schedule
    topo, load = _topo()
    out = {"load": load, "policies": {}}
    wall = 0.0
    for policy in ("topology", "first-fit", "random"):
        p = SCHEDULE.validate({"policy": policy, "arrivals": 1000, "days": 30, "routing": "eecmp", "qps": 16})
        t = time.perf_counter()
        d = run_schedule(topo, p).to_dict()
        w = time.perf_counter() - t
        wall = max(wall, w)
        out["policies"][policy] = {"wall": round(w, 2), "utilization": round(d["utilization"], 4),
                                   "fragmentation": round(d["fragmentation"], 4),
                                   "mean_wait_h": round((d["wait"]["mean"] or 0) / 3600, 2),
                                   "mean_mfu": round(d["mean_mfu"], 4), "step_models": d["step_models"]}
    out["wall"] = wall
    return out


def main(argv) -> int:
    if argv and argv[0] == "--child":
        res = globals()["case_" + argv[1]]()
        res["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(res))
        return 0
    if unknown := [c for c in argv if c not in CASES]:
        print(f"usage: bench_jobs.py [CASE ...]; cases: {', '.join(CASES)}; unknown: {', '.join(unknown)}",
              file=sys.stderr)
        return 2
    for case in argv or CASES:
        out = subprocess.run([sys.executable, __file__, "--child", case], capture_output=True, text=True)
        if out.returncode:
            print(case, "failed:", out.stderr[-2000:])
            continue
        res = json.loads(out.stdout)
        wall, mem = BUDGETS[case]
        ok = res["wall"] <= wall and (mem is None or res["rss_mb"] <= mem)
        print(f"{case:9s} wall {res['wall']:6.2f} s (budget {wall:g} s)  peak RSS {res['rss_mb']:7.0f} MB"
              + (f" (budget {mem} MB)" if mem else "") + f"  {'OK' if ok else 'OVER'}")
        print("          " + json.dumps({k: v for k, v in res.items() if k not in ("wall", "rss_mb")}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
