"""The published AllGather result, reproduced from simulations: ``python -m sim figure NAME --out DIR``.

Figures
-------
``allgather-scale`` (default cluster ``meta-roce-24k``; ``--preset meta-ib-24k`` for the InfiniBand twin)
    Normalized AllGather bus bandwidth (ring, large messages) against job size, for
    (a) a one-zone cluster out of the box: the job packed into one zone (topology-aware placement), the fabric's
        default routing, 1 QP; and the same with static routing (path pinning on RoCE);
    (b) the whole cluster out of the box: fragmented placement (random hosts all over the cluster, ranks in host
        order as a launcher lists them), 1 QP, static routing (pinning on RoCE, D-mod-k on InfiniBand) and 5-tuple
        ECMP; also with the ranks in random order, and in a busy cluster (the other hosts running jobs of their
        own, fragmented the same way);
    (c) optimized: topology-aware placement + E-ECMP + 16 QPs per GPU pair (also in a busy, topology-aware cluster);
    (d) each fix alone: topology-aware placement (default routing, 1 QP); E-ECMP (1 QP); QP scaling (16 QPs, 5-tuple
        ECMP); E-ECMP + 16 QPs with fragmented placement;
    TE: centralized traffic engineering (:mod:`sim.fabric.te`) beside E-ECMP: topology-aware + TE + 16 QPs; TE alone
        (fragmented, 1 QP; and ranks in random order); TE in the busy cluster (fragmented, 1 QP, the controller
        routing every job's flows).
    Every configuration runs for every job size and seed (placement and routing hash). The plotted value is the
    large-message limit of the normalized busbw (the bandwidth term; :attr:`sim.fabric.results.CollectiveResult.limit_norm`)
    and the data files (and a dotted line per series) also hold the normalized busbw at ``--size`` (default 1 GiB),
    latency included, with the protocol NCCL's tuning model picks for that size.
``roce-vs-ib``
    The same jobs on ``meta-roce-24k`` and ``meta-ib-24k``: out of the box (fragmented, default routing, 1 QP,
    ranks in host order and in random order) and optimized.

Each figure writes ``NAME.png``, ``NAME.svg`` (matplotlib, Agg backend), ``NAME.csv`` (one row per run) and
``NAME.json`` (the runs plus the configuration and a per-series summary) into the output directory.
"""
from __future__ import annotations

import csv
import json
import os
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sim.core.errors import UsageError
from sim.core.progress import Progress, fractions_only, silent, span, weighted
from sim.core.units import GB
from sim.fabric.layout import expand
from sim.fabric.nccl import DEFAULT_UDP_SPORT, ring_channels
from sim.fabric.netsim import run_collective
from sim.fabric.placement import place
from sim.fabric.routing import resolve_routing, static_routing
from sim.fabric.spec import PRESETS_DIR, parse_spec
from sim.fabric.topology import load_topology, topology_from_layout

FIGURES = ("allgather-scale", "roce-vs-ib")
DEFAULT_JOBS = (512, 1024, 2048, 4096, 8192, 16384)
DEFAULT_SEEDS = 4
QUICK_PRESET = "demo-256"
QUICK_JOBS = (32, 64, 128)
QUICK_SEEDS = 2
OPTIMIZED_QPS = 16                      # QPs per GPU pair for LLM training (Gangidi et al., SIGCOMM 2024,
                                        # docs/sources.md [S2]); spread over the pair's NCCL connections


@dataclass(frozen=True)
class Series:
    """One configuration of the figure: how the job is placed, routed and split, and where it runs."""

    key: str
    label: str
    group: str                           # "a", "b", "c", "d"
    placement: str                       # a sim.fabric.placement policy
    routing: str                         # a sim.fabric.routing routing, or "default" / "static"
    qps: int = 1                         # QPs per GPU pair (the paper's unit): qps / connections per pair each
    one_zone: bool = False               # only job sizes that fit in one zone
    background: str = ""                 # "", or the placement of the other jobs filling the cluster
    udp_sport: str = ""                  # "": the real stack's (sim.fabric.nccl.DEFAULT_UDP_SPORT; "fixed" on InfiniBand)


def allgather_series(kind: str) -> list[Series]:
    """The series of ``allgather-scale`` for a fabric ``kind``; ``static`` is pinning on RoCE, D-mod-k on IB."""
    static = "path pinning" if kind == "roce" else "D-mod-k"
    # On InfiniBand the hashed routings stand for per-pair and per-QP path spreading (adaptive routing, multiple
    # LIDs); the labels say so rather than naming Ethernet's 5-tuple.
    ecmp = "5-tuple ECMP" if kind == "roce" else "per-pair hashing (ECMP-like)"
    eecmp = "E-ECMP" if kind == "roce" else "per-QP hashing (E-ECMP-like)"
    q = OPTIMIZED_QPS
    return [
        Series("a-default", "(a) one zone, out of the box (default routing)", "a", "topology", "default",
               one_zone=True),
        Series("a-static", f"(a) one zone, {static}", "a", "topology", "static", one_zone=True),
        Series("b-static", f"(b) fragmented, {static}", "b", "fragmented", "static"),
        Series("b-ecmp", f"(b) fragmented, {ecmp}", "b", "fragmented", "ecmp"),
        *([Series("b-ecmp-fixed", f"(b) fragmented, {ecmp}, one UDP port per NIC pair", "b", "fragmented", "ecmp",
                  udp_sport="fixed")] if kind == "roce" else []),
        Series("b-static-random", f"(b) fragmented, ranks in random order, {static}", "b", "random", "static"),
        Series("b-ecmp-random", f"(b) fragmented, ranks in random order, {ecmp}", "b", "random", "ecmp"),
        Series("b-static-busy", f"(b) fragmented, {static}, busy cluster", "b", "fragmented", "static",
               background="fragmented"),
        Series("b-ecmp-busy", f"(b) fragmented, {ecmp}, busy cluster", "b", "fragmented", "ecmp",
               background="fragmented"),
        Series("c", f"(c) optimized: topology-aware + {eecmp} + {q} QPs", "c", "topology", "eecmp", q),
        Series("c-busy", "(c) optimized, busy cluster (all jobs topology-aware)", "c", "topology", "eecmp", q,
               background="topology"),
        Series("d-placement", "(d) topology-aware placement alone", "d", "topology", "default"),
        Series("d-eecmp", f"(d) {eecmp} alone (1 QP)", "d", "fragmented", "eecmp"),
        Series("d-qps", f"(d) {q} QPs alone ({ecmp})", "d", "fragmented", "ecmp", q),
        Series("d-routing", f"(d) {eecmp} + {q} QPs, fragmented placement", "d", "fragmented", "eecmp", q),
        Series("d-routing-random", f"(d) {eecmp} + {q} QPs, fragmented, ranks in random order", "d", "random",
               "eecmp", q),
        # centralized traffic engineering (sim/fabric/te.py) beside E-ECMP
        Series("c-te", f"(c) topology-aware + TE + {q} QPs", "c", "topology", "te", q),
        Series("d-te", "(d) TE alone, fragmented, 1 QP", "d", "fragmented", "te"),
        Series("d-te-random", "(d) TE alone, fragmented, ranks in random order, 1 QP", "d", "random", "te"),
        Series("b-te-busy", "(b) TE, fragmented, 1 QP, busy cluster", "b", "fragmented", "te",
               background="fragmented"),
    ]


# Panels of allgather-scale: (title, series keys).
SCALE_PANELS = [
    ("(a) one zone vs (b) whole cluster, out of the box",
     ["a-default", "a-static", "b-ecmp", "b-ecmp-fixed", "b-static"]),
    ("(b) out of the box: ranks in random order, busy cluster",
     ["b-ecmp-random", "b-static-random", "b-ecmp-busy", "b-static-busy"]),
    ("(c) optimized, (d) each fix alone",
     ["c", "c-busy", "d-placement", "d-eecmp", "d-qps", "d-routing", "d-routing-random"]),
    ("centralized traffic engineering (TE) beside E-ECMP",
     ["c", "c-te", "d-routing", "d-te", "d-routing-random", "d-te-random", "b-ecmp-busy", "b-te-busy"]),
]
# (color, line style, marker) of each series key.
STYLE = {
    "a-default": ("#2ca02c", "--", "s"), "a-static": ("#2ca02c", "-", "^"),
    "b-ecmp": ("#d62728", "--", "o"), "b-static": ("#9467bd", "-", "v"), "b-ecmp-fixed": ("#8b0000", "--", "d"),
    "b-ecmp-random": ("#d62728", ":", "o"), "b-static-random": ("#9467bd", ":", "v"),
    "b-ecmp-busy": ("#d62728", "-.", "x"), "b-static-busy": ("#9467bd", "-.", "x"),
    "c": ("#1f77b4", "-", "o"), "c-busy": ("#1f77b4", "--", "x"),
    "d-placement": ("#ff7f0e", "-", "s"), "d-eecmp": ("#8c564b", "-", "D"), "d-qps": ("#e377c2", "-", "P"),
    "d-routing": ("#bcbd22", "-", "^"), "d-routing-random": ("#7f7f7f", ":", "^"),
    "c-te": ("#17becf", "-", "*"), "d-te": ("#17becf", "--", "D"), "d-te-random": ("#17becf", ":", "v"),
    "b-te-busy": ("#17becf", "-.", "x"),
    "oob-roce": ("#d62728", "--", "o"), "oob-infiniband": ("#17becf", "--", "o"),
    "oob-random-roce": ("#d62728", ":", "v"), "oob-random-infiniband": ("#17becf", ":", "v"),
    "opt-roce": ("#d62728", "-", "s"), "opt-infiniband": ("#17becf", "-", "s"),
}


def comparison_series() -> list[Series]:
    q = OPTIMIZED_QPS
    return [
        Series("oob", "out of the box (fragmented, default routing, 1 QP)", "b", "fragmented", "default"),
        Series("oob-random", "out of the box, ranks in random order", "b", "random", "default"),
        Series("opt", f"optimized (topology-aware, E-ECMP, {q} QPs)", "c", "topology", "eecmp", q),
    ]


def background_jobs(topo, gpus: np.ndarray, n: int, policy: str, seed: int) -> list[np.ndarray]:
    """Other jobs filling the usable hosts the job left free, ``n`` GPUs each (the last one smaller).

    ``policy`` ``"topology"``: contiguous blocks of the free hosts in id order (a topology-aware scheduler);
    ``"fragmented"`` / ``"random"``: the free hosts shuffled, cut into jobs, ranks in host order (``fragmented``)
    or in the shuffled order (``random``).
    """
    usable = np.asarray(topo.gpu_usable)
    host = np.asarray(topo.gpu_host)
    taken = np.zeros(int(host.max()) + 1, dtype=bool)
    taken[host[gpus]] = True
    free = np.flatnonzero(usable & ~taken[host])
    hosts = np.unique(host[free])
    if policy != "topology":
        hosts = np.random.default_rng(seed + 7919).permutation(hosts)
    by_host = {h: [] for h in hosts.tolist()}
    for g in free.tolist():
        by_host[int(host[g])].append(g)
    order = np.array([g for h in hosts.tolist() for g in by_host[h]], dtype=np.int64)
    jobs = []
    for i in range(0, order.size, n):
        job = order[i:i + n]
        if policy == "fragmented":
            job = np.sort(job)
        if job.size >= 2:
            jobs.append(job)
    return jobs


def _resolve_routing(routing: str, kind: str) -> str:
    """A series' routing on fabric ``kind``: ``"default"`` is the fabric's, ``"static"`` its static routing."""
    if routing == "default":
        return resolve_routing(None, kind)
    if routing == "static":
        return static_routing(kind)
    return routing


def series_jobs(s: Series, jobs, usable: int, zone_gpus: int) -> list[int]:
    """The job sizes series ``s`` runs: ``jobs`` that fit the ``usable`` GPUs (and one zone of ``zone_gpus`` for a
    one-zone series, plus the whole zone when it lies between the smallest and largest job)."""
    sizes = list(jobs)
    if s.one_zone and sizes and zone_gpus not in sizes and min(sizes) < zone_gpus < max(sizes):
        sizes = sorted(sizes + [zone_gpus])                     # the whole zone, too
    return [n for n in sizes if 2 <= n <= usable and not (s.one_zone and n > zone_gpus)]


def connections_per_pair(topo) -> int:
    """NCCL connections between the two GPUs of a ring hop on full hosts of ``topo``: its channels per NIC
    (:func:`sim.fabric.nccl.ring_channels`; 2 on 8-NIC H100 hosts)."""
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    return max(ring_channels(gph, nic_gbps=topo.nic_bandwidth / GB) // gph, 1)


def run_series(topo, cluster: str, series: list[Series], jobs, seeds: int, size: int,
               progress: Progress | None = None, on_run=None, hash: str = "uniform") -> list[dict]:
    """Run every series for every job size and seed under the switch hash ``hash``; one dict per run (the CSV
    rows). A series' QPs per GPU pair are spread over the pair's NCCL connections (:func:`connections_per_pair`).

    ``progress(fraction, message)`` (:mod:`sim.core.progress`): each simulated run is an equal share of the work, and
    inside it the fractions of :func:`sim.fabric.netsim.run_collective` (routing, solver rounds) move the bar; the message
    names the series being run, then summarizes it. ``on_run(done, total)``, if given, is called after each
    simulated run (the ``figure`` run kind counts runs with it; it may raise to stop the figure)."""
    say = progress or silent
    conns = connections_per_pair(topo)
    usable = int(topo.gpu_usable.sum())
    zone_gpus = int(np.bincount(topo.switch_zone[topo.gpu_leaf][topo.gpu_usable]).max())
    plan = [(s, series_jobs(s, jobs, usable, zone_gpus)) for s in series]
    total = seeds * sum(len(sizes) for _, sizes in plan)
    rows = []
    for s, sizes in plan:
        t0 = time.perf_counter()
        routing = _resolve_routing(s.routing, topo.kind)
        sport = s.udp_sport or (DEFAULT_UDP_SPORT if topo.kind == "roce" else "fixed")
        qps = max(s.qps // conns, 1)
        if sizes:
            say(len(rows) / total, f"{cluster} {s.key}: {len(sizes) * seeds} runs")
        for n in sizes:
            for seed in range(seeds):
                gpus = place(topo, n, s.placement, seed)
                bg = background_jobs(topo, gpus, n, s.background, seed) if s.background else None
                r = run_collective(topo, gpus, "allgather", [size], routing=routing, qps=qps, seed=seed,
                                   hottest=1, flows_per_link=1, background=bg, hash=hash, udp_sport=sport,
                                   progress=span(fractions_only(progress), len(rows) / total,
                                                 (len(rows) + 1) / total))
                hot = r.hottest[0] if r.hottest else None
                rows.append({
                    "cluster": cluster, "fabric": topo.kind, "series": s.key, "label": s.label, "group": s.group,
                    "gpus": n, "seed": seed, "placement": s.placement, "routing": routing, "hash": hash,
                    "udp_sport": sport, "channels": r.plan.channels, "qps_per_pair": s.qps, "qps": qps,
                    "background_jobs": len(bg) if bg else 0,
                    "norm_busbw_limit": round(r.limit_norm, 6), "busbw_limit_GBps": round(r.limit_busbw / GB, 4),
                    "roofline_GBps": round(r.roofline / GB, 4), "size": size,
                    "norm_busbw_at_size": round(r.rows[0].norm, 6), "time_us_at_size": round(r.rows[0].time * 1e6, 3),
                    "protocol_at_size": r.rows[0].protocol,
                    "latency_us": round(r.latency * 1e6, 3), "flows": r.n_flows,
                    "hottest_link": hot.name if hot else "", "hottest_link_flows": hot.n_flows if hot else 0,
                })
                if on_run is not None:
                    on_run(len(rows), total)
        done = [r["norm_busbw_limit"] for r in rows if r["series"] == s.key]
        if done:
            say(len(rows) / total, f"{cluster} {s.key}: {len(done)} runs, normalized busbw "
                f"{100 * min(done):.0f}-{100 * max(done):.0f} % ({time.perf_counter() - t0:.1f} s)")
    return rows


def summarize(rows: list[dict]) -> list[dict]:
    """Per series and job size: min, median and max over seeds of the normalized busbw limit (``min``, ``median``,
    ``max``) and of the normalized busbw at the figure's size, latency included (``at_size_*``), and the protocols
    NCCL chose at that size."""
    out = []
    keys = sorted({(r["cluster"], r["series"], r["gpus"]) for r in rows},
                  key=lambda k: (k[0], [r["series"] for r in rows].index(k[1]), k[2]))
    for cluster, key, n in keys:
        mine = [r for r in rows if r["cluster"] == cluster and r["series"] == key and r["gpus"] == n]
        v = np.array([r["norm_busbw_limit"] for r in mine])
        at = np.array([r["norm_busbw_at_size"] for r in mine])
        label = next(r["label"] for r in rows if r["series"] == key)
        out.append({"cluster": cluster, "series": key, "label": label, "gpus": n, "runs": int(v.size),
                    "min": float(v.min()), "median": float(np.median(v)), "max": float(v.max()),
                    "at_size_min": float(at.min()), "at_size_median": float(np.median(at)),
                    "at_size_max": float(at.max()),
                    "protocols_at_size": sorted({r.get("protocol_at_size", "") for r in mine})})
    return out


# ----------------------------------------------------------------------------------------------- drawing
def _plot_panel(ax, summary, series_keys, title, jobs):
    """Median over seeds of the large-message limit as a line, min-max as a band, and (thin, dotted) the median at
    the figure's message size, latency included; series slightly offset in x so equal values stay visible."""
    present = [k for k in series_keys if any(p["series"] == k for p in summary)]
    for i, key in enumerate(present):
        pts = [p for p in summary if p["series"] == key]
        color, style, marker = STYLE.get(key, ("#333333", "-", "o"))
        shift = 2 ** (0.035 * (i - (len(present) - 1) / 2))
        x = [p["gpus"] * shift for p in pts]
        ax.plot(x, [100 * p["median"] for p in pts], ls=style, marker=marker, ms=4, lw=1.4, color=color,
                label=pts[0]["label"])
        ax.fill_between(x, [100 * p["min"] for p in pts], [100 * p["max"] for p in pts], color=color, alpha=0.08)
        ax.vlines(x, [100 * p["min"] for p in pts], [100 * p["max"] for p in pts], color=color, lw=0.8, alpha=0.6)
        if all("at_size_median" in p for p in pts):
            ax.plot(x, [100 * p["at_size_median"] for p in pts], ls=":", marker=marker, ms=2, lw=0.8, color=color,
                    alpha=0.8)
    ax.axhspan(90, 105, color="#2ca02c", alpha=0.05)
    ax.axhline(90, color="grey", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(jobs))
    ax.set_xticklabels([f"{j:,}" for j in jobs], rotation=45, fontsize=7)
    ax.minorticks_off()
    ax.set_ylim(0, 105)
    ax.set_xlabel("job size (GPUs)")
    ax.set_ylabel("normalized AllGather busbw (% of roofline)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    if present:
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def draw(summary: list[dict], panels: list[tuple[str, list[str]]], title: str, jobs, out_base: Path) -> list[Path]:
    """Write ``out_base``.png and .svg: one panel per (title, series keys)."""
    import matplotlib   # only when a figure is drawn: matplotlib would add ~0.3 s to every start-up (CLI, workers)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 6.4), squeeze=False)
    ticks = sorted({p["gpus"] for p in summary})
    for ax, (panel_title, keys) in zip(axes[0], panels):
        _plot_panel(ax, summary, keys, panel_title, ticks)
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, out_base, dpi=130)


def save_figure(fig, out_base: Path, dpi: int) -> list[Path]:
    """Write a matplotlib figure as ``out_base``.png and .svg, then close it; returns the two paths."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    paths = []
    for ext in ("png", "svg"):
        path = out_base.with_suffix(f".{ext}")
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _write_data(rows, summary, meta, out_base: Path) -> list[Path]:
    csv_path = out_base.with_suffix(".csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    json_path = out_base.with_suffix(".json")
    json_path.write_text(json.dumps({**meta, "summary": summary, "runs": rows}, indent=1))
    return [csv_path, json_path]


def _infiniband_twin(preset: str, say):
    """A preset's cluster with an InfiniBand backend of the same shape (for the quick comparison)."""
    with open(PRESETS_DIR / f"{preset}.toml", "rb") as f:
        data = tomllib.load(f)
    data["name"] = f"{preset}-ib"
    data["backend"]["kind"] = "infiniband"
    cluster = parse_spec(data)
    topo = topology_from_layout(expand(cluster))
    say(f"cluster {cluster.name}: {topo.n_gpus:,} GPUs, {topo.n_links:,} directed links ({topo.kind})")
    return cluster, topo


# ----------------------------------------------------------------------------------------------- entry point
def make_figure(name: str, out_dir, values: dict, *, preset: str | None = None, quick: bool = False,
                progress: Progress | None = None) -> list[Path]:
    """Run the simulations of figure ``name`` and write its PNG, SVG, CSV and JSON into ``out_dir``; return the
    paths. ``values``: :data:`sim.fabric.params.FIGURE`'s, validated (the defaults live there only; its
    ``figure`` is not read, ``name`` is); ``jobs`` null: the figure's job sizes. ``quick``: a small cluster, few
    job sizes (and, from its caller, :data:`QUICK_SEEDS` seeds unless seeds were given, as ``python -m sim figure
    --quick`` does). ``background`` false leaves out the busy-cluster series. ``progress(fraction, message)``: the
    clusters' runs (:func:`run_series`), then writing the files as one more run's share; it ends at 1.0. Refuses
    an output directory it cannot write before simulating (:class:`sim.core.errors.UsageError`)."""
    jobs, seeds, size, background, hash = (values[k] for k in ("jobs", "seeds", "size", "background", "hash"))
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}: choose one of {', '.join(FIGURES)}")
    say = progress or silent
    out = writable_dir(out_dir)
    t0 = time.perf_counter()
    jobs = tuple(jobs or (QUICK_JOBS if quick else DEFAULT_JOBS))
    meta = {"figure": name, "jobs": list(jobs), "seeds": seeds, "size": size, "hash": hash,
            "collective": "allgather",
            "algorithm": "ring", "metric": "norm_busbw_limit: busbw / roofline as the message size grows "
                                          "(bandwidth term); norm_busbw_at_size includes latency, with the protocol "
                                          "NCCL's tuning model picks for that size (protocol_at_size)"}
    base = out / name
    tell = lambda message: say(0.0, message)  # noqa: E731  (cluster built: nothing simulated yet)
    if name == "allgather-scale":
        cluster, topo = load_topology(QUICK_PRESET if quick and not preset else preset or "meta-roce-24k", None, tell)
        series = [s for s in allgather_series(topo.kind) if background or not s.background]
        n_runs = seeds * len(jobs) * len(series)
        running, writing = weighted(progress, [n_runs, 1])
        rows = run_series(topo, cluster.name, series, jobs, seeds, size, running, hash=hash)
        summary = summarize(rows)
        meta.update(cluster=cluster.name, fabric=topo.kind, series=[asdict(s) for s in series])
        panels = SCALE_PANELS
        title = (f"AllGather (ring) on {cluster.name}, {hash} switch hash: normalized busbw, large-message limit "
                 f"(median and range over {seeds} seeds; dotted: median at {size:,} B, latency included)")
    else:
        rows = []
        presets = ("demo-256", "demo-256 as infiniband") if quick else ("meta-roce-24k", "meta-ib-24k")
        series = comparison_series()
        *running, writing = weighted(progress, [1] * len(presets) + [1 / (seeds * len(jobs) * len(series))])
        for p, share in zip(presets, running):
            tell = lambda message, share=share: share(0.0, message)  # noqa: E731
            cluster, topo = _infiniband_twin(p[:-len(" as infiniband")], tell) if p.endswith(" as infiniband") \
                else load_topology(p, None, tell)
            part = run_series(topo, cluster.name, series, jobs, seeds, size, share, hash=hash)
            for r in part:
                r["series"] = f"{r['series']}-{topo.kind}"
                r["label"] = f"{topo.kind}: {r['label']}"
            rows += part
        summary = summarize(rows)
        meta.update(clusters=list(presets), series=[asdict(s) for s in series])
        panels = [(f"{s.label}", [f"{s.key}-roce", f"{s.key}-infiniband"]) for s in series]
        title = (f"AllGather (ring, large messages): {' vs '.join(presets)}, {hash} switch hash, median and range "
                 f"over {seeds} seeds")
    if not rows:
        raise ValueError("no job size fits the cluster: nothing to draw")
    meta["seconds"] = round(time.perf_counter() - t0, 2)
    writing(0.0, f"figure {name}: {len(rows)} runs in {time.perf_counter() - t0:.1f} s, writing {base}.*")
    paths = draw(summary, panels, title, jobs, base) + _write_data(rows, summary, meta, base)
    writing(1.0, f"figure {name}: wrote {len(paths)} files in {out}")
    return paths


def writable_dir(path) -> Path:
    """``path`` as a directory that exists (created if missing) and can be written, or a UsageError saying why."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise UsageError(f"cannot write to {str(path)!r}: {e.strerror or e}") from None
    return out
