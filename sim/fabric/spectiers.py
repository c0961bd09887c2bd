"""The switch tiers of a cluster spec: the tier tables, read field by field (:class:`Table`, naming the dotted path of
every field in its errors), and the checks of each tier against its switch model's ports and its neighbours
(uplinks spread evenly, oversubscription dividing, rails, planes and NIC ports); :mod:`sim.fabric.spec` parses a
whole spec with them."""
from __future__ import annotations

from dataclasses import dataclass

from sim.core.errors import SpecError
from sim.fabric.catalog import Catalog


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



class Table:
    """Reads one TOML table, naming the dotted path of every field in its errors and refusing unknown fields."""

    def __init__(self, data, path: str):
        if not isinstance(data, dict):
            raise SpecError(path, data, "must be a table")
        self.data, self.path, self.used = data, path, set()

    def field(self, key):
        return f"{self.path}.{key}" if self.path else key

    def get(self, key, default):
        self.used.add(key)
        if key not in self.data:
            if default is _REQUIRED:
                raise SpecError(self.field(key), None, "is required")
            return default
        return self.data[key]

    def int(self, key, minimum=1, default=None):
        value = self.get(key, _REQUIRED if default is None else default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(self.field(key), value, "must be a whole number")
        if value < minimum:
            raise SpecError(self.field(key), value, f"must be at least {minimum}")
        return value

    def str(self, key, choices=None, default=None):
        value = self.get(key, _REQUIRED if default is None else default)
        if not isinstance(value, str) or not value:
            raise SpecError(self.field(key), value, "must be a non-empty string")
        if choices and value not in choices:
            raise SpecError(self.field(key), value, f"must be one of {', '.join(choices)}")
        return value

    def table(self, key, required=True):
        value = self.get(key, _REQUIRED if required else None)
        return None if value is None else Table(value, self.field(key))

    def has(self, key):
        return key in self.data

    def done(self):
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise SpecError(self.field(unknown[0]), self.data[unknown[0]], "is not a known field")


_REQUIRED = object()


def switch_ports(catalog: Catalog, tier: SwitchTierSpec, field: str, down: int, up: int, speed: int,
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


def check_cable(catalog: Catalog, slug: str, field: str, speed: int) -> None:
    cable = catalog.get("cable", slug, field)
    if cable["speed_gbps"] < speed:
        raise SpecError(field, slug, f"carries {cable['speed_gbps']}G, slower than the {speed}G link")


def planes_ports(t: Table, role: str, catalog: Catalog, nic: str, nic_speed: int) -> tuple[int, int]:
    """``(planes, ports_per_nic)`` of a fabric (backend only; 1, 1 when not given), checked against the NIC model."""
    keys = [k for k in ("planes", "ports_per_nic", "dual_tor") if t.has(k)]
    if role != "backend" and keys:
        raise SpecError(t.field(keys[0]), t.data[keys[0]], "is modelled on the backend fabric only")
    dual = t.get("dual_tor", False)
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


def switch_tier(t: Table, key: str, catalog: Catalog, required: bool = True):
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


def leaf_rails(lt: Table, leaf: SwitchTierSpec, role: str, nics_per_host: int,
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


def leaf_uplinks(lt: Table, leaf: SwitchTierSpec, down: int) -> SwitchTierSpec:
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


def check_leaf(catalog: Catalog, layout, leaf: SwitchTierSpec, lt: Table, spine: SwitchTierSpec,
                st: Table, leaf_down: list[int], speed: int, nic_speed: int, breakout: bool = False) -> None:
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
        switch_ports(catalog, leaf, lt.path, down, leaf.uplinks, max(speed, nic_speed))
    check_cable(catalog, leaf.cable, lt.field("cable"), nic_speed)


def spine_uplinks(catalog: Catalog, leaf: SwitchTierSpec, spine: SwitchTierSpec, st: Table,
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
        switch_ports(catalog, spine, st.path, down, spine.uplinks, speed)
    check_cable(catalog, spine.cable, st.field("cable"), speed)
    return spine


def check_core(catalog: Catalog, t: Table, spine: SwitchTierSpec, st: Table, core: SwitchTierSpec | None,
                ct: Table | None, zones: int, speed: int) -> None:
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
    switch_ports(catalog, core, ct.path, zones * (spine.uplinks // core.per_plane), 0, speed, blame="per_plane")
    check_cable(catalog, core.cable, ct.field("cable"), speed)
    ct.done()
