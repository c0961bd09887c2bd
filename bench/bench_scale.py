"""Benchmark of the engine at the roadmap scale (issue 17): roadmap-350k and roadmap-600k.

Cases (each in its own process, so its peak memory is its own; wall and CPU time measured around the case):

- ``build-350k``, ``build-600k``: load the preset, expand it into a layout and build the backend topology (time and
  peak memory).
- ``ag-600k``: ring AllGather of 1 GiB over all 589,824 GPUs of roadmap-600k, topology-aware placement, E-ECMP with
  16 QPs per GPU pair (NCCL's 2 connections per GPU pair x 8 QPs each, as ``bench_collective.py``'s ``ag-24k``);
  ``--qps`` sets the QPs per connection. Budget: 10 s, 8 GB.
- ``checkpoint-600k``: an async 4 GiB-per-GPU checkpoint of all 589,824 GPUs to Tectonic (``run_checkpoint``).
- ``job-600k``: one training step of Llama 3 405B on all 589,824 GPUs (TP 8, PP 16, DP 4,608; ``run_job``).

Run: ``.venv/bin/python bench/bench_scale.py [CASE ...] [--qps N] [--no-reuse]`` (default: all cases). Prints
wall seconds, CPU seconds (user, system) and the peak RSS of each case's process, against the budgets. The machine
is shared: when other processes load its two cores, wall time exceeds CPU time; both are printed. Each case's
process reuses freed memory and faults it in as small pages as ``python -m sim`` does
(:func:`sim.core.memory.reuse_freed_memory`); ``--no-reuse`` leaves glibc's and numpy's defaults (fresh ``mmap`` per large
array, transparent huge pages), whose page faults show as system time. It is not a test.
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

CASES = ("build-350k", "build-600k", "ag-600k", "checkpoint-600k", "job-600k")
BUDGETS = {"ag-600k": (10.0, 8.0)}        # seconds, GB (issue 17)
ROADMAP_600K = "roadmap-600k"


def case(name: str, qps: int) -> dict:
    """Run one case in this process; return its figures."""
    from sim.fabric.topology import load_topology
    out: dict = {}
    if name.startswith("build-"):
        _, topo = load_topology(f"roadmap-{name.split('-')[1]}")
        out.update(gpus=topo.n_gpus, directed_links=topo.n_links, switches=topo.n_switches)
    elif name == "ag-600k":
        from sim.fabric.netsim import run_collective
        from sim.fabric.placement import place
        t = time.perf_counter()
        _, topo = load_topology(ROADMAP_600K)
        out["topology_s"] = round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        r = run_collective(topo, place(topo, topo.n_gpus, "topology"), "allgather", [1 << 30], routing="eecmp",
                           qps=qps)
        out.update(run_s=round(time.perf_counter() - t, 2), gpus=r.plan.n_ranks, channels=r.plan.channels,
                   flows=r.n_flows, network_flows=int(r.phases[0].flows.network.sum()),
                   norm_limit=round(r.limit_norm, 4))
    elif name == "checkpoint-600k":
        from sim.storage.checkpoint import run_checkpoint
        from sim.storage.params import CHECKPOINT
        from sim.fabric.layout import expand
        from sim.fabric.spec import load_spec
        layout = expand(load_spec(ROADMAP_600K))
        r = run_checkpoint(layout, CHECKPOINT.validate({"gpus": len(layout.gpu_host)}))
        out.update(blocked_s=round(r.blocked_seconds, 3), durable_s=round(r.durable_seconds, 2))
    elif name == "job-600k":
        from sim.jobs.job import run_job
        from sim.jobs.params import JOB
        _, topo = load_topology(ROADMAP_600K)
        params = JOB.validate({"model": "llama3-405b", "gpus": topo.n_gpus, "tp": 8, "pp": 16, "dp": 4608,
                               "batch_tokens": 4608 * 8192 * 16})     # 16 micro-batches of 8,192 per replica
        r = run_job(topo, params)
        out.update(step_s=round(float(r.step_time), 3), mfu=round(float(r.mfu), 4))
    else:
        raise SystemExit(f"unknown case {name!r}: choose from {', '.join(CASES)}")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = (round(usage.ru_utime, 1), round(usage.ru_stime, 1))
    out["peak_rss_GB"] = round(usage.ru_maxrss / 1e6, 2)          # KB on Linux
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="*", default=list(CASES), help=f"cases (default all: {' '.join(CASES)})")
    p.add_argument("--qps", type=int, default=8, help="QPs per NCCL connection in ag-600k (default 8: 16 per pair)")
    p.add_argument("--no-reuse", action="store_true",
                   help="leave glibc's malloc and numpy's huge-page defaults (see sim/core/memory.py)")
    p.add_argument("--in-process", metavar="CASE", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.in_process:
        if not args.no_reuse:
            from sim.core.memory import reuse_freed_memory
            reuse_freed_memory()
        print(json.dumps(case(args.in_process, args.qps)))
        return
    print("# figures on a shared 2-core machine: wall > CPU means other processes held the cores"
          + ("; glibc malloc and numpy huge-page defaults" if args.no_reuse
             else "; freed memory reused, small pages (sim/core/memory.py)"))
    for name in args.cases:
        t = time.perf_counter()
        flags = ["--qps", str(args.qps)] + (["--no-reuse"] if args.no_reuse else [])
        proc = subprocess.run([sys.executable, __file__, "--in-process", name, *flags], cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.perf_counter() - t                      # the whole process: imports, spec, topology, run
        if proc.returncode:
            print(f"{name}: FAILED\n{proc.stderr}")
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        cpu, peak = res.pop("cpu_s"), res.pop("peak_rss_GB")
        budget = BUDGETS.get(name)
        verdict = ""
        if budget:
            verdict = (f"  budget {budget[0]:.0f} s / {budget[1]:.0f} GB: "
                       f"{'within' if wall <= budget[0] and peak <= budget[1] else 'OVER'}")
        print(f"{name:16s} {wall:6.1f} s wall  {cpu[0]:6.1f} + {cpu[1]:5.1f} s CPU (user + sys)  "
              f"peak {peak:5.2f} GB{verdict}  {json.dumps(res)}")


if __name__ == "__main__":
    main()
