"""Expansion of presets into arrays: exact counts per preset (from the published design and the specs' stated
assumptions, written out by hand here), and structural invariants that hold for any spec."""
import numpy as np
import pytest

from sim.fabric.layout import FABRIC_BACKEND, LINK_LEAF_SPINE, expand
from sim.fabric.spec import load_spec

EXPECTED = {
    # 3,072 hosts x 8 GPUs; 2 hosts per rack; 192 racks per zone; 8 zones.
    "meta-roce-24k": {
        "gpus": 24576, "hosts": 3072, "zones": 8 + 2 + 1, "racks": 1536 + 150 + 2,
        "switches.rtsw": 1536, "switches.ctsw": 8 * 18, "switches.atsw": 18 * 4,
        "links.nic-rtsw": 24576, "links.rtsw-ctsw": 1536 * 18, "links.ctsw-atsw": 144 * 28,
        "switches.frtsw": 1536 + 152, "switches.fcsw": 11 * 4, "switches.fatsw": 4 * 2,
        "links.nic-frtsw": 3072 * 2 + 3750 + 40, "links.frtsw-fcsw": 1688 * 4, "links.fcsw-fatsw": 44 * 48,
        "storage_servers": 3750 + 40, "ssds": 3790 * 4, "nics": 24576 + 6144 + 3790,
    },
    # Non-blocking three-tier fat tree of 64-port QM9700: 32 down / 32 up at every tier below the core.
    "meta-ib-24k": {
        "gpus": 24576, "hosts": 3072, "zones": 24 + 3, "racks": 1536 + 152,
        "switches.leaf": 768, "switches.spine": 24 * 32, "switches.core": 32 * 16,
        "links.nic-leaf": 24576, "links.leaf-spine": 24576, "links.spine-core": 24576,
        "switches.frtsw": 1688, "switches.fcsw": 27 * 4, "links.fcsw-fatsw": 108 * 16,
    },
    "demo-256": {
        "gpus": 256, "hosts": 32, "zones": 2 + 1 + 1, "racks": 16 + 1 + 1,
        "switches.rtsw": 16, "switches.ctsw": 8, "switches.atsw": 4 * 2,
        "links.nic-rtsw": 256, "links.rtsw-ctsw": 256, "links.ctsw-atsw": 8 * 8,
        "storage_servers": 10, "ssds": 40,
    },
    "roadmap-131k": {
        "gpus": 131072, "hosts": 16384, "switches.rtsw": 8192, "switches.ctsw": 32 * 18, "switches.atsw": 18 * 8,
        "links.nic-rtsw": 131072, "links.rtsw-ctsw": 8192 * 18, "links.ctsw-atsw": 576 * 32,
        "storage_servers": 15000 + 160,
    },
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def preset(request):
    return request.param, expand(load_spec(request.param))


def test_counts_are_exact(preset):
    name, layout = preset
    counts = layout.counts()
    assert {k: counts[k] for k in EXPECTED[name]} == EXPECTED[name]


def test_every_port_carries_exactly_one_link_at_one_speed(preset):
    _, layout = preset
    used = np.bincount(np.concatenate([layout.link_a, layout.link_b]), minlength=len(layout.port_slot))
    assert (used == 1).all()
    assert (layout.port_speed_gbps[layout.link_a] == layout.link_speed_gbps).all()
    assert (layout.port_speed_gbps[layout.link_b] == layout.link_speed_gbps).all()


def test_every_gpu_has_its_own_backend_nic_on_a_leaf(preset):
    _, layout = preset
    backend = np.flatnonzero(layout.nic_fabric == FABRIC_BACKEND)
    assert np.array_equal(np.sort(layout.nic_gpu[backend]), np.arange(len(layout.gpu_host)))
    # a backend NIC's port is the lower end of a link whose upper end is a backend leaf switch
    upper = layout.port_switch[layout.link_b[np.isin(layout.link_a, backend)]]
    assert len(upper) == len(backend) and (layout.switch_tier[upper] == 0).all()


def test_switch_ports_stay_within_their_model():
    from sim.fabric.catalog import load_catalog
    layout = expand(load_spec("meta-roce-24k"))
    ports = np.array([load_catalog().models["switch"][m]["ports"] for m in layout.switch_models])
    assert (layout.switch_port_count <= ports[layout.switch_model]).all()


def test_leaves_spread_uplinks_evenly_over_the_spines_of_their_zone():
    layout = expand(load_spec("meta-roce-24k"))
    ls = (layout.link_tier == LINK_LEAF_SPINE) & (layout.link_fabric == FABRIC_BACKEND)
    leaf = layout.port_switch[layout.link_a[ls]]
    spine = layout.port_switch[layout.link_b[ls]]
    assert (layout.switch_zone[leaf] == layout.switch_zone[spine]).all()
    pairs = np.unique(leaf * 100_000 + spine, return_counts=True)[1]
    assert len(pairs) == 1536 * 18 and (pairs == 1).all()


def test_leaf_switch_stands_in_the_rack_of_its_hosts():
    layout = expand(load_spec("demo-256"))
    racks = layout.switch_rack()
    leaves = np.flatnonzero((layout.switch_tier == 0) & (layout.switch_fabric == FABRIC_BACKEND))
    assert np.array_equal(racks[leaves], np.arange(16))
