"""The backend fabric of one cluster as arrays: directed links with capacities, GPUs and their NICs.

Model
-----
The backend fabric of :mod:`sim.fabric.layout` is a folded Clos: every GPU has one NIC cabled to a leaf (RTSW), each leaf
has uplinks to the spines (CTSW) of its zone, spine ``p`` of every zone has uplinks to the core switches (ATSW) of
plane ``p``. Every *active* backend cable gives two directed links: ``up`` (lower end -> upper end: NIC -> leaf,
leaf -> spine, spine -> core) and ``down`` (the reverse). Each direction carries the cable's full speed
(full duplex), so capacities are ``speed_gbps * 1e9 / 8`` bytes/s per direction.

A cable is active when its own status, the status of both its ports and the status of both devices at its ends
(NIC or switch) are :data:`sim.fabric.layout.STATUS_ACTIVE`; anything else (failed, drained, maintenance) carries nothing,
so its links are left out of the topology. A drained switch thus removes every cable it terminates.

Nodes: ``0 .. n_switches-1`` are the backend switches (in layout order, active or not, so node ids do not move when
a switch fails), then ``n_switches + g`` is the backend NIC of GPU ``g``. Directed link ``e`` runs from node
``link_tail[e]`` to node ``link_head[e]``; up links are ``0 .. C-1`` (one per active cable, in layout link order)
and down links ``C .. 2C-1`` (``down = up + C``).

Latency: a directed link costs ``hop_latency`` seconds when it enters a switch (store-and-forward of the header in
a cut-through RoCE/IB switch, about 1 us) and 0 when it enters a NIC, so a path's latency is the number of switches
it crosses times ``hop_latency``; the base RTT of the transport is the collective model's business.

Planes and multi-port NICs (``planes``, ``ports_per_nic`` of the backend spec): every NIC port's cable is a link of
its own (two ports: two uplinks, two downlinks from one NIC node). The GPU arrays (``gpu_leaf``, ``gpu_uplink``...)
keep port 0's, ``gpu_port_*`` give every port's, and ``port_views`` holds one :class:`Topology` per plane, what
the routers route in: its own leaves, spines, cores and tables (group numbers local to the plane), its endpoints the
NIC ports of the plane (endpoint ``j * G + g``: the ``j``-th port in the plane of GPU ``g``'s NIC), link ids the
whole fabric's (:mod:`sim.fabric.ports`).

Routing tables (:mod:`sim.fabric.routing`) read the ``leaf_up`` / ``spine_up`` tables below: for each leaf, its uplink
cables grouped by spine plane and parallel index; for each spine, its uplink cables grouped by core member and
parallel index; ``-1`` where a cable is missing or inactive. Ids there are up-link ids (add ``n_cables`` for the
reverse, down, direction).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from sim.fabric.catalog import load_catalog, read_catalog
from sim.fabric.layout import (FABRIC_BACKEND, LINK_LEAF_SPINE, LINK_NIC_LEAF, LINK_SPINE_CORE, STATUS_ACTIVE, TIER_CORE,
                        TIER_LEAF, TIER_SPINE, ClusterLayout, expand)
from sim.fabric.names import compute_zone_label, nic_node_name, switch_label
from sim.fabric.spec import load_spec
from sim.core.units import IDX, GBPS

DEFAULT_HOP_LATENCY = 1e-6      # seconds per switch crossed (cut-through RoCE / InfiniBand switch, assumption)


@dataclass
class Topology:
    """The backend fabric of one cluster as arrays: directed links, GPUs and their NICs.

    Units: capacities and bandwidths in bytes/s, latencies in seconds. Arrays are indexed by GPU (``G``), directed
    link (``E``), node (``N``: switches then GPU NICs) or switch (``S``: backend switches in layout order).
    """

    layout: ClusterLayout
    kind: str                  # "roce" or "infiniband"
    n_gpus: int
    gpu_host: np.ndarray       # (G,) host index of each GPU
    gpu_nic: np.ndarray        # (G,) layout NIC id of the GPU's backend NIC
    gpu_usable: np.ndarray     # (G,) bool: GPU, its NIC, its NIC cable and its leaf all active
    n_links: int               # E = 2 x active backend cables
    link_capacity: np.ndarray  # (E,) bytes/s
    link_latency: np.ndarray   # (E,) seconds
    link_cable: np.ndarray     # (E,) layout link id
    link_is_up: np.ndarray     # (E,) bool: lower -> upper
    nic_bandwidth: float       # bytes/s of one GPU's backend NIC
    nvlink_bandwidth: float    # bytes/s per GPU inside a host
    # Graph structure (added to the agreed API; routing and tests use it).
    n_cables: int = 0          # C active backend cables; up link i, down link i + C
    n_switches: int = 0        # S backend switches (nodes 0..S-1)
    link_tail: np.ndarray = None   # (E,) node id the link leaves
    link_head: np.ndarray = None   # (E,) node id the link enters
    link_tier: np.ndarray = None   # (E,) LINK_NIC_LEAF, LINK_LEAF_SPINE or LINK_SPINE_CORE
    switch_layout_id: np.ndarray = None  # (S,) layout switch id of each backend switch node
    switch_tier: np.ndarray = None     # (S,) TIER_LEAF / TIER_SPINE / TIER_CORE
    switch_zone: np.ndarray = None     # (S,) zone, -1 for cores
    switch_group: np.ndarray = None    # (S,) leaf: index in zone; spine and core: plane
    switch_active: np.ndarray = None   # (S,) bool
    gpu_leaf: np.ndarray = None        # (G,) switch node of the GPU's leaf
    gpu_leaf_port: np.ndarray = None   # (G,) the NIC's downlink port index on its leaf (Meta's "slice")
    gpu_leaf_group: np.ndarray = None  # (G,) the leaf (node) standing for the GPU's host's rail group: its host's
    #                                    lowest leaf (= gpu_leaf when every NIC of a host is on one leaf)
    gpu_uplink: np.ndarray = None      # (G,) up link NIC -> leaf, -1 if the NIC cable is inactive
    gpu_downlink: np.ndarray = None    # (G,) down link leaf -> NIC, -1 if inactive
    leaves: np.ndarray = None          # (nL,) switch nodes of the leaves (in order: zone-major)
    spines: np.ndarray = None          # (nS,) switch nodes of the spines
    cores: np.ndarray = None           # (nC,) switch nodes of the cores
    switch_rank: np.ndarray = None     # (S,) index of a switch within its tier array (leaves / spines / cores)
    spine_at: np.ndarray = None        # (Z, P) spine rank of (zone, plane), -1 if none
    core_at: np.ndarray = None         # (P, M) core rank of (plane, member), -1 if none
    leaf_up: np.ndarray = None         # (nL, P, m) up link ids leaf -> spine of plane p, parallel j; -1 inactive
    spine_up: np.ndarray = None        # (nS, M, m2) up link ids spine -> core member c, parallel j; -1 inactive
    leaf_downlinks: int = 0            # D: NIC ports per leaf
    hop_latency: float = DEFAULT_HOP_LATENCY
    cache: dict = field(default_factory=dict, repr=False)   # routing tables, built once (sim.fabric.routing)
    ports_per_nic: int = 1             # Q: ports of each GPU's NIC (sim.fabric.spec)
    planes: int = 1                    # P: disjoint planes; port q in plane q % P
    gpu_port_uplink: np.ndarray = None     # (G, Q) up link NIC port -> leaf, -1 if inactive
    gpu_port_leaf: np.ndarray = None       # (G, Q) switch node of each port's leaf
    gpu_port_alive: np.ndarray = None      # (G, Q) bool: the port's cable and its leaf active
    port_views: tuple = ()                 # (P,) one Topology per plane when Q > 1 (module docstring)
    gpu_model: dict = field(default_factory=dict)   # the GPU's catalog specs (sim/presets/catalog.toml), plus "slug"
    nic_model: dict = field(default_factory=dict)   # the backend NIC's catalog specs, plus "slug"
    sharp: bool = False                # the backend's switches reduce in the network (InfiniBand SHARP): fabric_sharp

    @property
    def n_nodes(self) -> int:
        return self.n_switches + self.n_gpus

    @property
    def link_down_of_up(self) -> int:
        """Offset from an up link id to the down link of the same cable."""
        return self.n_cables

    def node_names(self, nodes) -> list[str]:
        """Readable names of nodes: ``rtsw z03.090``, ``ctsw z03.s07``, ``atsw p07.c2``, ``nic h00012.r3``."""
        lay = self.layout
        names = []
        for n in np.atleast_1d(np.asarray(nodes, dtype=IDX)).tolist():
            if n >= self.n_switches:
                g = n - self.n_switches
                names.append(nic_node_name(int(self.gpu_host[g]), int(lay.gpu_slot[g])))
                continue
            tier = int(self.switch_tier[n])
            name = lay.tier_names.get((FABRIC_BACKEND, tier), ("leaf", "spine", "core")[tier])
            zone, group = int(self.switch_zone[n]), int(self.switch_group[n])
            member = int(lay.switch_member[self.switch_layout_id[n]]) if tier == TIER_CORE else 0
            names.append(f"{name} {switch_label(tier, compute_zone_label(zone), group, member, member_digits=1)}")
        return names

    def link_names(self, ids) -> list[str]:
        """Readable names of directed links, e.g. ``rtsw z03.090 -> ctsw z03.s07 #2`` (#k: k-th parallel cable
        between the two devices, counted from 0)."""
        ids = np.atleast_1d(np.asarray(ids, dtype=IDX))
        tails = self.node_names(self.link_tail[ids])
        heads = self.node_names(self.link_head[ids])
        par = self.cache.get("_parallel")
        if par is None:
            par = self.cache["_parallel"] = parallel_index(self)
        return [f"{t} -> {h} #{int(p)}" for t, h, p in zip(tails, heads, par[ids])]


def parallel_index(topo: Topology) -> np.ndarray:
    """(E,) index of each link among the links with the same tail and head, in link id order."""
    key = topo.link_tail * topo.n_nodes + topo.link_head
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(len(k)), 0))
    par = np.empty(len(k), dtype=IDX)
    par[order] = np.arange(len(k)) - first
    return par


def _group_table(lower: np.ndarray, group: np.ndarray, ids: np.ndarray, n_rows: int, n_groups: int) -> np.ndarray:
    """A table (n_rows, n_groups, m) of ``ids`` by (lower row, group), parallel entries in input order; -1 padding."""
    table_shape = (n_rows, n_groups)
    if len(ids) == 0:
        return np.full(table_shape + (1,), -1, dtype=IDX)
    key = lower * n_groups + group
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(len(k)), 0))
    par = np.arange(len(k)) - first
    m = int(par.max()) + 1
    table = np.full(n_rows * n_groups * m, -1, dtype=IDX)
    table[k * m + par] = ids[order]
    return table.reshape(n_rows, n_groups, m)


def topology_from_layout(layout: ClusterLayout, hop_latency: float = DEFAULT_HOP_LATENCY) -> Topology:
    """The backend fabric of ``layout`` as a :class:`Topology`, leaving out every inactive cable.

    A cable is kept when the link, both its ports and both end devices have status ``STATUS_ACTIVE``. Cost: a few
    vectorized passes over the layout's links and switches (about 0.1 s for 131k GPUs).
    """
    lay = layout
    sw = _backend_switches(lay)
    n_sw = len(sw["ids"])
    gpu_nic, gpu_of_nic = _gpu_nics(lay)
    n_gpus = len(gpu_nic)
    cab = _backend_cables(lay, sw, gpu_of_nic)
    lower, upper, tier_all = cab["lower"], cab["upper"], cab["tier"]

    # GPU -> leaf from the NIC cable (active or not): the leaf is the GPU's place in the fabric (per NIC port).
    backend = lay.spec.backend
    Q = backend.ports_per_nic
    nic_cab = tier_all == LINK_NIC_LEAF
    g_of, q_of = lower[nic_cab] - n_sw, lay.port_slot[cab["pa"][nic_cab]]
    port_leaf = np.full((n_gpus, Q), -1, dtype=IDX)
    port_leaf[g_of, q_of] = upper[nic_cab]
    port_leaf_port = np.full((n_gpus, Q), -1, dtype=IDX)
    port_leaf_port[g_of, q_of] = lay.port_slot[cab["pb"][nic_cab]]
    gpu_leaf, gpu_leaf_port = port_leaf[:, 0].copy(), port_leaf_port[:, 0].copy()
    tables = switch_tables(sw, cab)

    active = cab["active"]
    ids, lower, upper, tier = (x[active] for x in (cab["ids"], lower, upper, tier_all))
    C = len(ids)
    up_ids = np.arange(C, dtype=IDX)
    link_tail = np.concatenate([lower, upper])
    link_head = np.concatenate([upper, lower])
    speed = lay.link_speed_gbps[ids].astype(np.float64) * GBPS
    enters_switch = link_head < n_sw
    link_latency = np.where(enters_switch, hop_latency, 0.0)

    port_up = np.full((n_gpus, Q), -1, dtype=IDX)
    is_nic = tier == LINK_NIC_LEAF
    port_up[lower[is_nic] - n_sw, lay.port_slot[cab["pa"][active][is_nic]]] = up_ids[is_nic]
    gpu_uplink = port_up[:, 0].copy()
    gpu_downlink = np.where(gpu_uplink >= 0, gpu_uplink + C, -1)
    port_alive = (port_up >= 0) & (port_leaf >= 0) & sw["active"][np.maximum(port_leaf, 0)]

    gpu_leaf_group = gpu_leaf if backend.rails == 1 else _host_lowest(lay.gpu_host, gpu_leaf)
    gpu_usable = (lay.gpu_status == STATUS_ACTIVE) & port_alive.any(axis=1)
    gpu_model = (lay.spec.catalog or load_catalog()).get("gpu", lay.spec.layout.gpu, "layout.gpu")
    topo = Topology(
        layout=lay, kind=backend.kind, n_gpus=n_gpus, gpu_host=lay.gpu_host.astype(IDX), gpu_nic=gpu_nic.astype(IDX),
        gpu_usable=gpu_usable, n_links=2 * C, link_capacity=np.concatenate([speed, speed]),
        link_latency=link_latency, link_cable=np.concatenate([ids, ids]).astype(IDX),
        link_is_up=np.r_[np.ones(C, bool), np.zeros(C, bool)],
        nic_bandwidth=float(backend.nic_speed_gbps) * GBPS,
        nvlink_bandwidth=float(gpu_model["nvlink_gbps"]) * GBPS,
        n_cables=C, n_switches=n_sw, link_tail=link_tail, link_head=link_head,
        link_tier=np.concatenate([tier, tier]).astype(IDX), switch_layout_id=sw["ids"].astype(IDX),
        switch_tier=sw["tier"], switch_zone=sw["zone"], switch_group=sw["group"], switch_active=sw["active"],
        gpu_leaf=gpu_leaf, gpu_leaf_port=gpu_leaf_port, gpu_leaf_group=gpu_leaf_group, gpu_uplink=gpu_uplink, gpu_downlink=gpu_downlink,
        **tables, leaf_downlinks=int(gpu_leaf_port.max()) + 1 if n_gpus else 0, hop_latency=hop_latency,
        ports_per_nic=Q, planes=backend.planes, gpu_port_uplink=port_up, gpu_port_leaf=port_leaf,
        gpu_port_alive=port_alive, gpu_model=_specs(gpu_model),
        nic_model=_specs((lay.spec.catalog or load_catalog()).get("nic", backend.nic, "backend.nic")),
        sharp=fabric_sharp(backend, lay.spec.catalog or load_catalog()),
    )
    if Q > 1:
        topo.port_views = tuple(_plane_view(topo, lay, sw, cab, p, port_leaf_port) for p in range(backend.planes))
    return topo


def _plane_view(topo: Topology, lay: ClusterLayout, sw: dict, cab: dict, p: int, port_leaf_port) -> Topology:
    """Plane ``p`` of a fabric of NIC ports as a Topology of its own (module docstring): its switches' tables with
    group numbers local to the plane, its endpoints the NICs' ports in the plane, link ids the whole fabric's."""
    be = lay.spec.backend
    P, Qp, G = be.planes, be.ports_per_plane, topo.n_gpus
    L = lay.spec.layout.hosts_per_zone // be.leaf.hosts_per_switch * be.rails     # leaves of a zone in one plane
    S = be.spine.per_zone
    per_plane = np.where(sw["tier"] == TIER_LEAF, L, S)
    plane = sw["group"] // per_plane
    mine = plane == p
    sw_p = {**sw, "tier": np.where(mine, sw["tier"], -1), "group": sw["group"] - p * per_plane}
    cab_plane = np.where(cab["tier"] == LINK_NIC_LEAF, -1, plane[np.maximum(cab["upper"], 0)])
    cab_p = {**cab, "tier": np.where(cab_plane == p, cab["tier"], -1)}
    tables = switch_tables(sw_p, cab_p)
    cols = [j * P + p for j in range(Qp)]
    up = np.concatenate([topo.gpu_port_uplink[:, q] for q in cols])
    leaf = np.concatenate([topo.gpu_port_leaf[:, q] for q in cols])
    leaf_port = np.concatenate([port_leaf_port[:, q] for q in cols])
    return replace(
        topo, n_gpus=Qp * G, gpu_host=np.tile(topo.gpu_host, Qp), gpu_nic=np.tile(topo.gpu_nic, Qp),
        gpu_usable=np.concatenate([topo.gpu_port_alive[:, q] for q in cols]) & np.tile(topo.gpu_usable, Qp),
        gpu_leaf=leaf, gpu_leaf_port=leaf_port, gpu_leaf_group=leaf, gpu_uplink=up,
        gpu_downlink=np.where(up >= 0, up + topo.n_cables, -1), switch_group=sw_p["group"].astype(IDX),
        **tables, leaf_downlinks=int(leaf_port.max()) + 1 if leaf_port.size else 0, cache={}, ports_per_nic=1,
        planes=1, gpu_port_uplink=None, gpu_port_leaf=None, gpu_port_alive=None, port_views=())


def fabric_sharp(backend, catalog) -> bool:
    """Whether the backend fabric reduces in the network, as NCCL's CollNet needs (InfiniBand SHARP): an
    InfiniBand fabric whose NIC is not an Ethernet / EFA one and every switch tier's model has the catalog key
    ``sharp`` (NVIDIA Quantum and Quantum-2 [S140]; the NCCL-SHARP plugin needs ConnectX-6 or later and Quantum or
    later [S141]). RoCE / Ethernet / EFA fabrics never do (SHARP is an InfiniBand protocol)."""
    if backend.kind != "infiniband":
        return False
    nic = catalog.get("nic", backend.nic, "backend.nic")
    if nic.specs.get("transport") in ("roce", "efa", "ethernet"):
        return False
    return all(bool(catalog.get("switch", t.model, "backend.model").specs.get("sharp", False))
               for t in backend.tiers)


def _specs(model) -> dict:
    """A catalog model's specs as a plain dict with its slug (what the mechanisms read: NVLink, NVLS, PCIe...)."""
    return {"slug": model.slug, "name": model.name, **model.specs}


def _host_lowest(gpu_host: np.ndarray, value: np.ndarray) -> np.ndarray:
    """(G,) the lowest non-negative ``value`` over each GPU's host (-1 where a host has none)."""
    big = np.iinfo(IDX).max
    low = np.full(int(gpu_host.max()) + 1 if gpu_host.size else 0, big, dtype=IDX)
    np.minimum.at(low, gpu_host, np.where(value >= 0, value, big).astype(IDX))
    return np.where(low == big, -1, low)[gpu_host].astype(IDX)


def _backend_switches(lay: ClusterLayout) -> dict:
    """The backend switches (layout ids, in layout order: they are nodes ``0..S-1``), their tier, zone, group,
    member and whether they are active, and ``node``: the node of each layout switch (-1 off the backend)."""
    ids = np.flatnonzero(lay.switch_fabric == FABRIC_BACKEND)
    node = np.full(len(lay.switch_tier), -1, dtype=IDX)
    node[ids] = np.arange(len(ids))
    return {"ids": ids, "node": node, "tier": lay.switch_tier[ids], "zone": lay.switch_zone[ids],
            "group": lay.switch_group[ids], "member": lay.switch_member[ids],
            "active": lay.switch_status[ids] == STATUS_ACTIVE}


def _gpu_nics(lay: ClusterLayout):
    """The backend NIC of each GPU (in GPU order), and the GPU of each layout NIC (-1 if none)."""
    gpu_nic = np.flatnonzero((lay.nic_fabric == FABRIC_BACKEND) & (lay.nic_gpu >= 0))
    gpu_nic = gpu_nic[np.argsort(lay.nic_gpu[gpu_nic], kind="stable")]
    n_gpus = len(lay.gpu_host)
    if len(gpu_nic) != n_gpus:
        raise ValueError(f"layout has {n_gpus} GPUs but {len(gpu_nic)} backend NICs serving a GPU")
    gpu_of_nic = np.full(len(lay.nic_fabric), -1, dtype=IDX)
    gpu_of_nic[gpu_nic] = np.arange(n_gpus)
    return gpu_nic, gpu_of_nic


def _backend_cables(lay: ClusterLayout, sw: dict, gpu_of_nic: np.ndarray) -> dict:
    """Every backend cable (layout ids), its upper port ``pb``, its end nodes ``lower``/``upper``, its tier and
    whether it is ``active`` (the cable, both ports and both devices active)."""
    n_sw = len(sw["ids"])
    node_of_switch = sw["node"]
    cab = np.flatnonzero(lay.link_fabric == FABRIC_BACKEND)
    pa, pb = lay.link_a[cab], lay.link_b[cab]
    a_nic, a_sw, b_sw = lay.port_nic[pa], lay.port_switch[pa], lay.port_switch[pb]
    lower = np.where(a_nic >= 0, n_sw + gpu_of_nic[np.maximum(a_nic, 0)], node_of_switch[np.maximum(a_sw, 0)])
    upper = node_of_switch[b_sw]
    dev_ok_a = np.where(a_nic >= 0, lay.nic_status[np.maximum(a_nic, 0)] == STATUS_ACTIVE,
                        lay.switch_status[np.maximum(a_sw, 0)] == STATUS_ACTIVE)
    dev_ok_b = lay.switch_status[b_sw] == STATUS_ACTIVE
    active = ((lay.link_status[cab] == STATUS_ACTIVE) & (lay.port_status[pa] == STATUS_ACTIVE)
              & (lay.port_status[pb] == STATUS_ACTIVE) & dev_ok_a & dev_ok_b)
    return {"ids": cab, "pa": pa, "pb": pb, "lower": lower, "upper": upper, "tier": lay.link_tier[cab], "active": active}


def switch_tables(sw: dict, cab: dict) -> dict:
    """The switches by tier and the routing tables of :class:`Topology` (``leaves`` ... ``spine_up``), built over
    every cable so positions do not move when one fails; -1 where a cable is inactive."""
    sw_tier, sw_zone, sw_group, sw_member = sw["tier"], sw["zone"], sw["group"], sw["member"]
    lower, upper, tier_all, active = cab["lower"], cab["upper"], cab["tier"], cab["active"]
    up_of_cable = np.where(active, np.cumsum(active) - 1, -1).astype(IDX)
    leaves = np.flatnonzero(sw_tier == TIER_LEAF)
    spines = np.flatnonzero(sw_tier == TIER_SPINE)
    cores = np.flatnonzero(sw_tier == TIER_CORE)
    rank = np.full(len(sw_tier), -1, dtype=IDX)
    for arr in (leaves, spines, cores):
        rank[arr] = np.arange(len(arr))
    n_zones = int(sw_zone[leaves].max()) + 1 if len(leaves) else 0
    n_planes = int(sw_group[spines].max()) + 1 if len(spines) else 0
    n_members = int(sw_member[cores].max()) + 1 if len(cores) else 0
    spine_at = np.full((n_zones, n_planes), -1, dtype=IDX)
    spine_at[sw_zone[spines], sw_group[spines]] = np.arange(len(spines))
    core_at = np.full((n_planes, max(n_members, 1)), -1, dtype=IDX)
    core_at[sw_group[cores], sw_member[cores]] = np.arange(len(cores))
    ls = tier_all == LINK_LEAF_SPINE
    leaf_up = _group_table(rank[lower[ls]], sw_group[upper[ls]], up_of_cable[ls], len(leaves), max(n_planes, 1))
    sc = tier_all == LINK_SPINE_CORE
    spine_up = _group_table(rank[lower[sc]], sw_member[upper[sc]], up_of_cable[sc], len(spines), max(n_members, 1))
    return {"leaves": leaves, "spines": spines, "cores": cores, "switch_rank": rank, "spine_at": spine_at,
            "core_at": core_at, "leaf_up": leaf_up, "spine_up": spine_up}


DEFAULT_PRESET = "meta-roce-24k"      # the cluster a command runs on when it names none


def load_topology(preset: str | None = None, spec: str | None = None, say=lambda message: None,
                  catalog: str | None = None):
    """``(cluster spec, backend topology)`` of a preset or a spec file (no database; default ``meta-roce-24k``),
    checked against the built-in catalog or the catalog file ``catalog`` (:func:`sim.fabric.catalog.read_catalog`).
    ``say(message)`` gets one line saying what was built and how long it took."""
    t = time.perf_counter()
    cluster = load_spec(spec or preset or DEFAULT_PRESET, read_catalog(catalog) if catalog else None)
    topo = topology_from_layout(expand(cluster))
    say(f"cluster {cluster.name}: {topo.n_gpus:,} GPUs, {topo.n_links:,} directed links ({topo.kind}), "
        f"built in {time.perf_counter() - t:.2f} s")
    return cluster, topo
