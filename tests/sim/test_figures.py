"""``python -m sim figure`` (contract): the published AllGather figure and the RoCE vs InfiniBand comparison,
run on a small configuration (``--quick``): four files each, every number from a simulation run."""
import csv
import json

import pytest

from sim.core import fitted
from sim.fabric.achievable import framing
from sim.cli import main
from sim.fabric.figures import QUICK_SEEDS, allgather_series, background_jobs, make_figure
from sim.fabric.params import FIGURE
from sim.fabric.placement import place


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig")
    return out, make_figure("allgather-scale", out, FIGURE.validate({"seeds": QUICK_SEEDS}), quick=True)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_allgather_scale_writes_chart_and_data(scale):
    out, paths = scale
    assert sorted(p.name for p in paths) == ["allgather-scale." + e for e in ("csv", "json", "png", "svg")]
    assert (out / "allgather-scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (out / "allgather-scale.svg").read_text()[:2000]
    rows = read_csv(out / "allgather-scale.csv")
    doc = json.loads((out / "allgather-scale.json").read_text())
    assert len(rows) == len(doc["runs"]) > 0
    assert {r["series"] for r in rows} == {s.key for s in allgather_series("roce")}
    for r in rows:
        assert 0 < float(r["norm_busbw_limit"]) <= 1 + 1e-9
        assert float(r["norm_busbw_at_size"]) <= float(r["norm_busbw_limit"]) + 1e-9   # latency only lowers it
        assert r["protocol_at_size"] in ("LL", "LL128", "Simple")
    for s in doc["summary"]:                  # the summary gives both: the limit and the value at the size
        assert s["at_size_min"] <= s["at_size_median"] <= s["at_size_max"] <= s["max"] + 1e-9
        assert s["at_size_median"] <= s["median"] + 1e-9


def test_allgather_scale_has_the_published_contrasts_on_the_small_cluster(scale):
    out, _ = scale
    summary = json.loads((out / "allgather-scale.json").read_text())["summary"]
    med = {}
    for s in summary:
        med.setdefault(s["series"], []).append(s["median"])
    # Static pinning with packed placement is perfect (the NICs' payload rate: the roofline is at line rate, the
    # NICs lose RoCEv2's framing); E-ECMP + 16 QPs beats 5-tuple ECMP with 1 QP.
    assert min(med["a-static"]) == pytest.approx(framing("roce") * fitted.value("nic_efficiency"))
    assert min(med["c"]) > max(med["b-ecmp"])
    assert all(s["runs"] == 2 for s in summary)                  # two seeds per point in quick mode


def test_roce_vs_ib_and_the_cli_figure_command(tmp_path, capsys):
    code = main(["figure", "roce-vs-ib", "--out", str(tmp_path), "--quick", "--quiet"])
    out = capsys.readouterr().out.split()
    assert code == 0 and sorted(p.rsplit(".", 1)[1] for p in out) == ["csv", "json", "png", "svg"]
    rows = read_csv(tmp_path / "roce-vs-ib.csv")
    assert {r["fabric"] for r in rows} == {"roce", "infiniband"}
    assert {r["routing"] for r in rows if r["series"].startswith("oob-") and r["fabric"] == "infiniband"} == \
        {"dmodk"}


def test_figure_options_are_checked(tmp_path, capsys):
    assert main(["figure", "allgather-scale", "--out", str(tmp_path), "--jobs", "a,b", "-q"]) == 2
    assert "jobs: must be a whole number, got 'a'" in capsys.readouterr().err
    assert main(["figure", "allgather-scale", "--out", str(tmp_path), "--quick", "--jobs", "99999", "-q"]) == 2
    assert "no job size fits" in capsys.readouterr().err


def test_background_jobs_fill_the_free_hosts_without_overlap():
    from sim.fabric.topology import load_topology
    _, topo = load_topology("demo-256")
    job = place(topo, 64, "fragmented", seed=1)
    for policy in ("fragmented", "topology", "random"):
        others = background_jobs(topo, job, 64, policy, seed=1)
        every = [g for j in [job, *others] for g in j.tolist()]
        assert len(every) == len(set(every)) == 256
