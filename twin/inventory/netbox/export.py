"""Write a twin cluster into NetBox over its REST API (``manage.py netbox_export``), idempotently.

What goes where (docs/netbox.md):
- the cluster -> a site (slug = cluster name); buildings and zones -> locations (zones under their building,
  storage zones at the top); racks -> racks;
- catalog vendors -> manufacturers; host platforms, switch models and storage server models -> device types, with
  no interface templates (NetBox would make every templated port on every device: 576 per Arista 7800R3);
- hosts, switches and storage servers -> devices whose role is ``gpu-host``, ``storage-server`` or the switch tier's
  name (``rtsw``, ``ctsw``...); the twin's ports (cabled ones only) -> interfaces (``be<i>``/``fe<i>`` on hosts and
  storage servers, ``eth<k>`` on switches), each created with its speed, type, enabled flag and custom fields;
  links -> cables between two interfaces;
- GPUs, NICs and SSDs -> inventory items (a NIC's is attached to its interface);
- statuses -> NetBox's own status where it has one (device active/failed/offline, cable connected/decommissioning,
  interface enabled) and the custom field ``twin_status`` (active, failed, drained, maintenance) everywhere, since
  NetBox has no "failed" cable nor "drained" device; custom fields for what NetBox has no field for: a switch's tier,
  group (plane) and member, a host's slot, a NIC's rail and fabric, a GPU's index.

Each kind of object is read from NetBox once (by natural key: slug, or name in the site), then the missing ones are
created and the changed ones updated, each in bulk (lists of ``client.CHUNK`` objects per request, ``parallel``
requests in flight, a device's interfaces and items in one request). A second export
of an unchanged cluster writes nothing; a status changed in the twin is one PATCH of the objects it touched.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sim.fabric.catalog import load_catalog
from sim.fabric.layout import FABRIC_BACKEND
from twin.inventory.models import GPU, NIC, SSD, Cluster, Host, Link, Port, Rack, StorageServer, Switch, Zone
from twin.inventory.netbox.client import NetBox

HOST_ROLE, STORAGE_ROLE = "gpu-host", "storage-server"
DEVICE_STATUS = {"active": "active", "failed": "failed", "drained": "offline", "maintenance": "offline"}
CABLE_STATUS = {"active": "connected", "failed": "decommissioning", "drained": "decommissioning",
                "maintenance": "planned"}
# custom field -> (type, object types)
CUSTOM_FIELDS = {
    "twin_status": ("text", ["dcim.device", "dcim.cable", "dcim.interface", "dcim.inventoryitem", "dcim.rack"]),
    "twin_kind": ("text", ["dcim.devicerole"]),
    "twin_tier": ("integer", ["dcim.device"]),
    "twin_group": ("integer", ["dcim.device"]),
    "twin_member": ("integer", ["dcim.device"]),
    "twin_slot": ("integer", ["dcim.device", "dcim.rack"]),
    "twin_storage": ("text", ["dcim.device"]),
    "twin_rail": ("integer", ["dcim.interface"]),
    "twin_fabric": ("text", ["dcim.interface"]),
    "twin_gpu_index": ("integer", ["dcim.inventoryitem"]),
}
ETHERNET_TYPES = {100: "100gbase-x-qsfp28", 200: "200gbase-x-qsfp56", 400: "400gbase-x-osfp", 800: "800gbase-x-osfp"}
INFINIBAND_TYPES = {100: "infiniband-edr", 200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ROLE_COLOURS = {"host": "2196f3", "storage": "9c27b0", "switch": "4caf50"}


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def interface_type(speed_gbps: int, infiniband: bool) -> str:
    return (INFINIBAND_TYPES if infiniband else ETHERNET_TYPES).get(speed_gbps, "other")


def port_interface_name(nic_fabric_role: int | None, nic_slot: int | None, switch_slot: int | None) -> str:
    """A twin port's interface name: ``be<rail>``/``fe<i>`` on a host or storage server, ``eth<k>`` on a switch."""
    if switch_slot is not None:
        return f"eth{switch_slot}"
    return f"{'be' if nic_fabric_role == FABRIC_BACKEND else 'fe'}{nic_slot}"


@dataclass
class ExportResult:
    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    netbox_seconds: float = 0.0
    requests: int = 0

    @property
    def written(self) -> int:
        return sum(self.created.values()) + sum(self.updated.values())


def _differs(existing: dict, payload: dict, fields: tuple[str, ...]) -> bool:
    for f in fields:
        if f not in payload:
            continue
        have = existing.get(f)
        if isinstance(have, dict) and "value" in have:        # a choice field: {"value": ..., "label": ...}
            have = have["value"]
        if f == "custom_fields":
            if any((have or {}).get(k) != v for k, v in payload[f].items()):
                return True
        elif have != payload[f]:
            return True
    return False


class _Sync:
    def __init__(self, nb: NetBox, result: ExportResult, progress: Callable[[str, int], None] | None):
        self.nb, self.result, self.progress = nb, result, progress

    def _step(self, what: str):
        return (lambda n: self.progress(what, n)) if self.progress else None

    def sync(self, endpoint: str, desired: dict, existing: dict, compare: tuple[str, ...] = ("status", "custom_fields",
                                                                                          "serial"),
             by_device: bool = False) -> dict:
        """Create the ``desired`` objects (natural key -> payload) missing from ``existing`` (key -> object), update
        those whose ``compare`` fields differ; return key -> id for all of them. ``by_device``: the keys are
        (device id, name) and a device's objects go in one bulk request (NetBox updates the device's counters, and
        two requests in flight writing one device would deadlock)."""
        what = endpoint.rstrip("/").split("/")[-1]
        order = sorted(desired, key=lambda k: k[0]) if by_device else list(desired)
        new = [k for k in order if k not in existing]
        changed = [{"id": existing[k]["id"], **{f: v for f, v in desired[k].items() if f in compare}}
                   for k in order if k in existing and _differs(existing[k], desired[k], compare)]
        ids = {k: existing[k]["id"] for k in desired if k in existing}
        if new:
            made = self.nb.create(endpoint, [desired[k] for k in new], self._step(what),
                                  together=(lambda o: o["device"]) if by_device else None)
            ids.update({k: o["id"] for k, o in zip(new, made)})
            self.result.created[what] = self.result.created.get(what, 0) + len(new)
        if changed:
            self.nb.update(endpoint, changed, self._step(what))
            self.result.updated[what] = self.result.updated.get(what, 0) + len(changed)
        return ids


def planned_objects(cluster: Cluster) -> int:
    """Objects an export of ``cluster`` writes at most (the progress bar's total)."""
    of = {"cluster": cluster}
    return (Rack.objects.filter(**of).count() + Zone.objects.filter(**of).count() + 2 * Host.objects.filter(**of).count()
            + Switch.objects.filter(**of).count() + StorageServer.objects.filter(**of).count()
            + Port.objects.filter(**of).count() + Link.objects.filter(**of).count() + GPU.objects.filter(**of).count()
            + NIC.objects.filter(**of).count() + SSD.objects.filter(**of).count())


def export_cluster(cluster: Cluster, nb: NetBox, progress: Callable[[str, int], None] | None = None) -> ExportResult:
    """Write ``cluster`` into NetBox (creating or updating); returns what was written and where the time went."""
    t0 = time.perf_counter()
    result = ExportResult()
    s = _Sync(nb, result, progress)
    catalog = load_catalog()
    of = {"cluster": cluster}
    spec_layout = cluster.spec.get("layout", {})
    per_building = int(spec_layout.get("zones_per_building") or 0)
    backend_ib = cluster.spec.get("backend", {}).get("kind") == "infiniband"

    # custom fields, once per NetBox
    have = {c["name"]: c for c in nb.list("extras/custom-fields/")}
    s.sync("extras/custom-fields/", {
        name: {"name": name, "label": name.replace("_", " "), "type": kind, "object_types": types,
               "required": False} for name, (kind, types) in CUSTOM_FIELDS.items()}, have, compare=())

    # site, buildings and zones
    site_ids = s.sync("dcim/sites/", {cluster.name: {"name": cluster.name, "slug": cluster.name, "status": "active",
                                                     "description": cluster.title[:200]}},
                      {x["slug"]: x for x in nb.list("dcim/sites/", slug=cluster.name)}, compare=("status",))
    site = site_ids[cluster.name]
    have_loc = {x["slug"]: x for x in nb.list("dcim/locations/", site_id=site)}
    zones = list(Zone.objects.filter(**of).order_by("id").values("id", "name", "kind", "number", "status"))
    buildings = sorted({z["number"] // per_building if per_building else 0 for z in zones if z["kind"] == 0})
    b_ids = s.sync("dcim/locations/", {f"b{b:02d}": {"name": f"{cluster.name}.b{b:02d}", "slug": f"b{b:02d}",
                                                     "site": site, "status": "active"} for b in buildings},
                   have_loc, compare=())
    zone_loc = {}
    desired = {}
    for z in zones:
        label = z["name"][len(cluster.name) + 1:]
        parent = b_ids[f"b{(z['number'] // per_building) if per_building else 0:02d}"] if z["kind"] == 0 else None
        desired[slugify(label)] = {"name": z["name"], "slug": slugify(label), "site": site, "parent": parent,
                                   "status": "active" if z["status"] == "active" else "retired"}
        zone_loc[z["id"]] = slugify(label)
    loc_ids = s.sync("dcim/locations/", desired, have_loc, compare=("status",))

    # racks
    racks = list(Rack.objects.filter(**of).order_by("id").values("id", "name", "serial", "status", "zone_id", "number"))
    rack_ids_by_name = s.sync("dcim/racks/", {r["name"]: {
        "name": r["name"], "site": site, "location": loc_ids[zone_loc[r["zone_id"]]], "serial": r["serial"],
        "status": "active" if r["status"] == "active" else "deprecated",
        "custom_fields": {"twin_status": r["status"], "twin_slot": r["number"]}} for r in racks},
        {x["name"]: x for x in nb.list("dcim/racks/", site_id=site)})
    rack_id = {r["id"]: rack_ids_by_name[r["name"]] for r in racks}

    # manufacturers, device types (no interface templates), roles
    hosts = list(Host.objects.filter(**of).order_by("id").values("id", "name", "serial", "status", "rack_id", "slot",
                                                                    "platform__slug"))
    switches = list(Switch.objects.filter(**of).order_by("id").values(
        "id", "name", "serial", "status", "rack_id", "zone_id", "tier", "role", "group", "member", "model__slug",
        "fabric__role"))
    servers = list(StorageServer.objects.filter(**of).order_by("id").values(
        "id", "name", "serial", "status", "rack_id", "slot", "model__slug", "storage_cluster__name",
        "storage_cluster__kind"))
    used = {("platform", h["platform__slug"]) for h in hosts} | {("switch", w["model__slug"]) for w in switches} | {
        ("storage_server", v["model__slug"]) for v in servers}
    used_parts = {("gpu", g) for g in GPU.objects.filter(**of).values_list("model__slug", flat=True).distinct()} | {
        ("nic", n) for n in NIC.objects.filter(**of).values_list("model__slug", flat=True).distinct()} | {
        ("ssd", d) for d in SSD.objects.filter(**of).values_list("model__slug", flat=True).distinct()}
    vendors = {catalog.get(kind, slug, kind).vendor for kind, slug in used | used_parts}
    man_ids = s.sync("dcim/manufacturers/", {slugify(v): {"name": v, "slug": slugify(v)} for v in vendors},
                     {x["slug"]: x for x in nb.list("dcim/manufacturers/")}, compare=())
    have_types = {x["slug"]: x for x in nb.list("dcim/device-types/")}
    type_ids = s.sync("dcim/device-types/", {slug: {
        "manufacturer": man_ids[slugify(catalog.get(kind, slug, kind).vendor)],
        "model": catalog.get(kind, slug, kind).name,
        "slug": slug, "u_height": 1} for kind, slug in used}, have_types, compare=())
    roles = {HOST_ROLE: "host", STORAGE_ROLE: "storage", **{w["role"]: "switch" for w in switches}}
    role_ids = s.sync("dcim/device-roles/", {r: {"name": r, "slug": r, "color": ROLE_COLOURS[k],
                                                 "custom_fields": {"twin_kind": k}} for r, k in roles.items()},
                      {x["slug"]: x for x in nb.list("dcim/device-roles/")}, compare=("custom_fields",))

    # devices
    desired = {}
    for h in hosts:
        desired[h["name"]] = {"name": h["name"], "site": site, "rack": rack_id[h["rack_id"]], "serial": h["serial"],
                              "role": role_ids[HOST_ROLE], "device_type": type_ids[h["platform__slug"]],
                              "status": DEVICE_STATUS[h["status"]],
                              "custom_fields": {"twin_status": h["status"], "twin_slot": h["slot"]}}
    for v in servers:
        desired[v["name"]] = {"name": v["name"], "site": site, "rack": rack_id[v["rack_id"]], "serial": v["serial"],
                              "role": role_ids[STORAGE_ROLE], "device_type": type_ids[v["model__slug"]],
                              "status": DEVICE_STATUS[v["status"]],
                              "custom_fields": {"twin_status": v["status"], "twin_slot": v["slot"],
                                                "twin_storage": f"{v['storage_cluster__name'][len(cluster.name) + 1:]}"
                                                                f":{v['storage_cluster__kind']}"}}
    for w in switches:
        desired[w["name"]] = {"name": w["name"], "site": site, "serial": w["serial"], "role": role_ids[w["role"]],
                              "device_type": type_ids[w["model__slug"]], "status": DEVICE_STATUS[w["status"]],
                              "rack": rack_id.get(w["rack_id"]),
                              "location": loc_ids[zone_loc[w["zone_id"]]] if w["zone_id"] else None,
                              "custom_fields": {"twin_status": w["status"], "twin_tier": w["tier"],
                                                "twin_group": w["group"], "twin_member": w["member"]}}
    device_ids = s.sync("dcim/devices/", desired, {x["name"]: x for x in nb.list(
        "dcim/devices/", site_id=site, fields="id,name,status,serial,custom_fields")})
    host_dev = {h["id"]: device_ids[h["name"]] for h in hosts}
    server_dev = {v["id"]: device_ids[v["name"]] for v in servers}
    switch_dev = {w["id"]: device_ids[w["name"]] for w in switches}

    # interfaces: the cabled ports only, created with their speed, type, status and custom fields in one request
    have_if = {(x["device"]["id"], x["name"]): x for x in nb.list(
        "dcim/interfaces/", site_id=site, fields="id,name,device,enabled,speed,type,custom_fields")}
    ports = list(Port.objects.filter(**of).order_by("id").values(
        "id", "slot", "speed_gbps", "status", "switch_id", "switch__fabric__role", "nic_id", "nic__host",
        "nic__storage_server", "nic__slot", "nic__fabric__role"))
    desired, port_key = {}, {}
    for p in ports:
        if p["switch_id"]:
            key = (switch_dev[p["switch_id"]], f"eth{p['slot']}")
            fabric = p["switch__fabric__role"]
        else:
            dev = host_dev[p["nic__host"]] if p["nic__host"] else server_dev[p["nic__storage_server"]]
            key = (dev, port_interface_name(p["nic__fabric__role"], p["nic__slot"], None))
            fabric = p["nic__fabric__role"]
        port_key[p["id"]] = key
        cf = {"twin_status": p["status"], "twin_fabric": "backend" if fabric == FABRIC_BACKEND else "frontend"}
        if p["nic_id"] and fabric == FABRIC_BACKEND:
            cf["twin_rail"] = p["nic__slot"]
        desired[key] = {"device": key[0], "name": key[1], "speed": p["speed_gbps"] * 1_000_000,
                        "enabled": p["status"] == "active",
                        "type": interface_type(p["speed_gbps"], backend_ib and fabric == FABRIC_BACKEND),
                        "custom_fields": cf}
    iface_ids = s.sync("dcim/interfaces/", desired, have_if, compare=("speed", "enabled", "type", "custom_fields"),
                       by_device=True)
    if_id = {pid: iface_ids[key] for pid, key in port_key.items()}

    # cables, keyed by their lower interface
    have_cables = {}
    ends = nb.cable_ends(site)
    for c in nb.list("dcim/cables/", site_id=site, fields="id,status,label,custom_fields"):
        for t in ends[c["id"]]["A"]:
            have_cables[t["object_id"]] = c
    links = list(Link.objects.filter(**of).order_by("id").values("a_port_id", "b_port_id", "serial", "status",
                                                                 "cable__slug"))
    s.sync("dcim/cables/", {if_id[k["a_port_id"]]: {
        "a_terminations": [{"object_type": "dcim.interface", "object_id": if_id[k["a_port_id"]]}],
        "b_terminations": [{"object_type": "dcim.interface", "object_id": if_id[k["b_port_id"]]}],
        "status": CABLE_STATUS[k["status"]], "label": k["serial"], "description": k["cable__slug"],
        "custom_fields": {"twin_status": k["status"]}} for k in links}, have_cables,
        compare=("status", "custom_fields"))

    # inventory items: GPUs, NICs (on their interface), SSDs
    item_roles = s.sync("dcim/inventory-item-roles/", {r: {"name": r, "slug": r, "color": "607d8b"}
                                                       for r in ("gpu", "nic", "ssd")},
                        {x["slug"]: x for x in nb.list("dcim/inventory-item-roles/")}, compare=())
    desired = {}
    for g in GPU.objects.filter(**of).order_by("id").values("host_id", "slot", "index", "serial", "status",
                                                             "model__slug"):
        dev = host_dev[g["host_id"]]
        desired[(dev, f"gpu{g['slot']}")] = {
            "device": dev, "name": f"gpu{g['slot']}", "role": item_roles["gpu"], "part_id": g["model__slug"],
            "manufacturer": man_ids[slugify(catalog.get("gpu", g["model__slug"], "gpu").vendor)],
            "serial": g["serial"], "status": DEVICE_STATUS[g["status"]],
            "custom_fields": {"twin_status": g["status"], "twin_gpu_index": g["index"]}}
    nic_port = {p["nic_id"]: p["id"] for p in ports if p["nic_id"]}
    for n in NIC.objects.filter(**of).order_by("id").values("id", "host_id", "storage_server_id", "slot", "serial",
                                                              "status", "model__slug", "fabric__role"):
        dev = host_dev[n["host_id"]] if n["host_id"] else server_dev[n["storage_server_id"]]
        name = "nic-" + port_interface_name(n["fabric__role"], n["slot"], None)
        item = {"device": dev, "name": name, "role": item_roles["nic"], "part_id": n["model__slug"],
                "manufacturer": man_ids[slugify(catalog.get("nic", n["model__slug"], "nic").vendor)],
                "serial": n["serial"], "status": DEVICE_STATUS[n["status"]],
                "custom_fields": {"twin_status": n["status"]}}
        if n["id"] in nic_port:
            item.update(component_type="dcim.interface", component_id=if_id[nic_port[n["id"]]])
        desired[(dev, name)] = item
    for d in SSD.objects.filter(**of).order_by("id").values("server_id", "slot", "serial", "status", "model__slug"):
        dev = server_dev[d["server_id"]]
        desired[(dev, f"ssd{d['slot']}")] = {
            "device": dev, "name": f"ssd{d['slot']}", "role": item_roles["ssd"], "part_id": d["model__slug"],
            "manufacturer": man_ids[slugify(catalog.get("ssd", d["model__slug"], "ssd").vendor)],
            "serial": d["serial"], "status": DEVICE_STATUS[d["status"]], "custom_fields": {"twin_status": d["status"]}}
    s.sync("dcim/inventory-items/", desired, {(x["device"]["id"], x["name"]): x for x in nb.list(
        "dcim/inventory-items/", site_id=site, fields="id,name,device,status,serial,custom_fields")}, by_device=True)

    result.seconds = time.perf_counter() - t0
    result.netbox_seconds, result.requests = nb.seconds, nb.requests
    return result
