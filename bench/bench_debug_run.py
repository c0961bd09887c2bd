"""Benchmark of the twin's ``debug`` run kind at 16,384 ranks through a real worker (issue 25: within 60 s on 2
cores, progress through every phase, a compressed archive).

    .venv/bin/python bench/bench_debug_run.py [--gpus 16384] [--keep] [--database-url URL] [--redis-url URL]

Builds meta-roce-24k in a SQLite database of its own (kept with ``--keep`` so the next run skips the build),
starts a Celery worker (one process) on a queue of its own, then starts one debug run through
:func:`twin.runs.actions.create_run` (the API's path): Llama 3 405B, TP 8 x PP 16 x DP 128, ``hang:rank=12345``,
2,000 entries per rank. It samples the run's progress every 0.2 s (the percentage its live frames and the runs list
carry) and prints, per phase (the kind's ``STAGE_SPAN``: the share of the percentage each phase owns), the wall
seconds spent in it, the longest time the percentage did not move, the total from queued to succeeded, the worker's
CPU seconds, the size of what the run keeps of its dumps against the dumps', the culprit, and then the download: the
archive built from what the run keeps as ``GET /api/runs/<id>/dumps/`` streams it (in this process: its CPU and wall
seconds, its size). It is not a test; the figures depend on the machine's load (printed).
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
BUDGET_S = 60.0
QUEUE = "bench-debug"


def phases(samples, spans) -> list[tuple[str, float]]:
    """Wall seconds per phase from (time, percent) samples: a phase runs from the first sample at or past its
    start to the first sample at or past the next phase's start (the last one: to the end)."""
    starts = []
    for name, (lo, _hi) in spans:
        t = next((s for s, p in samples if p >= 100 * lo - 1e-9), samples[-1][0])
        starts.append((name, t))
    out = []
    for i, (name, t) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else samples[-1][0]
        out.append((name, max(0.0, end - t)))
    return out


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` and its children (the worker's pool process),
    from /proc: the figure the machine's load does not change."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) == pid or int(fields[1]) == pid:          # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpus", type=int, default=16384)
    ap.add_argument("--database-url", default=f"sqlite:///{ROOT / 'var' / 'bench_debug_run.sqlite3'}")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/4")
    ap.add_argument("--keep", action="store_true", help="keep the database (and the built cluster) for next time")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_debug_run_"))
    (tmp / "tmp").mkdir()
    load = [os.getloadavg()[0]]
    # a temporary folder of its own: another twin's sweeper on this machine (its own database, where run 1 is not
    # running) would remove this run's dumps folder from a shared /tmp
    with twin_with_worker(database_url=args.database_url, redis_url=args.redis_url, queue=QUEUE, name="bench-debug",
                          cluster=CLUSTER, tmp=tmp, concurrency=1, keep=args.keep,
                          env={"TWIN_RUN_FILES_DIR": str(tmp / "run-files"), "TMPDIR": str(tmp / "tmp")}) \
            as (cluster, worker):
        from sim.debug import archive, dumpstate
        from twin.capabilities.debug.kinds import STAGE_SPAN
        from twin.runs import actions, files
        dp = args.gpus // (8 * 16)
        params = {"model": "llama3-405b", "gpus": args.gpus, "tp": 8, "pp": 16, "dp": dp,
                  "inject": "hang:rank=12345" if args.gpus > 12345 else f"hang:rank={args.gpus // 2}"}
        cpu0 = tree_cpu_s(worker.pid)
        t0 = time.monotonic()
        run = actions.create_run("debug", params, cluster)
        samples, wall = sample_progress(run.pk, t0, 30 * BUDGET_S, "bench_debug_run")
        samples.append((wall, 100.0))
        cpu = tree_cpu_s(worker.pid) - cpu0
        load.append(os.getloadavg()[0])
        run.refresh_from_db()
        if run.status != "succeeded":
            sys.exit(f"bench_debug_run: the run {run.status}: {run.error}")
        kept = files.stored_dumps(run.pk)
        s = run.summary
        t, c = time.perf_counter(), time.process_time()
        tar_bytes = sum(len(piece) for piece in archive.stream(dumpstate.load(kept, keep=1), files.dumps_folder(run.pk), kept.stat().st_mtime))
        t_download, c_download = time.perf_counter() - t, time.process_time() - c
        load.append(os.getloadavg()[0])

    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
    culprit = (s.get("culprit") or {}).get("ranks")
    written = s.get("dumps_written_bytes")
    print(f"\ndebug run: {args.gpus:,} ranks of Llama 3 405B on {CLUSTER}, {params['inject']}, 2,000 entries; "
          f"one worker process; {os.cpu_count()} CPUs (shared), load average {load[0]:.1f} -> {load[1]:.1f}")
    for name, secs in phases(samples, STAGE_SPAN.items()):
        print(f"  {name:<34} {secs:7.1f} s")
    print(f"  {'total, queued -> succeeded':<34} {wall:7.1f} s   budget {BUDGET_S:.0f} s"
          f"{'  ok' if wall <= BUDGET_S else '  OVER BUDGET'}")
    print(f"  {'CPU of the worker process tree':<34} {cpu:7.1f} s   (the figure the load does not change)")
    print(f"  {'longest time without progress':<34} {max(gaps, default=0):7.1f} s   ({len(samples)} values seen)")
    print(f"  {'dumps kept with the run':<34} {kept.name if kept else '-'}: {s['dumps_bytes'] / 1e6:,.1f} MB"
          + (f" of {written / 1e6:,.0f} MB of dumps ({written / s['dumps_bytes']:.0f} x)" if written else ""))
    print(f"  {'download (tar.gz built as sent)':<34} {t_download:7.1f} s   (CPU {c_download:.1f} s), "
          f"{tar_bytes / 1e6:,.1f} MB; load average after it {load[-1]:.1f}")
    print(f"  {'culprit ranks':<34} {culprit}")


if __name__ == "__main__":
    main()
