"""Ports with the links cabled to them and the port and device at the other end: two queries for any number of
ports (the ports, then their links joined to both ends), used by the host, NIC, switch, storage server and port
pages."""
from __future__ import annotations

from django.db.models import Q

from twin.inventory.choices import LinkTier
from twin.inventory.models import Link

PORT_FIELDS = ("id", "name", "status", "nic_id")   # what a port row of a table shows, and its NIC for grouping

_END_FIELDS = ("id", "name", "status", "switch_id", "switch__name", "switch__status", "switch__role",
               "nic_id", "nic__name", "nic__status", "nic__host_id", "nic__host__name",
               "nic__storage_server_id", "nic__storage_server__name")


def _end(row: dict, end: str) -> dict:
    """One end of a link row: its port, the device the port is on, and the host or server of a NIC."""
    v = {f: row[f"{end}__{f}" if f != "id" else f"{end}_id"] for f in _END_FIELDS}
    if v["switch_id"]:
        device = {"kind": "switch", "id": v["switch_id"], "name": v["switch__name"], "status": v["switch__status"],
                  "role": v["switch__role"]}
        box = None
    else:
        device = {"kind": "nic", "id": v["nic_id"], "name": v["nic__name"], "status": v["nic__status"]}
        box = ({"kind": "host", "id": v["nic__host_id"], "name": v["nic__host__name"]} if v["nic__host_id"] else
               {"kind": "storageserver", "id": v["nic__storage_server_id"], "name": v["nic__storage_server__name"]})
    return {"port": {"id": v["id"], "name": v["name"], "status": v["status"]}, "device": device, "box": box}


def links_of_ports(port_ids: list[int]) -> dict[int, dict]:
    """For each cabled port id: {link, far} with the link (status, tier, speed, up or down from this port) and the
    far end (port, device, and the host or storage server when the far device is a NIC)."""
    if not port_ids:
        return {}
    fields = ["id", "name", "status", "tier", "speed_gbps", "a_port_id", "b_port_id"]
    fields += [f"{end}__{f}" for end in ("a_port", "b_port") for f in _END_FIELDS if f != "id"]
    wanted, out = set(port_ids), {}
    for row in Link.objects.filter(Q(a_port_id__in=port_ids) | Q(b_port_id__in=port_ids)).values(*fields):
        link = {"id": row["id"], "name": row["name"], "status": row["status"], "speed_gbps": row["speed_gbps"],
                "tier": LinkTier(row["tier"]).label}
        ends = {"a_port": _end(row, "a_port"), "b_port": _end(row, "b_port")}
        for near, far, direction in (("a_port", "b_port", "up"), ("b_port", "a_port", "down")):
            if row[f"{near}_id"] in wanted:
                out[row[f"{near}_id"]] = {"link": {**link, "direction": direction}, "far": ends[far]}
    return out


def cabled_ports(rows) -> list[dict]:
    """Port rows (``values(*PORT_FIELDS)``, sliced to a page), each with ``cable``: its link and far end, or None."""
    rows = list(rows)
    cables = links_of_ports([r["id"] for r in rows])
    for r in rows:
        r["cable"] = cables.get(r["id"])
    return rows
