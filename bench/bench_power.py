"""Benchmark of the power engine (sim/power) against the budgets of issue 29.

Cases (each in its own process):

- ``step``: Llama 3 405B on 16,384 GPUs of meta-roce-24k (TP 8 x PP 16 x DP 128): the job's step (placement, the
  fabric solve, the step model: what ``python -m sim job`` does) timed apart from the power over that step at 1 ms
  resolution, every rack, zone and building (the stages' waveforms, the count matrices, every rack's peak and
  mean). Budget: the power part at most 2 s beside the step itself.
- ``days``: the same job's power over 54 days under failures at a 1 s grid (the failures engine's preparation and
  timeline included: it solves the job's step again). Budget: 5 s.
- ``capped``: the ``step`` case under a 500 W cap (the step re-timed, the uncapped step beside it).

Run: ``.venv/bin/python bench/bench_power.py [CASE ...]`` (default: all). Prints figures; it is not a test.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = ("step", "days", "capped")
BUDGETS = {"step": 2.0, "days": 5.0, "capped": 2.0}
VALUES = {"model": "llama3-405b", "gpus": 16384, "tp": 8, "pp": 16, "dp": 128}


def _run(extra: dict) -> dict:
    from sim.fabric.topology import load_topology
    from sim.jobs.job import solve_job
    from sim.power import run as power_run
    from sim.power.params import POWER
    topo = load_topology("meta-roce-24k")[1]
    values = POWER.validate({**VALUES, **extra})
    job = {k: values[k] for k in power_run.JOB_NAMES} | {"hottest": 0}
    t0 = time.perf_counter()
    solve_job(topo, job).result(topo, job)          # the step itself, as python -m sim job (cold)
    t1 = time.perf_counter()
    r = power_run.run_power(topo, values)
    d = r.to_dict()
    s = r.seconds
    return {"step_s_wall": t1 - t0, "power_run_wall": s["all"], "power_beside_step": s["step_power"],
            "days_wall": s["days"], "days_parts": (r.timeline or {}).get("seconds"),
            "bins": int(r.case.draw.sp.watts.shape[1]), "racks": d["racks"]["count"],
            "cluster_peak_mw": d["cluster_peak_mw"], "cluster_mean_mw": d["cluster_mean_mw"],
            "cluster_swing_mw": d["cluster_swing_mw"], "ramp_mw_per_s": d["cluster_ramp_mw_per_s"],
            "energy_per_token_j": d["energy_per_token_j"], "step_s": d["step_s"],
            "timeline": d["timeline"] and {k: d["timeline"][k] for k in ("bins", "mean_mw", "swing_mw",
                                                                         "ramp_mw_per_s", "jump_mw")}}


def case_step() -> dict:
    return _run({})


def case_capped() -> dict:
    return _run({"power_cap": 500})


def case_days() -> dict:
    return _run({"days": 54, "failures": True, "timeline_step_s": 1.0})


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:                     # one case, in this process: its figures as one JSON line
        print(json.dumps({"case": argv[1], **globals()[f"case_{argv[1]}"]()}))
        return 0
    cases = argv or list(CASES)
    for name in cases:
        proc = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, cwd=ROOT)
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        key = "days_wall" if name == "days" else "power_beside_step"
        budget = BUDGETS[name]
        print(f"{name:8} step {r['step_s_wall']:.2f} s wall; power run {r['power_run_wall']:.2f} s; "
              f"{key} {r[key]:.2f} s (budget {budget:g} s: {'met' if r[key] <= budget else 'NOT met'}); "
              f"{r['bins']:,} bins x {r['racks']:,} racks; peak {r['cluster_peak_mw']:.2f} MW, mean "
              f"{r['cluster_mean_mw']:.2f} MW, swing {r['cluster_swing_mw']:.2f} MW, ramp {r['ramp_mw_per_s']:.0f} "
              f"MW/s, {r['energy_per_token_j']:.3f} J/token" + (f"; over days {r['timeline']}" if r["timeline"]
                                                                  else "")
              + (f"; days parts {r['days_parts']}" if r["days_parts"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
