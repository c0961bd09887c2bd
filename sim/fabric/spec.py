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
from sim.fabric.spectiers import (SwitchTierSpec, Table, check_cable, check_core, check_leaf,
                                   leaf_rails, leaf_uplinks, planes_ports, spine_uplinks, switch_tier)
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
    redundancy: str | None = None  # its data protection (a sim.storage.stores.REDUNDANCY key); None: the kind's default

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
    node_failure_rate: float | None = None    # [reliability]: the fleet's node failures per 1,000 node-days, or None

    @property
    def fabrics(self) -> tuple[FabricSpec, FabricSpec]:
        return (self.backend, self.frontend)

    @property
    def zones(self) -> int:
        """Compute zones plus storage zones."""
        return self.layout.zones + sum(s.zones for s in self.storage)


def _parse_fabric(t: Table, role: str, catalog: Catalog, layout: LayoutSpec,
                  storage_leaf_downlinks: list[int], storage_zone_racks: list[int]) -> FabricSpec:
    """One fabric (``backend`` or ``frontend``): its NICs, then its tiers, each checked against the ports of its
    switch model; the frontend's leaves and spines also serve the storage racks and zones."""
    frontend = role == "frontend"
    kind, nic, nics_per_host, speed, nic_speed = _fabric_nics(t, role, catalog, layout)
    leaf, lt = switch_tier(t, "leaf", catalog)
    spine, st = switch_tier(t, "spine", catalog)
    core, ct = switch_tier(t, "core", catalog, required=False) or (None, None)
    planes, ports = planes_ports(t, role, catalog, nic, nic_speed)
    leaf = leaf_rails(lt, leaf, role, nics_per_host, ports // planes)
    leaf_down = [leaf.hosts_per_switch * nics_per_host * (ports // planes) // leaf.rails] + \
        (storage_leaf_downlinks if frontend else [])
    leaf = leaf_uplinks(lt, leaf, leaf_down[0])
    check_leaf(catalog, layout, leaf, lt, spine, st, leaf_down, speed, nic_speed // ports, breakout=ports > 1)
    zone_leaves = [layout.hosts_per_zone // leaf.hosts_per_switch * leaf.rails] + \
        (storage_zone_racks if frontend else [])
    spine = spine_uplinks(catalog, leaf, spine, st, zone_leaves, speed)
    zones = layout.zones + (len(storage_zone_racks) if frontend else 0)
    check_core(catalog, t, spine, st, core, ct, zones, speed)
    lt.done()
    st.done()
    t.done()
    return FabricSpec(role, kind, nic, nics_per_host, speed, nic_speed, leaf, spine, core, planes, ports)


def _fabric_nics(t: Table, role: str, catalog: Catalog, layout: LayoutSpec):
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


def _parse_storage(t: Table, catalog: Catalog) -> StorageSpec:
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
        cable=t.str("cable"), redundancy=t.get("redundancy", None),
    )
    if spec.redundancy is not None and (not isinstance(spec.redundancy, str) or not spec.redundancy):
        raise SpecError(t.field("redundancy"), spec.redundancy, "must be a non-empty string (rs-9-6, rs-3-2, ...)")
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
    check_cable(catalog, spec.cable, t.field("cable"), spec.nic_speed_gbps)
    t.done()
    return spec


def _parse_reliability(t: Table | None) -> float | None:
    """The optional ``[reliability]`` table: ``node_failures_per_1000_node_days``, the hardware failure rate a
    fleet of this cluster's hosts published (a positive number), and ``source``, where (docs/reliability.md "Fleet
    failure rate"). None without the table: the failures model keeps Meta's Llama 3 table as it is."""
    if t is None:
        return None
    rate = t.get("node_failures_per_1000_node_days", None)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not (0.0 < rate < 1e6):
        raise SpecError(t.field("node_failures_per_1000_node_days"), rate,
                        "must be a positive number (failures per 1,000 node-days)")
    t.str("source")
    t.done()
    return float(rate)


def parse_spec(data: dict, catalog: Catalog | None = None) -> ClusterSpec:
    """Validate a spec given as a dict (parsed TOML or JSON) and return it as a ClusterSpec."""
    catalog = catalog or load_catalog()
    check_depth(data)
    top = Table(data, "")
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

    raw_storage = top.get("storage", [])
    if not isinstance(raw_storage, list):
        raise SpecError("storage", raw_storage, "must be a list of tables ([[storage]])")
    storage = tuple(_parse_storage(Table(s, f"storage[{i}]"), catalog) for i, s in enumerate(raw_storage))
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
                       frontend=frontend, storage=storage, source=data, catalog=catalog,
                       node_failure_rate=_parse_reliability(top.table("reliability", required=False)))
    top.done()
    return spec


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml") if p.stem != "catalog")


SPEC_FORMATS = ("toml", "json")     # what a spec file is written in (a file's suffix: .json is JSON, else TOML)


def read_spec_text(text: str, fmt: str, source: str | None = None) -> dict:
    """A spec file's text as the table :func:`parse_spec` takes, read as ``fmt`` (``toml`` or ``json``) by the
    standard library's parsers (no code runs): a text that does not parse, is not a table, or nests deeper than a
    spec does is a :class:`SpecError` on ``spec`` naming ``source`` (the file; None: text given in a request, whose
    errors then name the field, as ``check_depth`` does). The CLI's files and the browser's uploads are read here."""
    if fmt not in SPEC_FORMATS:
        raise SpecError("format", fmt, f"is not a spec format: {' or '.join(SPEC_FORMATS)}")
    shown = source if source is not None else f"({fmt.upper()} text)"
    try:
        data = json.loads(text) if fmt == "json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise SpecError("spec", shown, f"cannot be parsed: {e}") from None
    except RecursionError:
        raise SpecError("spec", shown, f"cannot be parsed: nested too deeply (a spec needs at most "
                                       f"{MAX_DEPTH} levels)") from None
    if not isinstance(data, dict):
        raise SpecError("spec", shown, "must be a table (an object) of name, layout, backend, frontend and storage")
    check_depth(data, source)
    return data


def load_spec(preset_or_path: str, catalog: Catalog | None = None) -> ClusterSpec:
    """Load a preset by name (``meta-roce-24k``) or a spec file by path (TOML, or JSON with a .json suffix)."""
    path = Path(preset_or_path)
    if not path.suffix and preset_or_path in preset_names():
        path = PRESETS_DIR / f"{preset_or_path}.toml"
    if not path.is_file():
        raise SpecError("spec", preset_or_path,
                        f"is neither a preset ({', '.join(preset_names())}) nor a spec file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError("spec", str(path), f"cannot be parsed: not UTF-8 text ({e.reason})") from None
    return parse_spec(read_spec_text(text, "json" if path.suffix == ".json" else "toml", str(path)), catalog)
