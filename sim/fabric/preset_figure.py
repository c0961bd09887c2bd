"""A page of figures for any cluster preset: ``python -m sim figure preset --preset P --out DIR``.

For every preset (``sim/presets/*.toml``, found by :func:`sim.fabric.spec.preset_names`) or any cluster, two figures
from simulations of its own hardware:

- **bus bandwidth by message size against the roofline**: AllReduce, AllGather and ReduceScatter (ring, as
  nccl-tests runs them) on up to three job sizes, one leaf group (a rack switch's hosts; on a rail-optimized fabric
  the hosts of one set of rail leaves, a scalable unit or a segment), one zone and the whole cluster (capped at
  ``max_gpus``, :data:`DEFAULT_MAX_GPUS`, so that the page takes seconds), each under :data:`CONFIGS`: topology-aware
  placement with the fabric's default routing and NCCL's one QP per connection, the optimized configuration of the
  published figure (topology-aware, E-ECMP, :data:`sim.fabric.figures.OPTIMIZED_QPS` QPs per GPU pair), and a
  fragmented placement with the default routing. The roofline is each run's
  (:func:`sim.fabric.roofline.roofline_busbw`): the same algorithm on packed hosts when only the preset's NICs and
  NVLink limit it.
- **rail-local vs cross-rail traffic**: the share of each run's bytes that stays inside a host, on one leaf (a rail
  of a scalable unit on a rail-optimized fabric; on the others the leaf-local share) or crosses the spines or cores,
  from the engine's flows (:func:`sim.fabric.traffic.traffic_split`).

Message sizes cost nothing once a run's phases are solved (:mod:`sim.fabric.netsim`), so each (collective,
configuration, job) is one simulation. Published figures beside them: :mod:`sim.fabric.published` (none for most
presets: it says so). Writes ``preset-NAME.png``, ``.svg``, ``.csv`` (one row per run and message size) and
``.json`` (the document :func:`preset_figure` returns).
"""
from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from sim.core.errors import UsageError
from sim.core.progress import Progress, fractions_only, silent, weighted
from sim.core.units import GB, parse_sizes
from sim.fabric.figures import OPTIMIZED_QPS, connections_per_pair, save_figure, writable_dir
from sim.fabric.netsim import run_collective
from sim.fabric.placement import place
from sim.fabric.published import preset_published
from sim.fabric.routing import resolve_routing
from sim.fabric.traffic import TRAFFIC_CLASSES, traffic_split

PRESET_FIGURE = "preset"                       # python -m sim figure preset
PRESET_COLLECTIVES = ("allreduce", "allgather", "reducescatter")
DEFAULT_MAX_GPUS = 24_576                      # the largest job a preset's page runs unless asked: a 24k cluster
                                               # whole; 16-QP rings of this size run in about a second each
                                               # (bench/bench_preset_figure.py)


@dataclass(frozen=True)
class Config:
    """One configuration of the page: placement, routing (``default``: the fabric's) and QPs per GPU pair."""

    key: str
    label: str
    placement: str
    routing: str
    qps_per_pair: int
    color: str


CONFIGS = (
    Config("topology", "topology-aware, default routing, 1 QP", "topology", "default", 1, "#2ca02c"),
    Config("optimized", f"optimized: topology-aware, E-ECMP, {OPTIMIZED_QPS} QPs", "topology", "eecmp",
           OPTIMIZED_QPS, "#1f77b4"),
    Config("fragmented", "fragmented placement, default routing, 1 QP", "fragmented", "default", 1, "#d62728"),
)
CLASS_COLORS = {"nvlink": "#9edae5", "leaf": "#2ca02c", "spine": "#ff7f0e", "core": "#d62728"}


def zone_gpus(topo) -> int:
    """The usable GPUs of the fullest zone (a scalable unit of a SuperPOD, an AI zone of Meta's clusters)."""
    usable = np.asarray(topo.gpu_usable)
    leaf = np.asarray(topo.gpu_leaf)[usable]
    return int(np.bincount(np.asarray(topo.switch_zone)[leaf]).max()) if leaf.size else 0


def leaf_group_gpus(topo) -> int:
    """The usable GPUs of the fullest leaf group: the hosts under one leaf (a rack switch of Meta's clusters), or on
    one set of rail leaves on a rail-optimized fabric (a scalable unit, a segment: ``topo.gpu_leaf_group``)."""
    usable = np.asarray(topo.gpu_usable)
    group = topo.gpu_leaf if topo.gpu_leaf_group is None else topo.gpu_leaf_group
    group = np.asarray(group)[usable]
    return int(np.bincount(group[group >= 0]).max()) if (group >= 0).any() else 0


def default_jobs(topo, max_gpus: int = DEFAULT_MAX_GPUS) -> list[dict]:
    """The page's job sizes: one leaf group, one zone and the whole cluster (its usable GPUs), each at most
    ``max_gpus``, as ``{"gpus", "label"}``, the same size once (a SuperPOD's leaf group is its zone, a one-zone
    fabric's zone the whole)."""
    usable = int(np.asarray(topo.gpu_usable).sum())
    group, zone, whole = (min(n, max_gpus) for n in (leaf_group_gpus(topo), zone_gpus(topo), usable))
    capped = f", capped at {max_gpus:,} of {usable:,}" if whole < usable else ""
    jobs = {}
    for n, unit, label in ((whole, "whole", f"whole cluster ({whole:,} GPUs{capped})"),
                           (zone, "zone", f"one zone ({zone:,} GPUs)"),
                           (group, "leaf_group", f"one leaf group ({group:,} GPUs)")):
        if n >= 2:
            jobs.setdefault(n, (unit, label))             # the larger unit names a size two units share
    return [{"gpus": n, "unit": jobs[n][0], "label": jobs[n][1]} for n in sorted(jobs)]


def preset_figure(topo, cluster: str, values: dict, progress: Progress | None = None, on_run=None,
                  preset: str | None = None) -> dict:
    """Run the page's simulations on ``topo`` and return its document (see the module docstring).

    ``values``: :data:`sim.fabric.params.PRESET_FIGURE`'s, validated (``jobs`` null: :func:`default_jobs` under
    ``max_gpus``; ``sizes``; ``seed``; ``hash``). ``progress(fraction, message)``: each run's share is its flows
    (GPUs x QPs), inside it the run's own fractions; ``on_run(done, total)`` after each run (may raise to stop).
    ``preset``: the preset the cluster was built from, for its published figures (default ``cluster``)."""
    say = progress or silent
    t0 = time.perf_counter()
    sizes = parse_sizes(values["sizes"])
    usable = int(np.asarray(topo.gpu_usable).sum())
    if values.get("jobs"):
        too_big = [n for n in values["jobs"] if n > usable]
        if too_big:
            raise UsageError(f"jobs: {', '.join(map(str, too_big))} GPUs asked, {cluster} has {usable:,} usable")
        jobs = [{"gpus": n, "unit": "given", "label": f"{n:,} GPUs"} for n in values["jobs"]]
    else:
        jobs = default_jobs(topo, values["max_gpus"])
    if not jobs:
        raise UsageError(f"{cluster} has {usable} usable GPUs: too few for a job")
    conns = connections_per_pair(topo)
    plan = [(c, coll, job) for job in jobs for c in CONFIGS for coll in PRESET_COLLECTIVES]
    shares = weighted(progress, [job["gpus"] * max(c.qps_per_pair // conns, 1) for c, _, job in plan])
    runs = []
    for i, ((config, collective, job), share) in enumerate(zip(plan, shares)):
        routing = resolve_routing(None if config.routing == "default" else config.routing, topo.kind)
        qps = max(config.qps_per_pair // conns, 1)
        share(0.0, f"{cluster}: {collective}, {job['gpus']:,} GPUs, {config.key} ({i + 1} of {len(plan)})")
        gpus = place(topo, job["gpus"], config.placement, values["seed"])
        r = run_collective(topo, gpus, collective, sizes, routing=routing, qps=qps, seed=values["seed"], hottest=0,
                           hash=values["hash"], progress=fractions_only(share))
        runs.append({
            "collective": collective, "config": config.key, "gpus": job["gpus"], "hosts": r.plan.n_hosts,
            "placement": config.placement, "routing": routing, "qps": qps, "qps_per_pair": config.qps_per_pair,
            "channels": r.plan.channels, "roofline_GBps": r.roofline / GB, "limit_busbw_GBps": r.limit_busbw / GB,
            "limit_norm": r.limit_norm, "flows": r.n_flows,
            "rows": [{"size": x.size, "time_us": x.time * 1e6, "algbw_GBps": x.algbw / GB,
                      "busbw_GBps": x.busbw / GB, "norm": x.norm, "protocol": x.protocol} for x in r.rows],
            "traffic": traffic_split(topo, r),
        })
        if on_run is not None:
            on_run(len(runs), len(plan))
    lay = getattr(topo, "layout", None)
    rails = int(getattr(lay.spec.backend, "rails", 1)) if lay is not None else 1
    gph = int(np.bincount(np.asarray(topo.gpu_host)).max())
    doc = {
        "figure": PRESET_FIGURE, "cluster": cluster, "preset": preset or cluster, "fabric": topo.kind,
        "gpus": int(topo.n_gpus), "usable_gpus": usable, "zone_gpus": zone_gpus(topo),
        "hardware": {"nic_GBps": topo.nic_bandwidth / GB, "nvlink_GBps": topo.nvlink_bandwidth / GB,
                     "gpus_per_host": gph, "rails": rails},
        "rail_optimized": rails > 1,
        "local_name": "rail-local" if rails > 1 else "leaf-local",
        "collectives": list(PRESET_COLLECTIVES), "algorithm": "ring",
        "configs": [asdict(c) for c in CONFIGS], "jobs": jobs, "sizes": sizes,
        "seed": values["seed"], "hash": values["hash"], "max_gpus": values["max_gpus"],
        "traffic_classes": max((r["traffic"]["classes"] for r in runs), key=len, default=list(TRAFFIC_CLASSES)),
        "runs": runs,
    }
    doc.update(preset_published(doc["preset"], doc))
    doc["headline"] = headline(doc)
    doc["seconds"] = round(time.perf_counter() - t0, 2)
    say(1.0, f"{cluster}: {len(runs)} runs in {doc['seconds']:.1f} s")
    return doc


def find_run(doc: dict, collective: str, config: str, gpus: int | None = None) -> dict | None:
    """The document's run of ``collective`` under ``config`` on ``gpus`` GPUs (default: its largest job)."""
    mine = [r for r in doc["runs"] if r["collective"] == collective and r["config"] == config
            and (gpus is None or r["gpus"] == gpus)]
    return max(mine, key=lambda r: r["gpus"]) if mine else None


def headline(doc: dict) -> dict:
    """The page's figures in one line: at the largest job, the optimized AllReduce's large-message busbw and its
    share of the roofline, and the share of the network bytes of the topology-aware AllGather that stays local."""
    opt = find_run(doc, "allreduce", "optimized")
    topo = find_run(doc, "allgather", "topology")
    return {"allreduce_busbw_GBps": opt["limit_busbw_GBps"] if opt else None,
            "allreduce_norm": opt["limit_norm"] if opt else None,
            "local_share": topo["traffic"]["leaf_local_share"] if topo else None,
            "gpus": opt["gpus"] if opt else None}


# ----------------------------------------------------------------------------------------------- drawing
def size_label(v: float) -> str:
    """A message size as nccl-tests users say it (powers of 1024): 64K, 1M, 4G."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def draw(doc: dict, out_base: Path) -> list[Path]:
    """``out_base``.png and .svg: one busbw panel per collective (each configuration and job against the
    rooflines), then the traffic panel (stacked shares of the bytes by class, per collective, configuration, job)."""
    import matplotlib   # only when a figure is drawn (matplotlib's import is ~0.3 s)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    n = len(doc["collectives"])
    fig, axes = plt.subplots(1, n + 1, figsize=(5.2 * (n + 1), 5.6), squeeze=False)
    by_size = sorted((j["gpus"] for j in doc["jobs"]), reverse=True)     # the largest job solid, then dashed, dotted
    job_style = {n: (("-", "--", ":", "-.")[min(i, 3)], "osD^v"[min(i, 4)]) for i, n in enumerate(by_size)}
    configs = {c["key"]: c for c in doc["configs"]}
    for ax, coll in zip(axes[0], doc["collectives"]):
        roofs = set()
        for r in (r for r in doc["runs"] if r["collective"] == coll):
            c = configs[r["config"]]
            job = next(j["label"] for j in doc["jobs"] if j["gpus"] == r["gpus"])
            ls, marker = job_style[r["gpus"]]
            ax.plot([x["size"] for x in r["rows"]], [x["busbw_GBps"] for x in r["rows"]], ls=ls, color=c["color"],
                    marker=marker, ms=3, lw=1.2, label=f"{c['key']}, {job}")
            roofs.add(round(r["roofline_GBps"], 3))
        for roof in sorted(roofs):
            ax.axhline(roof, color="black", lw=0.9, ls=":")
            ax.annotate(f"roofline {roof:.0f} GB/s", (0.02, roof), xycoords=("axes fraction", "data"), fontsize=7,
                        va="bottom")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: size_label(v)))
        ax.set_xlabel("message size")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_ylim(0, max(roofs) * 1.1 if roofs else 1)
        ax.set_title(f"{coll} (ring): busbw by message size", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(0, -0.15), frameon=False)
    ax = axes[0][n]
    rows = doc["runs"]
    labels = [f"{r['collective']} · {r['config']} · {r['gpus']:,}" for r in rows]
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for cls in doc["traffic_classes"][1:]:                   # the network's classes: NVLink is not on the fabric
        v = np.array([r["traffic"].get(cls, 0.0) / r["traffic"]["network"] if r["traffic"]["network"] else 0.0
                      for r in rows])
        ax.barh(y, 100 * v, left=100 * left, color=CLASS_COLORS.get(cls, "#777777"), label=cls)
        left += v
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the bytes between hosts (%): on one leaf, up to a spine, up to a core")
    ax.set_title(f"{doc['local_name']} vs crossing the spine, by run", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.1), ncol=4, frameon=False)
    fig.suptitle(f"{doc['cluster']} ({doc['fabric']}): collectives against the roofline "
                 f"(NIC {doc['hardware']['nic_GBps']:.0f} GB/s, NVLink {doc['hardware']['nvlink_GBps']:.0f} GB/s "
                 f"per GPU) and where the bytes go", fontsize=10)
    return save_figure(fig, out_base, dpi=120)


def csv_rows(doc: dict) -> list[dict]:
    """One row per run and message size, with the run's roofline and traffic split."""
    out = []
    for r in doc["runs"]:
        t = r["traffic"]
        for x in r["rows"]:
            out.append({"cluster": doc["cluster"], "fabric": doc["fabric"], "collective": r["collective"],
                        "config": r["config"], "gpus": r["gpus"], "placement": r["placement"],
                        "routing": r["routing"], "qps": r["qps"], "size": x["size"], "protocol": x["protocol"],
                        "time_us": round(x["time_us"], 3), "busbw_GBps": round(x["busbw_GBps"], 4),
                        "norm_busbw": round(x["norm"], 6), "roofline_GBps": round(r["roofline_GBps"], 4),
                        "limit_busbw_GBps": round(r["limit_busbw_GBps"], 4),
                        **{f"bytes_{c}": round(t.get(c, 0.0), 9) for c in doc["traffic_classes"]},
                        "local_share": None if t["leaf_local_share"] is None else round(t["leaf_local_share"], 6)})
    return out


def write_figure(doc: dict, out_dir) -> list[Path]:
    """Write the document's PNG, SVG, CSV and JSON into ``out_dir`` as ``preset-<cluster>.*``; return the paths."""
    out = writable_dir(out_dir)
    base = out / f"{PRESET_FIGURE}-{doc['cluster']}"
    paths = draw(doc, base)
    rows = csv_rows(doc)
    csv_path = base.with_suffix(".csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    json_path = base.with_suffix(".json")
    json_path.write_text(json.dumps(doc, indent=1))
    return paths + [csv_path, json_path]
