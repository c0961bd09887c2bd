"""Build a twin cluster from a NetBox site (``manage.py netbox_import``), or update its statuses on a re-import.

The site's devices, interfaces, cables and inventory items are read once. Each device's kind comes from its role
(custom field ``twin_kind`` on the role, or the role slugs ``gpu-host`` and ``storage-server``); the fabrics are the
connected parts of the switch graph (the one storage servers reach is the frontend); the tiers come from the cabling:
leaves are the switches cabled to hosts and storage servers, spines those cabled to leaves, cores those cabled to
spines; leaves are rail-optimized when a host's NICs reach several of them. From these a spec of today's shape (``sim.fabric.spec``: a folded Clos of up to three tiers) is inferred and
validated; the cluster it expands to must have exactly the site's cables, device pair by device pair. Then the
cluster is built (``builder.build_cluster``) and NetBox's statuses are set on it through ``actions.set_status`` (so
they are in the change log), all in one transaction: a refusal (:class:`ImportRefused`, naming the NetBox object)
leaves nothing. A re-import of a site whose cluster exists checks the structure is unchanged and sets the statuses
that differ, in place.
"""
from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from sim.core.errors import SpecError
from sim.fabric.catalog import load_catalog
from sim.fabric.layout import FABRIC_BACKEND, FABRIC_FRONTEND, expand
from sim.fabric.spec import parse_spec
from twin.inventory import actions
from twin.inventory.builder import build_cluster
from twin.inventory.models import GPU, NIC, SSD, Cluster, Host, Link, Port, StorageServer, Switch
from twin.inventory.netbox.client import NetBox
from twin.inventory.netbox.export import CABLE_STATUS, DEVICE_STATUS, HOST_ROLE, STORAGE_ROLE

ROLE_KINDS = {HOST_ROLE: "host", STORAGE_ROLE: "storage"}
TWIN_STATUSES = ("active", "failed", "drained", "maintenance")
FROM_DEVICE = {"active": "active", "failed": "failed", "offline": "drained"}          # others: maintenance
FROM_CABLE = {"connected": "active", "decommissioning": "failed", "planned": "maintenance"}


# what the import reads of each object (NetBox's ``fields`` query parameter: smaller answers, fewer joins)
DEVICE_FIELDS = "id,name,role,device_type,rack,location,status,custom_fields"
INTERFACE_FIELDS = "id,name,device,speed,type,enabled,custom_fields"
CABLE_FIELDS = "id,label,description,status,custom_fields"        # terminations: NetBox.cable_ends
ITEM_FIELDS = "id,name,device,role,part_id,status,custom_fields,component_type,component_id"
READS = ("dcim/devices/", "dcim/interfaces/", "dcim/cables/", "dcim/cable-terminations/", "dcim/inventory-items/")


def planned_reads(nb: NetBox, site: str) -> int:
    """Objects an import of ``site`` reads (the progress bar's total): one count request per large kind."""
    sites = nb.list("dcim/sites/", slug=site)
    if not sites:
        return 0
    sid = sites[0]["id"]
    extra = {"dcim/interfaces/": {"cabled": "true"}}
    return sum(nb._call("GET", e, params={"site_id": sid, "limit": 1, "brief": "true", **extra.get(e, {})})["count"]
               for e in READS)


class ImportRefused(Exception):
    """The site cannot be imported: the message names the NetBox object and what is wrong with it."""


def natural(text: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text or "")]


def _value(x):
    return x["value"] if isinstance(x, dict) else x


def twin_status(native: str, cf: str | None, forward: dict, backward: dict) -> str:
    """The twin status of a NetBox object: its ``twin_status`` custom field when that agrees with its NetBox status
    (the status an export writes for it), otherwise read from the NetBox status."""
    if cf in TWIN_STATUSES and forward[cf] == native:
        return cf
    return backward.get(native, "maintenance")


@dataclass
class ImportResult:
    cluster: Cluster
    created: bool
    statuses_changed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    netbox_seconds: float = 0.0


class _Site:
    """The site as read from NetBox, with each device's kind, fabric and tier."""

    def __init__(self, nb: NetBox, site_slug: str, progress: Callable[[str, int], None] | None = None):
        sites = nb.list("dcim/sites/", slug=site_slug)
        if not sites:
            raise ImportRefused(f"site: {site_slug!r} is not a NetBox site")
        self.site = sites[0]
        sid = self.site["id"]

        def read(endpoint, **params):
            what = endpoint.rstrip("/").split("/")[-1]
            counted = progress and endpoint in READS          # the kinds planned_reads counts
            return nb.list(endpoint, (lambda n: progress(what, n)) if counted else None, **params)

        roles = {r["id"]: r for r in read("dcim/device-roles/")}
        self.types = {t["id"]: t["slug"] for t in read("dcim/device-types/", fields="id,slug")}
        self.locations = {x["id"]: x for x in read("dcim/locations/", site_id=sid, fields="id,name,slug,parent")}
        self.racks = {x["id"]: x for x in read("dcim/racks/", site_id=sid, fields="id,name,location")}
        self.devices = {d["id"]: d for d in read("dcim/devices/", site_id=sid, fields=DEVICE_FIELDS)}
        self.interfaces = {i["id"]: i for i in read("dcim/interfaces/", site_id=sid, cabled="true",
                                                    fields=INTERFACE_FIELDS)}
        self.cables = read("dcim/cables/", site_id=sid, fields=CABLE_FIELDS)
        ends = nb.cable_ends(sid)
        if progress:
            progress("cable-terminations", sum(len(e["A"]) + len(e["B"]) for e in ends.values()))
        for c in self.cables:
            c["a_terminations"], c["b_terminations"] = ends[c["id"]]["A"], ends[c["id"]]["B"]
        self.items = read("dcim/inventory-items/", site_id=sid, fields=ITEM_FIELDS)
        self.kind, self.role = {}, {}
        for d in self.devices.values():
            role = roles.get(d["role"]["id"], d["role"])
            kind = (role.get("custom_fields") or {}).get("twin_kind") or ROLE_KINDS.get(role["slug"])
            if kind not in ("host", "storage", "switch"):
                raise ImportRefused(f"device {d['name']!r}: role {role['slug']!r} is not a known role ("
                                    f"{HOST_ROLE}, {STORAGE_ROLE}, or a role whose custom field twin_kind is host, "
                                    f"storage or switch)")
            self.kind[d["id"]], self.role[d["id"]] = kind, role["slug"]
        self._cabling()

    def name(self, dev: int) -> str:
        return self.devices[dev]["name"]

    def _cabling(self):
        """Each cable's two interfaces (refusing cables to nowhere and loops), then fabrics and tiers."""
        self.ends = []      # (cable, a interface, b interface, a device, b device)
        for c in self.cables:
            label = f"cable #{c['id']} ({c.get('label') or 'no label'})"
            ends = []
            for side in ("a_terminations", "b_terminations"):
                terms = c.get(side) or []
                if len(terms) != 1 or terms[0]["object_type"] != "dcim.interface" \
                        or terms[0]["object_id"] not in self.interfaces:
                    raise ImportRefused(f"{label}: a cable to nowhere: its {side[0].upper()} end is not one "
                                        f"interface of a device in site {self.site['slug']!r}")
                ends.append(terms[0]["object_id"])
            da, db = (self.interfaces[i]["device"]["id"] for i in ends)
            if da == db:
                raise ImportRefused(f"{label}: a loop: both ends are on device {self.name(da)!r}")
            self.ends.append((c, ends[0], ends[1], da, db))
        nbr = defaultdict(set)
        self.peer = {}
        for _, a, b, da, db in self.ends:
            nbr[da].add(db)
            nbr[db].add(da)
            self.peer[a], self.peer[b] = db, da
        self.nbr = nbr
        switches = [d for d, k in self.kind.items() if k == "switch"]
        # fabrics: connected parts of the switch graph
        self.fabric = {}
        parts = []
        for s in switches:
            if s in self.fabric:
                continue
            stack, part = [s], []
            self.fabric[s] = len(parts)
            while stack:
                x = stack.pop()
                part.append(x)
                for y in nbr[x]:
                    if self.kind[y] == "switch" and y not in self.fabric:
                        self.fabric[y] = len(parts)
                        stack.append(y)
            parts.append(part)
        role_of_part = self._fabric_roles(nbr)
        for s in switches:
            if self.fabric[s] not in role_of_part:
                raise ImportRefused(f"device {self.name(s)!r}: a switch in neither fabric (not cabled to hosts)")
            self.fabric[s] = role_of_part[self.fabric[s]]
        for d, k in self.kind.items():
            if k == "host" and not any(self.kind[y] == "switch" and self.fabric[y] == FABRIC_BACKEND
                                       for y in nbr[d]):
                raise ImportRefused(f"device {self.name(d)!r}: a GPU host with no fabric NIC (no cable to a "
                                    f"backend switch)")
        # tiers, by distance from the hosts and storage servers
        self.tier = {}
        frontier = {y for d, k in self.kind.items() if k != "switch" for y in nbr[d] if self.kind[y] == "switch"}
        t = 0
        while frontier:
            for s in frontier:
                self.tier[s] = t
            frontier = {y for s in frontier for y in nbr[s] if self.kind[y] == "switch" and y not in self.tier}
            t += 1
        for s in switches:
            if s not in self.tier:
                raise ImportRefused(f"device {self.name(s)!r}: a switch no host reaches")
            if self.tier[s] > 2:
                raise ImportRefused(f"device {self.name(s)!r}: a fourth switch tier; today's specs have at most "
                                    f"three (leaf, spine, core)")
        for c, _, _, da, db in self.ends:
            if self.kind[da] == "switch" and self.kind[db] == "switch" and self.tier[da] == self.tier[db]:
                raise ImportRefused(f"cable #{c['id']} ({c.get('label')}): a loop within a tier: it joins "
                                    f"{self.name(da)!r} and {self.name(db)!r}, both tier {self.tier[da]}")
        roles_by_tier = defaultdict(set)
        for s in switches:
            roles_by_tier[(self.fabric[s], self.tier[s])].add(self.role[s])
        for (f, t), roles in roles_by_tier.items():
            if len(roles) > 1:
                odd = next(s for s in switches if (self.fabric[s], self.tier[s]) == (f, t)
                           and self.role[s] != sorted(roles)[0])
                raise ImportRefused(f"device {self.name(odd)!r}: role {self.role[odd]!r} differs from the other "
                                    f"switches of its tier ({', '.join(sorted(roles))})")

    def _fabric_roles(self, nbr) -> dict[int, int]:
        """Which connected part of the switch graph is the backend and which the frontend: the custom field
        ``twin_fabric`` of the hosts' interfaces when they carry it (an export writes it); else the frontend is the
        part storage servers reach and the backend the other one hosts reach; with no storage servers, the part
        with more host cables is the backend (a GPU host has more GPU-fabric NICs than frontend ones)."""
        site = f"site {self.site['slug']!r}"
        host_cables = Counter()
        said = defaultdict(set)
        for _, a, b, da, db in self.ends:
            for i, d, other in ((a, da, db), (b, db, da)):
                if self.kind[d] == "host" and self.kind[other] == "switch":
                    host_cables[self.fabric[other]] += 1
                    cf = (self.interfaces[i].get("custom_fields") or {}).get("twin_fabric")
                    if cf in ("backend", "frontend"):
                        said[cf].add(self.fabric[other])
        storage_parts = {self.fabric[y] for d, k in self.kind.items() if k == "storage" for y in nbr[d]
                         if self.kind[y] == "switch"}
        if said:
            back, front = said.get("backend", set()), said.get("frontend", set()) | storage_parts
            how = "by the custom field twin_fabric of the hosts' interfaces"
        elif storage_parts:
            back, front = set(host_cables) - storage_parts, storage_parts
            how = "the frontend is the switches storage servers reach"
        else:
            ranked = sorted(host_cables, key=lambda p: -host_cables[p])
            back, front = set(ranked[:1]), set(ranked[1:])
            how = "the backend has the most host cables"
        if len(back) != 1 or len(front) != 1 or back == front:
            raise ImportRefused(f"{site}: needs one backend fabric (GPU hosts' NICs) and one frontend (hosts' and "
                                f"storage servers' other NICs), connected switch graphs apart; found {len(back)} "
                                f"backend and {len(front)} frontend ({how})")
        return {next(iter(back)): FABRIC_BACKEND, next(iter(front)): FABRIC_FRONTEND}

    def level(self, dev: int) -> int:
        return self.tier[dev] if self.kind[dev] == "switch" else -1


def _one(values, what: str, blame: str):
    vals = set(values)
    if len(vals) != 1:
        raise ImportRefused(f"{blame}: {what} is not uniform ({', '.join(map(str, sorted(vals, key=str)))})")
    return vals.pop()


def _infer_spec(s: _Site, name: str) -> tuple[dict, dict]:
    """The spec (as a dict) of today's shape that the site describes, and the order of its devices."""
    catalog = load_catalog()
    dev_items = defaultdict(list)
    for it in s.items:
        dev_items[it["device"]["id"]].append(it)
    hosts = [d for d, k in s.kind.items() if k == "host"]
    servers = [d for d, k in s.kind.items() if k == "storage"]
    rack_of = {d: (s.devices[d].get("rack") or {}).get("id") for d in s.devices}
    for d in hosts + servers:
        if rack_of[d] is None:
            raise ImportRefused(f"device {s.name(d)!r}: a {s.kind[d]} in no rack")
    loc = lambda r: s.locations.get((s.racks[r].get("location") or {}).get("id"), {})  # noqa: E731
    host_racks = sorted({rack_of[d] for d in hosts}, key=lambda r: (natural(loc(r).get("name")),
                                                                    natural(s.racks[r]["name"])))
    zones = []
    for r in host_racks:
        if not zones or loc(r).get("id") != zones[-1][0]:
            zones.append((loc(r).get("id"), []))
        zones[-1][1].append(r)
    racks_per_zone = _one([len(z[1]) for z in zones], "racks per zone", f"site {s.site['slug']!r}")
    in_rack = defaultdict(list)
    for d in hosts + servers:
        in_rack[rack_of[d]].append(d)
    slot_key = lambda d: ((s.devices[d].get("custom_fields") or {}).get("twin_slot") or 0, natural(s.name(d)))  # noqa
    for r in in_rack:
        in_rack[r].sort(key=slot_key)
    hosts_per_rack = _one([len(in_rack[r]) for r in host_racks], "hosts per rack", f"site {s.site['slug']!r}")
    platform = _one([s.types[s.devices[d]["device_type"]["id"]] for d in hosts], "GPU host device type",
                    f"site {s.site['slug']!r}")
    if platform not in catalog.models.get("platform", {}):
        raise ImportRefused(f"device type {platform!r}: not a host platform of the twin's catalog")
    gpu_parts = [it["part_id"] for d in hosts for it in dev_items[d] if it["role"] and it["role"]["slug"] == "gpu"]
    gpu = _one(gpu_parts or ["?"], "GPU model (inventory items of role gpu)", f"site {s.site['slug']!r}")
    parents = {(s.locations.get(z[0]) or {}).get("parent", {}) and s.locations[z[0]]["parent"]["id"] for z in zones}
    per_building = len(zones) // len(parents) if len(parents) > 1 else 0
    layout = {"zones": len(zones), "racks_per_zone": racks_per_zone, "hosts_per_rack": hosts_per_rack,
              "host_platform": platform, "gpu": gpu}
    if per_building:
        layout["zones_per_building"] = per_building
    order = {"hosts": [d for _, racks in zones for r in racks for d in in_rack[r]]}
    # storage clusters: by the custom field twin_storage ("name:kind") of their servers, then racks in name order
    groups = defaultdict(list)
    for d in servers:
        groups[(s.devices[d].get("custom_fields") or {}).get("twin_storage") or "storage:tectonic"].append(d)
    storage, order["servers"] = [], []
    iface_of = defaultdict(list)
    for i in s.interfaces.values():
        iface_of[i["device"]["id"]].append(i)
    cable_of_if = {}
    for c, a, b, _, _ in s.ends:
        cable_of_if[a] = cable_of_if[b] = c
    for key in sorted(groups, key=lambda k: min(s.devices[d]["id"] for d in groups[k])):
        members = groups[key]
        sname, _, kind = key.partition(":")
        racks = sorted({rack_of[d] for d in members}, key=lambda r: natural(s.racks[r]["name"]))
        zl = Counter(loc(r).get("id") for r in racks)
        order["servers"] += [d for r in racks for d in in_rack[r]]
        nic_parts = [it["part_id"] for d in members for it in dev_items[d] if it["role"]["slug"] == "nic"]
        ssd_parts = [it["part_id"] for d in members for it in dev_items[d] if it["role"]["slug"] == "ssd"]
        blame = f"storage servers {key!r}"
        storage.append({
            "name": sname, "kind": kind or "tectonic",
            "server": _one([s.types[s.devices[d]["device_type"]["id"]] for d in members], "device type", blame),
            "servers": len(members), "servers_per_rack": _one([len(in_rack[r]) for r in racks], "servers/rack", blame),
            "racks_per_zone": _one(zl.values(), "racks per zone", blame),
            "nic": _one(nic_parts or ["?"], "NIC model", blame),
            "nics_per_server": _one([len(iface_of[d]) for d in members], "cabled NICs", blame),
            "ssd": _one(ssd_parts or ["?"], "SSD model", blame),
            "ssds_per_server": _one([sum(it["role"]["slug"] == "ssd" for it in dev_items[d]) for d in members],
                                    "SSDs per server", blame),
            "cable": _one([cable_of_if[i["id"]].get("description") for d in members for i in iface_of[d]],
                          "cable model (cable description)", blame)})
    storage_zones = sum(x["servers"] // x["servers_per_rack"] // x["racks_per_zone"] for x in storage)
    fabrics = [_infer_fabric(s, f, hosts, iface_of, cable_of_if, dev_items, len(zones), storage_zones)
               for f in (0, 1)]
    spec = {"name": name, "title": s.site["name"], "description": f"imported from NetBox site {s.site['slug']}",
            "layout": layout, "backend": fabrics[0], "frontend": fabrics[1], "storage": storage}
    return spec, order


def _infer_fabric(s: _Site, f: int, hosts, iface_of, cable_of_if, dev_items, zones: int, storage_zones: int) -> dict:
    what = "backend" if f == FABRIC_BACKEND else "frontend"
    sw = [d for d in s.tier if s.fabric[d] == f]
    by_tier = defaultdict(list)
    for d in sw:
        by_tier[s.tier[d]].append(d)
    # speeds per link tier, from the interfaces at both ends
    speeds = defaultdict(Counter)
    first = {}
    for c, a, b, da, db in s.ends:
        lo, hi = sorted((da, db), key=s.level)
        if s.kind[hi] != "switch" or s.fabric[hi] != f or s.kind[lo] == "storage":
            continue      # storage servers' links: their own speed, checked per storage cluster
        for i in (a, b):
            sp = s.interfaces[i].get("speed")
            speeds[s.tier[hi]][sp] += 1
            first.setdefault((s.tier[hi], sp), s.interfaces[i])
    for t, counts in speeds.items():
        if len(counts) > 1:
            odd = min(counts, key=lambda k: counts[k])
            i = first[(t, odd)]
            raise ImportRefused(f"interface {i['device']['name']}:{i['name']}: mixed speeds in {what} tier {t} "
                                f"({', '.join(f'{(k or 0) // 1_000_000}G x {n}' for k, n in counts.items())})")
    gbps = lambda t: (next(iter(speeds[t])) or 0) // 1_000_000  # noqa: E731

    ups = Counter()
    for _, _, _, da, db in s.ends:
        for x, y in ((da, db), (db, da)):
            if s.kind[y] == "switch" and s.kind[x] == "switch" and s.tier[y] == s.tier[x] + 1:
                ups[x] += 1
    up = lambda d, tier: ups[d]  # noqa: E731

    def cable(tier):
        return _one([c.get("description") for c, _, _, da, db in s.ends
                     if max(s.level(da), s.level(db)) == tier and s.fabric.get(max((da, db), key=s.level)) == f
                     and "storage" not in (s.kind[da], s.kind[db])],
                    "cable model (cable description)", f"{what} tier {tier}")

    def model(tier):
        return _one([s.types[s.devices[d]["device_type"]["id"]] for d in by_tier[tier]], "device type",
                    f"{what} tier {tier}")

    nics_of = {d: [i for i in iface_of[d] if s.fabric.get(s.peer[i["id"]]) == f] for d in hosts}
    host_nics = [i for d in hosts for i in nics_of[d]]
    nics_per_host = _one([len(nics_of[d]) for d in hosts], "NICs per host", f"{what} fabric")
    # rail-optimized leaves: a host's NICs spread over `rails` leaves of its rail group (NIC k on leaf k)
    rails = _one([len({s.peer[i["id"]] for i in nics_of[d]}) for d in hosts], "leaves per host (rails)",
                 f"{what} hosts")
    nic_ifaces = {i["id"] for i in host_nics}
    nic_parts = [it["part_id"] for d in hosts for it in dev_items[d] if it["role"]["slug"] == "nic"
                 and it.get("component_id") in nic_ifaces]
    leaves, spines, cores = by_tier[0], by_tier[1], by_tier.get(2, [])
    hosts_per_leaf = _one([n for d in leaves if (n := sum(1 for y in s.nbr[d] if s.kind[y] == "host"))],
                          "hosts per leaf", f"{what} leaves")
    out = {"kind": "ethernet" if f else ("infiniband" if str(_value(host_nics[0].get("type"))).startswith(
        "infiniband") else "roce"),
           "nic": _one(nic_parts or ["?"], "NIC model", f"{what} NICs"), "nics_per_host": nics_per_host,
           "speed_gbps": gbps(1),
           "leaf": {"name": s.role[leaves[0]], "model": model(0), "hosts_per_switch": hosts_per_leaf,
                    **({"rails": rails} if rails > 1 else {}),
                    "uplinks": _one([up(d, 1) for d in leaves], "uplinks", f"{what} leaves"), "cable": cable(0)},
           "spine": {"name": s.role[spines[0]], "model": model(1), "per_zone": len(spines) // (zones if f == FABRIC_BACKEND else zones + storage_zones),
                     "uplinks": _one([up(d, 2) for d in spines], "uplinks", f"{what} spines"), "cable": cable(1)}}
    if cores:
        out["core"] = {"name": s.role[cores[0]], "model": model(2), "per_plane": len(cores) // out["spine"]["per_zone"],
                       "cable": cable(2)}
    elif not out["spine"]["uplinks"]:
        del out["spine"]["uplinks"]
    return out




def _match(s: _Site, lo, order: dict) -> dict:
    """NetBox device id -> ("host"|"server"|"switch", layout index), checking that the site's cables are exactly the
    layout's links, device pair by device pair. Returns also each NetBox cable's layout link (``"cables"``)."""
    node = {d: ("host", i) for i, d in enumerate(order["hosts"])}
    node.update({d: ("server", i) for i, d in enumerate(order["servers"])})
    # layout: the leaf each host/server NIC is cabled to, by (device, fabric, NIC slot); NIC k of a host is on
    # leaf k of its rail group when the leaves are rail-optimized
    pn, ps = lo.port_nic, lo.port_switch
    leaf_of = {}
    for a, b in zip(lo.link_a.tolist(), lo.link_b.tolist()):
        n = pn[a]
        if n >= 0:
            dev = ("host", int(lo.nic_host[n])) if lo.nic_host[n] >= 0 else ("server", int(lo.nic_server[n]))
            leaf_of[(dev, int(lo.nic_fabric[n]), int(lo.nic_slot[n]))] = int(ps[b])
    # NetBox: a host's or server's NIC slot in a fabric is its interface's rank (natural name order) among its
    # interfaces cabled into that fabric; each leaf is placed by one of its cables down
    ranked, down = defaultdict(list), {}
    for _, a, b, da, db in s.ends:
        for i, d, other in ((a, da, db), (b, db, da)):
            if s.kind[d] != "switch" and s.kind[other] == "switch":
                ranked[(d, s.fabric[other])].append(i)
                down.setdefault(other, (d, i))
    slot = {i: k for ifs in ranked.values() for k, i in enumerate(sorted(ifs, key=lambda i: natural(
        s.interfaces[i]["name"])))}
    switches = sorted((d for d in s.tier), key=lambda d: (s.fabric[d], s.tier[d]))
    for d in (d for d in switches if s.tier[d] == 0):
        below, iface = down.get(d, (None, None))
        key = (node.get(below), s.fabric[d], slot.get(iface))
        if key not in leaf_of:
            raise ImportRefused(f"device {s.name(d)!r}: a leaf whose hosts the spec's shape does not place")
        node[d] = ("switch", leaf_of[key])
    for tier in (1, 2):
        groups = defaultdict(list)
        for d in (d for d in switches if s.tier[d] == tier):
            lower = {node[y][1] for y in s.nbr[d] if s.kind[y] == "switch" and s.tier[y] == tier - 1}
            key = {int(lo.switch_zone[x]) if tier == 1 else int(lo.switch_group[x]) for x in lower}
            if len(key) != 1:
                raise ImportRefused(f"device {s.name(d)!r}: cabled to switches of {len(key)} "
                                    f"{'zones' if tier == 1 else 'planes'}; today's shape has one")
            groups[(s.fabric[d], key.pop())].append(d)
        for (f, k), devs in groups.items():
            pick = (lo.switch_fabric == f) & (lo.switch_tier == tier) & (
                (lo.switch_zone == k) if tier == 1 else (lo.switch_group == k))
            slots = sorted(pick.nonzero()[0].tolist(), key=lambda x: (int(lo.switch_group[x]), int(lo.switch_member[x])))
            if len(slots) != len(devs):
                raise ImportRefused(f"device {s.name(devs[0])!r}: {len(devs)} tier-{tier} switches where today's "
                                    f"shape has {len(slots)}")
            for d, x in zip(sorted(devs, key=lambda d: natural(s.name(d))), slots):
                node[d] = ("switch", x)

    def layout_end(port):
        n = pn[port]
        if n < 0:
            return ("switch", int(ps[port]))
        return ("host", int(lo.nic_host[n])) if lo.nic_host[n] >= 0 else ("server", int(lo.nic_server[n]))

    links = defaultdict(list)
    for li, (a, b) in enumerate(zip(lo.link_a.tolist(), lo.link_b.tolist())):
        links[(layout_end(a), layout_end(b))].append(li)
    cables = {}
    pairs = defaultdict(list)
    for c, ia, ib, da, db in s.ends:
        (lo_dev, lo_if), (hi_dev, hi_if) = sorted(((da, ia), (db, ib)), key=lambda e: s.level(e[0]))
        pairs[(node[lo_dev], node[hi_dev])].append((natural(s.interfaces[lo_if]["name"]), c, lo_if, hi_if))
    for key, cs in pairs.items():
        have = links.get(key, [])
        if len(have) != len(cs):
            c = cs[0][1]
            raise ImportRefused(f"cable #{c['id']} ({c.get('label')}): {len(cs)} cable(s) between these two devices "
                                f"where the shape inferred from the site has {len(have)}")
        for (_, c, a_if, b_if), li in zip(sorted(cs, key=lambda x: x[0]), have):
            cables[c["id"]] = (li, a_if, b_if)
    if len(cables) != len(lo.link_a):
        raise ImportRefused(f"site {s.site['slug']!r}: {len(cables)} cables where the shape inferred from it has "
                            f"{len(lo.link_a)}")
    return {"node": node, "cables": cables}


def _statuses(s: _Site, lo, m: dict) -> dict:
    """Twin status per (kind, layout index) from NetBox: devices, inventory items, cables and their interfaces."""
    out = {}
    for d, (kind, i) in m["node"].items():
        dev = s.devices[d]
        out[(kind, i)] = twin_status(_value(dev["status"]), (dev.get("custom_fields") or {}).get("twin_status"),
                                     DEVICE_STATUS, FROM_DEVICE)
    gpu_of = {(int(h), int(sl)): g for g, (h, sl) in enumerate(zip(lo.gpu_host, lo.gpu_slot))}
    ssd_of = {(int(v), int(sl)): x for x, (v, sl) in enumerate(zip(lo.ssd_server, lo.ssd_slot))}
    nic_of = {}
    for n, (h, v, f, sl) in enumerate(zip(lo.nic_host.tolist(), lo.nic_server.tolist(), lo.nic_fabric.tolist(),
                                          lo.nic_slot.tolist())):
        nic_of[(("host", h) if h >= 0 else ("server", v), f"nic-{'be' if f == FABRIC_BACKEND else 'fe'}{sl}")] = n
    for it in s.items:
        dev = m["node"].get(it["device"]["id"])
        if dev is None:
            continue
        st = twin_status(_value(it["status"]), (it.get("custom_fields") or {}).get("twin_status"), DEVICE_STATUS,
                         FROM_DEVICE)
        role, name = it["role"]["slug"] if it.get("role") else "", it["name"]
        if role == "gpu" and name.startswith("gpu") and (dev[1], int(name[3:])) in gpu_of:
            out[("gpu", gpu_of[(dev[1], int(name[3:]))])] = st
        elif role == "ssd" and name.startswith("ssd") and (dev[1], int(name[3:])) in ssd_of:
            out[("ssd", ssd_of[(dev[1], int(name[3:]))])] = st
        elif role == "nic" and (dev, name) in nic_of:
            out[("nic", nic_of[(dev, name)])] = st
    for c in s.cables:
        li, a_if, b_if = m["cables"][c["id"]]
        out[("link", li)] = twin_status(_value(c["status"]), (c.get("custom_fields") or {}).get("twin_status"),
                                        CABLE_STATUS, FROM_CABLE)
        for port, iface in ((int(lo.link_a[li]), a_if), (int(lo.link_b[li]), b_if)):
            i = s.interfaces[iface]
            native = "active" if i.get("enabled", True) else "drained"
            cf = (i.get("custom_fields") or {}).get("twin_status")
            out[("port", port)] = cf if cf in TWIN_STATUSES and (cf == "active") == (native == "active") else native
    return out


def _twin_ids(cluster: Cluster) -> dict:
    """kind -> database ids in layout order (the builder writes rows in layout order, so id order is layout order;
    GPUs by their index)."""
    of = {"cluster": cluster}
    ids = lambda model, order="id": list(model.objects.filter(**of).order_by(order).values_list("id", flat=True))  # noqa
    return {"host": (Host, ids(Host)), "server": (StorageServer, ids(StorageServer)), "switch": (Switch, ids(Switch)),
            "gpu": (GPU, ids(GPU, "index")), "nic": (NIC, ids(NIC)), "ssd": (SSD, ids(SSD)), "link": (Link, ids(Link))}


def import_site(nb: NetBox, site: str, name: str, user=None,
                progress: Callable[[str, int], None] | None = None) -> ImportResult:
    """Build (or, when it exists, update the statuses of) the twin cluster ``name`` from NetBox site ``site``;
    ``progress(what, n)`` counts the objects read."""
    t0 = time.perf_counter()
    s = _Site(nb, site, progress)
    data, order = _infer_spec(s, name)
    try:
        spec = parse_spec(data)
    except SpecError as e:
        raise ImportRefused(f"site {site!r} does not fit today's spec shape: {e}") from None
    lo = expand(spec)
    m = _match(s, lo, order)
    want = _statuses(s, lo, m)
    with transaction.atomic():
        existing = Cluster.objects.filter(name=name).first()
        created = existing is None
        if existing is not None and existing.spec != spec.source:
            raise ImportRefused(f"name: cluster {name!r} exists with another structure than site {site!r} has now; "
                                f"delete it first (or import under another name)")
        cluster = existing or build_cluster(spec, user=user).cluster
        ids = _twin_ids(cluster)
        ids["port"] = (Port, _port_ids(cluster))
        changed = defaultdict(lambda: defaultdict(list))
        now = {kind: dict(model.objects.filter(cluster=cluster).values_list("id", "status"))
               for kind, (model, _) in ids.items()}
        for (kind, i), st in want.items():
            model, kind_ids = ids[kind]
            pk = kind_ids[i]
            if now[kind][pk] != st:
                changed[model][st].append(pk)
        counts = {}
        for model, by_status in changed.items():
            for st, pks in by_status.items():
                actions.set_status(model, pks, st, user=user)
                counts[model._meta.verbose_name_plural] = counts.get(model._meta.verbose_name_plural, 0) + len(pks)
    return ImportResult(cluster, created, counts, time.perf_counter() - t0, nb.seconds)


def _port_ids(cluster: Cluster) -> list[int]:
    """Port database ids in the layout's port order: NIC ports by NIC, then switch ports by switch and slot."""
    rows = list(Port.objects.filter(cluster=cluster).values_list("id", "nic_id", "switch_id", "slot"))
    return [pk for _, pk in sorted(((0, n, 0) if n else (1, w, sl), pk) for pk, n, w, sl in rows)]
