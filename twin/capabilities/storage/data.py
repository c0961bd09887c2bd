"""The Storage page's data: a cluster's storage clusters, their racks and servers in the order of the live frames'
server sections (StorageServer rows by id), with each server's status and active SSDs, the frontend fabric (the
same structure as the Fabric page's, :mod:`twin.web.fabric_data`, whose link order is the ``frontend_util``
section's) and the storage's rated bandwidth (:func:`twin.capabilities.storage.kinds.rated_bandwidth`).

Server names are not sent: the inventory names a server after its rack (``<rack>.s<slot:02>``, checked by
tests/web/test_storage.py) and the page writes them so. A server counts as down when it or its rack is not active
(as the engine's layout reads it, :mod:`twin.inventory.adapter`); ``ssds_active`` of a server lowers its SSD capacity in the engine by that share.
"""
from __future__ import annotations

import json

from django.db.models import Count, Q

from sim.fabric.spec import parse_spec
from twin.inventory.choices import STATUS_CODE, FabricRole
from twin.inventory.models import Fabric, Rack, StorageCluster, StorageServer
from twin.capabilities.storage.kinds import rated_bandwidth


def frontend_fabric(cluster) -> Fabric | None:
    return Fabric.objects.filter(cluster=cluster, role=FabricRole.FRONTEND).select_related("cluster").first()


def page_data(cluster) -> str:
    """storage.json: stores, racks, servers (columnar, live order), the rated bandwidth, the inventory URLs."""
    stores = list(StorageCluster.objects.filter(cluster=cluster).order_by("id").values("id", "name", "kind",
                                                                                        "status"))
    store_index = {s["id"]: k for k, s in enumerate(stores)}
    rows = list(StorageServer.objects.filter(cluster=cluster).order_by("id").annotate(
        ssds_n=Count("ssds"), ssds_up=Count("ssds", filter=Q(ssds__status="active"))).values_list(
        "id", "storage_cluster_id", "rack_id", "slot", "status", "ssds_n", "ssds_up"))
    rack_ids = sorted({r[2] for r in rows})
    racks = dict(Rack.objects.filter(id__in=rack_ids).values_list("id", "name"))
    rack_status = dict(Rack.objects.filter(id__in=rack_ids).values_list("id", "status"))
    rack_pos = {r: k for k, r in enumerate(rack_ids)}
    prefix = f"{cluster.name}."
    specs = {s.name: s for s in parse_spec(cluster.spec).storage}
    for s in stores:
        spec = specs.get(s["name"].removeprefix(prefix)) or next((x for x in specs.values() if x.kind == s["kind"]),
                                                                 None)
        s["nic_gbps"] = spec.nic_speed_gbps * spec.nics_per_server if spec else None
        s["servers_per_rack"] = spec.servers_per_rack if spec else None
    status = [STATUS_CODE[r[4]] if rack_status[r[2]] == "active" else STATUS_CODE[rack_status[r[2]]] for r in rows]
    doc = {
        "cluster": {"id": cluster.id, "name": cluster.name, "title": cluster.title},
        "stores": stores,
        "racks": {"id": rack_ids, "name": [racks[i].removeprefix(prefix) for i in rack_ids],
                  "status": [STATUS_CODE[rack_status[i]] for i in rack_ids]},
        "servers": {"count": len(rows), "id": [r[0] for r in rows],
                    "store": [store_index[r[1]] for r in rows], "rack": [rack_pos[r[2]] for r in rows],
                    "slot": [r[3] for r in rows], "status": status, "ssds": [r[5] for r in rows],
                    "ssds_active": [r[6] for r in rows]},
        "status_names": list(STATUS_CODE),
        "rated": rated_bandwidth(),
        "inventory": {"servers": "/inventory/storage-servers/", "ssds": "/inventory/ssds/"},
    }
    return json.dumps(doc, separators=(",", ":"))
