"""Command line of the calibration (contract), registered by :mod:`sim.cli`::

    python -m sim calibrate --preset meta-roce-24k (--measurements FILE | --log FILE [--log FILE ...])
        [--hostfile FILE] [--column out-of-place|in-place] [--fit gemm_efficiency,...]
        [--holdout FRACTION | --folds K] [--seed N] [--json]

``--measurements FILE`` is read into the ``measurements`` parameter of :data:`sim.calibrate.params.CALIBRATE` (a
measurements file, or raw nccl-tests output: the parameter takes either); ``--log FILE`` (repeated) reads raw
nccl-tests output, each file checked on its own (an error names the file and its line), then one after the other
into ``measurements``; ``--hostfile`` into ``hosts``, ``--column``, ``--fit``, ``--holdout``, ``--folds`` and
``--seed`` into their parameters; ``--preset``/``--spec``, ``--json`` and ``--quiet`` are the command line's own.
Refused
input (an unknown kind, a log that does not parse, a measured value <= 0, a parameter a kind refuses, a name that is
not fittable) is reported by :func:`sim.cli.main`: one line naming ``entry[i].field``, exit status 2.
"""
from __future__ import annotations

import json

from sim.calibrate.entry import run_calibrate
from sim.calibrate.measurements import read_file
from sim.calibrate.nccltests import HALVES, LogError, parse_logs
from sim.calibrate.params import CALIBRATE
from sim.core.errors import UsageError
from sim.fabric.cli import read_list_file
from sim.fabric.topology import load_topology

COMMANDS = ("calibrate",)


def add_parsers(sub) -> None:
    c = sub.add_parser("calibrate", help="measured results against the twin's predictions, and a fit of named "
                                         "parameters",
                       description="Predict every measured entry (nccl-tests logs, job step times, checkpoint and "
                                   "restore times, failures), fit named parameters by least squares on the "
                                   "relative error, and predict again (docs/calibration.md).")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    given = c.add_mutually_exclusive_group(required=True)
    given.add_argument("--measurements", "-m", metavar="FILE",
                       help="the measurements file: TOML [[entry]] tables or JSON, or raw nccl-tests output "
                            "(docs/calibration.md)")
    given.add_argument("--log", action="append", metavar="FILE",
                       help="raw nccl-tests output (all_reduce_perf, all_gather_perf, ... as printed: one or several "
                            "logs per file); repeat for more files")
    c.add_argument("--hostfile", default=None, metavar="FILE", help=CALIBRATE.by_name["hosts"].help)
    c.add_argument("--column", default=HALVES[0], choices=HALVES, help=CALIBRATE.by_name["column"].help)
    c.add_argument("--fit", default=None, metavar="NAME,NAME,...", help=CALIBRATE.by_name["fit"].help)
    split = c.add_mutually_exclusive_group()
    split.add_argument("--holdout", type=float, default=None, metavar="FRACTION",
                       help=CALIBRATE.by_name["holdout"].help)
    split.add_argument("--folds", type=int, default=None, metavar="K", help=CALIBRATE.by_name["folds"].help)
    c.add_argument("--seed", type=int, default=0, help=CALIBRATE.by_name["seed"].help)
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def read_logs(paths: list[str]) -> str:
    """The raw nccl-tests output of ``--log`` files, one after the other; each file parsed on its own first, so
    that a refusal names the file and its own line."""
    texts = []
    for path in paths:
        text = read_file(path)
        try:
            parse_logs(text)
        except LogError as e:
            raise UsageError(f"--log {path}: {e}") from None
        texts.append(text.rstrip("\n") + "\n")
    return "".join(texts)


def run(args, bar) -> int:
    text = read_file(args.measurements) if args.measurements else read_logs(args.log)
    hosts = read_list_file(args.hostfile) if args.hostfile else None
    values = CALIBRATE.validate({"measurements": text, "hosts": hosts, "column": args.column, "fit": args.fit,
                                 "holdout": args.holdout, "folds": args.folds, "seed": args.seed})
    _, topo = load_topology(args.preset, args.spec, lambda message: bar(0.0, message))
    result = run_calibrate(topo, values, progress=bar)
    bar.close()
    print(json.dumps(result.to_dict()) if args.json else format_calibration(result.to_dict()))
    return 0


def _value(x: float) -> str:
    return f"{x:.4g}" if x is not None else "-"


def _signed(x: float | None) -> str:
    """A signed error in percent; ``inf`` for a prediction that is not finite."""
    return f"{100 * x:+.2f}%" if x is not None else "inf"


def _pct(x: float | None) -> str:
    return f"{100 * x:.2f}%" if x is not None else "-"


def format_calibration(d: dict) -> str:
    lines = [f"# Calibration on {d['cluster']}: {len(d['entries'])} observations, fit "
             f"{', '.join(d['fit']) or 'nothing'} ({d['iterations']} iterations, {d['evaluations']} evaluations, "
             f"{d['engine_runs']} engine runs, {d['seconds']:.1f} s)", "#",
             f"#  {'entry':<28} {'kind':<10} {'what':<16} {'measured':>10} {'before':>10} {'after':>10} "
             f"{'error before':>12} {'error after':>11}"]
    for r in d["entries"]:
        lines.append(f"   {r['name'][:28]:<28} {r['kind']:<10} {r['label'][:16]:<16} {_value(r['measured']):>10} "
                     f"{_value(r['before']['predicted']):>10} {_value(r['after']['predicted']):>10} "
                     f"{_signed(r['before']['error']):>12} {_signed(r['after']['error']):>11}")
    lines += ["#", "#  |error| by kind       before: median   worst    after: median   worst"]
    for kind, b in d["before"].items():
        a = d["after"][kind]
        lines.append(f"   {kind:<20} {_pct(b['median_abs_error']):>15} {_pct(b['worst_abs_error']):>8} "
                     f"{_pct(a['median_abs_error']):>16} {_pct(a['worst_abs_error']):>8}")
    if d["parameters"]:
        rank = d["rank"]
        lines += ["#", f"#  {'parameter':<22} {'value':>10} {'95% low':>10} {'95% high':>10}   bounds"
                       f"                 determined (Jacobian rank {rank['rank']} of {rank['parameters']})"]
        for name, p in d["parameters"].items():
            lines.append(f"   {name:<22} {_value(p['value']):>10} {_value(p['low']):>10} {_value(p['high']):>10}   "
                         f"[{p['bounds'][0]:g}, {p['bounds'][1]:g}]".ljust(80) + ("yes" if p["identifiable"]
                                                                                   else "REFUSED"))
    for r in d["refused"]:
        lines.append(f"# refused: {r['name']}: {r['reason']}; {r['would']} would determine it")
    lines += ["#", f"# held-out error: {holdout_text(d['holdout'])}"]
    lines += [f"# warning: {w}" for w in d["warnings"] if not w.startswith(tuple(f"{r['name']}: refused"
                                                                                  for r in d["refused"]))]
    return "\n".join(lines)


def holdout_text(h: dict) -> str:
    """One line: the held-out scheme, the median |error| held out, beside before the fit and in-sample."""
    if h["method"] is None or h["median_abs_error"] is None:
        return f"none ({h['reason']})"
    scheme = (f"{h['folds']} folds" if h["method"] == "folds" else "leave-one-out" if h["method"] == "leave-one-out"
              else f"{100 * h['fraction']:g} % held out")
    return (f"median |error| {100 * h['median_abs_error']:.2f} % on {h['count']} held-out observations ({scheme}, "
            f"seed {h['seed']}); at the start {100 * h['before_median_abs_error']:.2f} %, in-sample "
            f"{100 * h['in_sample_median_abs_error']:.2f} %" + (f"; {h['reason']}" if h["reason"] else ""))
