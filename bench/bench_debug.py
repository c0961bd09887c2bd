"""Budgets of issue 16: dumps of a 16,384-rank job (2,000 entries per rank) written <= 30 s and analyzed <= 30 s in
<= 4 GB; the start-up model at 1k..32k ranks < 1 s. Also the twin's archive of the dumps (issue 25,
:mod:`sim.debug.archive`): its time alone (the twin packs it beside the analysis) and size. Prints the figures against the budgets: wall seconds, the
process's CPU seconds beside them (the machine is shared: wall time depends on the load, printed too), and the peak
resident memory of the whole run (simulation, dumps and analysis in one process).

    .venv/bin/python bench/bench_debug.py [--out DIR] [--keep]
"""
import argparse
import os
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sim.debug import archive  # noqa: E402
from sim.debug.analyze import analyze  # noqa: E402
from sim.debug.params import DEBUG, STARTUP  # noqa: E402
from sim.debug.recorder import rehearse  # noqa: E402
from sim.debug.startup import model  # noqa: E402
from sim.fabric.topology import load_topology  # noqa: E402


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="bench_debug_")
    _, topo = load_topology("meta-roce-24k")
    job = DEBUG.validate(dict(model="llama3-405b", gpus=16384, tp=8, pp=16, dp=128, inject="hang:rank=12345",
                              entries=2000))
    load = [os.getloadavg()[0]]
    t, c = time.perf_counter(), time.process_time()
    r = rehearse(topo, job)
    t_sim, c_sim = time.perf_counter() - t, time.process_time() - c
    load.append(os.getloadavg()[0])
    t, c = time.perf_counter(), time.process_time()
    paths = r.write_dumps(out)
    t_write, c_write = time.perf_counter() - t, time.process_time() - c
    size = sum(os.path.getsize(p) for p in paths)
    load.append(os.getloadavg()[0])
    t, c = time.perf_counter(), time.process_time()
    packed = os.path.join(tempfile.gettempdir(), f"bench_debug_{os.getpid()}.tar.gz")
    with open(packed, "wb") as f:
        archive.pack(out, f, "bench-dumps")
    t_pack, c_pack, packed_bytes = time.perf_counter() - t, time.process_time() - c, os.path.getsize(packed)
    os.unlink(packed)
    load.append(os.getloadavg()[0])
    t, c = time.perf_counter(), time.process_time()
    res = analyze(out, topo)
    t_an, c_an = time.perf_counter() - t, time.process_time() - c
    load.append(os.getloadavg()[0])
    c = res["culprit"]
    t = time.perf_counter()
    model(STARTUP.validate({"gpus": "1024:32768"}))
    t_st = time.perf_counter() - t
    print(f"load average (1 min) at start / after each phase: {' / '.join(f'{x:.1f}' for x in load)} (2 cores)")
    print(f"simulate 16,384 ranks            {t_sim:7.1f} s   (CPU {c_sim:.1f} s)")
    print(f"write {len(paths):,} dumps ({size / 1e9:.2f} GB)   {t_write:7.1f} s   (CPU {c_write:.1f} s)   budget 30 s")
    print(f"pack (sim.debug.archive)         {t_pack:7.1f} s   (CPU {c_pack:.1f} s)   "
          f"{packed_bytes / 1e6:,.0f} MB ({size / packed_bytes:.1f} x smaller)")
    print(f"analyze                          {t_an:7.1f} s   (CPU {c_an:.1f} s)   budget 30 s   "
          f"culprit ranks {c and c['ranks']}")
    print(f"peak RSS                         {rss_gb():7.2f} GB  budget 4 GB")
    print(f"start-up model 1k..32k           {t_st:7.4f} s   budget 1 s")
    if not a.keep:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
