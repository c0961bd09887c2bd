"""Expand a ClusterSpec into the complete hardware of a cluster as numpy arrays (no database needed).

Every physical item gets a dense integer id (its index in the arrays below); relations are id arrays, ``-1`` where
a relation does not apply. The expansion is vectorized: its cost grows with the number of items only through numpy
operations, so a 131k-GPU cluster expands in about a second. The Django builder bulk-inserts exactly these arrays,
and the network engine builds its topology from them directly, so the database and the engine see one cluster.

Order of ids: compute zones first, then storage zones (one or more per storage cluster); likewise racks. NICs are
backend NICs (host-major, then rail), then frontend host NICs, then storage server NICs. Ports: the NICs' first,
NIC by NIC, each NIC's ports in slot order (one per NIC on every fabric but a backend of ``ports_per_nic > 1``, so
there port id = NIC id), then every cabled switch port, switch by switch. Switches: backend then frontend; in a
fabric, plane by plane (backend ``planes``), leaves (zone-major), spines (zone-major), cores (plane-major). A
backend of several planes numbers its switches' groups across planes: leaf ``l`` of plane ``p`` is group ``p * L +
l`` of its zone, spine ``i`` of plane ``p`` is group ``p * S + i``, and its cores are core plane ``p * S + i``, so
every switch keeps a unique (zone, group, member) and name, and the plane is ``group // L`` or ``group // S``. Links run from the lower end ``link_a`` (NIC or lower
switch) to the upper end ``link_b``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.fabric.spec import ClusterSpec, FabricSpec
from sim.core.units import IDX

ZONE_COMPUTE, ZONE_STORAGE = 0, 1
FABRIC_BACKEND, FABRIC_FRONTEND = 0, 1
TIER_LEAF, TIER_SPINE, TIER_CORE = 0, 1, 2
LINK_NIC_LEAF, LINK_LEAF_SPINE, LINK_SPINE_CORE = 0, 1, 2
# Operational status codes of the ``*_status`` arrays; only ACTIVE items carry traffic.
STATUS_ACTIVE, STATUS_FAILED, STATUS_DRAINED, STATUS_MAINTENANCE = 0, 1, 2, 3
STATUS_NAMES = ("active", "failed", "drained", "maintenance")


@dataclass
class ClusterLayout:
    """The whole cluster as arrays. ``*_models`` lists hold catalog slugs that the ``*_model`` arrays index."""

    spec: ClusterSpec
    zone_kind: np.ndarray          # ZONE_COMPUTE or ZONE_STORAGE
    zone_storage: np.ndarray       # storage cluster index, -1 for compute zones
    zone_number: np.ndarray        # index among zones of its kind (of its storage cluster)
    rack_zone: np.ndarray
    rack_number: np.ndarray        # index within its zone
    host_rack: np.ndarray
    host_slot: np.ndarray          # index within its rack
    gpu_host: np.ndarray
    gpu_slot: np.ndarray           # index within its host (0..7)
    server_storage: np.ndarray     # storage servers: storage cluster index
    server_rack: np.ndarray
    server_slot: np.ndarray
    ssd_server: np.ndarray
    ssd_slot: np.ndarray
    nic_fabric: np.ndarray         # FABRIC_BACKEND or FABRIC_FRONTEND
    nic_host: np.ndarray           # -1 for storage server NICs
    nic_server: np.ndarray         # -1 for host NICs
    nic_slot: np.ndarray           # rail for backend NICs
    nic_gpu: np.ndarray            # the GPU a backend NIC serves, -1 otherwise
    nic_model: np.ndarray
    switch_fabric: np.ndarray
    switch_tier: np.ndarray        # TIER_LEAF, TIER_SPINE, TIER_CORE
    switch_zone: np.ndarray        # -1 for core switches
    switch_group: np.ndarray       # leaf: index in zone; spine: index in zone (= its plane); core: plane
    switch_member: np.ndarray      # core: index in plane; 0 otherwise
    switch_model: np.ndarray
    switch_port_base: np.ndarray   # first port id of each switch
    switch_port_count: np.ndarray
    port_nic: np.ndarray           # -1 for switch ports
    port_switch: np.ndarray        # -1 for NIC ports
    port_slot: np.ndarray          # port number on its device
    port_speed_gbps: np.ndarray
    link_fabric: np.ndarray
    link_tier: np.ndarray          # LINK_NIC_LEAF, LINK_LEAF_SPINE, LINK_SPINE_CORE
    link_a: np.ndarray             # lower port
    link_b: np.ndarray             # upper port
    link_speed_gbps: np.ndarray
    link_cable: np.ndarray
    # Status codes (STATUS_*) per item: all active from a spec; the inventory adapter fills them from the database.
    gpu_status: np.ndarray = None
    nic_status: np.ndarray = None
    switch_status: np.ndarray = None
    port_status: np.ndarray = None
    link_status: np.ndarray = None
    server_status: np.ndarray = None   # storage servers and SSDs (sim.storage.topology reads them)
    ssd_status: np.ndarray = None
    nic_models: list[str] = field(default_factory=list)
    switch_models: list[str] = field(default_factory=list)
    cable_models: list[str] = field(default_factory=list)
    tier_names: dict[tuple[int, int], str] = field(default_factory=dict)   # (fabric, tier) -> "rtsw"
    # Host names as the inventory holds them (the adapter reads them); None: the rule of sim.fabric.names.host_names.
    host_names: list[str] | None = None

    def __post_init__(self):
        for kind, ref in (("gpu", self.gpu_host), ("nic", self.nic_fabric), ("switch", self.switch_tier),
                          ("port", self.port_slot), ("link", self.link_a), ("server", self.server_rack),
                          ("ssd", self.ssd_server)):
            if getattr(self, f"{kind}_status") is None:
                setattr(self, f"{kind}_status", np.zeros(len(ref), dtype=np.int8))

    def counts(self) -> dict[str, int]:
        """Item counts by kind, the figures check_cluster and the tests compare against."""
        c = {"zones": len(self.zone_kind), "racks": len(self.rack_zone), "hosts": len(self.host_rack),
             "gpus": len(self.gpu_host), "storage_servers": len(self.server_rack), "ssds": len(self.ssd_server),
             "nics": len(self.nic_fabric), "switches": len(self.switch_tier), "ports": len(self.port_slot),
             "links": len(self.link_a)}
        for (fabric, tier), name in self.tier_names.items():
            c[f"switches.{name}"] = int(np.sum((self.switch_fabric == fabric) & (self.switch_tier == tier)))
        for (fabric, tier), name in self.link_tier_names().items():
            c[f"links.{name}"] = int(np.sum((self.link_fabric == fabric) & (self.link_tier == tier)))
        return c

    def link_tier_names(self) -> dict[tuple[int, int], str]:
        """(fabric, link tier) -> "nic-rtsw", "rtsw-ctsw", "ctsw-atsw": a link tier is named by its two ends."""
        names = {}
        for (fabric, tier), name in self.tier_names.items():
            lower = "nic" if tier == TIER_LEAF else self.tier_names[(fabric, tier - 1)]
            names[(fabric, tier)] = f"{lower}-{name}"
        return names

    def nic_rack(self) -> np.ndarray:
        """The rack of each NIC's host or storage server."""
        return np.where(self.nic_host >= 0, self.host_rack[np.maximum(self.nic_host, 0)],
                        self.server_rack[np.maximum(self.nic_server, 0)] if len(self.server_rack) else -1)

    def switch_rack(self) -> np.ndarray:
        """The rack each leaf switch stands in (that of the device on its first downlink); -1 for other tiers."""
        link_of_upper_port = np.full(len(self.port_slot), -1, dtype=IDX)
        link_of_upper_port[self.link_b] = np.arange(len(self.link_b))
        first_down = link_of_upper_port[self.switch_port_base]
        nic = self.port_nic[self.link_a[first_down]]
        return np.where(self.switch_tier == TIER_LEAF, self.nic_rack()[nic], -1)


def _index(model_list: list[str], slug: str) -> int:
    if slug not in model_list:
        model_list.append(slug)
    return model_list.index(slug)


class _Expander:
    """Accumulates switches, ports and links fabric by fabric; ``finish`` concatenates them."""

    def __init__(self, n_nic_ports: int):
        self.n_switches = 0
        self.n_ports = n_nic_ports
        self.sw = {k: [] for k in ("fabric", "tier", "zone", "group", "member", "model", "port_base", "port_count")}
        self.ln = {k: [] for k in ("fabric", "tier", "a", "b", "speed", "cable")}
        self.switch_models: list[str] = []
        self.cable_models: list[str] = []
        self.tier_names: dict[tuple[int, int], str] = {}

    def switches(self, fabric, tier, model, zone, group, member, port_count):
        """Add switches (arrays of equal length); return their ids and first port ids."""
        n = len(zone)
        ids = np.arange(self.n_switches, self.n_switches + n, dtype=IDX)
        counts = np.broadcast_to(np.asarray(port_count, dtype=IDX), (n,))
        base = self.n_ports + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(IDX)
        for key, value in (("fabric", fabric), ("tier", tier), ("model", _index(self.switch_models, model))):
            self.sw[key].append(np.full(n, value, dtype=IDX))
        for key, value in (("zone", zone), ("group", group), ("member", member), ("port_base", base),
                           ("port_count", counts)):
            self.sw[key].append(np.broadcast_to(np.asarray(value, dtype=IDX), (n,)))
        self.n_switches += n
        self.n_ports += int(counts.sum())
        return ids, base

    def links(self, fabric, tier, a, b, speed, cable):
        a, b = np.ravel(a), np.ravel(b)
        self.ln["fabric"].append(np.full(a.size, fabric, dtype=IDX))
        self.ln["tier"].append(np.full(a.size, tier, dtype=IDX))
        self.ln["a"].append(a.astype(IDX))
        self.ln["b"].append(b.astype(IDX))
        self.ln["speed"].append(np.full(a.size, speed, dtype=IDX))
        self.ln["cable"].append(np.full(a.size, _index(self.cable_models, cable), dtype=IDX))

    def fabric(self, f: FabricSpec, fabric: int, groups: list[tuple[np.ndarray, np.ndarray, int, str]],
               plane: int = 0):
        """Build one fabric (one plane of it) over zone groups: (zone ids (nz,), endpoint NIC port ids (nz, L, D),
        NIC port speed, cable); ``plane`` offsets the switches' groups (module docstring)."""
        leaf, spine, core = f.leaf, f.spine, f.core
        for tier, spec in zip((TIER_LEAF, TIER_SPINE, TIER_CORE), f.tiers):
            self.tier_names[(fabric, tier)] = spec.name
        m = f.leaf_to_spine_links
        S = spine.per_zone
        # Leaves and their downlinks to the endpoint NICs.
        leaf_ids, leaf_base = [], []
        for zones, nics, nic_speed, cable in groups:
            nz, L, D = nics.shape
            ids, base = self.switches(fabric, TIER_LEAF, leaf.model, np.repeat(zones, L),
                                      np.tile(np.arange(L), nz) + plane * L, 0, D + leaf.uplinks)
            base = base.reshape(nz, L)
            self.links(fabric, LINK_NIC_LEAF, nics, base[:, :, None] + np.arange(D), nic_speed, cable)
            leaf_ids.append(ids.reshape(nz, L))
            leaf_base.append(base)
        # Spines, one port group of m links per leaf of its zone, then their uplinks.
        spine_base, spine_down = [], []
        for (zones, nics, _, _), lbase in zip(groups, leaf_base):
            nz, L, D = nics.shape
            down = L * m
            _, base = self.switches(fabric, TIER_SPINE, spine.model, np.repeat(zones, S),
                                    np.tile(np.arange(S), nz) + plane * S, 0, down + spine.uplinks)
            base = base.reshape(nz, S)
            a = lbase[:, :, None, None] + D + (np.arange(S) * m)[:, None] + np.arange(m)
            b = base[:, None, :, None] + (np.arange(L) * m)[:, None, None] + np.arange(m)
            self.links(fabric, LINK_LEAF_SPINE, a, b, f.speed_gbps, spine.cable)
            spine_base.append(base)
            spine_down.append(np.full(nz, down, dtype=IDX))
        if core is None:
            return
        # Cores: plane p holds per_plane switches; spine p of every zone spreads its uplinks over them.
        C, m2 = core.per_plane, f.spine_to_core_links
        spine_base, spine_down = np.concatenate(spine_base), np.concatenate(spine_down)
        Z = len(spine_base)
        _, core_base = self.switches(fabric, TIER_CORE, core.model, np.full(S * C, -1),
                                     np.repeat(np.arange(S), C) + plane * S, np.tile(np.arange(C), S), Z * m2)
        core_base = core_base.reshape(S, C)
        a = (spine_base + spine_down[:, None])[:, :, None, None] + (np.arange(C) * m2)[:, None] + np.arange(m2)
        b = core_base[None, :, :, None] + (np.arange(Z) * m2)[:, None, None, None] + np.arange(m2)
        self.links(fabric, LINK_SPINE_CORE, a, b, f.speed_gbps, core.cable)

    def finish(self):
        sw = {k: np.concatenate(v) for k, v in self.sw.items()}
        ln = {k: np.concatenate(v) for k, v in self.ln.items()}
        return sw, ln


def expand(spec: ClusterSpec) -> ClusterLayout:
    """Expand ``spec`` into a ClusterLayout: every zone, rack, host, GPU, NIC, switch, port, link, server, SSD."""
    lay = spec.layout
    n_hosts, g = lay.hosts, lay.gpus_per_host
    zones, storage_zone_first, storage_rack_first = _zones_and_racks(spec)
    nics, storage_nic_first = _nics(spec)
    nic_ports = nic_port_counts(spec, len(nics["nic_fabric"]))
    ex = _fabrics(spec, int(nic_ports.sum()), storage_zone_first, storage_nic_first)
    sw, ln = ex.finish()
    return ClusterLayout(
        spec=spec, **zones,
        host_rack=np.repeat(np.arange(lay.zones * lay.racks_per_zone), lay.hosts_per_rack).astype(IDX),
        host_slot=np.tile(np.arange(lay.hosts_per_rack), lay.zones * lay.racks_per_zone).astype(IDX),
        gpu_host=np.repeat(np.arange(n_hosts), g).astype(IDX), gpu_slot=np.tile(np.arange(g), n_hosts).astype(IDX),
        **_storage_servers(spec, storage_rack_first), **nics,
        switch_fabric=sw["fabric"], switch_tier=sw["tier"], switch_zone=sw["zone"], switch_group=sw["group"],
        switch_member=sw["member"], switch_model=sw["model"], switch_port_base=sw["port_base"],
        switch_port_count=sw["port_count"],
        **_ports(ex.n_ports, nic_ports, sw, ln),
        link_fabric=ln["fabric"], link_tier=ln["tier"], link_a=ln["a"], link_b=ln["b"],
        link_speed_gbps=ln["speed"], link_cable=ln["cable"],
        switch_models=ex.switch_models, cable_models=ex.cable_models,
        tier_names=ex.tier_names,
    )


def _cat(parts) -> np.ndarray:
    return np.concatenate(parts).astype(IDX)


def _zones_and_racks(spec: ClusterSpec):
    """Zones and racks, compute first, then each storage cluster's; also the first zone and rack of each storage
    cluster."""
    lay = spec.layout
    Z, R = lay.zones, lay.racks_per_zone
    zone_kind = [np.full(Z, ZONE_COMPUTE)]
    zone_storage = [np.full(Z, -1)]
    zone_number = [np.arange(Z)]
    rack_zone = [np.repeat(np.arange(Z), R)]
    rack_number = [np.tile(np.arange(R), Z)]
    n_zones, n_racks = Z, Z * R
    storage_zone_first, storage_rack_first = [], []
    for k, s in enumerate(spec.storage):
        storage_zone_first.append(n_zones)
        storage_rack_first.append(n_racks)
        zone_kind.append(np.full(s.zones, ZONE_STORAGE))
        zone_storage.append(np.full(s.zones, k))
        zone_number.append(np.arange(s.zones))
        rack_zone.append(n_zones + np.repeat(np.arange(s.zones), s.racks_per_zone))
        rack_number.append(np.tile(np.arange(s.racks_per_zone), s.zones))
        n_zones += s.zones
        n_racks += s.racks
    zones = {"zone_kind": _cat(zone_kind), "zone_storage": _cat(zone_storage), "zone_number": _cat(zone_number),
             "rack_zone": _cat(rack_zone), "rack_number": _cat(rack_number)}
    return zones, storage_zone_first, storage_rack_first


def _storage_servers(spec: ClusterSpec, storage_rack_first: list[int]) -> dict:
    """Storage servers (rack by rack of each storage cluster) and their SSDs."""
    server_storage, server_rack, server_slot = [], [], []
    for k, s in enumerate(spec.storage):
        server_storage.append(np.full(s.servers, k))
        server_rack.append(storage_rack_first[k] + np.repeat(np.arange(s.racks), s.servers_per_rack))
        server_slot.append(np.tile(np.arange(s.servers_per_rack), s.racks))
    server_storage = np.concatenate(server_storage) if spec.storage else np.zeros(0, IDX)
    server_rack = np.concatenate(server_rack) if spec.storage else np.zeros(0, IDX)
    server_slot = np.concatenate(server_slot) if spec.storage else np.zeros(0, IDX)
    ssds_per = np.array([s.ssds_per_server for s in spec.storage] or [0], dtype=IDX)[server_storage]
    ssd_server = np.repeat(np.arange(len(server_storage)), ssds_per)
    ssd_slot = np.arange(len(ssd_server)) - np.repeat(np.cumsum(ssds_per) - ssds_per, ssds_per)
    return {"server_storage": server_storage.astype(IDX), "server_rack": server_rack.astype(IDX),
            "server_slot": server_slot.astype(IDX), "ssd_server": ssd_server.astype(IDX),
            "ssd_slot": ssd_slot.astype(IDX)}


def _nics(spec: ClusterSpec):
    """NICs: backend (one per GPU, host-major), frontend host NICs, storage NICs; also each storage cluster's first
    NIC id. The ``nic_model`` array indexes ``nic_models``."""
    n_hosts = spec.layout.hosts
    be, fe = spec.backend, spec.frontend
    nic_models: list[str] = []
    n_be, n_fe = n_hosts * be.nics_per_host, n_hosts * fe.nics_per_host
    nic_fabric = [np.full(n_be, FABRIC_BACKEND), np.full(n_fe, FABRIC_FRONTEND)]
    nic_host = [np.repeat(np.arange(n_hosts), be.nics_per_host), np.repeat(np.arange(n_hosts), fe.nics_per_host)]
    nic_server = [np.full(n_be + n_fe, -1)]
    nic_slot = [np.tile(np.arange(be.nics_per_host), n_hosts), np.tile(np.arange(fe.nics_per_host), n_hosts)]
    nic_gpu = [np.arange(n_be), np.full(n_fe, -1)]
    nic_model = [np.full(n_be, _index(nic_models, be.nic)), np.full(n_fe, _index(nic_models, fe.nic))]
    storage_nic_first, n_nics, server_first = [], n_be + n_fe, 0
    for s in spec.storage:
        n = s.servers * s.nics_per_server
        storage_nic_first.append(n_nics)
        nic_fabric.append(np.full(n, FABRIC_FRONTEND))
        nic_host.append(np.full(n, -1))
        nic_server.append(server_first + np.repeat(np.arange(s.servers), s.nics_per_server))
        nic_slot.append(np.tile(np.arange(s.nics_per_server), s.servers))
        nic_gpu.append(np.full(n, -1))
        nic_model.append(np.full(n, _index(nic_models, s.nic)))
        n_nics += n
        server_first += s.servers
    nics = {"nic_fabric": _cat(nic_fabric), "nic_host": _cat(nic_host), "nic_server": _cat(nic_server),
            "nic_slot": _cat(nic_slot), "nic_gpu": _cat(nic_gpu), "nic_model": _cat(nic_model),
            "nic_models": nic_models}
    return nics, storage_nic_first


def nic_port_counts(spec: ClusterSpec, n_nics: int) -> np.ndarray:
    """(NICs,) ports of each NIC: ``ports_per_nic`` on the backend NICs, one on every other."""
    counts = np.ones(n_nics, dtype=IDX)
    counts[:spec.layout.hosts * spec.backend.nics_per_host] = spec.backend.ports_per_nic
    return counts


def _fabrics(spec: ClusterSpec, n_nic_ports: int, storage_zone_first: list[int], storage_nic_first: list[int]):
    """The switches and links of the backend fabric (over the compute zones, plane by plane) and of the frontend
    fabric (over the compute zones, then each storage cluster's zones)."""
    lay, be, fe = spec.layout, spec.backend, spec.frontend
    n_hosts = lay.hosts
    n_be, n_fe = n_hosts * be.nics_per_host, n_hosts * fe.nics_per_host
    shift = n_be * (be.ports_per_nic - 1)          # port id of a NIC after the backend's: NIC id + shift
    ex = _Expander(n_nic_ports)
    zones = np.arange(lay.zones)
    for p, ports in enumerate(backend_leaf_ports(spec)):
        ex.fabric(be, FABRIC_BACKEND, [(zones, ports, be.port_speed_gbps, be.leaf.cable)], plane=p)
    fe_groups = [(zones, (shift + n_be + np.arange(n_fe)).reshape(lay.zones, -1,
                                                                  fe.leaf.hosts_per_switch * fe.nics_per_host),
                  fe.nic_speed_gbps, fe.leaf.cable)]
    for k, s in enumerate(spec.storage):
        nics = shift + storage_nic_first[k] + np.arange(s.servers * s.nics_per_server)
        fe_groups.append((storage_zone_first[k] + np.arange(s.zones),
                          nics.reshape(s.zones, s.racks_per_zone, s.servers_per_rack * s.nics_per_server),
                          s.nic_speed_gbps, s.cable))
    ex.fabric(fe, FABRIC_FRONTEND, fe_groups)
    return ex


def backend_leaf_ports(spec: ClusterSpec) -> np.ndarray:
    """(planes, zones, leaves per zone and plane, downlinks per leaf): the backend NIC port on each downlink of each
    leaf (port ``q`` of NIC ``i`` is port id ``i * ports_per_nic + q``). In each plane the leaves of a zone come in
    rail groups of ``rails`` (one group per ``hosts_per_switch`` hosts); port ``q`` of NIC ``k`` of a host is in plane
    ``q % planes`` and, as the ``j = q // planes``-th port of its NIC there, on leaf ``j * r + k * r // nics_per_host``
    of its group (``r = rails / ports per plane``), hosts in order on its downlinks, a host's NICs of one rail
    consecutive. With one plane, one port and ``rails = 1`` a leaf's downlinks are its hosts' NICs in host-major
    order."""
    lay, be = spec.layout, spec.backend
    n, hps, P, Q = be.nics_per_host, be.leaf.hosts_per_switch, be.planes, be.ports_per_nic
    r = be.rails // be.ports_per_plane
    ports = np.arange(lay.hosts * n * Q).reshape(lay.zones, -1, hps, r, n // r, Q // P, P)  # z, g, h, rail, k, j, p
    return ports.transpose(6, 0, 1, 5, 3, 2, 4).reshape(P, lay.zones, -1, hps * (n // r))


def backend_leaf_nics(spec: ClusterSpec) -> np.ndarray:
    """(zones, leaves per zone, downlinks per leaf): the backend NIC on each downlink of each leaf, the planes' leaves
    one after another in each zone (leaf group ``p * L + l``; :func:`backend_leaf_ports` gives the ports)."""
    ports = backend_leaf_ports(spec) // spec.backend.ports_per_nic
    return np.concatenate(list(ports), axis=1)


def _ports(n_ports: int, nic_ports: np.ndarray, sw: dict, ln: dict) -> dict:
    """Ports: each NIC's (``nic_ports`` per NIC, NIC by NIC), then each switch's cabled ports in slot order; speeds
    from the links they carry."""
    n_nics = int(nic_ports.sum())
    port_nic = np.full(n_ports, -1, dtype=IDX)
    port_nic[:n_nics] = np.repeat(np.arange(len(nic_ports)), nic_ports)
    port_switch = np.full(n_ports, -1, dtype=IDX)
    port_switch[n_nics:] = np.repeat(np.arange(len(sw["tier"])), sw["port_count"])
    port_slot = np.zeros(n_ports, dtype=IDX)
    port_slot[:n_nics] = np.arange(n_nics) - np.repeat(np.cumsum(nic_ports) - nic_ports, nic_ports)
    port_slot[n_nics:] = np.arange(n_ports - n_nics) - np.repeat(sw["port_base"] - n_nics, sw["port_count"])
    port_speed = np.zeros(n_ports, dtype=IDX)
    port_speed[ln["a"]] = ln["speed"]
    port_speed[ln["b"]] = ln["speed"]
    return {"port_nic": port_nic, "port_switch": port_switch, "port_slot": port_slot, "port_speed_gbps": port_speed}
