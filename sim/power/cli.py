"""Command line of the power engine (contract), registered by :mod:`sim.cli`::

    python -m sim power --preset meta-roce-24k --model llama3-405b --gpus 16384 --tp 8 --pp 16 --dp 128 \\
        [--power-cap 500 | --cap-from rack|building] [--power-floor W] [--cap-sweep 400,500,600,700] \\
        [--days 2 --failures] [--json [--series]]
    python -m sim power-schedule --preset meta-roce-24k [--jobs FILE | --arrivals 200 --days 30] [--json [--series]]

Options come from :data:`sim.power.params.POWER` and :data:`sim.power.params.POWER_SCHEDULE` (the declarations
the twin's run kinds use); ``--preset``/
``--spec``, ``--json``, ``--series`` and ``--quiet`` are the command line's own. Refused input is reported by
:func:`sim.cli.main` (one line per field, exit status 2).
"""
from __future__ import annotations

import json

from sim.core.params import add_arguments, values_from_args
from sim.fabric.topology import load_topology
from sim.power.entry import run_power, run_power_schedule
from sim.power.params import POWER, POWER_SCHEDULE

COMMANDS = ("power", "power-schedule")


def add_parsers(sub) -> None:
    c = sub.add_parser("power", help="a training job's power from GPU to building over its step (and over days)",
                       description="Simulate a training job's power draw over its step at millisecond resolution "
                                   "(and over days under failures): peak, mean, swing, ramp, energy per token, "
                                   "the worst racks against their budgets, and what a GPU power cap costs.")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    add_arguments(c, POWER)
    c.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    c.add_argument("--series", action="store_true", help="with --json: include the step's waveforms")
    c.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    s = sub.add_parser("power-schedule", help="the cluster's power over a job queue's schedule",
                       description="Schedule a job queue (as python -m sim schedule) and simulate the cluster's "
                                   "power as its jobs come and go.")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")
    add_arguments(s, POWER_SCHEDULE, skip=("jobs",))
    s.add_argument("--jobs", default=None, metavar="FILE", help="the job queue (JSON or TOML, docs/jobs.md); "
                                                                "default: synthetic arrivals")
    s.add_argument("--json", action="store_true", help="print one JSON document instead of the summary")
    s.add_argument("--series", action="store_true", help="with --json: include the draw over time")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def run(args, bar) -> int:
    if args.command == "power-schedule":
        return _run_schedule(args, bar)
    params = POWER.validate(values_from_args(args, POWER))
    cluster, topo = load_topology(args.preset, args.spec)
    bar(0.0, f"cluster {cluster.name}: {topo.n_gpus:,} GPUs")
    result = run_power(topo, params, progress=bar)
    bar.close()
    if args.json:
        print(json.dumps(result.to_dict(series=args.series)))
    else:
        print(format_power(result.to_dict()))
    return 0


def format_power(d: dict) -> str:
    lay = d["layout"]
    lines = [f"# Power on {d['cluster']}: {d['model']} on {d['gpus']:,} GPUs (tp {lay['tp']}, cp {lay['cp']}, "
             f"pp {lay['pp']}, dp {lay['dp']}), {d['resolution_ms']:g} ms resolution",
             f"# GPU cap {d['cap_w']:g} W ({d['cap_source']}), clock share {d['clock_share']:.3f}"
             + (f", floor {d['floor_w']:g} W" if d["floor_w"] is not None else ""),
             f"step             {d['step_s']:10.3f} s   ({d['tokens_per_s']:,.0f} tokens/s, MFU "
             f"{100 * d['mfu']:.1f} %)",
             f"cluster peak     {d['cluster_peak_mw']:10.3f} MW",
             f"cluster mean     {d['cluster_mean_mw']:10.3f} MW",
             f"cluster swing    {d['cluster_swing_mw']:10.3f} MW   (peak - lowest within the step)",
             f"ramp rate        {d['cluster_ramp_mw_per_s']:10.1f} MW/s (steepest between {d['resolution_ms']:g} "
             f"ms bins)",
             f"job mean         {d['job_mean_mw']:10.3f} MW   (its GPUs and hosts)",
             f"energy per token {d['energy_per_token_j']:10.3f} J   (its GPUs and hosts; the GPUs alone "
             f"{d['gpu_energy_per_token_j']:.3f} J)"]
    if "uncapped" in d:
        u = d["uncapped"]
        lines.append(f"default          (no cap below the TDP, no floor) step {u['step_s']:.3f} s, job mean "
                     f"{u['job_mean_mw']:.3f} MW, {u['energy_per_token_j']:.3f} J/token, swing "
                     f"{u['cluster_swing_mw']:.3f} MW: this run costs {100 * d['step_time_cost']:+.1f} % step time, "
                     f"saves {d['energy_saved_per_token_j']:+.3f} "
                     f"J/token ({u['gpu_energy_per_token_j'] - d['gpu_energy_per_token_j']:+.3f} J on the GPUs alone)")
    r = d["racks"]
    lines.append(f"racks            {r['with_job']:,} of {r['count']:,} run the job; budget {r['budget_kw']:g} kW, "
                 f"cooling {r['cooling_kw']:g} kW: {r['over_budget']:,} over budget, {r['over_cooling']:,} over "
                 f"cooling" + (f" ({r['over_budget_uncapped']:,} over budget uncapped, peak "
                               f"{r['peak_kw_uncapped']:.2f} kW)" if "over_budget_uncapped" in r else ""))
    h = d["hosts"]
    lines.append(f"hosts            {h['with_job']:,} run the job: peak {h['peak_kw']:.2f} kW, mean {h['mean_kw']:.2f} kW "
                 f"each (GPUs included; an idle host {h['idle_kw']:.2f} kW)")
    for w in r["worst"]:
        lines.append(f"  {w['rack']:<28} {w['gpus']:>3} GPUs  peak {w['peak_kw']:7.2f} kW  mean {w['mean_kw']:7.2f} "
                     f"kW  headroom {w['headroom_kw']:+7.2f} kW  heat {100 * w['heat_share']:5.1f} % of cooling")
    for b in d["buildings"]:
        budget = f", budget {b['budget_mw']:g} MW{' EXCEEDED' if b['over_budget'] else ''}" \
            if b["budget_mw"] is not None else ""
        if "peak_mw_uncapped" in b:
            budget += f" (uncapped peak {b['peak_mw_uncapped']:.3f} MW" + (
                ", over budget)" if b["over_budget_uncapped"] else ")")
        lines.append(f"building {b['building']:<3}     peak {b['peak_mw']:.3f} MW, mean {b['mean_mw']:.3f} MW, swing "
                     f"{b['swing_mw']:.3f} MW{budget}")
    for z in d["zones"]:
        if z["over_budget"]:
            lines.append(f"zone {z['zone']} peak {z['peak_mw']:.3f} MW over its budget {z['budget_mw']:g} MW")
    if d["sweep"]:
        lines.append(f"# {'cap W':>6} {'clock':>6} {'step s':>8} {'tokens/s':>12} {'job MW':>8} {'peak MW':>8} "
                     f"{'swing MW':>9} {'J/token':>8}")
        for s in d["sweep"]:
            lines.append(f"  {s['cap_w']:>6g} {s['clock_share']:>6.3f} {s['step_s']:>8.3f} {s['tokens_per_s']:>12,.0f} "
                         f"{s['job_mean_mw']:>8.3f} {s['cluster_peak_mw']:>8.3f} {s['cluster_swing_mw']:>9.3f} "
                         f"{s['energy_per_token_j']:>8.3f}")
    t = d["timeline"]
    if t:
        lines.append(f"over {t['days']:g} days  mean {t['mean_mw']:.3f} MW, peak {t['peak_mw']:.3f} MW, lowest "
                     f"{t['min_mw']:.3f} MW, swing {t['swing_mw']:.3f} MW, worst ramp {t['ramp_mw_per_s']:.2f} "
                     f"MW/s at {t['ramp_at_s'] / 3600:.2f} h (a jump of {t['jump_mw']:.3f} MW between "
                     f"{t['step_s_grid']:g} s bins; {t['interruptions']} interruptions, "
                     f"{t['checkpoints']} checkpoints)")
    for ref in d["published"]:
        sim_v = ref["simulated"]
        value = f"{ref['low']:g}" if ref["low"] == ref["high"] else f"{ref['low']:g}-{ref['high']:g}"
        lines.append(f"published  {ref['what']}: {value} {ref['unit']} [{ref['source']}]; "
                     f"simulated {sim_v:.3f} {ref['unit']}" + (f" ({ref['differs']})" if ref["differs"] else ""))
    return "\n".join(lines)


def _run_schedule(args, bar) -> int:
    values = values_from_args(args, POWER_SCHEDULE)
    if args.jobs is not None:
        with open(args.jobs, encoding="utf-8") as f:
            values["jobs"] = f.read()
    params = POWER_SCHEDULE.validate(values)
    cluster, topo = load_topology(args.preset, args.spec)
    bar(0.0, f"cluster {cluster.name}: {topo.n_gpus:,} GPUs")
    result = run_power_schedule(topo, params, progress=bar)
    bar.close()
    d = result.to_dict(series=args.series)
    if args.json:
        print(json.dumps(d))
        return 0
    lines = [f"# Power over a schedule on {d['cluster']}: {d['jobs_run']:,} jobs ({d['policy']}), "
             f"{d['makespan_s'] / 86400:.2f} days at {d['grid_s']:g} s, utilization {100 * d['utilization']:.1f} %",
             f"idle cluster {d['idle_mw']:10.3f} MW",
             f"mean         {d['mean_mw']:10.3f} MW",
             f"peak         {d['peak_mw']:10.3f} MW",
             f"lowest       {d['min_mw']:10.3f} MW",
             f"swing        {d['swing_mw']:10.3f} MW",
             f"worst ramp   {d['ramp_mw_per_s']:10.4f} MW/s (a jump of {d['jump_mw']:.3f} MW between bins)",
             f"energy       {d['energy_mwh']:10.1f} MWh"]
    top = sorted(d["jobs"], key=lambda j: -j["draw_mw"])[:5]
    for j in top:
        lines.append(f"  {j['name']:<12} {j['gpus']:>6,} GPUs {j['model']:<12} {j['draw_mw']:8.3f} MW above idle, GPUs "
                     f"{j['gpu_mean_w']:.0f} W, {j['start'] / 3600:8.2f}-{j['end'] / 3600:8.2f} h")
    print("\n".join(lines))
    return 0
