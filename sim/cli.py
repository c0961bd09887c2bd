"""Command line of the engine: ``python -m sim collective ...`` and ``python -m sim figure ...`` (contract).

    python -m sim collective --preset meta-roce-24k --collective allgather --gpus 4096 --placement fragmented \\
        --routing ecmp --qps 1 --sizes 1M:1G --seed 0
    python -m sim collective --spec my-cluster.toml --collective allreduce --algorithm tree --gpus 64 --json
    python -m sim figure allgather-scale --out var/figures [--preset meta-ib-24k] [--quick]
    python -m sim figure roce-vs-ib --out var/figures

``collective`` prints a table in the nccl-tests layout (size, count, type, redop, root, time, algbw, busbw, plus
the normalized busbw) and the hottest links with the flows that cross them; ``--json`` prints the same as one JSON
document. Impossible requests (more GPUs than usable, an unknown collective, bad size syntax, a flow with no path)
end with one line on stderr and exit status 2. Progress goes to stderr (``--quiet`` silences it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from sim.collectives import ALGORITHMS, COLLECTIVES, DTYPES, CollectiveError, canonical
from sim.errors import SpecError, UsageError
from sim.units import parse_size, parse_sizes

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line with exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from sim.figures import FIGURES
    from sim.placement import PLACEMENTS
    from sim.routing import ROUTINGS
    p = _Parser(prog="python -m sim", description="The cluster twin's simulation engine.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("collective", help="simulate a collective over the fabric (nccl-tests style output)",
                       description="Simulate one collective over a cluster's backend fabric at flow level.")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    c.add_argument("--collective", "-c", default="allgather", help=f"one of {', '.join(COLLECTIVES)}")
    c.add_argument("--gpus", "-n", type=int, default=64, help="GPUs (ranks) in the job (default 64)")
    c.add_argument("--placement", default="topology", help=f"one of {', '.join(PLACEMENTS)} (default topology)")
    c.add_argument("--routing", default=None, help=f"one of {', '.join(ROUTINGS)} (default: the fabric's: "
                                                   "ecmp on RoCE, dmodk on InfiniBand)")
    c.add_argument("--qps", type=int, default=1, help="queue pairs per GPU pair (default 1)")
    c.add_argument("--sizes", default="1M:1G", help="message sizes: 1M:1G (doubling), 1K:1G:4, or 8M,64M,1G")
    c.add_argument("--algorithm", default="ring", help=f"one of {', '.join(ALGORITHMS)} (tree: allreduce only)")
    c.add_argument("--seed", type=int, default=0, help="seed of the placement and of the routing hash")
    c.add_argument("--type", default="float", dest="dtype", help=f"element type, one of {', '.join(DTYPES)}")
    c.add_argument("--channels", type=int, default=None, help="NCCL channels (default: GPUs per host)")
    c.add_argument("--root", type=int, default=0, help="root rank of broadcast and reduce")
    c.add_argument("--base-rtt-us", type=float, default=None, help="network hop latency (default 22 on RoCE, 5 on "
                                                                   "InfiniBand)")
    c.add_argument("--hottest", type=int, default=5, help="hottest links to list (default 5)")
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    c.add_argument("--links", action="store_true", help="with --json: include every fabric link's utilization")
    c.add_argument("--flows", action="store_true", help="with --json: include every flow with its rate and path")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    f = sub.add_parser("figure", help="reproduce a published figure from simulations",
                       description="Write a chart (PNG, SVG) and its data (CSV, JSON) into --out.")
    f.add_argument("name", help=f"one of {', '.join(FIGURES)}")
    f.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    f.add_argument("--preset", default=None, help="cluster for allgather-scale (default meta-roce-24k)")
    f.add_argument("--jobs", default=None, help="job sizes in GPUs, e.g. 512,1024,4096")
    f.add_argument("--seeds", type=int, default=None, help="random seeds per configuration")
    f.add_argument("--size", default="1G", help="message size reported beside the large-message limit "
                                                "(default 1G)")
    f.add_argument("--no-background", action="store_true",
                   help="leave out the busy-cluster series (other jobs filling the rest of the cluster)")
    f.add_argument("--quick", action="store_true", help="a small, fast configuration (tests, smoke runs)")
    f.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    err = sys.stderr

    def say(*report):          # say(message) or say(fraction, message): a progress line until issue 10's bar
        if not args.quiet:
            print(f"[sim] {report[-1]}", file=err, flush=True)

    try:
        if args.command == "collective":
            return _collective(args, say)
        return _figure(args, say)
    except (UsageError, CollectiveError, SpecError, ValueError) as e:
        # NoPathError and placement errors are ValueErrors with a readable message.
        print(f"python -m sim {args.command}: error: {e}", file=err)
        return EXIT_USAGE


def load_topology(preset: str | None = None, spec: str | None = None, say=lambda m: None):
    """The backend topology of a preset or spec file (no database)."""
    from sim.layout import expand
    from sim.spec import load_spec
    from sim.topology import topology_from_layout
    t = time.perf_counter()
    cluster = load_spec(spec or preset or "meta-roce-24k")
    topo = topology_from_layout(expand(cluster))
    say(f"cluster {cluster.name}: {topo.n_gpus:,} GPUs, {topo.n_links:,} directed links ({topo.kind}), "
        f"built in {time.perf_counter() - t:.2f} s")
    return cluster, topo


def _collective(args, say) -> int:
    from sim.netsim import LatencyModel, run_collective
    from sim.placement import PLACEMENTS, place
    from sim.routing import ROUTINGS, default_routing
    collective = canonical(args.collective)
    if args.algorithm not in ALGORITHMS:
        raise UsageError(f"unknown algorithm {args.algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
    if args.placement not in PLACEMENTS:
        raise UsageError(f"unknown placement {args.placement!r}: choose one of {', '.join(PLACEMENTS)}")
    if args.routing is not None and args.routing not in ROUTINGS:
        raise UsageError(f"unknown routing {args.routing!r}: choose one of {', '.join(ROUTINGS)}")
    if args.dtype not in DTYPES:
        raise UsageError(f"unknown type {args.dtype!r}: choose one of {', '.join(DTYPES)}")
    if args.qps < 1:
        raise UsageError(f"--qps must be at least 1, got {args.qps}")
    if args.gpus < 2:
        raise UsageError(f"--gpus must be at least 2, got {args.gpus}")
    sizes = parse_sizes(args.sizes)
    cluster, topo = load_topology(args.preset, args.spec, say)
    usable = int(topo.gpu_usable.sum())
    if args.gpus > usable:
        raise UsageError(f"asked for {args.gpus:,} GPUs but {cluster.name} has only {usable:,} usable "
                         f"(of {topo.n_gpus:,})")
    gpus = place(topo, args.gpus, args.placement, args.seed)
    latency = LatencyModel(base_rtt=None if args.base_rtt_us is None else args.base_rtt_us * 1e-6)
    routing = args.routing or default_routing(topo.kind)
    result = run_collective(topo, gpus, collective, sizes, algorithm=args.algorithm, routing=routing,
                            qps=args.qps, seed=args.seed, dtype=args.dtype, latency=latency,
                            channels=args.channels, root=args.root, hottest=args.hottest, progress=say)
    if args.json:
        doc = {"cluster": cluster.name, "placement": args.placement,
               **result.to_dict(links=args.links, flows=args.flows)}
        print(json.dumps(doc, indent=1))
    else:
        print(format_table(result, cluster.name, args.placement))
    return 0


def format_table(result, cluster: str, placement: str) -> str:
    """The nccl-tests layout: a commented header, one row per size, then the summary and the hottest links."""
    p = result.plan
    redop = "sum" if p.collective in ("allreduce", "reducescatter", "reduce") else "none"
    root = p.root if p.collective in ("broadcast", "reduce") else -1
    lines = [
        f"# Collective {p.collective} ({p.algorithm}) on {cluster} ({result.kind}): {p.n_ranks:,} GPUs on "
        f"{p.n_hosts:,} hosts, {p.channels} channels",
        f"# placement {placement}, routing {result.routing}, {result.qps} QP per GPU pair, seed {result.seed}; "
        f"{result.n_flows:,} flows",
        f"# roofline busbw {result.roofline / 1e9:.1f} GB/s (same algorithm, packed hosts, only NIC and NVLink "
        f"limits); latency {result.latency * 1e6:.1f} us",
        "#",
        f"# {'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} {'time':>11} {'algbw':>8} "
        f"{'busbw':>8} {'norm':>6}",
        f"# {'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>5} {'(us)':>11} {'(GB/s)':>8} {'(GB/s)':>8} "
        f"{'(%)':>6}",
    ]
    for r in result.rows:
        lines.append(f"  {r.size:>12} {r.count:>12} {result.dtype:>8} {redop:>6} {root:>5} {r.time * 1e6:>11.1f} "
                     f"{r.algbw / 1e9:>8.2f} {r.busbw / 1e9:>8.2f} {100 * r.norm:>6.1f}")
    avg = sum(r.busbw for r in result.rows) / len(result.rows)
    lines += [
        f"# Avg bus bandwidth    : {avg / 1e9:.3f} GB/s",
        f"# Large-message limit  : busbw {result.limit_busbw / 1e9:.2f} GB/s = {100 * result.limit_norm:.1f} % of "
        f"the roofline",
    ]
    if result.hottest:
        lines.append(f"# Hottest links (utilization during the {result.rows[-1].size} B collective; "
                     f"slowest flows on them):")
        for h in result.hottest:
            flows = ", ".join(f"rank {f['src_rank']}->{f['dst_rank']} qp{f['qp']} ch{f['channel']} "
                              f"{f['rate_GBps']:.2f} GB/s" for f in h.flows[:3])
            lines.append(f"#   {100 * h.utilization:5.1f} % {h.n_flows:>5} flows  {h.name}  [{flows}]")
    return "\n".join(lines)


def _figure(args, say) -> int:
    from sim.figures import FIGURES, make_figure
    if args.name not in FIGURES:
        raise UsageError(f"unknown figure {args.name!r}: choose one of {', '.join(FIGURES)}")
    jobs = None
    if args.jobs:
        try:
            jobs = [int(x) for x in args.jobs.split(",")]
        except ValueError:
            raise UsageError(f"bad --jobs {args.jobs!r}: give GPU counts like 512,1024,4096") from None
    if args.seeds is not None and args.seeds < 1:
        raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    paths = make_figure(args.name, args.out, preset=args.preset, jobs=jobs, seeds=args.seeds,
                        size=parse_size(args.size), quick=args.quick, background=not args.no_background, progress=say)
    for path in paths:
        print(path)
    return 0
