"""Command line of the validation (contract), registered by :mod:`sim.cli`::

    python -m sim validate [--corpus DIR] [--kind KIND] [--json] [--cross-validate K] [--check] [--regression]
                           [--markdown] [--fit] [-q]

``--kind`` and ``--cross-validate`` are :data:`sim.validation.params.VALIDATE`'s (the run kind's parameters);
``--check`` cross-validates (5 folds unless ``--cross-validate`` says) and exits 1 when a threshold breaks or, on the
repository's corpus, when docs/validation.md is not what ``--markdown`` prints (CI runs it); ``--regression``
exits 1 when a median (overall, or a kind's) rose more than one point above
the one docs/validation.md commits, or that file is not what ``--markdown`` prints; ``--markdown`` prints
docs/validation.md; ``--fit`` fits the fitted factors across the corpus and writes ``sim/core/fitted.toml``
first. Refused input (a malformed corpus file, naming the file and field) exits 2 (:func:`sim.cli.main`).
"""
from __future__ import annotations

import json
import sys

from sim.core.params import add_arguments, values_from_args
from sim.validation import thresholds
from sim.validation.corpus import load_corpus
from sim.validation.entry import run_validate
from sim.validation.fitting import write_fitted
from sim.validation.markdown import DOC_PATH, render
from sim.validation.params import VALIDATE
from sim.validation.report import fit_corpus, validate

COMMANDS = ("validate",)
EXIT_BROKEN = 1


def add_parsers(sub) -> None:
    c = sub.add_parser("validate", help="the twin against the public validation corpus",
                       description="Run every observation of the public validation corpus through the capability "
                                   "a user would run, print predicted vs measured and the error per kind and "
                                   "overall (docs/validation.md).")
    c.add_argument("--corpus", default=None, metavar="DIR", help="a corpus directory of your own (default: the "
                                                                 "repository's, sim/validation/corpus)")
    add_arguments(c, VALIDATE)
    c.add_argument("--check", action="store_true", help="exit 1 when a threshold breaks (docs/validation.md)")
    c.add_argument("--regression", action="store_true", help="exit 1 when a median rose more than one point above "
                                                             "docs/validation.md's, or that file is stale")
    c.add_argument("--markdown", action="store_true", help="print docs/validation.md")
    c.add_argument("--fit", action="store_true", help="fit the fitted factors across the corpus and write "
                                                      "sim/core/fitted.toml first")
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args, bar) -> int:
    values = VALIDATE.validate(values_from_args(args, VALIDATE))
    if (args.check or args.markdown or args.regression) and values["cross_validate"] is None:
        values["cross_validate"] = thresholds.CHECK_FOLDS
    if args.fit:
        corpus = load_corpus(args.corpus, kinds=[values["kind"]] if values["kind"] else None)
        fit = fit_corpus(corpus, progress=lambda f, m: bar(0.5 * f, m))
        factors = fit["factors"]
        check = validate(corpus, factors={n: v["value"] for n, v in factors.items()})
        write_fitted(factors, {"observations": check["overall"]["count"], "sources": len(corpus.sources),
                               "median_before": round(check["before"]["overall"]["median"], 6),
                               "median_after": round(check["overall"]["median"], 6),
                               "median_held_out": round(fit["holdout"]["median_abs_error"] or 0.0, 6),
                               "held_out_folds": int(fit["holdout"]["folds"] or 0)})
        bar(0.5, "fitted: " + ", ".join(f"{n} = {v['value']:.4g}" for n, v in factors.items() if v["applied"]))
    report = run_validate(values, progress=bar, corpus_dir=args.corpus).to_dict()
    bar.close()
    if args.markdown:
        sys.stdout.write(render(report))
    elif args.json:
        print(json.dumps(report))
    else:
        print(format_report(report))
    if args.check or args.regression:
        broken = list(report["broken"] if args.check else report["regressions"])
        if args.corpus is None and values["kind"] is None:
            committed = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
            if committed != render(report):
                broken.append(f"{DOC_PATH.name} does not match what `python -m sim validate --markdown` prints: "
                              f"regenerate it")
        what = "threshold broken" if args.check else "regression"
        for b in broken:
            print(f"python -m sim validate: {what}: {b}", file=sys.stderr)
        return EXIT_BROKEN if broken else 0
    return 0


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:6.1f}%"


def format_report(d: dict) -> str:
    lines = [f"# {d['overall']['count']} observations from {len(d['sources'])} sources", "#",
             f"#  {'observation':<58} {'GPU':<14} {'measured':>10} {'predicted':>10} {'error':>8}"]
    for r in d["observations"]:
        lines.append(f"   {r['id'][:58]:<58} {r['gpu'][:14]:<14} {r['measured']:>10.4g} {r['predicted']:>10.4g} "
                     f"{100 * r['error']:+7.1f}%" + ("  (excused)" if r["excused"] else ""))
    lines += ["#", f"#  {'kind':<14} {'count':>6} {'median':>8} {'p90':>8} {'max':>8} {'before':>8}"]
    for kind, s in list(d["kinds"].items()) + [("all", d["overall"])]:
        b = d["before"]["overall"] if kind == "all" else d["before"]["kinds"][kind]
        lines.append(f"   {kind:<14} {s['count']:>6} {_pct(s['median'])} {_pct(s['p90'])} {_pct(s['max'])} "
                     f"{_pct(b['median'])}")
    cv = d.get("cross_validated")
    if cv:
        lines.append(f"#  cross-validated ({cv['folds']} folds): median {_pct(cv['median'])}")
    lines.append("#  thresholds: " + ("all met" if d["passed"] else "BROKEN: " + "; ".join(d["broken"])))
    return "\n".join(lines)
