"""Benchmark of topology building and routing (sim/fabric/topology.py, sim/fabric/routing.py, sim/fabric/placement.py) at full scale.

For each preset (default: meta-roce-24k and roadmap-131k) it times: expanding the spec into a layout, building the
topology arrays, building the next-hop tables (once per topology), placing a whole-cluster job, and routing the
inter-host flows of a ring AllGather over every GPU with ``--qps`` flows (QPs) per GPU pair, once per routing and
placement. The flows are those of NCCL's 8 ring channels on a rail-optimized host: channel ``c`` leaves host ``h``
from GPU ``c`` and enters host ``h+1`` at GPU ``c``, i.e. rank ``r`` sends to rank ``r+8`` (mod n) with ranks
host-consecutive; all of them cross the fabric (24,576 x 16 = 393,216 flows; 131,072 x 16 = 2,097,152). Budgets
(issue 4): well under 1.5 s for the 24k ring, about 10 s for the 131k ring, on 2 cores.

Run: ``.venv/bin/python bench/bench_routing.py [--presets a,b] [--qps 16] [--placements topology,random]
[--fail 0.01]``.
A whole-cluster "fragmented" job is the contiguous one (every host, in host order); "random" orders the hosts at
random, so most ring hops cross zones (6-link paths): the costliest case for routing.
Prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sim.fabric.layout import FABRIC_BACKEND, LINK_NIC_LEAF, STATUS_FAILED, expand  # noqa: E402
from sim.fabric.placement import place  # noqa: E402
from sim.fabric.paths import routing_tables  # noqa: E402
from sim.fabric.routing import ROUTINGS, route  # noqa: E402
from sim.fabric.spec import load_spec  # noqa: E402
from sim.fabric.topology import topology_from_layout  # noqa: E402


def timed(fn, *args, repeat=1, **kwargs):
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
    return best, result


def ring_flows(ranks: np.ndarray, qps: int, gpus_per_host: int):
    """Inter-host flows of NCCL's ring channels over ``ranks``, ``qps`` QPs per GPU pair: (src, dst, qp) arrays."""
    src = np.repeat(ranks, qps)
    dst = np.repeat(np.roll(ranks, -gpus_per_host), qps)
    qp = np.tile(np.arange(qps), len(ranks))
    return src, dst, qp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="meta-roce-24k,roadmap-131k")
    parser.add_argument("--qps", type=int, default=16)
    parser.add_argument("--placements", default="topology,random")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--fail", type=float, default=0.0,
                        help="fraction of leaf-spine and spine-core cables to fail (the slow, masked routing path)")
    args = parser.parse_args()

    for preset in args.presets.split(","):
        t_layout, layout = timed(expand, load_spec(preset))
        if args.fail:
            rng = np.random.default_rng(0)
            fabric = np.flatnonzero((layout.link_fabric == FABRIC_BACKEND) & (layout.link_tier != LINK_NIC_LEAF))
            layout.link_status[rng.choice(fabric, int(args.fail * fabric.size), replace=False)] = STATUS_FAILED
        t_topo, topo = timed(topology_from_layout, layout)
        t_tables, _ = timed(routing_tables, topo)
        print(f"{preset}: {topo.n_gpus:,} GPUs, {topo.n_links:,} directed links, {topo.n_switches:,} switches"
              + (f", {args.fail:.1%} of fabric cables failed" if args.fail else ""))
        print(f"  expand spec -> layout   {t_layout:7.3f} s")
        print(f"  topology arrays         {t_topo:7.3f} s")
        print(f"  next-hop tables         {t_tables:7.3f} s")
        for placement in args.placements.split(","):
            t_place, ranks = timed(place, topo, topo.n_gpus, placement, seed=1)
            src, dst, qp = ring_flows(ranks, args.qps, layout.spec.layout.gpus_per_host)
            print(f"  place {placement:<17} {t_place:7.3f} s; ring of {len(ranks):,} GPUs x {args.qps} QPs = "
                  f"{len(src):,} flows")
            for routing in ROUTINGS:
                t_route, (ptr, links) = timed(route, topo, src, dst, qp, routing, seed=1, repeat=args.repeat)
                load = np.bincount(links, minlength=topo.n_links)
                busy = load[load > 0]
                print(f"    route {routing:<7} {t_route:7.3f} s   network flows {int(np.count_nonzero(np.diff(ptr))):,}"
                      f"   links used {busy.size:,}   flows on busiest link {busy.max() if busy.size else 0}")
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB")


if __name__ == "__main__":
    main()
