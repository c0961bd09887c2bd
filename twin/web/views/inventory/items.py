"""What each item page shows below its header: the item's facts and its children, neighbours and counts.

One function per kind, ``<kind>_page(request, obj) -> context``. Each runs a fixed number of grouped or sliced
queries (``values()`` rows, counts from ``tally``), so a page costs the same for a rack of 2 hosts and a zone of 384;
long lists (racks of a zone, ports of a switch, switches of a fabric) are paginated.
"""
from __future__ import annotations

from collections import defaultdict

from django.core.paginator import Paginator
from django.db.models import Q

from twin.inventory.choices import FabricRole, LinkTier, SwitchTier, ZoneKind
from twin.inventory.models import (
    GPU, NIC, SSD, Fabric, Host, Link, Port, Rack, StorageCluster, StorageServer, Switch, Zone,
)

from .cabling import PORT_FIELDS, cabled_ports, links_of_ports
from .kinds import KIND_OF_MODEL, item_url
from .tally import NOT_ACTIVE, Tally, tally, tally_by

PER_PAGE = 100          # rows of a long list (ports of a switch, switches of a fabric)
RACKS_PER_PAGE = 48     # racks of a zone in the table; the rack map above it shows them all
SWITCH_FIELDS = ("id", "name", "role", "tier", "status", "model__name", "zone_id", "zone__name", "rack_id",
                 "rack__name")


def paginate(request, rows, per_page: int = PER_PAGE):
    """A page of ``rows`` (a list or a ``values()`` queryset: one COUNT and one sliced query), from ``?page=``, its
    rows as a list; ``page.query`` keeps the page's other parameters for the pager's links."""
    page = Paginator(rows, per_page).get_page(request.GET.get("page"))
    page.object_list = list(page.object_list)
    params = request.GET.copy()
    params.pop("page", None)
    page.query = params.urlencode()
    return page


def fact(label: str, value, kind: str | None = None, pk: int | None = None) -> dict:
    """A line of the item's facts; with kind and pk, a link to that item."""
    return {"label": label, "value": value, "url": item_url(kind, pk) if kind and pk else None}


def _sum(tallies) -> Tally:
    """All groups of a ``tally_by`` (a dict) or a list of tallies together."""
    return sum(tallies.values() if isinstance(tallies, dict) else tallies, Tally())


def _worst(*tallies: Tally) -> str:
    return _sum(tallies).health


def _tally_rows(rows) -> Tally:
    """A Tally of rows already loaded (a host's 8 GPUs): no query."""
    out = Tally(len(rows))
    for r in rows:
        if r["status"] in NOT_ACTIVE:
            out.off[r["status"]] = out.off.get(r["status"], 0) + 1
    return out


def _with_links(switches: list[dict]) -> list[dict]:
    """Switch rows (``values(*SWITCH_FIELDS)``), each with its tier's label and its links ``down`` and ``up``
    by status (Tallies)."""
    ids = [s["id"] for s in switches]
    down = tally_by(Link.objects.filter(b_switch_id__in=ids), "b_switch_id")
    up = tally_by(Link.objects.filter(a_switch_id__in=ids), "a_switch_id")
    for s in switches:
        s.update(down=down[s["id"]], up=up[s["id"]], tier_label=SwitchTier(s["tier"]).label)
    return switches


def _switch_tiers(tallies) -> list[dict]:
    """A ``tally_by(switches, "tier", "role")`` as rows: tier, its label, role and the switches by status."""
    return [{"tier": t, "tier_label": SwitchTier(t).label, "role": role, "switches": n}
            for (t, role), n in sorted(tallies.items())]


# --- cluster, fabric, zone, rack ----------------------------------------------------------------------------------

def cluster_page(request, cluster) -> dict:
    zones = list(Zone.objects.filter(cluster=cluster).values("id", "name", "kind", "status", "storage_cluster_id"))
    # Scoped by zone ids rather than cluster_id: the joins then stay on covering indexes (3x faster on SQLite).
    in_zones = [z["id"] for z in zones]
    racks = tally_by(Rack.objects.filter(zone_id__in=in_zones), "zone_id")
    hosts = tally_by(Host.objects.filter(rack__zone_id__in=in_zones), "rack__zone_id")
    gpus = tally_by(GPU.objects.filter(host__rack__zone_id__in=in_zones), "host__rack__zone_id")
    servers = tally_by(StorageServer.objects.filter(rack__zone_id__in=in_zones), "rack__zone_id")
    switches = tally_by(Switch.objects.filter(cluster=cluster), "zone_id")
    for z in zones:
        z.update(kind_label=ZoneKind(z["kind"]).label, racks=racks[z["id"]], hosts=hosts[z["id"]],
                 gpus=gpus[z["id"]], servers=servers[z["id"]], switches=switches[z["id"]])
        z["health"] = _worst(z["racks"], z["hosts"], z["gpus"], z["servers"], z["switches"])

    fabrics = list(Fabric.objects.filter(cluster=cluster).values("id", "name", "role", "speed_gbps"))
    fabric_ids = [f["id"] for f in fabrics]
    tiers = tally_by(Switch.objects.filter(cluster=cluster), "fabric_id", "tier", "role")
    links = tally_by(Link.objects.filter(fabric_id__in=fabric_ids), "fabric_id")     # the fabric index: no row reads
    for f in fabrics:
        f["role_label"] = FabricRole(f["role"]).label
        f["tiers"] = _switch_tiers({(t, role): n for (fid, t, role), n in tiers.items() if fid == f["id"]})
        f["links"] = links[f["id"]]

    storage = list(StorageCluster.objects.filter(cluster=cluster).values("id", "name", "kind"))
    in_storage = [s["id"] for s in storage]
    storage_servers = tally_by(StorageServer.objects.filter(storage_cluster_id__in=in_storage), "storage_cluster_id")
    ssds = tally_by(SSD.objects.filter(server__storage_cluster_id__in=in_storage), "server__storage_cluster_id")
    for s in storage:
        s.update(servers=storage_servers[s["id"]], ssds=ssds[s["id"]],
                 zones=[z for z in zones if z["storage_cluster_id"] == s["id"]])

    counts = [("Racks", _sum(racks)), ("Hosts", _sum(hosts)), ("GPUs", _sum(gpus)),
              ("NICs", tally(NIC.objects.filter(cluster=cluster))), ("Switches", _sum(switches)),
              ("Ports", tally(Port.objects.filter(cluster=cluster))), ("Links", _sum(links)),
              ("Storage servers", _sum(servers)), ("SSDs", _sum(ssds))]
    return {"zones": zones, "fabrics": fabrics, "storage": storage, "counts": counts,
            "facts": [fact("Title", cluster.title), fact("Built", cluster.built_at),
                      fact("Description", cluster.description)]}


def fabric_page(request, fabric) -> dict:
    tiers = tally_by(Switch.objects.filter(fabric=fabric), "tier", "role")
    links = tally_by(Link.objects.filter(fabric=fabric), "tier")
    switches = Switch.objects.filter(fabric=fabric)
    tier = request.GET.get("tier", "")
    if tier.isdigit():
        switches = switches.filter(tier=int(tier))
    page = paginate(request, switches.order_by("-tier", "group", "member", "id").values(*SWITCH_FIELDS))
    _with_links(page.object_list)
    return {"tiers": _switch_tiers(tiers),
            "link_tiers": [{"tier": LinkTier(t).label, "links": n} for t, n in sorted(links.items())],
            "tier_filter": tier, "switches": page,
            "counts": [("Switches", _sum(tiers)), ("Links", _sum(links))],
            "facts": [fact("Role", FabricRole(fabric.role).label), fact("Kind", fabric.get_kind_display()),
                      fact("Switch link speed", f"{fabric.speed_gbps} Gb/s")]}


def zone_page(request, zone) -> dict:
    racks = list(Rack.objects.filter(zone=zone).order_by("number", "id").values("id", "name", "number", "status"))
    hosts = tally_by(Host.objects.filter(rack__zone=zone), "rack_id")
    gpus = tally_by(GPU.objects.filter(host__rack__zone=zone), "host__rack_id")
    servers = tally_by(StorageServer.objects.filter(rack__zone=zone), "rack_id")
    leaves = defaultdict(list)
    for s in Switch.objects.filter(zone=zone, rack__isnull=False).values("id", "name", "role", "status", "rack_id"):
        leaves[s["rack_id"]].append(s)
    for r in racks:
        r.update(hosts=hosts[r["id"]], gpus=gpus[r["id"]], servers=servers[r["id"]], switches=leaves[r["id"]])
        r["health"] = _worst(_tally_rows([r]), r["hosts"], r["gpus"], r["servers"], _tally_rows(r["switches"]))

    spines = _with_links(list(Switch.objects.filter(zone=zone, rack__isnull=True)
                              .order_by("tier", "role", "group", "id").values(*SWITCH_FIELDS)))
    switch_tally = tally_by(Switch.objects.filter(zone=zone), "tier", "role")
    facts = [fact("Kind", zone.get_kind_display())]
    if zone.storage_cluster:
        facts.append(fact("Storage cluster", zone.storage_cluster.name))
    problems = request.GET.get("show") == "problems"
    listed = [r for r in racks if r["health"] != "ok"] if problems else racks
    return {"racks": racks, "rack_page": paginate(request, listed, RACKS_PER_PAGE), "problems": problems,
            "storage_zone": zone.kind == ZoneKind.STORAGE, "spines": spines,
            "switch_tiers": _switch_tiers(switch_tally),
            "counts": [("Racks", _tally_rows(racks)), ("Hosts", _sum(hosts)), ("GPUs", _sum(gpus)),
                       ("Storage servers", _sum(servers)), ("Switches", _sum(switch_tally))],
            "facts": facts}


def rack_page(request, rack) -> dict:
    hosts = list(Host.objects.filter(rack=rack).order_by("slot", "id")
                 .values("id", "name", "serial", "status", "platform__name"))
    gpus = defaultdict(list)
    for g in GPU.objects.filter(host__rack=rack).order_by("slot").values("id", "name", "slot", "index", "status",
                                                                        "host_id"):
        gpus[g["host_id"]].append(g)
    nics = tally_by(NIC.objects.filter(host__rack=rack), "host_id")
    for h in hosts:
        h.update(gpus=gpus[h["id"]], gpu_tally=_tally_rows(gpus[h["id"]]), nics=nics[h["id"]])
    servers = list(StorageServer.objects.filter(rack=rack).order_by("slot", "id")
                   .values("id", "name", "serial", "status", "model__name", "storage_cluster__name"))
    ssds = tally_by(SSD.objects.filter(server__rack=rack), "server_id")
    for s in servers:
        s["ssds"] = ssds[s["id"]]
    switches = _with_links(list(Switch.objects.filter(rack=rack).order_by("fabric_id", "id").values(*SWITCH_FIELDS)))
    all_gpus = [g for rows in gpus.values() for g in rows]
    return {"hosts": hosts, "servers": servers, "switches": switches,
            "counts": [("Hosts", _tally_rows(hosts)), ("GPUs", _tally_rows(all_gpus)),
                       ("NICs", _sum(nics)), ("Storage servers", _tally_rows(servers)),
                       ("Switches", _tally_rows(switches))],
            "facts": [fact("Number in zone", rack.number)]}


# --- devices ------------------------------------------------------------------------------------------------------

NIC_FIELDS = ("id", "name", "serial", "status", "model__name", "fabric__role", "gpu_id", "gpu__name")


def _ports_by_nic(ports) -> defaultdict[int, list[dict]]:
    """The cabled port rows (links and far ends) of a Port queryset, by NIC id."""
    by_nic = defaultdict(list)
    for p in cabled_ports(ports.order_by("nic_id", "slot").values(*PORT_FIELDS)):
        by_nic[p["nic_id"]].append(p)
    return by_nic


def _nics_with_ports(nics, ports) -> list[dict]:
    """NIC rows (``values(*NIC_FIELDS)``), each with ``ports``: its cabled ports."""
    nics, by_nic = list(nics), _ports_by_nic(ports)
    for n in nics:
        n.update(ports=by_nic[n["id"]], fabric_label=FabricRole(n["fabric__role"]).label.split(" ")[0])
    return nics


def host_page(request, host) -> dict:
    gpus = list(GPU.objects.filter(host=host).order_by("slot")
                .values("id", "name", "serial", "slot", "index", "status", "model__name", "nic__id", "nic__name"))
    nics = _nics_with_ports(NIC.objects.filter(host=host).order_by("fabric__role", "slot").values(*NIC_FIELDS),
                            Port.objects.filter(nic__host=host))
    return {"gpus": gpus, "nics": nics,
            "counts": [("GPUs", _tally_rows(gpus)), ("NICs", _tally_rows(nics)),
                       ("Links", _tally_rows([p["cable"]["link"] for n in nics for p in n["ports"] if p["cable"]]))],
            "facts": [fact("Slot in rack", host.slot)]}


def gpu_page(request, gpu) -> dict:
    nics = _nics_with_ports(NIC.objects.filter(gpu=gpu).values(*NIC_FIELDS), Port.objects.filter(nic__gpu=gpu))
    siblings = list(GPU.objects.filter(host_id=gpu.host_id).order_by("slot").values("id", "name", "slot", "status"))
    return {"nics": nics, "siblings": siblings,
            "facts": [fact("Index in cluster", gpu.index), fact("Slot in host", gpu.slot),
                      fact("Rail NIC", nics[0]["name"] if nics else "none", "nic", nics[0]["id"] if nics else None),
                      *_gpu_model_facts(gpu.model)]}


def _gpu_model_facts(spec) -> list[dict]:
    """A GPU model's specs as facts; its generation's specs (nullable in the catalog table) where known."""
    arch = spec.arch.capitalize() if spec.arch else None
    if arch and spec.compute_capability:
        arch = f"{arch} (sm_{spec.compute_capability})"
    fp8 = f"{spec.fp8_tflops:,} FP8" if spec.fp8_tflops else "no FP8"
    nvlink = f"{spec.nvlink_gbps:,} Gb/s" + (f", NVLink {spec.nvlink_generation}" if spec.nvlink_generation else "") \
        + (", NVLink SHARP" if spec.nvls else "")
    return [fact("Model", spec.name), fact("Architecture", arch),
            fact("Memory", f"{spec.memory_gb} GB, {spec.memory_bandwidth_gbps:,} Gb/s"),
            fact("Compute", f"{spec.bf16_tflops:,} BF16 / {fp8} dense TFLOP/s"), fact("NVLink", nvlink),
            fact("Power", f"{spec.power_w} W")]


def nic_page(request, nic) -> dict:
    box = nic.host or nic.storage_server
    siblings = list(NIC.objects.filter(Q(host_id=nic.host_id) if nic.host_id else
                                       Q(storage_server_id=nic.storage_server_id))
                    .order_by("fabric__role", "slot").values("id", "name", "status"))
    facts = [fact("In", box.name, KIND_OF_MODEL[type(box)].key, box.pk),
             fact("GPU (rail)", nic.gpu.name if nic.gpu else None, "gpu", nic.gpu_id),
             fact("Fabric", nic.fabric.name, "fabric", nic.fabric_id), fact("Slot", nic.slot),
             fact("Speed", f"{nic.model.ports} × {nic.model.speed_gbps // nic.model.ports} Gb/s"),
             fact("Host link", f"PCIe Gen{nic.model.pcie_gen} x{nic.model.pcie_lanes}" if nic.model.pcie_gen
                  and nic.model.pcie_lanes else None),
             fact("Transport", nic.model.transport or None)]
    return {"ports": _ports_by_nic(Port.objects.filter(nic=nic))[nic.id], "siblings": siblings, "facts": facts}


def port_page(request, port) -> dict:
    device = port.nic or port.switch
    kind = KIND_OF_MODEL[type(device)]
    return {"cable": links_of_ports([port.id]).get(port.id),
            "facts": [fact(kind.label, device.name, kind.key, device.pk), fact("Port number", port.slot),
                      fact("Speed", f"{port.speed_gbps} Gb/s")]}


def _link_end(port) -> dict:
    device = port.nic or port.switch
    box = (port.nic.host or port.nic.storage_server) if port.nic else None
    return {"port": port, "device": device, "device_kind": KIND_OF_MODEL[type(device)].key,
            "box": box, "box_kind": KIND_OF_MODEL[type(box)].key if box else None}


def link_page(request, link) -> dict:
    cable = link.cable
    return {"ends": [("A (lower)", _link_end(link.a_port)), ("B (upper)", _link_end(link.b_port))],
            "facts": [fact("Fabric", link.fabric.name, "fabric", link.fabric_id),
                      fact("Tier", link.get_tier_display()), fact("Speed", f"{link.speed_gbps} Gb/s"),
                      fact("Cable", f"{cable} ({cable.get_medium_display()}, {cable.reach_m} m reach)")]}


def switch_page(request, switch) -> dict:
    ports = Port.objects.filter(switch=switch)
    problems = request.GET.get("show") == "problems"
    if problems:  # ports that are not active, or whose link is not
        ports = ports.filter(Q(status__in=NOT_ACTIVE) | Q(link_as_a__status__in=NOT_ACTIVE) |
                             Q(link_as_b__status__in=NOT_ACTIVE))
    page = paginate(request, ports.order_by("slot").values(*PORT_FIELDS))
    page.object_list = cabled_ports(page.object_list)
    facts = [fact("Fabric", switch.fabric.name, "fabric", switch.fabric_id),
             fact("Tier", f"{switch.get_tier_display()}, role {switch.role}"),
             fact("Group / member", f"{switch.group} / {switch.member}"),
             fact("Ports", f"{switch.model.ports} × {switch.model.speed_gbps} Gb/s, "
                           f"{switch.model.capacity_tbps:g} Tb/s, {switch.model.buffer_mb} MB buffer")]
    return {"ports": page, "problems": problems,
            "counts": [("Ports", tally(Port.objects.filter(switch=switch))),
                       ("Links down", tally(Link.objects.filter(b_switch=switch))),
                       ("Links up", tally(Link.objects.filter(a_switch=switch)))],
            "facts": facts}


def storageserver_page(request, server) -> dict:
    ssds = list(SSD.objects.filter(server=server).order_by("slot").values("id", "name", "serial", "slot", "status",
                                                                          "model__name"))
    nics = _nics_with_ports(NIC.objects.filter(storage_server=server).order_by("slot").values(*NIC_FIELDS),
                            Port.objects.filter(nic__storage_server=server))
    return {"ssds": ssds, "nics": nics,
            "counts": [("SSDs", _tally_rows(ssds)), ("NICs", _tally_rows(nics))],
            "facts": [fact("Storage cluster", server.storage_cluster.name), fact("Slot in rack", server.slot)]}


def ssd_page(request, ssd) -> dict:
    siblings = list(SSD.objects.filter(server_id=ssd.server_id).order_by("slot").values("id", "name", "status"))
    spec = ssd.model
    return {"siblings": siblings,
            "facts": [fact("Slot", ssd.slot), fact("Capacity", f"{spec.capacity_tb:g} TB"),
                      fact("Bandwidth", f"read {spec.read_gbps} Gb/s, write {spec.write_gbps} Gb/s")]}


PAGES = {"cluster": cluster_page, "fabric": fabric_page, "zone": zone_page, "rack": rack_page, "host": host_page,
         "gpu": gpu_page, "nic": nic_page, "port": port_page, "link": link_page, "switch": switch_page,
         "storageserver": storageserver_page, "ssd": ssd_page}
