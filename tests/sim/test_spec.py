"""Cluster specs: every preset parses, and every spec that cannot be built is refused naming field and limit."""
import copy
import tomllib

import pytest

from sim.core.errors import SpecError
from sim.fabric.spec import PRESETS_DIR, load_spec, parse_spec, preset_names


def demo_dict():
    with open(PRESETS_DIR / "demo-256.toml", "rb") as f:
        return tomllib.load(f)


def refused(mutate) -> SpecError:
    data = copy.deepcopy(demo_dict())
    mutate(data)
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return info.value


PRESETS = ["alibaba-hpn", "aws-p4d-pod", "aws-p5-pod", "demo-256", "dgx-a100-superpod", "dgx-h100-eos",
           "dgx-h100-superpod", "grand-teton-96gb", "hgx-h200-pod", "hgx-h800-pod", "meta-ib-24k", "meta-roce-24k",
           "mlperf-storage-aistore-oci", "mlperf-storage-ddn-ai400x2t", "mlperf-storage-hammerspace-aws",
           "mlperf-storage-ubix-ubipower", "multiplane-4", "roadmap-131k", "roadmap-350k", "roadmap-600k"]


def test_presets_are_the_ones_the_twin_ships():
    assert preset_names() == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_parses(name):
    assert load_spec(name).name == name


def test_zones_fill_buildings():
    spec = load_spec("demo-256")
    assert spec.layout.buildings == 1 and spec.layout.zone_building(1) == 0
    data = copy.deepcopy(demo_dict())
    data["layout"]["zones_per_building"] = 1
    layout = parse_spec(data).layout
    assert layout.buildings == 2 and [layout.zone_building(z) for z in range(2)] == [0, 1]


def test_zones_per_building_must_divide_the_zones():
    e = refused(lambda d: d["layout"].update(zones_per_building=3))
    assert e.field == "layout.zones_per_building" and "does not divide the 2 zones" in str(e)


def test_zero_racks_is_refused():
    e = refused(lambda d: d["layout"].update(racks_per_zone=0))
    assert e.field == "layout.racks_per_zone" and "at least 1" in str(e)


def test_unknown_hardware_model_is_refused_with_the_known_ones():
    e = refused(lambda d: d["backend"]["leaf"].update(model="minipack9"))
    assert e.field == "backend.leaf.model" and "minipack9" in str(e) and "minipack2" in str(e)


def test_unknown_gpu_is_refused():
    e = refused(lambda d: d["layout"].update(gpu="b200"))
    assert e.field == "layout.gpu"


def test_more_links_than_switch_ports_is_refused():
    # 16 downlinks + 52 uplinks = 68 ports on a 64-port Minipack2
    e = refused(lambda d: d["backend"]["leaf"].update(uplinks=52))
    assert e.field == "backend.leaf.uplinks" and "68 ports" in str(e) and "has 64" in str(e)


def test_core_port_count_is_checked():
    # each core takes 4 links from every zone's spine of its plane: 200 zones x 4 = 800 ports > 576
    e = refused(lambda d: d["layout"].update(zones=200))
    assert e.field == "backend.core.per_plane" and "800 ports" in str(e) and "has 576" in str(e)


def test_oversubscription_that_does_not_divide_is_refused():
    e = refused(lambda d: d["backend"]["spine"].update(oversubscription=7))
    assert e.field == "backend.spine.oversubscription" and "does not divide the 32 downlinks" in str(e)


def test_uplinks_that_do_not_spread_evenly_are_refused():
    e = refused(lambda d: d["backend"]["leaf"].update(uplinks=18))
    assert e.field == "backend.leaf.uplinks" and "4 spines" in str(e)


def test_hosts_per_switch_must_divide_a_zone():
    e = refused(lambda d: d["backend"]["leaf"].update(hosts_per_switch=3))
    assert e.field == "backend.leaf.hosts_per_switch"


def test_storage_servers_must_fill_whole_racks():
    e = refused(lambda d: d["storage"][0].update(servers=9))
    assert e.field == "storage[0].servers_per_rack"


def test_more_ssds_than_slots_is_refused():
    e = refused(lambda d: d["storage"][0].update(ssds_per_server=9))
    assert e.field == "storage[0].ssds_per_server" and "4 SSD slots" in str(e)


def test_cable_slower_than_its_link_is_refused():
    e = refused(lambda d: d["backend"]["spine"].update(cable="dac-100g"))
    assert e.field == "backend.spine.cable"


def test_several_zones_without_a_core_are_refused():
    e = refused(lambda d: (d["backend"].pop("core"), d["backend"]["spine"].pop("oversubscription")))
    assert e.field == "backend.core" and "2 zones" in str(e)


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["layout"].update(zones="eight"), "layout.zones"),
    (lambda d: d["layout"].update(zones=True), "layout.zones"),
    (lambda d: d["layout"].pop("hosts_per_rack"), "layout.hosts_per_rack"),
    (lambda d: d["layout"].update(hosts_per_racks=2), "layout.hosts_per_racks"),
    (lambda d: d["backend"].update(kind="ethernet"), "backend.kind"),
    (lambda d: d.update(name="demo 256"), "name"),
])
def test_malformed_fields_are_named(mutate, field):
    assert refused(mutate).field == field


def test_a_spec_file_that_is_not_toml_is_refused(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("layout = [")
    with pytest.raises(SpecError) as info:
        load_spec(str(bad))
    assert info.value.field == "spec" and "cannot be parsed" in str(info.value)


def test_an_unknown_preset_is_refused_with_the_presets():
    with pytest.raises(SpecError) as info:
        load_spec("meta-roce-48k")
    assert "meta-roce-24k" in str(info.value)


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("suffix, text", [
    (".json", '{"name": "deep", "layout": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    (".toml", "name = 'deep'\nlayout = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    (".json", '{"name": "deep", "backend": {"leaf": ' + "[" * 40 + "]" * 40 + "}}"),
])
def test_a_deeply_nested_spec_file_is_refused_naming_the_file(tmp_path, suffix, text):
    path = tmp_path / f"deep{suffix}"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(str(path))
    assert info.value.field == "spec" and info.value.value == str(path)
    assert "nested" in info.value.reason and str(path) in str(info.value)


def test_a_deeply_nested_spec_dict_is_refused_naming_the_field():
    error = refused(lambda d: d["backend"].update(leaf=_nested(10_000)))
    assert error.field == "backend" and "nested more than 16" in error.reason
    error = refused(lambda d: d.update(extra={"a": list(range(100_000)), "b": _nested(12)}))
    assert error.field == "extra" and "not a known field" in str(error) and len(str(error)) < 200   # value cut short


def test_reliability_table_gives_the_fleet_s_node_failure_rate():
    assert parse_spec(demo_dict()).node_failure_rate is None          # no table: Meta's Llama 3 table as it is
    d = demo_dict()
    d["reliability"] = {"node_failures_per_1000_node_days": 6.5, "source": "Kokolis et al. 2024"}
    assert parse_spec(d).node_failure_rate == 6.5
    assert load_spec("dgx-a100-superpod").node_failure_rate == 6.5   # RSC-1, a DGX A100 fleet [S9, S190]


@pytest.mark.parametrize("table, field", [
    ({"node_failures_per_1000_node_days": 0, "source": "x"}, "reliability.node_failures_per_1000_node_days"),
    ({"node_failures_per_1000_node_days": "6.5", "source": "x"}, "reliability.node_failures_per_1000_node_days"),
    ({"node_failures_per_1000_node_days": 6.5}, "reliability.source"),
    ({"node_failures_per_1000_node_days": 6.5, "source": "x", "mttf": 3}, "reliability.mttf"),
])
def test_reliability_table_is_checked(table, field):
    def mutate(d):
        d["reliability"] = table
    assert refused(mutate).field == field


def test_a_storage_cluster_states_its_own_redundancy():
    assert load_spec("mlperf-storage-ubix-ubipower").storage[0].redundancy == "rs-3-2"   # 2/3 usable [S128]
    assert all(s.redundancy is None for s in load_spec("meta-roce-24k").storage)         # the kind's default

    def mutate(d):
        d["storage"] = [{**d["storage"][0], "redundancy": 3}]
    if demo_dict().get("storage"):
        assert refused(mutate).field == "storage[0].redundancy"
