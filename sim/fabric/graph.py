"""The backend fabric's structure inferred from its cabling alone: tiers, cable directions, planes, zones, groups.

A cluster's inventory (the twin's database, a DCIM such as NetBox) holds switches, ports and cables, not a spec. The
routers need the structure a spec gives (:mod:`sim.fabric.layout`: each switch's tier, zone, group and member, each
cable from its lower to its upper end). :func:`infer_structure` recovers it from the graph:

- **tiers**: a switch cabled to a NIC port is a leaf (tier 0); a switch one cable above a tier-``t`` switch and not
  already placed is tier ``t + 1`` (breadth first from the NICs); at most three tiers. Every switch-to-switch cable
  must join tiers ``t`` and ``t + 1``: a cable between two switches of one tier (a loop in the up/down order) is
  refused, as is a switch no NIC reaches, a cable whose end is no device, a cable from a NIC to a switch above the
  leaves, a NIC-to-NIC cable and a switch cabled to itself.
- **directions**: every cable runs from its lower end (NIC or lower tier) to its upper end.
- **planes**: the connected components of the switches and their cables (planes share no cable); numbered by the
  NIC port slot their leaves serve (port ``q`` in plane ``q % P``), then by switch id.
- **zones**: a leaf's is the zone of the hosts on its downlinks, a spine's that of its leaves (one each, else
  refused); cores have none.
- **groups**: in each (zone, plane) the leaves by id, ``p * L + rank``; with a core tier the spines of a zone are
  grouped by the core plane they are cabled to (the components of the spine-core cables: spine ``i`` of every zone
  to the cores of core plane ``i``), ``p * S + i``; without one by id. A core's group is its core plane, its member
  its rank in it by id. The numbering is the layout's (:mod:`sim.fabric.layout`), so a fabric expanded from a spec
  is recovered exactly (``tests/sim/test_graph.py``).
- **regularity** (what up/down routing's tables need, :mod:`sim.fabric.paths`): every leaf has as many cables to
  each spine of its zone and plane, every spine as many to each core of its core plane, the leaves of every (zone,
  plane) are as many, and every cable of one tier has one speed; anything else is refused naming the switch or tier.

Vectorized: a few passes over the cables per tier and per label-propagation round (the fabric's diameter, at most 6).
Errors are :class:`CablingError`, naming the first offending switch or cable by the layout's names.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sim.core.units import IDX
from sim.fabric.layout import FABRIC_BACKEND, TIER_CORE, TIER_LEAF, TIER_SPINE, ClusterLayout
from sim.fabric.names import item_names

MAX_TIERS = 3


class CablingError(ValueError):
    """Cabling the up/down fabric model cannot route: ``item`` names the switch or cable, ``reason`` says why."""

    def __init__(self, item: str, reason: str):
        self.item, self.reason = item, reason
        super().__init__(f"{item}: {reason}")


@dataclass
class FabricStructure:
    """The backend's inferred structure: per backend switch (``switches``: layout ids) its tier, zone, group, member
    and plane; per backend cable (``cables``) its lower and upper port and its link tier."""

    switches: np.ndarray
    tier: np.ndarray
    zone: np.ndarray
    group: np.ndarray
    member: np.ndarray
    plane: np.ndarray
    cables: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_tier: np.ndarray
    planes: int

    def apply(self, layout: ClusterLayout) -> ClusterLayout:
        """``layout`` with its backend switches' and cables' structure replaced by this one."""
        arrays = {}
        for name, ids, values in (("switch_tier", self.switches, self.tier), ("switch_zone", self.switches, self.zone),
                                  ("switch_group", self.switches, self.group),
                                  ("switch_member", self.switches, self.member), ("link_a", self.cables, self.link_a),
                                  ("link_b", self.cables, self.link_b), ("link_tier", self.cables, self.link_tier)):
            a = getattr(layout, name).copy()
            a[ids] = values
            arrays[name] = a
        return replace(layout, **arrays)


def infer_structure(layout: ClusterLayout) -> FabricStructure:
    """The backend fabric's structure from ``layout``'s ports and cables only (module docstring); the layout's own
    tiers, zones, groups, members and cable directions are not read. Raises :class:`CablingError`."""
    lay = layout
    names = _Names(lay)
    sw = np.flatnonzero(lay.switch_fabric == FABRIC_BACKEND)
    node = np.full(len(lay.switch_fabric), -1, dtype=IDX)
    node[sw] = np.arange(sw.size)
    cab = np.flatnonzero(lay.link_fabric == FABRIC_BACKEND)
    pa, pb = lay.link_a[cab], lay.link_b[cab]
    for ends in (pa, pb):
        bad = np.flatnonzero((lay.port_nic[ends] < 0) & (lay.port_switch[ends] < 0))
        if bad.size:
            raise CablingError(names.cable(cab[bad[0]]), "has an end on no device (a cable to nowhere)")
    a_nic, b_nic = lay.port_nic[pa] >= 0, lay.port_nic[pb] >= 0
    if (a_nic & b_nic).any():
        raise CablingError(names.cable(cab[np.flatnonzero(a_nic & b_nic)[0]]), "joins two NICs")
    # NIC cables first with the NIC at a, switch cables with their switches as nodes
    nic_end = np.where(a_nic, pa, np.where(b_nic, pb, -1))
    sw_end = np.where(a_nic, pb, np.where(b_nic, pa, -1))
    is_nic = nic_end >= 0
    u = node[lay.port_switch[np.where(is_nic, sw_end, pa)]]
    v = np.where(is_nic, -1, node[lay.port_switch[pb]])
    if ((u < 0) | (~is_nic & (v < 0))).any():
        bad = np.flatnonzero((u < 0) | (~is_nic & (v < 0)))[0]
        raise CablingError(names.cable(cab[bad]), "joins the backend to a switch of another fabric")
    loop = ~is_nic & (u == v)
    if loop.any():
        raise CablingError(names.cable(cab[np.flatnonzero(loop)[0]]), "joins a switch to itself")
    tier = _tiers(u, v, is_nic, sw.size, names, sw)
    su, sv = u[~is_nic], v[~is_nic]
    tu, tv = tier[su], tier[sv]
    if (tu == tv).any():
        k = np.flatnonzero(tu == tv)[0]
        raise CablingError(names.cable(cab[~is_nic][k]),
                           f"joins two switches of tier {int(tu[k])} (a loop in the up/down order)")
    if (np.abs(tu - tv) != 1).any():
        k = np.flatnonzero(np.abs(tu - tv) != 1)[0]
        raise CablingError(names.cable(cab[~is_nic][k]), "skips a tier")
    if (tier[u[is_nic]] != 0).any():
        raise CablingError(names.cable(cab[is_nic][np.flatnonzero(tier[u[is_nic]] != 0)[0]]), "bad NIC cable")
    # Directions: lower end first.
    link_a, link_b, link_tier = np.empty(cab.size, IDX), np.empty(cab.size, IDX), np.empty(cab.size, IDX)
    link_a[is_nic], link_b[is_nic], link_tier[is_nic] = nic_end[is_nic], sw_end[is_nic], 0
    up = tv > tu
    lo_port = np.where(up, pa[~is_nic], pb[~is_nic])
    hi_port = np.where(up, pb[~is_nic], pa[~is_nic])
    link_a[~is_nic], link_b[~is_nic] = lo_port, hi_port
    lower = np.where(up, su, sv)
    upper = np.where(up, sv, su)
    link_tier[~is_nic] = tier[upper]
    _one_speed(lay.link_speed_gbps[cab], link_tier, names)
    plane, n_planes = _planes(lay, u, v, is_nic, nic_end, tier, sw.size)
    zone = _zones(lay, u[is_nic], nic_end[is_nic], lower, upper, tier, sw.size, names, sw)
    group, member = _groups(tier, zone, plane, lower, upper, n_planes, names, sw)
    return FabricStructure(switches=sw, tier=tier.astype(IDX), zone=zone, group=group, member=member,
                           plane=plane, cables=cab, link_a=link_a, link_b=link_b, link_tier=link_tier,
                           planes=n_planes)


class _Names:
    """The layout's names of switches and cables, made only when an error needs one."""

    def __init__(self, layout):
        self.layout, self.names = layout, None

    def _all(self):
        if self.names is None:
            self.names = item_names(self.layout)
        return self.names

    def switch(self, i: int) -> str:
        return f"switch {self._all()['switch'][int(i)]}"

    def cable(self, i: int) -> str:
        return f"cable {self._all()['link'][int(i)]}"


def _tiers(u, v, is_nic, n, names, sw) -> np.ndarray:
    """Each backend switch's tier: 0 when cabled to a NIC, then breadth first upwards."""
    tier = np.full(n, -1, dtype=np.int64)
    tier[u[is_nic]] = 0
    su, sv = u[~is_nic], v[~is_nic]
    for t in range(1, MAX_TIERS + 1):
        at = tier == t - 1
        nxt = np.zeros(n, dtype=bool)
        nxt[sv[at[su] & (tier[sv] < 0)]] = True
        nxt[su[at[sv] & (tier[su] < 0)]] = True
        if not nxt.any():
            break
        if t == MAX_TIERS:
            raise CablingError(names.switch(sw[np.flatnonzero(nxt)[0]]),
                               f"is a tier above the third (the fabric model has at most {MAX_TIERS} tiers)")
        tier[nxt] = t
    if (tier < 0).any():
        raise CablingError(names.switch(sw[np.flatnonzero(tier < 0)[0]]), "is reached from no NIC")
    return tier


def _one_speed(speed, link_tier, names) -> None:
    for t in np.unique(link_tier):
        s = np.unique(speed[link_tier == t])
        if s.size > 1:
            raise CablingError(f"link tier {int(t)}", f"mixes speeds {', '.join(f'{int(x)}G' for x in s)}")


def _components(u, v, n) -> np.ndarray:
    """Connected components of ``n`` nodes under edges (u, v): each node's smallest node id in its component."""
    label = np.arange(n)
    while True:
        m = np.minimum(label[u], label[v])
        new = label.copy()
        np.minimum.at(new, u, m)
        np.minimum.at(new, v, m)
        new = new[new]                                  # pointer jumping: converge in log(diameter) rounds
        if (new == label).all():
            return label
        label = new


def _planes(lay, u, v, is_nic, nic_end, tier, n):
    """Each switch's plane: its component, numbered by the NIC port slot its leaves serve, then switch id."""
    comp = _components(u[~is_nic], v[~is_nic], n)
    roots = np.unique(comp)
    slot = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(slot, comp[u[is_nic]], lay.port_slot[nic_end[is_nic]])
    order = np.lexsort((roots, slot[roots]))
    plane_of_root = np.empty(n, dtype=IDX)
    plane_of_root[roots[order]] = np.arange(roots.size)
    return plane_of_root[comp], int(roots.size)


def _zones(lay, leaf_of_nic_cable, nic_ports, lower, upper, tier, n, names, sw):
    """A leaf's zone: that of its hosts; a spine's: that of its leaves; cores: -1. One each, else refused."""
    host = lay.nic_host[lay.port_nic[nic_ports]]
    if (host < 0).any():
        raise CablingError(names.switch(sw[leaf_of_nic_cable[np.flatnonzero(host < 0)[0]]]),
                           "has a NIC of no host below it on the backend")
    zone = np.full(n, -1, dtype=IDX)
    _unique_into(zone, leaf_of_nic_cable, lay.rack_zone[lay.host_rack[host]], names, sw, "hosts of two zones")
    ls = tier[upper] == TIER_SPINE
    _unique_into(zone, upper[ls], zone[lower[ls]], names, sw, "leaves of two zones")
    return zone


def _unique_into(out, at, values, names, sw, what) -> None:
    lo = np.full(out.size, np.iinfo(np.int64).max)
    hi = np.full(out.size, -1)
    np.minimum.at(lo, at, values)
    np.maximum.at(hi, at, values)
    bad = np.flatnonzero((hi >= 0) & (lo != hi))
    if bad.size:
        raise CablingError(names.switch(sw[bad[0]]), f"has {what} below it")
    set_ = hi >= 0
    out[set_] = hi[set_]


def _rank_within(key, ids) -> np.ndarray:
    """The rank of each of ``ids`` among those with its ``key``, by id."""
    order = np.lexsort((ids, key))
    k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(k.size), 0))
    rank = np.empty(k.size, dtype=IDX)
    rank[order] = np.arange(k.size) - first
    return rank


def _groups(tier, zone, plane, lower, upper, n_planes, names, sw):
    n = tier.size
    group = np.zeros(n, dtype=IDX)
    member = np.zeros(n, dtype=IDX)
    ids = np.arange(n)
    Z = int(zone.max()) + 1
    leaves = np.flatnonzero(tier == TIER_LEAF)
    per = np.bincount(zone[leaves] * n_planes + plane[leaves], minlength=Z * n_planes)
    if (per != per[0]).any():
        k = np.flatnonzero(per != per[0])[0]
        raise CablingError(f"zone {k // n_planes} plane {k % n_planes}",
                           f"has {int(per[k])} leaves where zone 0 plane 0 has {int(per[0])}")
    L = int(per[0])
    group[leaves] = plane[leaves] * L + _rank_within(zone[leaves] * n_planes + plane[leaves], ids[leaves])
    spines = np.flatnonzero(tier == TIER_SPINE)
    cores = np.flatnonzero(tier == TIER_CORE)
    sc = tier[upper] == TIER_CORE
    if cores.size:
        core_plane = _components(lower[sc], upper[sc], n)       # spine i of every zone with the cores of plane i
        roots = np.unique(core_plane[spines])
        idx = np.empty(n, dtype=IDX)
        idx[roots] = _rank_within(plane[roots], roots)
        S = int(np.bincount(plane[roots]).max())
        group[spines] = plane[spines] * S + idx[core_plane[spines]]
        group[cores] = plane[cores] * S + idx[core_plane[cores]]
        member[cores] = _rank_within(core_plane[cores], ids[cores])
    elif spines.size:
        S = int(np.bincount(zone[spines] * n_planes + plane[spines]).max())
        group[spines] = plane[spines] * S + _rank_within(zone[spines] * n_planes + plane[spines], ids[spines])
    zone = zone.copy()
    zone[cores] = -1
    _regular(lower[tier[upper] == TIER_SPINE], upper[tier[upper] == TIER_SPINE], zone, plane, tier, TIER_SPINE,
             names, sw)
    _regular(lower[sc], upper[sc], zone, group, tier, TIER_CORE, names, sw)
    return group, member


def _regular(lower, upper, zone, key, tier, up_tier, names, sw) -> None:
    """Every lower switch has the same number of cables to each upper switch of its reach (its zone's spines of its
    plane; its core plane's cores), as the routing tables assume."""
    if not lower.size:
        return
    n = tier.size
    pair = lower.astype(np.int64) * n + upper
    uniq, count = np.unique(pair, return_counts=True)
    lo = uniq // n
    if (count != count[0]).any():
        k = np.flatnonzero(count != count[0])[0]
        raise CablingError(names.switch(sw[lo[k]]), f"has {int(count[k])} cables to a switch above it where others "
                                                    f"have {int(count[0])}")
    # each lower switch reaches every upper switch of its zone (spines) or of its core plane (cores)
    reach = np.bincount(lo, minlength=n)
    upper_sw = np.flatnonzero(tier == up_tier)
    if up_tier == TIER_SPINE:
        want = np.bincount(zone[upper_sw] * (int(key.max()) + 1) + key[upper_sw])
        expected = want[zone * (int(key.max()) + 1) + key]
    else:
        want = np.bincount(key[upper_sw])
        expected = want[np.minimum(key, want.size - 1)]
    below = np.unique(lo)
    bad = below[reach[below] != expected[below]]
    if bad.size:
        raise CablingError(names.switch(sw[bad[0]]), f"is cabled to {int(reach[bad[0]])} of the "
                                                    f"{int(expected[bad[0]])} switches above it in its zone and plane")
