"""The roadmap presets (350k and 600k GPUs): buildings of the 24k RoCE design joined by one aggregation tier. Counts
are written out by hand from that construction (docs/scale.md); the structure checks are those the 24k presets pass."""
import numpy as np
import pytest

from sim.fabric.catalog import load_catalog
from sim.fabric.layout import FABRIC_BACKEND, TIER_CORE, TIER_SPINE, expand
from sim.fabric.spec import load_spec


def per_building(buildings):
    """Counts of ``buildings`` copies of meta-roce-24k below one ATSW tier of 18 planes x 14 switches."""
    b = buildings
    return {
        "gpus": b * 24576, "hosts": b * 3072, "zones": b * (8 + 2 + 1), "racks": b * (1536 + 150 + 2),
        "switches.rtsw": b * 1536, "switches.ctsw": b * 8 * 18, "switches.atsw": 18 * 14,
        "links.nic-rtsw": b * 24576, "links.rtsw-ctsw": b * 1536 * 18, "links.ctsw-atsw": b * 144 * 28,
        "switches.frtsw": b * (1536 + 152), "switches.fcsw": b * 11 * 4, "switches.fatsw": 4 * 24,
        "links.fcsw-fatsw": b * 44 * 48, "storage_servers": b * 3790, "ssds": b * 3790 * 4,
    }


@pytest.fixture(scope="module", params=[("roadmap-350k", 14), ("roadmap-600k", 24)], ids=lambda p: p[0])
def roadmap(request):
    name, buildings = request.param
    spec = load_spec(name)
    return spec, buildings, expand(spec)


def test_counts_are_those_of_whole_buildings(roadmap):
    spec, buildings, layout = roadmap
    expected = per_building(buildings)
    counts = layout.counts()
    assert {k: counts[k] for k in expected} == expected
    assert spec.layout.buildings == buildings


def test_every_port_carries_one_link_and_switches_stay_within_their_model(roadmap):
    _, _, layout = roadmap
    used = np.bincount(np.concatenate([layout.link_a, layout.link_b]), minlength=len(layout.port_slot))
    assert (used == 1).all()
    ports = np.array([load_catalog().models["switch"][m]["ports"] for m in layout.switch_models])
    assert (layout.switch_port_count <= ports[layout.switch_model]).all()


def test_every_atsw_reaches_every_zone_of_its_plane(roadmap):
    """The aggregation tier spans the buildings: each backend core has links from the spine of its plane in every
    zone, so any two zones of any two buildings are four switch hops apart."""
    spec, _, layout = roadmap
    up = layout.port_switch[layout.link_a]
    down = layout.port_switch[layout.link_b]
    sc = (layout.link_fabric == FABRIC_BACKEND) & (layout.switch_tier[np.maximum(down, 0)] == TIER_CORE)
    sc &= layout.switch_tier[np.maximum(up, 0)] == TIER_SPINE
    pairs = np.unique(down[sc] * 1000 + layout.switch_zone[up[sc]])
    assert len(pairs) == 18 * 14 * spec.layout.zones
