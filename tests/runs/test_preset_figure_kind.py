"""The `preset_figure` run kind: a preset's page of figures (sim.fabric.preset_figure) on a cluster read from the
database, run by a real Celery worker, kept so the page reopens it. Given / when / then."""
import pytest

from sim.fabric.achievable import nic_rate
from sim.fabric.topology import load_topology

from sim.fabric.preset_figure import CONFIGS, PRESET_COLLECTIVES
from tests.runs.test_runs import finished


@pytest.mark.django_db(transaction=True)
def test_a_preset_figures_run_on_demo_goes_through_a_worker_and_is_kept(workers, runner, demo):
    # given demo-256 and two workers
    # when a preset figures run is started over REST with its defaults
    r = runner.post("/api/runs/", {"kind": "preset_figure", "cluster": "demo-256", "params": {"sizes": "1M:1G"}},
                    format="json")
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=60)
    # then a worker ran every collective and configuration on one rack switch's hosts (16 GPUs), one zone (128) and
    # the whole cluster (256)
    assert run["status"] == "succeeded", run["error"]
    assert run["worker"] in workers.hostnames and run["progress"] == 100.0
    s = run["summary"]
    demo_topology = load_topology("demo-256")[1]
    assert [j["gpus"] for j in s["jobs"]] == [16, 128, 256] and s["fabric"] == "roce" and s["preset"] == "demo-256"
    assert {(x["collective"], x["config"], x["gpus"]) for x in s["runs"]} == {
        (c, k.key, n) for c in PRESET_COLLECTIVES for k in CONFIGS for n in (16, 128, 256)}
    for x in s["runs"]:
        assert len(x["rows"]) == 11                                               # 1M .. 1G
        assert max(y["busbw_GBps"] for y in x["rows"]) <= x["roofline_GBps"] * (1 + 1e-9)
        t = x["traffic"]
        assert t["leaf_local"] + t["cross_spine"] == pytest.approx(t["network"])
        if x["gpus"] == 16 and x["config"] != "fragmented":                   # under one rack switch
            # no fabric limit: at most the NICs' achievable rate (NVLink's may hold it lower), under the line-rate
            # roofline by their framing at least
            nic = nic_rate(demo_topology) / demo_topology.nic_bandwidth
            assert t["cross_spine"] == 0.0 and 0.5 < x["limit_norm"] <= nic * (1 + 1e-9)
    # and its headline figures are the engine's, at the top of the summary
    assert 0 < s["allreduce_norm"] <= 1 and s["allreduce_busbw_GBps"] == pytest.approx(
        s["allreduce_norm"] * s["hardware"]["gpus_per_host"] * s["hardware"]["nic_GBps"])
    assert {h["key"] for h in run["headline"]} == {"allreduce_busbw_GBps", "allreduce_norm", "local_share"}
    assert s["published"] == [] and "No source in docs/sources.md publishes" in s["published_note"]
    # and the page names it as the cluster's newest finished run, so that it opens drawn
    page = runner.get("/experiments/presets/?cluster=demo-256")
    assert page.status_code == 200
    assert page.context["page"]["latest"]["demo-256"] == run["id"]
    demo_row = next(p for p in page.context["page"]["presets"] if p["name"] == "demo-256")
    assert demo_row["clusters"] == ["demo-256"]


@pytest.mark.django_db
@pytest.mark.parametrize("params, field, says", [
    ({"jobs": [64, 512]}, "jobs", "512 GPUs asked, demo-256 has 256"),
    ({"jobs": [1]}, "jobs", "at least 2"),
    ({"max_gpus": 0}, "max_gpus", "at least 2"),
    ({"sizes": "lots"}, "sizes", ""),
    ({"hash": "xor"}, "hash", "choose one of"),
    ({"seeds": 2}, "seeds", "unknown parameter"),
])
def test_a_preset_figures_run_with_bad_params_is_refused_naming_the_field(runner, demo, params, field, says):
    r = runner.post("/api/runs/", {"kind": "preset_figure", "cluster": "demo-256", "params": params}, format="json")
    assert r.status_code == 400
    errors = r.json()["params"][field]
    assert says in str(errors), errors


@pytest.mark.django_db
def test_the_presets_page_lists_every_preset_and_refuses_an_unknown_cluster(runner, demo):
    from sim.fabric.spec import preset_names
    page = runner.get("/experiments/presets/")
    assert page.status_code == 200
    assert [p["name"] for p in page.context["page"]["presets"]] == preset_names()
    assert page.context["page"]["cluster"] == "demo-256"
    bad = runner.get("/experiments/presets/?cluster=nope")
    assert bad.status_code == 400 and b"cluster: no cluster named 'nope'" in bad.content
    assert runner.get("/experiments/presets/?run=x").status_code == 400


@pytest.mark.django_db
def test_the_kind_on_the_superpod_read_from_the_database_keeps_a_scalable_unit_on_its_rails():
    # given the rail-optimized SuperPOD built into the inventory
    from sim.fabric.params import PRESET_FIGURE
    from sim.fabric.spec import load_spec
    from twin.capabilities.collectives.kinds import preset_figure
    from twin.inventory.adapter import layout_from_db
    from twin.inventory.builder import build_cluster
    cluster = build_cluster(load_spec("dgx-h100-superpod")).cluster
    seen = []
    # when the kind runs on the cluster read back from the database (a scalable unit and 1,024 GPUs)
    summary, arrays = preset_figure(layout_from_db(cluster), PRESET_FIGURE.validate({"max_gpus": 1024, "sizes": "1G"}),
                                    lambda fraction, message="", **_: seen.append(fraction))
    # then it knows the fabric is rail-optimized, and the one-SU jobs send every byte between hosts on one rail leaf
    assert summary["rail_optimized"] and summary["local_name"] == "rail-local" and arrays == {}
    assert [j["gpus"] for j in summary["jobs"]] == [256, 1024]
    for r in summary["runs"]:
        if r["gpus"] == 256 and r["config"] != "fragmented":
            assert r["traffic"]["leaf_local_share"] == 1.0 and r["traffic"]["cross_spine"] == 0.0
    # and no published busbw is claimed for it; progress only moved forward, to the end
    assert summary["published"] == [] and "SuperPOD" in summary["published_note"]
    assert seen == sorted(seen) and seen[-1] == 1.0
