"""Cluster specs: the declarative description a cluster is built from (presets in ``sim/presets/*.toml``).

A spec names hardware from the catalog and gives counts; ``load_spec`` parses and validates it and refuses, with
a SpecError naming field, value and limit, anything that cannot be built: zero racks, an unknown model, more links
than a switch has ports, uplinks that do not spread evenly, an oversubscription that does not divide.

The fabric model is a folded Clos of up to three switch tiers, the shape of Meta's AI zones:
leaf (RTSW) per ``hosts_per_switch`` hosts -> ``per_zone`` spines (CTSW) in each zone -> core (ATSW) planes, where
spine ``i`` of every zone connects to the ``per_plane`` core switches of plane ``i``. Each leaf spreads its
``uplinks`` evenly over the spines of its zone; each spine spreads its uplinks evenly over the cores of its plane.

Rail-optimized leaves (backend only, ``rails`` on the leaf tier, default 1): ``hosts_per_switch`` hosts share a
*rail group* of ``rails`` leaves, and NIC ``k`` of each of those hosts is cabled to leaf ``k * rails //
nics_per_host`` of the group (with one NIC per rail: NIC ``k`` to leaf ``k``, NVIDIA's DGX SuperPOD scalable unit).
Each leaf then has ``hosts_per_switch * nics_per_host / rails`` downlinks. ``rails = 1`` is the shape above: every
NIC of a host on one leaf. The leaf's ``uplinks`` may instead be given as an ``oversubscription`` (downlinks :
uplinks), as on the spine tier.

Planes and multi-port NICs (backend only): ``planes`` (P, default 1) copies of the whole leaf/spine(/core) Clos with
no cable between them, and ``ports_per_nic`` (Q, default 1; ``dual_tor = true`` says 2) ports on every backend NIC,
the NIC's speed split evenly over them (2 x 200G on a 400G NIC). Port ``q`` of a NIC is cabled into plane ``q % P``
(Alibaba HPN's dual plane: port 0 to plane 0, port 1 to plane 1); with ``Q / P = 2`` ports in one plane (dual-ToR in
one plane) they go to two different leaves of the host's group: port ``j`` of NIC ``k`` in a plane to leaf ``j *
rails / (Q/P) + k * (rails / (Q/P)) // nics_per_host``. Refused, naming the field: P not dividing Q, a group of
``rails`` leaves that the Q/P ports of a NIC cannot share evenly, a NIC speed the ports cannot split, more ports
than the NIC model has. A leaf's downlinks to NIC ports slower than its own ports are breakouts (two 200G downlinks
on one 400G port).
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from sim.fabric.catalog import Catalog, load_catalog
from sim.core.errors import SpecError
from sim.core.nesting import MAX_DEPTH, check_depth

PRESETS_DIR = Path(__file__).parent.parent / "presets"
BACKEND_KINDS = ("roce", "infiniband")
STORAGE_KINDS = ("tectonic", "hammerspace")


@dataclass(frozen=True)
class LayoutSpec:
    """Physical layout of the compute part: zones of racks of hosts, each host a platform with GPUs."""

    zones: int
    racks_per_zone: int
    hosts_per_rack: int
    host_platform: str
    gpu: str
    gpus_per_host: int
    cpus_per_host: int
    zones_per_building: int = 0   # zones under one roof (a 24k-class building of 8 zones); 0: all zones in one

    @property
    def buildings(self) -> int:
        """Buildings the zones stand in: a grouping for pages and reports; the fabric joins every zone alike."""
        return self.zones // self.zones_per_building if self.zones_per_building else 1

    def zone_building(self, zone: int) -> int:
        """The building of compute zone ``zone`` (zones fill building by building)."""
        return zone // self.zones_per_building if self.zones_per_building else 0

    @property
    def hosts_per_zone(self) -> int:
        return self.racks_per_zone * self.hosts_per_rack

    @property
    def hosts(self) -> int:
        return self.zones * self.hosts_per_zone

    @property
    def gpus(self) -> int:
        return self.hosts * self.gpus_per_host


@dataclass(frozen=True)
class SwitchTierSpec:
    """One switch tier of a fabric. Leaf: ``hosts_per_switch`` (and ``rails``); spine: ``per_zone``; core:
    ``per_plane``."""

    name: str
    model: str
    cable: str
    uplinks: int = 0
    hosts_per_switch: int = 0
    per_zone: int = 0
    per_plane: int = 0
    rails: int = 1                 # leaf: leaves per rail group (NIC k of a host on leaf k * rails // nics)


@dataclass(frozen=True)
class FabricSpec:
    """A network: ``role`` backend (GPU to GPU) or frontend (hosts and storage), its NICs and switch tiers."""

    role: str
    kind: str
    nic: str
    nics_per_host: int
    speed_gbps: int
    nic_speed_gbps: int
    leaf: SwitchTierSpec
    spine: SwitchTierSpec
    core: SwitchTierSpec | None
    planes: int = 1                # backend: disjoint copies of the Clos (port q of a NIC in plane q % planes)
    ports_per_nic: int = 1         # backend: ports per NIC, each nic_speed_gbps / ports_per_nic

    @property
    def port_speed_gbps(self) -> int:
        """The speed of one NIC port (the NIC's speed split over its ports)."""
        return self.nic_speed_gbps // self.ports_per_nic

    @property
    def ports_per_plane(self) -> int:
        """Ports of one NIC in each plane (2: dual-ToR within a plane)."""
        return self.ports_per_nic // self.planes

    @property
    def leaf_to_spine_links(self) -> int:
        """Parallel links between one leaf and each spine of its zone."""
        return self.leaf.uplinks // self.spine.per_zone

    @property
    def spine_to_core_links(self) -> int:
        """Parallel links between one spine and each core switch of its plane."""
        return self.spine.uplinks // self.core.per_plane if self.core else 0

    @property
    def tiers(self) -> tuple[SwitchTierSpec, ...]:
        return (self.leaf, self.spine) + ((self.core,) if self.core else ())

    @property
    def rails(self) -> int:
        """Leaves a host's NICs spread over (1: every NIC of a host on one leaf)."""
        return self.leaf.rails

    @property
    def leaf_downlinks(self) -> int:
        """NIC ports below each host leaf: its hosts' NIC ports of its rail in its plane."""
        return self.leaf.hosts_per_switch * self.nics_per_host * self.ports_per_plane // self.leaf.rails


@dataclass(frozen=True)
class StorageSpec:
    """A storage cluster on the frontend fabric: servers in racks, racks in storage zones, SSDs in servers."""

    name: str
    kind: str
    server: str
    servers: int
    servers_per_rack: int
    racks_per_zone: int
    nic: str
    nics_per_server: int
    nic_speed_gbps: int
    ssd: str
    ssds_per_server: int
    cable: str

    @property
    def racks(self) -> int:
        return self.servers // self.servers_per_rack

    @property
    def zones(self) -> int:
        return self.racks // self.racks_per_zone


@dataclass(frozen=True)
class ClusterSpec:
    """A whole cluster: layout, backend and frontend fabrics, storage clusters. ``source`` is the parsed TOML."""

    name: str
    title: str
    description: str
    layout: LayoutSpec
    backend: FabricSpec
    frontend: FabricSpec
    storage: tuple[StorageSpec, ...]
    source: dict
    catalog: Catalog | None = field(default=None, compare=False, repr=False)   # the catalog it was checked against

    @property
    def fabrics(self) -> tuple[FabricSpec, FabricSpec]:
        return (self.backend, self.frontend)

    @property
    def zones(self) -> int:
        """Compute zones plus storage zones."""
        return self.layout.zones + sum(s.zones for s in self.storage)


class _Table:
    """Reads one TOML table, naming the dotted path of every field in its errors and refusing unknown fields."""

    def __init__(self, data, path: str):
        if not isinstance(data, dict):
            raise SpecError(path, data, "must be a table")
        self.data, self.path, self.used = data, path, set()

    def field(self, key):
        return f"{self.path}.{key}" if self.path else key

    def _get(self, key, default):
        self.used.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise SpecError(self.field(key), None, "is required")
            return default
        return self.data[key]

    def int(self, key, minimum=1, default=None):
        value = self._get(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(self.field(key), value, "must be a whole number")
        if value < minimum:
            raise SpecError(self.field(key), value, f"must be at least {minimum}")
        return value

    def str(self, key, choices=None, default=None):
        value = self._get(key, _REQUIRED if default is None else default)
        if not isinstance(value, str) or not value:
            raise SpecError(self.field(key), value, "must be a non-empty string")
        if choices and value not in choices:
            raise SpecError(self.field(key), value, f"must be one of {', '.join(choices)}")
        return value

    def table(self, key, required=True):
        value = self._get(key, _REQUIRED if required else None)
        return None if value is None else _Table(value, self.field(key))

    def has(self, key):
        return key in self.data

    def done(self):
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise SpecError(self.field(unknown[0]), self.data[unknown[0]], "is not a known field")


_REQUIRED = object()


def _switch_ports(catalog: Catalog, tier: SwitchTierSpec, field: str, down: int, up: int, speed: int,
                  blame: str = "uplinks") -> None:
    """Refuse a tier whose switches need more ports than their model has; ``blame`` names the field to change."""
    model = catalog.get("switch", tier.model, f"{field}.model")
    if down + up > model["ports"]:
        raise SpecError(f"{field}.{blame}", getattr(tier, blame),
                        f"needs {down} downlinks + {up} uplinks = {down + up} ports on each {tier.name}; "
                        f"model {tier.model} has {model['ports']}")
    if speed > model["speed_gbps"]:
        raise SpecError(f"{field}.model", tier.model,
                        f"has {model['speed_gbps']}G ports, slower than the {speed}G links it must carry")


def _cable(catalog: Catalog, slug: str, field: str, speed: int) -> None:
    cable = catalog.get("cable", slug, field)
    if cable["speed_gbps"] < speed:
        raise SpecError(field, slug, f"carries {cable['speed_gbps']}G, slower than the {speed}G link")


def _parse_fabric(t: _Table, role: str, catalog: Catalog, layout: LayoutSpec,
                  storage_leaf_downlinks: list[int], storage_zone_racks: list[int]) -> FabricSpec:
    """One fabric (``backend`` or ``frontend``): its NICs, then its tiers, each checked against the ports of its
    switch model; the frontend's leaves and spines also serve the storage racks and zones."""
    frontend = role == "frontend"
    kind, nic, nics_per_host, speed, nic_speed = _fabric_nics(t, role, catalog, layout)
    leaf, lt = _switch_tier(t, "leaf", catalog)
    spine, st = _switch_tier(t, "spine", catalog)
    core, ct = _switch_tier(t, "core", catalog, required=False) or (None, None)
    planes, ports = _planes_ports(t, role, catalog, nic, nic_speed)
    leaf = _leaf_rails(lt, leaf, role, nics_per_host, ports // planes)
    leaf_down = [leaf.hosts_per_switch * nics_per_host * (ports // planes) // leaf.rails] + \
        (storage_leaf_downlinks if frontend else [])
    leaf = _leaf_uplinks(lt, leaf, leaf_down[0])
    _check_leaf(catalog, layout, leaf, lt, spine, st, leaf_down, speed, nic_speed // ports, breakout=ports > 1)
    zone_leaves = [layout.hosts_per_zone // leaf.hosts_per_switch * leaf.rails] + \
        (storage_zone_racks if frontend else [])
    spine = _spine_uplinks(catalog, leaf, spine, st, zone_leaves, speed)
    zones = layout.zones + (len(storage_zone_racks) if frontend else 0)
    _check_core(catalog, t, spine, st, core, ct, zones, speed)
    lt.done()
    st.done()
    t.done()
    return FabricSpec(role, kind, nic, nics_per_host, speed, nic_speed, leaf, spine, core, planes, ports)


def _planes_ports(t: _Table, role: str, catalog: Catalog, nic: str, nic_speed: int) -> tuple[int, int]:
    """``(planes, ports_per_nic)`` of a fabric (backend only; 1, 1 when not given), checked against the NIC model."""
    keys = [k for k in ("planes", "ports_per_nic", "dual_tor") if t.has(k)]
    if role != "backend" and keys:
        raise SpecError(t.field(keys[0]), t.data[keys[0]], "is modelled on the backend fabric only")
    dual = t._get("dual_tor", False)
    if not isinstance(dual, bool):
        raise SpecError(t.field("dual_tor"), dual, "must be true or false")
    ports = t.int("ports_per_nic", default=2 if dual else 1)
    if dual and ports != 2:
        raise SpecError(t.field("ports_per_nic"), ports, "must be 2 with dual_tor (each NIC on two ToRs)")
    planes = t.int("planes", default=1)
    model_ports = catalog.get("nic", nic, t.field("nic"))["ports"]
    if ports > model_ports:
        raise SpecError(t.field("ports_per_nic"), ports, f"is more than the {model_ports} ports of NIC model {nic}")
    if ports % planes:
        raise SpecError(t.field("planes"), planes,
                        f"does not divide the {ports} ports of each NIC (each plane takes as many ports of every NIC)")
    if nic_speed % ports:
        raise SpecError(t.field("ports_per_nic"), ports, f"does not split the {nic_speed}G of NIC model {nic} evenly")
    return planes, ports


def _fabric_nics(t: _Table, role: str, catalog: Catalog, layout: LayoutSpec):
    """``(kind, nic, nics_per_host, speed_gbps, nic_speed_gbps)`` of a fabric, checked against the platform's NIC
    slots (one backend NIC per GPU) and the NIC model's speed."""
    kind = t.str("kind", BACKEND_KINDS) if role == "backend" else t.str("kind", ("ethernet",), default="ethernet")
    nic = t.str("nic")
    nic_model = catalog.get("nic", nic, t.field("nic"))
    platform = catalog.get("platform", layout.host_platform, "layout.host_platform")
    if role == "backend":
        nics_per_host = t.int("nics_per_host", default=platform["backend_nics"])
        if nics_per_host != layout.gpus_per_host:
            raise SpecError(t.field("nics_per_host"), nics_per_host,
                            f"must equal the {layout.gpus_per_host} GPUs per host (one backend NIC per GPU)")
    else:
        nics_per_host = t.int("nics_per_host", default=platform["frontend_nics"])
    limit = platform["backend_nics" if role == "backend" else "frontend_nics"]
    if nics_per_host > limit:
        raise SpecError(t.field("nics_per_host"), nics_per_host,
                        f"is more than the {limit} {role} NIC slots of platform {layout.host_platform}")
    speed = t.int("speed_gbps")
    nic_speed = nic_model["speed_gbps"]
    if speed > nic_speed:
        raise SpecError(t.field("speed_gbps"), speed, f"is faster than NIC model {nic} ({nic_speed}G)")
    return kind, nic, nics_per_host, speed, nic_speed


def _switch_tier(t: _Table, key: str, catalog: Catalog, required: bool = True):
    """``(SwitchTierSpec, its table)`` of tier ``key`` (leaf, spine or core), or None for a missing optional one."""
    tt = t.table(key, required)
    if tt is None:
        return None
    spec = SwitchTierSpec(
        name=tt.str("name"), model=tt.str("model"), cable=tt.str("cable"),
        uplinks=tt.int("uplinks", minimum=0, default=0) if key != "core" else 0,
        hosts_per_switch=tt.int("hosts_per_switch") if key == "leaf" else 0,
        per_zone=tt.int("per_zone") if key == "spine" else 0,
        per_plane=tt.int("per_plane") if key == "core" else 0,
    )
    catalog.get("switch", spec.model, tt.field("model"))
    return spec, tt


def _leaf_rails(lt: _Table, leaf: SwitchTierSpec, role: str, nics_per_host: int,
                ports_per_plane: int = 1) -> SwitchTierSpec:
    """The leaf tier's ``rails`` (backend only): a whole number of a host's NICs on each leaf of its rail group; with
    two ports of a NIC in one plane (dual-ToR), leaves shared evenly between the ports."""
    if not lt.has("rails"):
        if ports_per_plane > 1:
            raise SpecError(lt.field("rails"), None,
                            f"is required: the {ports_per_plane} ports of a NIC in one plane go to different leaves "
                            f"of a group (give a multiple of {ports_per_plane}, e.g. {ports_per_plane})")
        return leaf
    if role != "backend":
        raise SpecError(lt.field("rails"), lt.data["rails"], "is modelled on the backend fabric only")
    rails = lt.int("rails")
    if ports_per_plane == 1 and nics_per_host % rails:
        raise SpecError(lt.field("rails"), rails,
                        f"does not divide the {nics_per_host} backend NICs per host (each rail leaf takes a whole "
                        f"number of every host's NICs)")
    if rails % ports_per_plane or nics_per_host % (rails // ports_per_plane):
        raise SpecError(lt.field("rails"), rails,
                        f"cannot be shared by the {ports_per_plane} ports each NIC has in one plane (dual-ToR needs "
                        f"leaves per group in a multiple of {ports_per_plane}, each port's share dividing the "
                        f"{nics_per_host} NICs per host)")
    return SwitchTierSpec(**{**leaf.__dict__, "rails": rails})


def _leaf_uplinks(lt: _Table, leaf: SwitchTierSpec, down: int) -> SwitchTierSpec:
    """The leaf's uplinks, given or derived from its ``oversubscription`` (downlinks : uplinks)."""
    if not lt.has("oversubscription"):
        return leaf
    if lt.has("uplinks"):
        raise SpecError(lt.field("oversubscription"), lt.data["oversubscription"],
                        "cannot be given together with uplinks")
    ratio = lt.int("oversubscription")
    if down % ratio:
        raise SpecError(lt.field("oversubscription"), ratio,
                        f"does not divide the {down} downlinks of each {leaf.name}")
    return SwitchTierSpec(**{**leaf.__dict__, "uplinks": down // ratio})


def _check_leaf(catalog: Catalog, layout: LayoutSpec, leaf: SwitchTierSpec, lt: _Table, spine: SwitchTierSpec,
                st: _Table, leaf_down: list[int], speed: int, nic_speed: int, breakout: bool = False) -> None:
    """Leaf: ``hosts_per_switch`` hosts (all their NICs of this fabric) below, uplinks spread over the zone's
    spines; ``leaf_down``: the downlinks of each kind of leaf (compute, then storage racks). ``breakout``: NIC ports
    slower than the switch's share one switch port (``ceil(down * nic_speed / port speed)`` ports; multi-port
    NICs only, so the single-port fabrics are checked as before)."""
    if layout.hosts_per_zone % leaf.hosts_per_switch:
        raise SpecError(lt.field("hosts_per_switch"), leaf.hosts_per_switch,
                        f"does not divide the {layout.hosts_per_zone} hosts of a zone")
    if leaf.uplinks < 1:
        raise SpecError(lt.field("uplinks"), leaf.uplinks, "must be at least 1")
    if leaf.uplinks % spine.per_zone:
        raise SpecError(lt.field("uplinks"), leaf.uplinks,
                        f"does not spread evenly over the {spine.per_zone} spines of a zone ({st.field('per_zone')})")
    model_speed = catalog.get("switch", leaf.model, lt.field("model"))["speed_gbps"]
    for down in leaf_down:
        if breakout and nic_speed < model_speed:
            down = -(-down * nic_speed // model_speed)
        _switch_ports(catalog, leaf, lt.path, down, leaf.uplinks, max(speed, nic_speed))
    _cable(catalog, leaf.cable, lt.field("cable"), nic_speed)


def _spine_uplinks(catalog: Catalog, leaf: SwitchTierSpec, spine: SwitchTierSpec, st: _Table,
                   zone_leaves: list[int], speed: int) -> SwitchTierSpec:
    """Spine: one port group per leaf of its zone below (``zone_leaves``: leaves per zone, compute zones first);
    uplinks given, or derived from an ``oversubscription``. Returns the spine with its uplinks."""
    per_pair = leaf.uplinks // spine.per_zone
    spine_down = [n * per_pair for n in zone_leaves]
    if st.has("oversubscription"):
        if st.has("uplinks"):
            raise SpecError(st.field("oversubscription"), st.data["oversubscription"],
                            "cannot be given together with uplinks")
        ratio = st.int("oversubscription")
        if spine_down[0] % ratio:
            raise SpecError(st.field("oversubscription"), ratio,
                            f"does not divide the {spine_down[0]} downlinks of each {spine.name}")
        spine = SwitchTierSpec(**{**spine.__dict__, "uplinks": spine_down[0] // ratio})
    for down in spine_down:
        _switch_ports(catalog, spine, st.path, down, spine.uplinks, speed)
    _cable(catalog, spine.cable, st.field("cable"), speed)
    return spine


def _check_core(catalog: Catalog, t: _Table, spine: SwitchTierSpec, st: _Table, core: SwitchTierSpec | None,
                ct: _Table | None, zones: int, speed: int) -> None:
    """Core: required to join several zones; each plane's ``per_plane`` switches share the spine uplinks of every
    zone evenly."""
    if core is None:
        if spine.uplinks:
            raise SpecError(st.field("uplinks"), spine.uplinks, "needs a core tier above to connect to")
        if zones > 1:
            raise SpecError(t.field("core"), None, f"is required: {zones} zones need a core tier to join them")
        return
    if spine.uplinks < 1:
        raise SpecError(st.field("uplinks"), spine.uplinks, "must be at least 1 when a core tier is given")
    if spine.uplinks % core.per_plane:
        raise SpecError(st.field("uplinks"), spine.uplinks,
                        f"does not spread evenly over the {core.per_plane} core switches of a plane "
                        f"({ct.field('per_plane')})")
    _switch_ports(catalog, core, ct.path, zones * (spine.uplinks // core.per_plane), 0, speed, blame="per_plane")
    _cable(catalog, core.cable, ct.field("cable"), speed)
    ct.done()


def _parse_storage(t: _Table, catalog: Catalog) -> StorageSpec:
    server = t.str("server")
    server_model = catalog.get("storage_server", server, t.field("server"))
    nic = t.str("nic")
    nic_model = catalog.get("nic", nic, t.field("nic"))
    ssd = t.str("ssd")
    catalog.get("ssd", ssd, t.field("ssd"))
    spec = StorageSpec(
        name=t.str("name"), kind=t.str("kind", STORAGE_KINDS), server=server, servers=t.int("servers"),
        servers_per_rack=t.int("servers_per_rack"), racks_per_zone=t.int("racks_per_zone"),
        nic=nic, nics_per_server=t.int("nics_per_server", default=server_model["nics"]),
        nic_speed_gbps=nic_model["speed_gbps"], ssd=ssd, ssds_per_server=t.int("ssds_per_server"),
        cable=t.str("cable"),
    )
    if spec.servers % spec.servers_per_rack:
        raise SpecError(t.field("servers_per_rack"), spec.servers_per_rack,
                        f"does not divide the {spec.servers} servers")
    if spec.racks % spec.racks_per_zone:
        raise SpecError(t.field("racks_per_zone"), spec.racks_per_zone, f"does not divide the {spec.racks} racks")
    if spec.ssds_per_server > server_model["ssd_slots"]:
        raise SpecError(t.field("ssds_per_server"), spec.ssds_per_server,
                        f"is more than the {server_model['ssd_slots']} SSD slots of {server}")
    if spec.nics_per_server > server_model["nics"]:
        raise SpecError(t.field("nics_per_server"), spec.nics_per_server,
                        f"is more than the {server_model['nics']} NIC slots of {server}")
    _cable(catalog, spec.cable, t.field("cable"), spec.nic_speed_gbps)
    t.done()
    return spec


def parse_spec(data: dict, catalog: Catalog | None = None) -> ClusterSpec:
    """Validate a spec given as a dict (parsed TOML or JSON) and return it as a ClusterSpec."""
    catalog = catalog or load_catalog()
    check_depth(data)
    top = _Table(data, "")
    name = top.str("name")
    if not all(c.isalnum() or c == "-" for c in name) or not name[0].isalnum():
        raise SpecError("name", name, "must be letters, digits and dashes, starting with a letter or digit")
    lt = top.table("layout")
    platform_slug = lt.str("host_platform")
    platform = catalog.get("platform", platform_slug, lt.field("host_platform"))
    gpu = lt.str("gpu")
    catalog.get("gpu", gpu, lt.field("gpu"))
    layout = LayoutSpec(zones=lt.int("zones"), racks_per_zone=lt.int("racks_per_zone"),
                        hosts_per_rack=lt.int("hosts_per_rack"), host_platform=platform_slug, gpu=gpu,
                        gpus_per_host=platform["gpus"], cpus_per_host=platform["cpus"],
                        zones_per_building=lt.int("zones_per_building", default=0, minimum=0))
    if layout.zones_per_building and layout.zones % layout.zones_per_building:
        raise SpecError(lt.field("zones_per_building"), layout.zones_per_building,
                        f"does not divide the {layout.zones} zones")
    lt.done()

    raw_storage = top._get("storage", [])
    if not isinstance(raw_storage, list):
        raise SpecError("storage", raw_storage, "must be a list of tables ([[storage]])")
    storage = tuple(_parse_storage(_Table(s, f"storage[{i}]"), catalog) for i, s in enumerate(raw_storage))
    names = [s.name for s in storage]
    if len(set(names)) != len(names):
        raise SpecError("storage", names, "has two storage clusters with the same name")
    storage_leaf_down = [s.servers_per_rack * s.nics_per_server for s in storage]
    storage_zone_racks = [s.racks_per_zone for s in storage for _ in range(s.zones)]

    backend = _parse_fabric(top.table("backend"), "backend", catalog, layout, [], [])
    frontend = _parse_fabric(top.table("frontend"), "frontend", catalog, layout, storage_leaf_down,
                             storage_zone_racks)
    spec = ClusterSpec(name=name, title=top.str("title", default=name),
                       description=top.str("description", default=name), layout=layout, backend=backend,
                       frontend=frontend, storage=storage, source=data, catalog=catalog)
    top.done()
    return spec


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml") if p.stem != "catalog")


def load_spec(preset_or_path: str, catalog: Catalog | None = None) -> ClusterSpec:
    """Load a preset by name (``meta-roce-24k``) or a spec file by path (TOML, or JSON with a .json suffix)."""
    path = Path(preset_or_path)
    if not path.suffix and preset_or_path in preset_names():
        path = PRESETS_DIR / f"{preset_or_path}.toml"
    if not path.is_file():
        raise SpecError("spec", preset_or_path,
                        f"is neither a preset ({', '.join(preset_names())}) nor a spec file")
    try:
        if path.suffix == ".json":
            data = json.loads(path.read_text())
        else:
            with open(path, "rb") as f:
                data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise SpecError("spec", str(path), f"cannot be parsed: {e}") from None
    except RecursionError:
        raise SpecError("spec", str(path), f"cannot be parsed: nested too deeply (a spec needs at most "
                                           f"{MAX_DEPTH} levels)") from None
    check_depth(data, str(path))
    return parse_spec(data, catalog)
