"""A preset's page of figures (sim.fabric.preset_figure, ``python -m sim figure preset``): busbw never above the
roofline, the traffic classes adding up to the plan's bytes, a one-leaf job with nothing over the spine, a job inside
one scalable unit of the rail-optimized SuperPOD kept on its rails, and the files the command writes."""
import csv
import json

import numpy as np
import pytest

from sim.cli import main
from sim.fabric.netsim import run_collective
from sim.fabric.params import PRESET_FIGURE
from sim.fabric.placement import place
from sim.fabric.preset_figure import CONFIGS, PRESET_COLLECTIVES, default_jobs, preset_figure, zone_gpus
from sim.fabric.spec import load_spec, preset_names
from sim.fabric.topology import load_topology
from sim.fabric.traffic import TRAFFIC_CLASSES, plan_bytes, traffic_split

SMALL = ("demo-256", "dgx-h100-superpod")         # small enough to run whole in a test


@pytest.fixture(scope="module", params=SMALL)
def page(request):
    _, topo = load_topology(request.param)
    values = PRESET_FIGURE.validate({"max_gpus": 1024, "sizes": "64K:16G"})
    return topo, preset_figure(topo, request.param, values)


def test_every_run_of_the_page_stays_under_its_roofline(page):
    topo, doc = page
    assert len(doc["runs"]) == len(PRESET_COLLECTIVES) * len(CONFIGS) * len(doc["jobs"])
    for r in doc["runs"]:
        # the roofline is the preset's own: NIC x GPUs per host for rings over whole hosts (8 x 50 GB/s here)
        assert r["roofline_GBps"] == pytest.approx(doc["hardware"]["gpus_per_host"] * doc["hardware"]["nic_GBps"])
        assert 0 < r["limit_busbw_GBps"] <= r["roofline_GBps"] * (1 + 1e-9)
        busbw = [x["busbw_GBps"] for x in r["rows"]]
        assert all(b <= r["limit_busbw_GBps"] * (1 + 1e-9) for b in busbw)     # latency only lowers it
        assert busbw == sorted(busbw)                                         # larger messages, closer to it


def test_every_runs_bytes_add_up_by_class(page):
    topo, doc = page
    for r in doc["runs"]:
        t = r["traffic"]
        assert t["classes"][:4] == list(TRAFFIC_CLASSES)
        assert sum(t[c] for c in t["classes"]) == pytest.approx(t["total"])
        assert t["leaf_local"] + t["cross_spine"] == pytest.approx(t["network"])
        assert t["leaf_local_share"] + t["cross_spine_share"] == pytest.approx(1.0)
        # rings over whole 8-GPU hosts: one hop of every 8 leaves its host (each hop moves the same bytes)
        assert t["nvlink"] / t["total"] == pytest.approx(7 / 8)


@pytest.mark.parametrize("preset, collective", [("demo-256", "allreduce"), ("dgx-h100-superpod", "allgather"),
                                                ("meta-ib-24k", "reducescatter")])
def test_the_classes_add_up_to_the_plans_bytes_whatever_the_placement(preset, collective):
    _, topo = load_topology(preset)
    for placement, qps, routing in (("topology", 1, None), ("random", 4, "eecmp"), ("fragmented", 2, "ecmp")):
        gpus = place(topo, 96, placement, seed=3)
        r = run_collective(topo, gpus, collective, [1 << 30], qps=qps, routing=routing, seed=3, hottest=0)
        t = traffic_split(topo, r)
        assert t["total"] == pytest.approx(plan_bytes(r), rel=1e-12)
        assert all(t[c] >= 0 for c in t["classes"])


@pytest.mark.parametrize("preset", [p for p in preset_names() if load_spec(p).layout.gpus <= 150_000])
def test_every_presets_page_holds_its_physics(preset):
    # every preset found in sim/presets (those of up to 150k GPUs: the larger only take longer to build), new ones
    # included: a 64-GPU job of each collective and configuration
    _, topo = load_topology(preset)
    doc = preset_figure(topo, preset, PRESET_FIGURE.validate({"jobs": [64], "sizes": "1M,1G,16G"}))
    assert len(doc["runs"]) == len(PRESET_COLLECTIVES) * len(CONFIGS)
    for r in doc["runs"]:
        assert r["limit_busbw_GBps"] <= r["roofline_GBps"] * (1 + 1e-9)
        assert all(x["busbw_GBps"] <= r["roofline_GBps"] * (1 + 1e-9) for x in r["rows"])
        t = r["traffic"]
        assert sum(t[c] for c in t["classes"]) == pytest.approx(t["total"])
        assert t["leaf_local"] + t["cross_spine"] == pytest.approx(t["network"])


def test_a_job_on_one_leaf_sends_nothing_over_the_spine():
    # demo-256: 2 hosts (16 GPUs) under each rack switch; a 16-GPU job packed topology-aware is on one leaf
    _, topo = load_topology("demo-256")
    gpus = place(topo, 16, "topology")
    assert np.unique(topo.gpu_leaf[gpus]).size == 1
    for routing in ("ecmp", "eecmp", "pinned"):
        r = run_collective(topo, gpus, "allreduce", [1 << 30], routing=routing, qps=4, hottest=0)
        t = traffic_split(topo, r)
        assert t["spine"] == t["core"] == 0.0 and t["cross_spine_share"] == 0.0
        assert t["leaf"] > 0 and t["leaf_local_share"] == 1.0


def test_the_superpod_keeps_a_scalable_units_rings_on_their_rails():
    # a rail-optimized SU: NIC k of its 32 hosts on leaf k; NCCL's rings keep one NIC on both ends (PXN), so a job
    # inside one SU never crosses a spine, while one spread over the SUs does
    _, topo = load_topology("dgx-h100-superpod")
    su = place(topo, zone_gpus(topo), "topology")
    assert np.unique(topo.switch_zone[topo.gpu_leaf[su]]).size == 1
    t = traffic_split(topo, run_collective(topo, su, "allgather", [1 << 30], hottest=0))
    assert t["cross_spine"] == 0.0 and t["leaf_local_share"] == 1.0 and t["pxn"] > 0
    spread = place(topo, 512, "fragmented", seed=1)
    t = traffic_split(topo, run_collective(topo, spread, "allgather", [1 << 30], hottest=0))
    assert t["cross_spine_share"] > 0


def test_default_jobs_are_a_leaf_group_one_zone_and_the_whole_cluster_capped():
    _, topo = load_topology("dgx-h100-superpod")
    # a scalable unit of 32 DGX is both the rail leaves' group and the zone; 16 SU
    assert [(j["gpus"], j["unit"]) for j in default_jobs(topo)] == [(256, "zone"), (4096, "whole")]
    assert [j["gpus"] for j in default_jobs(topo, 1000)] == [256, 1000]
    assert [j["gpus"] for j in default_jobs(topo, 100)] == [100]          # every unit capped is the whole capped
    _, topo = load_topology("demo-256")                                    # 2 hosts per rack switch, 2 zones
    assert [(j["gpus"], j["unit"]) for j in default_jobs(topo)] == [(16, "leaf_group"), (128, "zone"),
                                                                      (256, "whole")]


def test_the_cli_writes_a_page_per_preset(tmp_path, capsys):
    code = main(["figure", "preset", "--preset", "demo-256", "--out", str(tmp_path), "--sizes", "1M:1G",
                 "--jobs", "16,64", "--quiet"])
    out = capsys.readouterr().out.split()
    assert code == 0 and sorted(p.rsplit("/", 1)[1] for p in out) == [f"preset-demo-256.{e}"
                                                                       for e in ("csv", "json", "png", "svg")]
    assert (tmp_path / "preset-demo-256.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads((tmp_path / "preset-demo-256.json").read_text())
    with open(tmp_path / "preset-demo-256.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(doc["runs"]) * 11 == 3 * len(CONFIGS) * 2 * 11          # 1M..1G: 11 sizes
    assert doc["published"] == [] and "No source in docs/sources.md publishes" in doc["published_note"]
    for r in rows:
        assert float(r["busbw_GBps"]) <= float(r["roofline_GBps"]) * (1 + 1e-9)


def test_meta_roce_has_its_published_figures_beside_and_the_others_say_none():
    from sim.fabric.published import REFERENCES
    assert set(REFERENCES) <= set(preset_names())          # every reference names a preset that exists
    _, topo = load_topology("demo-256")
    doc = preset_figure(topo, "demo-256", PRESET_FIGURE.validate({"jobs": [16, 32], "sizes": "1G"}),
                        preset="meta-roce-24k")
    assert [p["key"] for p in doc["published"]] == ["s2-small-oob", "s2-large-unoptimized", "s2-large-optimized"]
    for p in doc["published"]:
        assert p["source"] == "S2" and 0 < p["simulated"] <= 1


@pytest.mark.parametrize("argv, says", [
    (["--preset", "demo-256", "--seeds", "3"], "--seeds: not an option of figure preset"),
    (["--preset", "nope"], "unknown preset nope"),
    (["--preset", "demo-256", "--max-gpus", "1"], "max_gpus: must be at least 2"),
    (["--preset", "demo-256", "--jobs", "512"], "512 GPUs asked, demo-256 has 256 usable"),
    ([], "needs --preset"),
])
def test_bad_options_are_refused_naming_them(tmp_path, capsys, argv, says):
    assert main(["figure", "preset", "--out", str(tmp_path), "--quiet"] + argv) == 2
    assert says in capsys.readouterr().err
