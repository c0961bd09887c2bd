"""Command line of the debugging engine (contract), registered by :mod:`sim.cli`::

    python -m sim debug --preset meta-roce-24k --gpus 16384 --tp 8 --pp 16 --dp 128 --inject hang:rank=12345 \\
        --dump DIR [--json]
    python -m sim debug analyze DIR [--preset meta-roce-24k | --spec FILE] [--json]
    python -m sim debug unpack ARCHIVE DIR        (a legacy archive; a download of today: tar xzf / unzip)
    python -m sim startup --gpus 1024:32768 [--json]

Options come from :data:`sim.debug.params.DEBUG` and :data:`sim.debug.params.STARTUP`; ``--preset``/``--spec``, ``--dump``,
``--json`` and ``--quiet`` are the command line's own. ``debug analyze`` and ``debug unpack`` are parsed as the
``debug-analyze`` and ``debug-unpack`` commands (:func:`rewrite`); an archive that is not one of ours is refused
naming the member (:func:`sim.debug.archive.unpack`), exit 2. Refused input (a bad ``--inject`` too: :func:`sim.debug.faults.parse_fault`): one line per
field, exit status 2 (:func:`sim.cli.main`); so is a ``--dump`` folder that cannot take the dumps (not a folder,
not writable, not enough room: :func:`sim.debug.dumpsize.prepare_folder`), checked before simulating.

The engine is imported at module level: :mod:`sim.debug.params`, which the options need, imports its checks anyway,
and :mod:`sim.cli` imports this module only when one of its commands runs.
"""
from __future__ import annotations

import json

from sim.core.errors import UsageError
from sim.core.params import add_arguments, values_from_args
from sim.core.progress import span
from sim.debug import archive
from sim.debug.analyze import analyze
from sim.debug.dumpformat import DumpError
from sim.debug.dumpsize import dump_bytes, prepare_folder
from sim.debug.entry import run_debug, run_startup
from sim.debug.params import DEBUG, STARTUP
from sim.debug.startup import format_model
from sim.fabric.topology import load_topology

COMMANDS = ("debug", "debug-analyze", "debug-unpack", "startup")


def rewrite(argv: list[str]) -> list[str]:
    """``debug analyze ...`` -> ``debug-analyze ...``, ``debug unpack ...`` -> ``debug-unpack ...``."""
    if len(argv) >= 2 and argv[0] == "debug" and argv[1] in ("analyze", "unpack"):
        return [f"debug-{argv[1]}"] + argv[2:]
    return argv


def _where(p, default: bool = True) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset" + (" (default meta-roce-24k)" if default
                                                                          else " the dumps come from (names hosts "
                                                                               "and links)"))
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")


def add_parsers(sub) -> None:
    d = sub.add_parser("debug", help="rehearse a fault in a training job: flight recorder dumps (debug analyze DIR "
                                     "reads them)",
                       description="Simulate a job's collectives with a fault injected and write the flight "
                                   "recorder dump of every rank (docs/debugging.md). 'python -m sim debug analyze "
                                   "DIR' names the culprit.")
    _where(d)
    add_arguments(d, DEBUG)
    d.add_argument("--dump", required=True, metavar="DIR", help="folder for the dumps (created if missing)")
    d.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    d.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    a = sub.add_parser("debug-analyze", help="(python -m sim debug analyze DIR) name the culprit in a folder of "
                                             "flight recorder dumps",
                       description="Read a folder of flight recorder dumps (ours or PyTorch's) and name the culprit, "
                                   "the stragglers and each rank's progress (docs/debugging.md).")
    a.add_argument("folder", metavar="DIR", help="folder of per-rank dumps (<prefix><rank>)")
    _where(a, default=False)
    a.add_argument("--json", action="store_true", help="print the result (schema in docs/debugging.md)")
    a.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    u = sub.add_parser("debug-unpack", help="(python -m sim debug unpack ARCHIVE DIR) a legacy debug run's dumps "
                                            "archive (byte columns) back into its folder",
                       description="Unpack a dumps archive the twin made before its downloads held the dumps as they "
                                   "are (a tar.gz of the dumps in byte columns, nccl_trace_rank_<rank>.cols145, "
                                   "docs/debugging.md) into DIR, the files as the rehearsal wrote them (debug analyze "
                                   "DIR and PyTorch's fr_trace read them). A download of today unpacks with tar xzf "
                                   "or unzip.")
    u.add_argument("archive", metavar="ARCHIVE", help="the run's legacy dumps archive (run-<id>-dumps.tar.gz)")
    u.add_argument("folder", metavar="DIR", help="folder for the dumps (created if missing)")
    u.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    s = sub.add_parser("startup", help="process-group start-up time over job size",
                       description="Model the start-up of a 4D job's process groups (TCPStore, NCCL bootstrap, "
                                   "groups) over job sizes (docs/debugging.md).")
    add_arguments(s, STARTUP)
    s.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args, bar) -> int:
    if args.command == "startup":
        d = run_startup(None, STARTUP.validate(values_from_args(args, STARTUP)), progress=bar).to_dict()
        bar.close()
        print(json.dumps(d) if args.json else format_model(d))
        return 0
    if args.command == "debug-unpack":
        try:
            written = archive.unpack(args.archive, args.folder)
        except DumpError as e:
            raise UsageError(str(e)) from None
        bar.close()
        print(f"# {len(written):,} files in {args.folder}; analyze: python -m sim debug analyze {args.folder}")
        return 0
    if args.command == "debug-analyze":
        try:
            d = analyze(args.folder, cluster=args.spec or args.preset, progress=bar)
        except DumpError as e:
            raise UsageError(str(e)) from None
        bar.close()
        print(json.dumps(d) if args.json else format_analysis(d))
        return 0
    params = DEBUG.validate(values_from_args(args, DEBUG))
    try:
        prepare_folder(args.dump, dump_bytes(params))                   # before 20 s of simulation, not after
    except UsageError as e:
        raise UsageError(f"--dump {e}") from None
    _, topo = load_topology(args.preset, args.spec, lambda message: bar(0.0, message))
    run = run_debug(topo, params, progress=span(bar, 0.0, 0.5))
    run.write_dumps(args.dump, progress=span(bar, 0.5, 1.0))
    bar.close()
    d = run.to_dict()
    if args.json:
        print(json.dumps(d))
    else:
        f = d["fault"]
        print(f"# {d['gpus']:,} ranks on {d['cluster']}, fault {f['kind']}"
              + "".join(f", {k} {v}" for k, v in f.items() if k != "kind")
              + f"; step {d['step_time']:.3f} s; dump at {d['dump_time_s']:.1f} s "
              + ("(watchdog timeout)" if d["hung"] else "(on demand)"))
        print(f"# {d['files']:,} dumps in {args.dump} (last {d['entries']:,} entries per rank); "
              f"{len(d['dead_ranks'])} ranks left none; analyze: python -m sim debug analyze {args.dump}")
    return 0


def format_analysis(d: dict) -> str:
    lines = [f"# {d['dumps']:,} dumps of {d['ranks']:,} ranks ({d['backend']}, flight recorder {d['version']}); "
             f"verdict: {d['verdict']}"]
    if d["missing_dumps"]:
        m = d["missing_dumps"]
        lines.append(f"# no dump from {len(m)} ranks: {', '.join(map(str, m[:16]))}{' ...' if len(m) > 16 else ''}")
    c = d["culprit"]
    if c:
        pg = c["process_group"]
        lines.append(f"# culprit ({c['kind']}): ranks {', '.join(map(str, c['ranks'][:16]))} at {c['op']} "
                     f"#{c['collective_seq_id']} of group {pg['name']} ({pg['desc']}, {pg['size']} ranks)")
        lines.append(f"#   {c['explanation']}")
        if c["hosts"]:
            lines.append(f"#   hosts: {', '.join(c['hosts'][:8])}")
        for link in c["links"][:8]:
            lines.append(f"#   link: {link}")
        if len(d["mismatches"]) > 1:
            lines.append(f"# {len(d['mismatches'])} groups stopped or disagree (first {min(5, len(d['mismatches']))}):")
            for m in d["mismatches"][:5]:
                lines.append(f"#   {m['kind']:7} {m['op']} #{m['collective_seq_id']} group {m['process_group']['name']}"
                             f" ({m['process_group']['desc']}): ranks {', '.join(map(str, m['ranks'][:8]))}")
    s = d["stragglers"]
    if s["ranks"]:
        lines.append("# stragglers (late: sum of arrivals after the group's first):")
        for r in s["ranks"][:5]:
            lines.append(f"#   rank {r['rank']:>6}  late {r['late_s']:.4f} s  {r['host'] or ''}")
        for g in s["process_groups"][:5]:
            lines.append(f"#   group {g['name']} ({g['desc']}): peers wait {g['wait_s']:.4f} s, excess "
                         f"{g['excess_s']:.4f} s, slowest rank {g['slowest_rank']}")
    return "\n".join(lines)
