"""Command line of the storage engine (contract), registered by :mod:`sim.cli`::

    python -m sim checkpoint --preset meta-roce-24k --gpus 16384 --bytes-per-gpu 4G --store tectonic \\
        --mode async|sync [--restore] [--json]
    python -m sim storage-fanout --store hammerspace --clients 24576 [--json]

Options come from :data:`sim.storage.params.CHECKPOINT` and :data:`sim.storage.params.STORAGE_FANOUT` (the declaration the REST
API uses); ``--preset``/``--spec``, ``--json``, ``--series`` and ``--quiet`` are the command line's own. Refused
input is reported by :func:`sim.cli.main` (one line per field, exit status 2).
"""
from __future__ import annotations

import json

from sim.core.params import add_arguments, values_from_args
from sim.fabric.topology import load_topology
from sim.storage.entry import run_checkpoint, run_storage_fanout
from sim.storage.params import CHECKPOINT, STORAGE_FANOUT

COMMANDS = ("checkpoint", "storage-fanout")
TB = 1e12


def add_parsers(sub) -> None:
    c = sub.add_parser("checkpoint", help="simulate a checkpoint or restore on the frontend fabric and storage",
                       description="Simulate one checkpoint (or restore) of a job to a storage cluster.")
    _where(c)
    add_arguments(c, CHECKPOINT)
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    c.add_argument("--series", action="store_true", help="with --json: include the time series and link "
                                                         "utilization")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    f = sub.add_parser("storage-fanout", help="N clients opening and reading the same small files",
                       description="Simulate N clients opening and reading the same files (code on every node).")
    _where(f)
    add_arguments(f, STORAGE_FANOUT)
    f.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    f.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def _where(p) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")


def run(args, bar) -> int:
    params_set = CHECKPOINT if args.command == "checkpoint" else STORAGE_FANOUT
    params = params_set.validate(values_from_args(args, params_set))
    cluster, topo = load_topology(args.preset, args.spec)
    bar(0.0, f"cluster {cluster.name}: {len(topo.layout.server_rack):,} storage servers")
    if args.command == "checkpoint":
        run = run_checkpoint(topo, params, progress=bar)
        bar.close()
        if args.json:
            print(json.dumps(run.to_dict(series=args.series, links=args.series)))
        else:
            print(format_checkpoint(run.result, run.cluster))
        return 0
    run = run_storage_fanout(topo, params, progress=bar)
    bar.close()
    if args.json:
        print(json.dumps(run.to_dict()))
    else:
        print(format_fanout(run.result, run.cluster))
    return 0


def _gib(x: float) -> str:
    return f"{x / (1 << 30):,.2f} GiB"


def format_checkpoint(r, cluster: str) -> str:
    what = "Restore" if r.restore else "Checkpoint"
    lines = [
        f"# {what} on {cluster}: {r.gpus:,} GPUs ({len(r.hosts):,} hosts), {r.writers:,} writing, "
        f"{_gib(r.bytes)} in all, {r.store} ({len(r.servers):,} servers, {int(r.server_ssds.sum()):,} SSDs)",
        f"# mode {'restore' if r.restore else r.mode}, redundancy {r.redundancy} (x{r.amplification:.2f}); "
        f"{r.flows:,} flows, {r.events} events, {r.seconds:.2f} s wall",
    ]
    waits = ("every byte loaded onto the GPUs" if r.restore else
             "staging to host memory" if r.mode == "async" else "durability")
    lines += [
        f"blocked      {r.blocked_seconds:10.3f} s   (training waits for {waits})",
        f"{'loaded' if r.restore else 'durable':<12} {r.durable_seconds:10.3f} s",
        f"peak rate    {r.peak_rate / TB:10.2f} TB/s at the servers ({r.peak_rate / r.amplification / TB:.2f} TB/s "
        f"of checkpoint data)",
        f"mean rate    {r.mean_rate / TB:10.2f} TB/s over the {'read' if r.restore else 'upload'}",
        "phases       " + ", ".join(f"{p['name']} {p['start']:.3f}-{p['end']:.3f} s" for p in r.phases
                                    if p["start"] is not None),
    ]
    if r.bottlenecks:
        b = r.bottlenecks[0]
        lines.append(f"bottleneck   {b.tier}: {b.name} at {100 * b.utilization:.1f} %")
    for t in r.tiers[:6]:
        lines.append(f"  tier {t['tier']:<18} {t['resources']:>6,} used, busiest {100 * t['max_utilization']:5.1f} % "
                     f"({t['busiest']})")
    if r.data_loading:
        d = r.data_loading
        lines.append(f"data loading {d['mean_during'] / TB:10.3f} TB/s kept of {d['demand'] / TB:.3f} TB/s demanded "
                     f"({100 * d['kept']:.1f} %)")
    return "\n".join(lines)


def format_fanout(r, cluster: str) -> str:
    lines = [f"# Fan-out on {cluster}: {r.store}, {r.files:,} files of {r.file_size:,} B, {r.ops_per_file} metadata "
             f"ops per file; metadata service {r.metadata_ops_per_s:,.0f} ops/s, {r.metadata_latency * 1e6:.0f} us "
             f"per op",
             f"# {'clients':>8} {'hosts':>6} {'time (s)':>10} {'metadata':>10} {'data':>10}  limit"]
    for x in r.sweep:
        lines.append(f"  {x.clients:>8,} {x.hosts:>6,} {x.seconds:>10.3f} {x.metadata_seconds:>10.3f} "
                     f"{x.data_seconds:>10.3f}  {x.limit}")
    if r.bottlenecks:
        b = r.bottlenecks[0]
        lines.append(f"# bottleneck at {r.run.clients:,} clients: {b['tier']}: {b['name']} at "
                     f"{100 * b['utilization']:.1f} %")
    return "\n".join(lines)
