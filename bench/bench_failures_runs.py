"""Benchmark of the twin's ``failures`` run kind against issue 15's budget: 100 seeds over two workers, at most
2 minutes wall, with live progress.

    .venv/bin/python bench/bench_failures_runs.py [--seeds 100] [--days 54] [--gpus 16384] [--keep]

Builds meta-roce-24k in a SQLite database of its own (``--database-url``; kept with ``--keep`` so the next run
skips the build), starts a Celery worker with two processes (``--concurrency 2``, prefork: "two workers") on a
queue of its own and the machine's Redis (database 9, ``--redis-url``), then starts one failures run through
:func:`twin.runs.actions.create_run` (the API's path): Llama 3 405B on 16,384 GPUs for 54 days, checkpoints every
30 minutes, ``--seeds`` seeds. The run fans out into children of TWIN_FAILURES_SEEDS_PER_CHILD seeds that the two
processes share; the bench samples the parent's progress (what its live frames carry) every 0.2 s and prints the
wall time from queued to succeeded against the budget, how often and how evenly the progress moved, the children
per worker process, and the effective training time over the seeds. It is not a test; the figures depend on the
machine's load.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from worker_twin import sample_progress, twin_with_worker  # noqa: E402

CLUSTER = "meta-roce-24k"
BUDGET_S = 120.0
QUEUE = "bench-failures"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--days", type=float, default=54.0)
    ap.add_argument("--gpus", type=int, default=16384)
    ap.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench_failures.sqlite3'}")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    ap.add_argument("--keep", action="store_true", help="keep the database (and the built cluster) for next time")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_failures_"))
    with twin_with_worker(database_url=args.database_url, redis_url=args.redis_url, queue=QUEUE,
                          name="bench-failures", cluster=CLUSTER, tmp=tmp, concurrency=2, keep=args.keep) \
            as (cluster, _worker):
        from twin.runs import actions
        from twin.runs.constants import setting
        from twin.runs.models import SimulationRun
        params = {"model": "llama3-405b", "gpus": args.gpus, "days": args.days, "checkpoint_interval": "30m",
                  "seeds": args.seeds}
        t0 = time.monotonic()
        run = actions.create_run("failures", params, cluster)
        samples, wall = sample_progress(run.pk, t0, 20 * BUDGET_S, "bench_failures_runs")
        first_progress = next((t for t, p in samples if p > 0), None)
        run.refresh_from_db()
        if run.status != "succeeded":
            sys.exit(f"bench_failures_runs: the run {run.status}: {run.error}")
        children = list(SimulationRun.objects.filter(parent=run).values("worker", "started_at", "finished_at"))
        busy = sum((c["finished_at"] - c["started_at"]).total_seconds() for c in children)
        edges = sorted([(c["started_at"], 1) for c in children] + [(c["finished_at"], -1) for c in children],
                       key=lambda e: (e[0], e[1]))
        running, most = 0, 0
        for _, step in edges:
            running += step
            most = max(most, running)
        gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
        s = run.summary
        eff = s["distribution"]["effective_ratio"]

    print(f"\nfailures run: {args.seeds} seeds of Llama 3 405B on {args.gpus:,} GPUs of {CLUSTER}, {args.days:g} days, "
          f"checkpoints every 30 min; {len(children)} children of at most {setting('TWIN_FAILURES_SEEDS_PER_CHILD')} "
          f"seeds; one worker, 2 processes; {os.cpu_count()} CPUs (shared, under load)")
    rows = [
        ("wall, queued -> succeeded", f"{wall:.1f} s", f"<= {BUDGET_S:.0f} s", wall <= BUDGET_S),
        ("first progress above 0 %", f"{first_progress:.1f} s" if first_progress is not None else "never", "", None),
        ("progress values seen (0.2 s sampling)", f"{len(samples)}", "", None),
        ("longest time without progress", f"{max(gaps, default=0):.1f} s", "", None),
        ("children running at once, at most", f"{most}", "2", None),
        ("children's summed compute / wall", f"{busy / wall:.2f}", "~2 with two processes", None),
        ("seconds per timeline in a child (compute / seeds)", f"{busy / args.seeds:.1f} s",
         f"<= {2 * BUDGET_S / args.seeds:.1f} s for the budget", None),
        ("effective training time: mean (p5, p95)",
         f"{100 * eff['mean']:.1f} % ({100 * eff['p5']:.1f}, {100 * eff['p95']:.1f})", "", None),
        ("interruptions per day, mean", f"{s['distribution']['interruptions_per_day']['mean']:.2f}", "", None),
    ]
    for label, value, budget, ok in rows:
        mark = "" if ok is None else ("  ok" if ok else "  OVER BUDGET")
        print(f"  {label:<42} {value:>22}  {budget}{mark}")


if __name__ == "__main__":
    main()
