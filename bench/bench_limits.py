"""The throughputs the twin's time estimates divide by (twin.runs.limits, docs/runs.md "Limits"): each a setting of
twin/runs/constants.py DEFAULTS whose default is the figure this script printed on the development machine (2 cores,
shared), rounded down. Run it on a worker host and set the settings from what it prints to fit your hardware.

- ``TWIN_RUNS_FLOWS_PER_SECOND``: simulated flows routed and solved per second, the slowest of a collective over
  256 GPUs of demo-256 (3 seeds, 16 queue pairs) and one training step on its 256 GPUs (the engine's own flow
  counts; a kind's cost counts an upper bound of them, so its estimate errs long).
- ``TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND``: GPU-days of failures timelines per second (a timeline's failures, and
  the step re-solves after each, grow with its GPUs x days), on demo-256 (256 GPUs, 54 days, 20 seeds, one
  preparation) and on meta-roce-24k (16,384 GPUs, 54 days, 3 seeds) -- the slower counts; and the preparation's
  seconds per GPU.
- ``TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND``: the scheduler scans its queue at every event, so its work grows as
  arrivals squared; arrivals^2 / seconds of 1,000 synthetic arrivals over 30 days on demo-256.
- ``TWIN_RUNS_DUMP_ENTRIES_PER_SECOND``: flight-recorder entries (ranks x entries) simulated, made in memory,
  analyzed and kept (compressed) per second by a debug run: 4,096 ranks of meta-roce-24k, 2,000 entries each (256
  ranks of demo-256 are printed too: there the fixed costs dominate).
- ``TWIN_RUNS_STARTUP_SCALES_PER_SECOND``: job sizes the start-up model evaluates per second (1k..32k ranks).

Run: ``.venv/bin/python bench/bench_limits.py [--quick]`` (``--quick``: no meta-roce-24k cases). Prints figures; it
is not a test.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def flows(topo) -> list[tuple[str, float]]:
    from sim.fabric.entry import run_collective
    from sim.fabric.params import COLLECTIVE
    from sim.jobs.job import run_job
    from sim.jobs.params import JOB
    values = COLLECTIVE.validate({"gpus": 256, "qps": 16, "seeds": 3})
    res, s = _timed(lambda: run_collective(topo, values))
    n = sum(r.result.n_flows for r in res.seeded.runs)
    out = [("collective allgather 256 GPUs x 3 seeds", n / s, n, s)]
    values = JOB.validate({"model": "llama3-8b", "gpus": 256, "tp": 8, "pp": 1, "dp": 32, "qps": 16})
    res, s = _timed(lambda: run_job(topo, values))
    out.append(("job step 256 GPUs", res.n_flows / s, res.n_flows, s))
    return out


def failures(preset: str, model: str, gpus: int, tp: int, pp: int, dp: int, seeds: int) -> tuple[float, float]:
    from sim.fabric.topology import load_topology
    from sim.failures.params import FAILURES
    from sim.failures.prepare import prepare
    from sim.failures.timeline import simulate
    topo = load_topology(preset)[1]
    values = FAILURES.validate({"model": model, "gpus": gpus, "tp": tp, "pp": pp, "dp": dp, "days": 54, "seeds": seeds})
    ctx, prep = _timed(lambda: prepare(topo, values))
    _, s = _timed(lambda: [simulate(ctx, values, seed) for seed in range(seeds)])
    return seeds * gpus * 54 / s, prep / gpus


def schedule(topo, arrivals: int = 1000) -> float:
    from sim.jobs.params import SCHEDULE
    from sim.jobs.scheduler import run_schedule
    _, s = _timed(lambda: run_schedule(topo, SCHEDULE.validate({"arrivals": arrivals})))
    return arrivals ** 2 / s


def dumps(topo, ranks: int) -> float:
    """What the twin's debug kind does (twin/capabilities/debug/kinds.py): simulate, make the dumps in memory
    (DumpSet), analyze them there and keep the compressed state they are made of (no dump file written)."""
    import io

    from sim.debug import dumpstate
    from sim.debug.analyze import analyze_dumpset
    from sim.debug.params import DEBUG
    from sim.debug.recorder import rehearse
    from sim.debug.writer import DumpSet
    job = DEBUG.validate({"model": "llama3-8b", "gpus": ranks, "tp": 8, "pp": 4, "dp": ranks // 32,
                          "inject": "hang:rank=17", "entries": 2000})
    t = time.perf_counter()
    dumpset = DumpSet.of(rehearse(topo, job))
    analyze_dumpset(dumpset, cluster=topo)
    dumpstate.save(dumpset, io.BytesIO())
    s = time.perf_counter() - t
    return ranks * 2000 / s


def startup() -> float:
    from sim.debug.params import STARTUP
    from sim.debug.startup import model, parse_scales
    values = STARTUP.validate({"gpus": "1024:32768"})
    _, s = _timed(lambda: model(values))
    return len(parse_scales(values["gpus"])) / s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the meta-roce-24k failures case")
    a = ap.parse_args()
    from sim.fabric.topology import load_topology
    topo = load_topology("demo-256")[1]
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
    rates = flows(topo)
    for name, rate, n, s in rates:
        print(f"flows: {name:42s} {n:>10,} flows in {s:6.2f} s = {rate:>12,.0f} flows/s")
    print(f"TWIN_RUNS_FLOWS_PER_SECOND            {min(r[1] for r in rates):>12,.0f}  (the slowest)")
    cases = [("demo-256", "llama3-8b", 256, 8, 4, 8, 20)] + (
        [] if a.quick else [("meta-roce-24k", "llama3-405b", 16384, 8, 16, 128, 3)])
    fails = []
    for case in cases:
        rate, prep = failures(*case)
        fails.append((rate, prep))
        print(f"failures: {case[0]:14s} {case[2]:>6,} GPUs x 54 days x {case[6]} seeds: {rate:>12,.0f} GPU-days/s, "
              f"preparation {prep * 1e3:.3f} ms per GPU")
    print(f"TWIN_RUNS_FAILURE_GPU_DAYS_PER_SECOND {min(f[0] for f in fails):>12,.0f}  (the slower)")
    print(f"  preparation: {max(f[1] for f in fails) * 1e3:.3f} ms per GPU (the slower)")
    print(f"TWIN_RUNS_SCHEDULE_PAIRS_PER_SECOND   {schedule(topo):>12,.0f}  (1,000 arrivals^2 / seconds)")
    print(f"dumps: 256 ranks of demo-256 x 2,000 entries: {dumps(topo, 256):,.0f} entries/s (fixed costs dominate)")
    if not a.quick:
        big = load_topology("meta-roce-24k")[1]
        print(f"TWIN_RUNS_DUMP_ENTRIES_PER_SECOND     {dumps(big, 4096):>12,.0f}  (4,096 ranks of meta-roce-24k "
              f"x 2,000 entries)")
    print(f"TWIN_RUNS_STARTUP_SCALES_PER_SECOND   {startup():>12,.0f}  (1k..32k ranks)")


if __name__ == "__main__":
    main()
