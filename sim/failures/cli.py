"""Command line of the failures engine (contract), registered by :mod:`sim.cli`::

    python -m sim failures --preset meta-roce-24k --gpus 16384 --days 54 --checkpoint-interval 30m \\
        [--spares 32] [--seeds 100] [--json] [--sweep-interval 5m:4h] [--inject gpu:<GPU name>@10h,...]

Options come from :data:`sim.failures.params.FAILURES` (the declaration the REST API uses); ``--preset``/``--spec``,
``--json`` and ``--quiet`` are the command line's own. Refused input is reported by :func:`sim.cli.main` (one line
per field, exit status 2).
"""
from __future__ import annotations

import json

from sim.core.params import add_arguments, values_from_args
from sim.fabric.topology import load_topology
from sim.failures.entry import run_failures
from sim.failures.params import FAILURES

COMMANDS = ("failures",)


def add_parsers(sub) -> None:
    f = sub.add_parser("failures", help="a training job's wall clock over days: failures, restarts, re-routing",
                       description="Simulate a long training job under failures (Meta's 54-day interruption table "
                                   "by default): effective training time, time lost per cause and phase, and the "
                                   "checkpoint interval sweep (docs/reliability.md).")
    where = f.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    add_arguments(f, FAILURES)
    f.add_argument("--json", action="store_true", help="print one JSON document (the first seed's timeline and "
                                                       "events, the summary over seeds, the sweep)")
    f.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args, bar) -> int:
    params = FAILURES.validate(values_from_args(args, FAILURES))
    _, topo = load_topology(args.preset, args.spec)
    doc = run_failures(topo, params, progress=bar).to_dict()
    bar.close()
    if args.json:
        print(json.dumps(doc))
    else:
        print(format_failures(doc))
    return 0


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"


def format_failures(doc: dict) -> str:
    r, s, p = doc["result"], doc["summary"], doc["params"]
    ck = r["checkpoint"]
    lines = [
        f"# Failures of {p['model']} on {r['gpus']:,} GPUs ({r['hosts']:,} hosts) of {doc['cluster']} over "
        f"{r['days']:g} days; {r['spares']:,} spare hosts; step {r['step_s']:.3f} s",
        f"# checkpoint every {ck['interval_s'] / 60:g} min, {ck['bytes_per_gpu'] / 2**20:,.0f} MiB per GPU: training "
        f"waits {ck['blocked_s']:.2f} s, durable after {ck['durable_s']:.2f} s, restore {ck['restore_s']:.2f} s "
        f"({ck['source']})",
        f"# full cost C per checkpoint {ck['cost_s']:.3f} s (wait {ck['blocked_s']:.3f} s + drain's share of data "
        f"loading {ck['data_loading_s']:.3f} s + host CPU of the background write {ck['host_cpu_s']:.3f} s); "
        f"{ck['metadata_ops']:,.0f} metadata operations ({ck['metadata_busy_s']:.2f} s of the store's metadata "
        f"service); the store absorbs one every {ck['store_gap_s']:.2f} s at its sustained rate; overlapping: "
        f"{ck['overlapping']}, "
        f"{ck['count']:,} taken, {ck['skipped']:,} skipped",
        f"# MTBF (crashes, from the rates) {_h(r['mtbf_s'])}; Young/Daly interval sqrt(2 x {ck['cost_s']:.3f} s x "
        f"MTBF) = {r['young_daly_s'] / 60:.1f} min",
        "#",
        f"seed {r['seed']}: effective training time {100 * r['effective_ratio']:.2f} % "
        f"({_h(r['productive_s'])} of {_h(r['wall_s'])}); {r['interruptions']} interruptions "
        f"({r['interruptions_per_day']:.2f} per day), {r['degradations']} degradations; "
        f"{r['solves']['fabric_states']} fabric states solved in {r['solves']['seconds']:.2f} s",
        "#  lost per phase         hours    share of wall",
    ]
    for k, v in r["lost"]["by_phase"].items():
        lines.append(f"   {k:<20} {v / 3600:9.2f}   {100 * v / r['wall_s']:6.2f} %")
    lines.append("#  lost per cause         hours    failures")
    for k, v in r["lost"]["by_cause"].items():
        lines.append(f"   {k:<20} {v / 3600:9.2f}   {r['failures_by_category'].get(k, '')}")
    lines.append("#  detection per class    hours    mechanism, seconds each")
    table = {row["category"]: row for row in r["detection"]["table"]}
    for k, v in r["detection"]["by_class"].items():
        lines.append(f"   {k:<20} {v / 3600:9.2f}   {table[k]['mechanism']}, {table[k]['seconds']:.1f} s")
    for p_ in doc.get("published", []):
        sim_ = "-" if p_["simulated"] is None else f"{p_['simulated']:g}"
        lines.append(f"# published [{p_['source']}] {p_['what']}: {p_['low']:g}..{p_['high']:g} {p_['unit']}, "
                     f"simulated {sim_}")
    if s["count"] > 1:
        e, i = s["effective_ratio"], s["interruptions_per_day"]
        lines.append(f"# over {s['count']} seeds: effective {100 * e['mean']:.2f} % mean (p5 {100 * e['p5']:.2f}, "
                     f"p50 {100 * e['p50']:.2f}, p95 {100 * e['p95']:.2f}); interruptions per day {i['mean']:.2f} "
                     f"(p5 {i['p5']:.2f}, p95 {i['p95']:.2f})")
    if "sweep" in doc:
        w = doc["sweep"]
        lines.append(f"# checkpoint interval sweep over {len(w['seeds'])} seeds: best "
                     f"{w['best_interval_s'] / 60:.1f} min ({100 * w['best_effective_ratio']:.2f} %), Young/Daly "
                     f"{w['young_daly_s'] / 60:.1f} min")
        for row in w["rows"]:
            e = row["effective_ratio"]
            lines.append(f"   {row['interval_s'] / 60:9.1f} min   {100 * e['mean']:6.2f} %  (p5 {100 * e['p5']:.2f}, "
                         f"p95 {100 * e['p95']:.2f})")
    return "\n".join(lines)
