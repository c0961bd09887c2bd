"""Command line of the fabric (contract): ``python -m sim collective ...`` and ``python -m sim figure ...``.

    python -m sim collective --preset meta-roce-24k --collective allgather --gpus 4096 --placement fragmented \\
        --routing ecmp --qps 1 --sizes 1M:1G --seed 0 [--seeds 5]
    python -m sim collective --spec my-cluster.toml --collective allreduce --algorithm tree --gpus 64 --json
    python -m sim collective --spec my-cluster.toml --catalog my-catalog.toml --hostfile hosts.txt -c allreduce
    python -m sim figure allgather-scale --out var/figures [--preset meta-ib-24k] [--quick]
    python -m sim figure roce-vs-ib --out var/figures
    python -m sim figure preset --preset dgx-h100-superpod --out var/figures [--sizes 64K:4G] [--max-gpus 24576]
    python -m sim figure preset --preset all --out var/figures        # every preset of sim/presets

The simulation's options come from :mod:`sim.fabric.params` (``COLLECTIVE``, ``FIGURE``), the declaration the REST
API is built from, and are checked by the same :meth:`sim.core.params.ParamSet.validate`, so both refuse the same
values with the same words. Options about where the cluster comes from and what to print (``--preset``/``--spec``,
``--catalog``, ``--hostfile``/``--gpus-file`` (read into the ``hosts``/``gpu_list`` parameters), ``--json``,
``--links``, ``--flows``, ``--quiet``, ``figure --out``, ``--quick``) are the command line's own.

``collective`` prints a table in the nccl-tests layout (size, count, type, redop, root, time, algbw, busbw, plus
the normalized busbw) and the hottest links with the flows that cross them; with ``--seeds N`` the table is the
median run's (:mod:`sim.fabric.seeds`) and a line gives the median, min and max normalized busbw over the seeds.
``--json`` prints the same as one JSON document. Refused input is reported by :func:`sim.cli.main` (one line per
reason, exit status 2).
"""
from __future__ import annotations

import json
from pathlib import Path

from sim.core.errors import UsageError
from sim.core.params import add_arguments, values_from_args
from sim.core.progress import Bar
from sim.core.units import GB
from sim.fabric.entry import run_collective, run_figure, run_preset_figures
from sim.fabric.figures import FIGURES, QUICK_PRESET, QUICK_SEEDS
from sim.fabric.hostlist import MAX_LIST_BYTES, NO_ENTRY, ListError
from sim.fabric.params import COLLECTIVE, FIGURE, PRESET_FIGURE
from sim.fabric.preset_figure import PRESET_FIGURE as PRESET_NAME
from sim.fabric.topology import load_topology

COMMANDS = ("collective", "figure")


def add_parsers(sub) -> None:
    c = sub.add_parser("collective", help="simulate a collective over the fabric (nccl-tests style output)",
                       description="Simulate one collective over a cluster's backend fabric at flow level.")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    c.add_argument("--catalog", default=None, metavar="FILE",
                   help="hardware catalog file (TOML, the shape of sim/presets/catalog.toml) the preset or spec "
                        "names its models from (default: the built-in catalog)")
    given = c.add_mutually_exclusive_group()
    given.add_argument("--hostfile", default=None, metavar="FILE",
                       help="host list: one host per line ('host', 'host slots=N' or 'host:N'; # comments), ranks "
                            "in its order, a host's GPUs in slot order; --gpus defaults to its ranks")
    given.add_argument("--gpus-file", dest="gpus_file", default=None, metavar="FILE",
                       help="GPU list: rank r on the GPU of line r (a GPU id, 'host:slot' or '<host>.gpuN')")
    add_arguments(c, COLLECTIVE, skip=("hosts", "gpu_list"))
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    c.add_argument("--links", action="store_true", help="with --json: include every fabric link's utilization")
    c.add_argument("--flows", action="store_true", help="with --json: include every flow with its rate and path")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    f = sub.add_parser("figure", help="reproduce a published figure, or a preset's page of figures, from simulations",
                       description="Write a chart (PNG, SVG) and its data (CSV, JSON) into --out. For "
                                   f"{PRESET_NAME}, --jobs defaults to one leaf group, one zone and the whole cluster, each at most "
                                   "--max-gpus; --seeds, --size and --background are allgather-scale's and "
                                   "roce-vs-ib's, --max-gpus, --sizes and --seed the preset page's.")
    f.add_argument("name", help=f"one of {', '.join(FIGURES + (PRESET_NAME,))} ({PRESET_NAME}: a preset's page of "
                                f"figures, busbw against the roofline and rail-local vs cross-rail traffic)")
    f.add_argument("--out", required=True, metavar="DIR", help="output directory (created if missing)")
    f.add_argument("--preset", default=None, help="cluster for allgather-scale (default meta-roce-24k); for "
                                                  f"{PRESET_NAME}: a preset, several comma-separated, or all")
    f.add_argument("--spec", default=None, metavar="FILE", help=f"{PRESET_NAME}: a cluster spec file instead")
    f.add_argument("--catalog", default=None, metavar="FILE", help=f"{PRESET_NAME}: the hardware catalog file "
                                                                   "the spec names its models from")
    add_arguments(f, FIGURE, skip=("figure",))
    add_arguments(f, PRESET_FIGURE, skip=tuple(p.name for p in FIGURE))
    f.add_argument("--quick", action="store_true", help="a small, fast configuration (tests, smoke runs)")
    f.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args, bar: Bar) -> int:
    if args.command == "collective":
        return _collective(args, bar)
    return _figure(args, bar)


def _collective(args, bar: Bar) -> int:
    values = values_from_args(args, COLLECTIVE)
    source = args.hostfile or args.gpus_file
    if source:
        values["hosts" if args.hostfile else "gpu_list"] = read_list_file(source)
    params = COLLECTIVE.validate(values)
    _, topo = load_topology(args.preset, args.spec, lambda message: bar(0.0, message), catalog=args.catalog)
    run = run_collective(topo, params, bar, source=source)
    if args.json:
        print(json.dumps(run.to_dict(links=args.links, flows=args.flows), indent=1))
    else:
        placement = f"{run.values['placement']} ({source})" if source else run.values["placement"]
        print(format_table(run.seeded.median.result, run.cluster, placement))
        if run.note:
            print(f"# Note: {run.note}")
        if run.values["seeds"] > 1:
            print(format_seeds(run.seeded))
    return 0


def read_list_file(path: str) -> str:
    """The text of a host or GPU list file; UsageError naming the file when it is missing, too large (checked
    before reading: :data:`sim.fabric.hostlist.MAX_LIST_BYTES`), not UTF-8 text or holds no entry."""
    p = Path(path)
    if not p.is_file():
        raise ListError(path, 0, "is not a file")
    if p.stat().st_size > MAX_LIST_BYTES:
        raise ListError(path, 0, f"must be at most {MAX_LIST_BYTES:,} characters, the file has "
                                 f"{p.stat().st_size:,} bytes (sim.fabric.hostlist.MAX_LIST_BYTES)")
    try:
        text = p.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as e:
        raise ListError(path, 0, f"cannot be read as UTF-8 text: {e}") from None
    if not text.strip():                        # the parameter would read it as "no list given"
        raise ListError(path, 0, NO_ENTRY)
    return text


def format_table(result, cluster: str, placement: str) -> str:
    """The nccl-tests layout: a commented header, one row per size, then the summary and the hottest links."""
    p = result.plan
    redop = "sum" if p.collective in ("allreduce", "reducescatter", "reduce") else "none"
    root = p.root if p.collective in ("broadcast", "reduce") else -1
    lines = [
        f"# Collective {p.collective} ({_algo_text(result)}) on {cluster} ({result.kind}): {p.n_ranks:,} GPUs on "
        f"{p.n_hosts:,} hosts, {p.channels} channels",
        f"# placement {placement}, routing {result.routing} ({result.hash} hash), {result.qps} QP per connection, "
        f"UDP source port {result.udp_sport}, seed {result.seed}; {result.n_flows:,} flows",
        f"# roofline busbw {result.roofline / GB:.1f} GB/s (same algorithm, packed hosts, only NIC and NVLink "
        f"limits, at line rate; the run is at achievable rates)",
        f"# latency (critical path, {_hops(result)}): "
        + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in result.latencies.items()
                    if p.algorithm in ("ring", "tree", "direct") or k == "Simple")     # NVLS, PAT: Simple only
        + f"; protocol {result.protocol}{' (NCCL tuning model)' if result.protocol == 'auto' else ''}",
        "#",
        f"# {'size':>12} {'count':>12} {'type':>8} {'redop':>6} {'root':>5} {'algo':>9} {'proto':>6} {'time':>11} "
        f"{'algbw':>8} {'busbw':>8} {'norm':>6}",
        f"# {'(B)':>12} {'(elements)':>12} {'':>8} {'':>6} {'':>5} {'':>9} {'':>6} {'(us)':>11} {'(GB/s)':>8} "
        f"{'(GB/s)':>8} {'(%)':>6}",
    ]
    for r in result.rows:
        lines.append(f"  {r.size:>12} {r.count:>12} {result.dtype:>8} {redop:>6} {root:>5} {r.algorithm:>9} "
                     f"{r.protocol:>6} "
                     f"{r.time * 1e6:>11.1f} {r.algbw / GB:>8.2f} {r.busbw / GB:>8.2f} {100 * r.norm:>6.1f}")
    avg = sum(r.busbw for r in result.rows) / len(result.rows)
    lines += [
        f"# Avg bus bandwidth    : {avg / GB:.3f} GB/s",
        f"# Large-message limit  : busbw {result.limit_busbw / GB:.2f} GB/s = {100 * result.limit_norm:.1f} % of "
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


def _algo_text(result) -> str:
    """The algorithm: the forced one, or ``auto`` with the algorithms NCCL's model chose (per row below)."""
    if result.algorithm_choice != "auto":
        return result.plan.algorithm
    chosen = list(dict.fromkeys(r.algorithm for r in result.rows))
    return f"auto: {', '.join(chosen)}; NCCL tuning model"


def _hops(result) -> str:
    net, nvl = result.critical_hops.get("Simple", (0, 0))
    return f"{net:,} network + {nvl:,} NVLink hops"


def format_seeds(seeded) -> str:
    """One line: the spread of the normalized busbw at the largest size over the seeds (the table is the median's)."""
    st = seeded.stats()["norm_busbw"]
    seeds = [r.seed for r in seeded.runs]
    return (f"# Seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} runs): normalized busbw at "
            f"{seeded.median.result.rows[-1].size} B "
            f"median {100 * st['median']:.1f} % (seed {seeded.median.seed}, the table above), "
            f"min {100 * st['min']:.1f} %, max {100 * st['max']:.1f} %")


def _only(args, name: str, mine, others) -> None:
    """Refuse the options of the other kind of figure (``others``' parameters that ``mine`` lacks) given to ``name``."""
    own = {p.name for p in mine}
    wrong = [p.option for p in others if p.name not in own and getattr(args, p.name, None) is not None]
    if wrong:
        raise UsageError(f"{', '.join(wrong)}: not an option of figure {name}")


def _figure(args, bar: Bar) -> int:
    if args.name == PRESET_NAME:
        _only(args, PRESET_NAME, PRESET_FIGURE, FIGURE)
        if args.preset and args.spec:
            raise UsageError("give --preset or --spec, not both")
        if not (args.preset or args.spec or args.quick):
            raise UsageError(f"figure {PRESET_NAME} needs --preset (a preset, several comma-separated, or all) or "
                             "--spec")
        presets = [p.strip() for p in (args.preset or QUICK_PRESET).split(",") if p.strip()]
        params = PRESET_FIGURE.validate(values_from_args(args, PRESET_FIGURE))
        paths = run_preset_figures(params, bar, out_dir=args.out, presets=presets, spec=args.spec,
                                   catalog=args.catalog).paths
        for path in paths:
            print(path)
        return 0
    if args.name not in FIGURES:
        raise UsageError(f"unknown figure {args.name!r}: choose one of {', '.join(FIGURES + (PRESET_NAME,))}")
    _only(args, args.name, FIGURE, PRESET_FIGURE)
    if args.spec or args.catalog:
        raise UsageError(f"--spec, --catalog: options of figure {PRESET_NAME} only")
    given = values_from_args(args, FIGURE)
    params = FIGURE.validate(given)
    if args.quick and "seeds" not in given:
        params["seeds"] = QUICK_SEEDS
    paths = run_figure(None, params, bar, out_dir=args.out, name=args.name, preset=args.preset,
                       quick=args.quick).paths
    for path in paths:
        print(path)
    return 0
