"""Benchmark of the max-min fair solver (sim/core/maxmin.py) at 24k-GPU scale: 400k flows over ~100k links.

The instance is seeded and 3-tier-like: 24,576 NICs, each with an uplink and a downlink of 50 GB/s; four fabric
tiers (leaf up, spine up, spine down, leaf down) of 12,500 links each, 50 or 100 GB/s, a fifth of them degraded to
30-100 % of their speed. Each flow goes from a random source NIC uplink through 0-4 fabric hops (one per tier, in
order) to a random destination NIC downlink, so it crosses 2-6 links. Fabric hops are drawn with a skewed
distribution (a few hot links carry thousands of flows, most carry a handful) and a tenth of the flows have an
application cap of 1-20 GB/s, so the allocation has tens of thousands of distinct bottleneck levels.

Run: ``.venv/bin/python bench/bench_maxmin.py [--flows N] [--seed S] [--band B] [--plain]``. ``--plain`` also times
the solver with every flow examined in every round (``band = F``, the unbanded local-minimum rounds) for comparison.
Prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sim.core.maxmin import bottleneck_links, link_loads, solve_max_min  # noqa: E402

GB = 1e9                    # bytes/s per GB/s
N_NICS = 24_576
TIER_LINKS = 12_500         # fabric links per tier; four tiers
NIC_SPEED = 50 * GB         # 400 Gb/s
FABRIC_SPEEDS = (50 * GB, 100 * GB)
DEGRADED_FRACTION = 0.2
CAPPED_FRACTION = 0.1
SKEW = 2.0                  # hop index = n * u**SKEW: larger is more skewed


def build_instance(n_flows: int, seed: int):
    """CSR incidence, capacities (bytes/s) and rate caps (bytes/s) of the benchmark instance."""
    rng = np.random.default_rng(seed)
    n_links = 2 * N_NICS + 4 * TIER_LINKS
    capacity = np.empty(n_links)
    capacity[:2 * N_NICS] = NIC_SPEED
    fabric = capacity[2 * N_NICS:]
    fabric[:] = rng.choice(FABRIC_SPEEDS, size=fabric.size)
    degraded = rng.random(fabric.size) < DEGRADED_FRACTION
    fabric[degraded] *= rng.uniform(0.3, 1.0, size=degraded.sum())

    hops = np.empty((n_flows, 6), dtype=np.int64)
    hops[:, 0] = rng.integers(0, N_NICS, n_flows)                       # source NIC uplink
    hops[:, 5] = N_NICS + rng.integers(0, N_NICS, n_flows)              # destination NIC downlink
    for tier in range(4):
        hot_order = rng.permutation(TIER_LINKS)                         # which links of the tier are hot
        rank = (TIER_LINKS * rng.random(n_flows) ** SKEW).astype(np.int64)
        hops[:, 1 + tier] = 2 * N_NICS + tier * TIER_LINKS + hot_order[rank]
    n_fabric = rng.integers(0, 5, n_flows)
    used = np.ones((n_flows, 6), dtype=bool)
    used[:, 1:5] = np.arange(4) < n_fabric[:, None]
    flow_links = hops[used]
    flow_ptr = np.zeros(n_flows + 1, dtype=np.int64)
    np.cumsum(used.sum(axis=1), out=flow_ptr[1:])

    rate_cap = np.full(n_flows, np.inf)
    capped = rng.random(n_flows) < CAPPED_FRACTION
    rate_cap[capped] = rng.uniform(1 * GB, 20 * GB, size=capped.sum())
    return flow_ptr, flow_links, capacity, rate_cap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--band", type=int, default=None, help="flows examined per round (default: the solver's)")
    parser.add_argument("--plain", action="store_true", help="also time band = F (every flow, every round)")
    args = parser.parse_args()

    flow_ptr, flow_links, capacity, rate_cap = build_instance(args.flows, args.seed)
    n_flows, n_links = len(flow_ptr) - 1, len(capacity)
    print(f"flows            {n_flows:,}")
    print(f"links            {n_links:,}  (incidence entries {len(flow_links):,}, "
          f"{len(flow_links) / n_flows:.2f} links per flow)")

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        solution = solve_max_min(flow_ptr, flow_links, capacity, rate_cap, band=args.band)
        times.append(time.perf_counter() - start)
    rates = solution.rates

    tracemalloc.start()
    solve_max_min(flow_ptr, flow_links, capacity, rate_cap, band=args.band)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    load = link_loads(flow_ptr, flow_links, rates, n_links)
    bottleneck = bottleneck_links(flow_ptr, flow_links, capacity, rates)
    at_cap = rates >= rate_cap * (1 - 1e-9)
    levels = np.unique(np.round(np.log(rates), 9)).size
    print(f"rounds           {solution.rounds}")
    print(f"seconds          {min(times):.3f} best of {args.repeat} ({', '.join(f'{t:.3f}' for t in times)})")
    print(f"peak memory      {peak / 2**20:.1f} MiB in the solver (tracemalloc); "
          f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")
    print(f"distinct rates   {levels:,} (bottleneck levels)")
    print(f"rates GB/s       min {rates.min() / GB:.4f}  median {np.median(rates) / GB:.3f}  "
          f"max {rates.max() / GB:.3f}")
    print(f"check            max load/capacity {np.max(load / capacity):.12f}; flows at cap {at_cap.sum():,}; "
          f"flows with neither cap nor bottleneck link {int(np.sum(~at_cap & (bottleneck < 0)))}")
    if args.plain:
        start = time.perf_counter()
        plain = solve_max_min(flow_ptr, flow_links, capacity, rate_cap, band=n_flows)
        seconds = time.perf_counter() - start
        difference = np.max(np.abs(plain.rates - rates) / rates)
        print(f"plain rounds     {plain.rounds} in {seconds:.3f} s (band = F); "
              f"max relative difference {difference:.1e}")


if __name__ == "__main__":
    main()
