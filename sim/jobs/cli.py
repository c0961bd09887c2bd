"""Command line of the training-job engine (contract), registered by :mod:`sim.cli`::

    python -m sim job --preset meta-roce-24k --model llama3-405b --gpus 16384 --tp 8 --cp 1 --pp 16 --dp 128 \\
        --seq 8192 --batch-tokens 16M --placement topology --routing eecmp --qps 16 [--json]
    python -m sim job --preset meta-roce-24k --model llama3-70b --default-layout [--json]
    python -m sim schedule --preset meta-roce-24k --jobs FILE --policy topology|first-fit|random [--json]
    python -m sim jobs --preset meta-roce-24k --jobs FILE [--routing ecmp --qps 16] [--json]

Options come from :data:`sim.jobs.params.JOB`, :data:`sim.jobs.params.SCHEDULE` and :data:`sim.jobs.params.JOBS` (the
declaration the REST API uses);
``--preset``/``--spec``, ``--jobs FILE`` (read into the ``jobs`` parameter), ``--json``, ``--gpu-ids``,
``--default-layout`` (the model's default layout on the cluster, :func:`sim.jobs.defaults.default_layout`) and
``--quiet`` are the command line's own. Refused input is reported by :func:`sim.cli.main` (one line per field,
exit status 2); a refused job's layout also names the layouts nearest it that fit the cluster
(:func:`sim.jobs.defaults.with_nearest`).
"""
from __future__ import annotations

import json
from pathlib import Path

from sim.core.errors import ParamError, UsageError
from sim.core.params import add_arguments, values_from_args
from sim.fabric.spec import load_spec
from sim.fabric.topology import DEFAULT_PRESET, load_topology
from sim.jobs import defaults
from sim.jobs.entry import run_job, run_jobs, run_schedule
from sim.jobs.params import JOB, JOBS, MAX_JOBS_TEXT, SCHEDULE

COMMANDS = ("job", "schedule", "jobs")


def add_parsers(sub) -> None:
    j = sub.add_parser("job", help="one training step of a 4D-parallel job on the fabric",
                       description="Simulate one step of a training job: compute, every parallel group's traffic "
                                   "on the fabric, pipeline bubble (docs/jobs.md).")
    _where(j)
    add_arguments(j, JOB)
    j.add_argument("--default-layout", action="store_true",
                   help=f"run the model's default layout on the cluster ({', '.join(defaults.FIELDS)}: its published "
                        f"recipe, else the fastest that fits; docs/jobs.md); not with those options")
    j.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    j.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    s = sub.add_parser("schedule", help="a job queue over simulated time under a placement policy",
                       description="Simulate a job queue on a cluster: arrivals, placement, run, departure.")
    _where(s)
    add_arguments(s, SCHEDULE, skip=("jobs",))
    s.add_argument("--jobs", dest="jobs_file", default=None, metavar="FILE",
                   help="jobs file: a JSON list or TOML [[job]] tables (docs/jobs.md); without it, synthetic "
                        "arrivals (--arrivals, --days)")
    s.add_argument("--json", action="store_true", help="print one JSON document instead of the tables")
    s.add_argument("--gpu-ids", action="store_true", help="with --json: every job's GPU ids")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    m = sub.add_parser("jobs", help="several training jobs sharing the fabric: each one's step together and alone",
                       description="Place several jobs one after the other, solve their traffic together, and "
                                   "compare each job's step with its step alone (docs/jobs.md).")
    _where(m)
    add_arguments(m, JOBS, skip=("jobs",))
    m.add_argument("--jobs", dest="jobs_file", required=True, metavar="FILE",
                   help="jobs file: a JSON list or TOML [[job]] tables, each a job's parameters (docs/jobs.md)")
    m.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    m.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def read_jobs_file(path: str) -> str:
    """The text of a jobs file; UsageError naming the file when it is missing, too large, not UTF-8 or empty (blank
    lines only: never read as "no file", which would run synthetic jobs)."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"jobs file {path}: is not a file")
    if p.stat().st_size > MAX_JOBS_TEXT:
        raise UsageError(f"jobs file {path}: must be at most {MAX_JOBS_TEXT:,} bytes, it has {p.stat().st_size:,}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"jobs file {path}: is not UTF-8 text") from None
    if not text.strip():
        raise UsageError(f"jobs file {path}: is empty (no jobs; leave --jobs out for synthetic arrivals)")
    return text


def _where(p) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument("--preset", default=None, help="cluster preset (default meta-roce-24k)")
    where.add_argument("--spec", default=None, metavar="FILE", help="cluster spec file (TOML, or JSON)")


def run(args, bar) -> int:
    if args.command == "job":
        return run_one_job(args, bar)
    if args.command == "jobs":
        params = JOBS.validate({**values_from_args(args, JOBS), "jobs": read_jobs_file(args.jobs_file)})
    else:
        values = values_from_args(args, SCHEDULE)
        if args.jobs_file:
            values["jobs"] = read_jobs_file(args.jobs_file)
        params = SCHEDULE.validate(values)
    _, topo = load_topology(args.preset, args.spec, lambda message: bar(0.0, message))
    simulate, fmt = {"jobs": (run_jobs, format_jobs), "schedule": (run_schedule, format_schedule)}[args.command]
    run = simulate(topo, params, progress=bar)
    bar.close()
    if args.json:
        print(json.dumps(run.to_dict(gpus=args.gpu_ids) if args.command == "schedule" else run.to_dict()))
    else:
        print(fmt(run.result, run.cluster))
    return 0


def run_one_job(args, bar) -> int:
    """``job``: the layout given, or with ``--default-layout`` the model's default on the cluster; a refusal names
    the layouts nearest the job's that fit the cluster."""
    values = values_from_args(args, JOB)
    where = defaults.Where.of_spec(load_spec(args.spec or args.preset or DEFAULT_PRESET))
    chosen = None
    if args.default_layout:
        given = [f"--{f.replace('_', '-')}" for f in defaults.FIELDS if f in values]
        if given:
            raise UsageError(f"--default-layout sets {', '.join(given)}: leave them out, or the flag")
        chosen = defaults.default_layout(values.get("model") or JOB.by_name["model"].default, where)
        values.update(chosen.params)
    try:
        params = JOB.validate(values)
        _, topo = load_topology(args.preset, args.spec, lambda message: bar(0.0, message))
        run = run_job(topo, params, progress=bar)
    except ParamError as e:
        raise defaults.with_nearest(e, values, where) from None
    bar.close()
    doc = run.to_dict()
    if args.json:
        print(json.dumps(doc if chosen is None else {**doc, "default_layout": chosen.to_dict()}))
    else:
        print(("" if chosen is None else f"# default layout: {chosen.why}\n") + format_job(run.result, run.cluster))
    return 0


def format_job(r, cluster: str) -> str:
    d = r.to_dict()
    lay, m = d["layout"], d["model"]
    b = d["breakdown"]
    lines = [
        f"# Job {m['name']} ({m['params'] / 1e9:.1f}B parameters) on {cluster}: {lay['gpus']:,} GPUs, "
        f"TP {lay['tp']} x CP {lay['cp']} x PP {lay['pp']} x DP {lay['dp']} (order {lay['order']}, innermost first)",
        f"# seq {lay['seq']:,}, batch {lay['batch_tokens']:,} tokens, {lay['micro_batches']} micro-batches of "
        f"{lay['micro_batch']}, schedule {lay['schedule']}"
        + (f" (v {lay['virtual_stages']}, rounds of {lay['micro_batches_per_round']})"
           if lay["schedule"] == "interleaved" else "")
        + f"{', balanced end stages' if lay['balance_stages'] else ''}, {lay['precision']}, "
        f"{'FSDP' if lay['fsdp'] else 'DDP'}"
        + (" (reshard after forward)" if lay["fsdp"] and lay.get("reshard_after_forward") else "")
        + f", recompute {lay['recompute']}"
        + (f" ({sum(lay['recompute_layers'])} layers)" if lay["recompute"] == "selective" else "")
        + (f", TP overlap on (SMs held: reduce-scatters {lay['tp_overlap_rs_sms']}, all-gathers "
           f"{lay['tp_overlap_ag_sms']})" if lay["tp_comm_overlap"] else ", TP overlap off"),
        f"# GPU {d['gpu']['name']}"
        + (f" (clock {100 * d['gpu']['clock_share']:.1f} % under the power cap)" if d['gpu']['clock_share'] < 1 else "")
        + f"; placement {d['placement']}, routing {d['routing']}, {d['qps']} QPs per connection, seed {d['seed']}; "
        f"{d['flows']:,} flows solved together in {d['seconds']:.2f} s",
        f"# memory per GPU (stage {d['memory_gb']['stage']}): {d['memory_gb']['total']:.1f} GB (weights "
        f"{d['memory_gb']['weights']:.1f}, gradients {d['memory_gb']['gradients']:.1f}, optimizer "
        f"{d['memory_gb']['optimizer']:.1f}, activations {d['memory_gb']['activations']:.1f}, allocator "
        f"{d['memory_gb']['allocator']:.1f}, framework and NCCL {d['memory_gb']['framework']:.1f})",
        "#",
        "#  part            seconds   share",
    ]
    parts = d["compute_parts"]
    for k, label in (("compute", "compute"), ("gemm", "  GEMMs"), ("attention", "  attention"),
                     ("memory", "  memory-bound"), ("launch", "  launches"), ("tp", "exposed TP"),
                     ("cp", "exposed CP"), ("pp", "exposed PP"), ("dp", "exposed DP"), ("bubble", "bubble"),
                     ("optimizer", "optimizer")):
        x = b[k] if k in b else parts[k]
        lines.append(f"   {label:<14} {x:8.4f}  {100 * x / b['step']:5.1f} %")
    lines.append(f"   {'step':<14} {b['step']:8.4f}")
    lines += ["#", "#  dim  ranks   GB/GPU/step   comm (s)   exposed (s)   s per GiB   alpha (us)"]
    for k, c in d["comm"].items():
        lines.append(f"   {k:<4} {c['ranks']:5d}   {c['bytes_per_gpu'] / 1e9:11.2f}   {c['time']:8.4f}   "
                     f"{c['exposed']:11.4f}   {c['seconds_per_gib']:9.5f}   {c['alpha_us']:10.1f}")
    lines += [f"# tokens/s {d['tokens_per_s']:,.0f}   TFLOPs/GPU {d['tflops_per_gpu']:.1f}   MFU "
              f"{100 * d['mfu']:.1f} %"]
    pub = {x["unit"]: x for x in d["published"]}
    if pub:
        x, y = pub["TFLOP/s"], pub["fraction"]
        lines.append(f"# published [{x['source']}]: {x['low']:.0f} TFLOPs/GPU, MFU {100 * y['low']:.0f} % on "
                     f"{x['case']}" + ("" if x["same_case"] else f" (nearest; differs: {x['differs']})"))
    if d["hottest"]:
        lines.append("# Hottest links (all dimensions' flows at once; flows per dimension):")
        for h in d["hottest"]:
            flows = ", ".join(f"{k} {v}" for k, v in h["flows"].items())
            lines.append(f"#  {100 * h['utilization']:6.1f} %  {h['name']}  [{flows}]")
    return "\n".join(lines)


def format_schedule(r, cluster: str) -> str:
    d = r.to_dict()
    w = d["wait"]
    h = (lambda s: "-" if s is None else f"{s / 3600:.2f}")
    lines = [
        f"# Schedule on {cluster} ({d['usable_gpus']:,} usable GPUs on healthy hosts), policy {d['policy']}: "
        f"{len(d['jobs'])} jobs, {d['jobs_run']} run",
        f"# makespan {d['makespan'] / 86400:.2f} days, utilization {100 * d['utilization']:.1f} %, fragmentation "
        f"{100 * d['fragmentation']:.1f} % (free GPUs outside whole free racks, time average)",
        f"# wait (h): mean {h(w['mean'])}, p50 {h(w['p50'])}, p95 {h(w['p95'])}, max {h(w['max'])}; "
        f"mean MFU {100 * (d['mean_mfu'] or 0):.1f} %; {d['step_models']} step models in {d['seconds']:.1f} s",
        "#",
        "#  job            GPUs  model          arrive(h)  wait(h)   run(h)  zones  racks  order          "
        "step(s)     tokens/s    MFU",
    ]
    for j in d["jobs"]:
        run = h(None if j["end"] is None else j["end"] - j["start"])
        lines.append(f"   {j['name'][:14]:<14} {j['gpus']:5d}  {j['model']:<13} {j['arrival'] / 3600:9.2f}  "
                     f"{h(j['wait']):>7}  {run:>7}  {j['zones']:5d}  {j['racks']:5d}  {j['order']:<13} "
                     f"{(j['step_time'] or 0):7.3f}  {(j['tokens_per_s'] or 0):11,.0f}  "
                     f"{100 * (j['mfu'] or 0):5.1f}")
    return "\n".join(lines)


def format_jobs(r, cluster: str) -> str:
    d = r.to_dict()
    j0 = d["jobs"][0]
    lines = [
        f"# {len(d['jobs'])} jobs sharing {cluster}'s fabric: {d['gpus']:,} GPUs, routing {j0['routing']}, "
        f"{j0['qps']} QPs per connection; solved together and alone in {d['seconds']:.2f} s",
        f"# worst slowdown {100 * d['worst_slowdown']:.1f} % (step together / step alone - 1)",
        "#",
        "#  job            model           GPUs  layout (tp x cp x pp x dp)   alone(s)  together(s)  slowdown   "
        "MFU together",
    ]
    for j in d["jobs"]:
        lay = j["layout"]
        shape = f"{lay['tp']} x {lay['cp']} x {lay['pp']} x {lay['dp']}"
        lines.append(f"   {j['name'][:14]:<14} {j['model']['name'][:14]:<14} {lay['gpus']:6,d}  {shape:<27} "
                     f"{j['alone_step_time']:9.4f}  {j['step_time']:11.4f}  {100 * (j['slowdown'] - 1):6.1f} %  "
                     f"{100 * j['mfu']:9.1f} %")
    if j0["hottest"]:
        lines.append("# Hottest links (every job's flows at once; flows per job and dimension):")
        for h in j0["hottest"]:
            flows = ", ".join(f"{k} {v}" for k, v in h["flows"].items())
            lines.append(f"#  {100 * h['utilization']:6.1f} %  {h['name']}  [{flows}]")
    return "\n".join(lines)
