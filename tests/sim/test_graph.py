"""The backend's structure inferred from cabling alone (sim.fabric.graph): every preset's tiers, directions, planes,
zones, groups and members recovered exactly from its cables with their directions scrambled and its structure
erased, the same routes on the recovered fabric, and bad cabling refused naming the switch or cable."""
import numpy as np
import pytest

from sim.fabric.graph import CablingError, infer_structure
from sim.fabric.layout import FABRIC_BACKEND, LINK_LEAF_SPINE, TIER_LEAF, TIER_SPINE, expand
from sim.fabric.routing import ROUTINGS, route
from sim.fabric.spec import load_spec
from sim.fabric.topology import topology_from_layout


def scrambled(layout, seed=0):
    """``layout`` with its backend cables' ends swapped at random and its backend switches' structure erased."""
    rng = np.random.default_rng(seed)
    cab = np.flatnonzero(layout.link_fabric == FABRIC_BACKEND)
    flip = cab[rng.random(cab.size) < 0.5]
    a, b = layout.link_a.copy(), layout.link_b.copy()
    a[flip], b[flip] = layout.link_b[flip], layout.link_a[flip]
    sw = layout.switch_fabric == FABRIC_BACKEND
    out = {name: np.where(sw, -7, getattr(layout, name)) for name in ("switch_tier", "switch_zone", "switch_group",
                                                                      "switch_member")}
    tier = layout.link_tier.copy()
    tier[cab] = -7
    from dataclasses import replace
    return replace(layout, link_a=a, link_b=b, link_tier=tier, **out)


@pytest.mark.parametrize("preset", ["demo-256", "meta-roce-24k", "meta-ib-24k", "dgx-h100-superpod", "alibaba-hpn",
                                    "multiplane-4", "roadmap-131k"])
def test_every_preset_is_recovered_from_its_cables(preset):
    lay = expand(load_spec(preset))
    s = infer_structure(scrambled(lay))
    sw = s.switches
    for name, got in (("switch_tier", s.tier), ("switch_zone", s.zone), ("switch_group", s.group),
                      ("switch_member", s.member)):
        assert (getattr(lay, name)[sw] == got).all(), name
    for name, got in (("link_a", s.link_a), ("link_b", s.link_b), ("link_tier", s.link_tier)):
        assert (getattr(lay, name)[s.cables] == got).all(), name
    assert s.planes == lay.spec.backend.planes


def test_the_recovered_fabric_routes_as_the_spec_s():
    lay = expand(load_spec("alibaba-hpn"))
    mine, theirs = topology_from_layout(lay), topology_from_layout(infer_structure(scrambled(lay, 3)).apply(
        scrambled(lay, 3)))
    rng = np.random.default_rng(2)
    src = rng.integers(0, mine.n_gpus, 500)
    dst = (src + 8 * rng.integers(1, mine.n_gpus // 8 - 1, 500)) % mine.n_gpus
    for routing in ROUTINGS:
        a = route(mine, src, dst, qp=np.arange(500) % 4, routing=routing, seed=1)
        b = route(theirs, src, dst, qp=np.arange(500) % 4, routing=routing, seed=1)
        assert all((x == y).all() for x, y in zip(a, b)), routing


def _demo():
    return expand(load_spec("demo-256"))


def _leaf_spine_cable(lay, k=0):
    return np.flatnonzero((lay.link_fabric == FABRIC_BACKEND) & (lay.link_tier == LINK_LEAF_SPINE))[k]


def test_a_cable_to_nowhere_is_refused_naming_it():
    lay = _demo()
    c = _leaf_spine_cable(lay)
    lay.port_switch[lay.link_b[c]] = -1
    with pytest.raises(CablingError, match="no device"):
        infer_structure(lay)


def test_a_cable_between_two_leaves_is_refused_as_a_loop():
    lay = _demo()
    c = _leaf_spine_cable(lay)
    leaves = np.flatnonzero((lay.switch_fabric == FABRIC_BACKEND) & (lay.switch_tier == TIER_LEAF))
    lay.port_switch[lay.link_b[c]] = leaves[5]
    with pytest.raises(CablingError, match="two switches of tier 0") as info:
        infer_structure(lay)
    assert info.value.item.startswith("cable ")


def test_uneven_cabling_is_refused_naming_the_switch():
    lay = _demo()
    c = _leaf_spine_cable(lay)
    spine = lay.port_switch[lay.link_b[c]]
    spines = np.flatnonzero((lay.switch_fabric == FABRIC_BACKEND) & (lay.switch_tier == TIER_SPINE)
                            & (lay.switch_zone == lay.switch_zone[spine]))
    lay.port_switch[lay.link_b[c]] = spines[spines != spine][0]     # two cables to one spine, none to another
    with pytest.raises(CablingError, match="cables to a switch above it") as info:
        infer_structure(lay)
    assert info.value.item.startswith("switch ")


def test_mixed_speeds_in_a_tier_are_refused():
    lay = _demo()
    lay.link_speed_gbps[_leaf_spine_cable(lay, 3)] = 200
    with pytest.raises(CablingError, match="mixes speeds 200G, 400G"):
        infer_structure(lay)
