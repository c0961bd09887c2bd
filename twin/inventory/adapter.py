"""The one adapter from the inventory to the engine: a cluster's rows as a ``sim.fabric.layout.ClusterLayout``.

The database is the source of truth, so the layout is read from the rows themselves (not re-expanded from the
spec): a link set to failed through the API, a switch drained in the admin, a cable added by hand are all in the
arrays the next simulation gets. Reading is a fixed number of column queries turned into numpy arrays; ids are
mapped to dense indexes with ``searchsorted``. For an unedited cluster the result equals ``expand(spec)``.
"""
from __future__ import annotations

import numpy as np

from sim.fabric.layout import STATUS_ACTIVE, ClusterLayout
from sim.fabric.spec import parse_spec
from twin.inventory.choices import STATUS_CODE
from twin.inventory.models import (
    GPU, NIC, SSD, CableModel, Fabric, Host, Link, NICModel, Port, Rack, StorageCluster, StorageServer, Switch,
    SwitchModel, Zone,
)

IDX = np.int64


def _columns(queryset, *fields, order="id"):
    """The columns ``fields`` of ``queryset`` (ordered by ``order``) as a list of numpy arrays; None -> -1."""
    rows = list(queryset.order_by(order).values_list(*fields))
    columns = list(zip(*rows)) if rows else [() for _ in fields]
    return [np.array([-1 if v is None else v for v in col], dtype=IDX) if f != "status"
            else np.array([STATUS_CODE[v] for v in col], dtype=np.int8) for f, col in zip(fields, columns)]


def _dense(ids: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Positions of ``refs`` in the sorted id array ``ids``; -1 stays -1."""
    out = np.searchsorted(ids, refs).astype(IDX)
    out[refs < 0] = -1
    return out


def _model_index(refs: np.ndarray, model) -> tuple[np.ndarray, list[str]]:
    """Catalog foreign keys as indexes into a list of slugs, as the layout keeps them."""
    used = sorted(set(refs.tolist()))
    slugs = dict(model.objects.filter(id__in=used).values_list("id", "slug"))
    return np.searchsorted(np.array(used, dtype=IDX), refs).astype(IDX), [slugs[i] for i in used]


def layout_from_db(cluster) -> ClusterLayout:
    """Read ``cluster`` from the database into a ClusterLayout, statuses included."""
    spec = parse_spec(cluster.spec)
    of = {"cluster": cluster}
    role = dict(Fabric.objects.filter(**of).values_list("id", "role"))
    storage_ids = np.array(sorted(StorageCluster.objects.filter(**of).values_list("id", flat=True)), dtype=IDX)

    zone_id, zone_kind, zone_storage, zone_number = _columns(Zone.objects.filter(**of), "id", "kind",
                                                             "storage_cluster_id", "number")
    rack_id, rack_zone, rack_number = _columns(Rack.objects.filter(**of), "id", "zone_id", "number")
    host_id, host_rack, host_slot = _columns(Host.objects.filter(**of), "id", "rack_id", "slot")
    gpu_id, gpu_host, gpu_slot, gpu_status = _columns(GPU.objects.filter(**of), "id", "host_id", "slot", "status",
                                                      order="index")
    rack_status, = _columns(Rack.objects.filter(**of), "status")
    server_id, server_storage, server_rack, server_slot, server_status = _columns(
        StorageServer.objects.filter(**of), "id", "storage_cluster_id", "rack_id", "slot", "status")
    _, ssd_server, ssd_slot, ssd_status = _columns(SSD.objects.filter(**of), "id", "server_id", "slot", "status")
    nic_id, nic_fabric, nic_host, nic_server, nic_slot, nic_gpu, nic_model, nic_status = _columns(
        NIC.objects.filter(**of), "id", "fabric_id", "host_id", "storage_server_id", "slot", "gpu_id", "model_id",
        "status")
    sw_id, sw_fabric, sw_tier, sw_zone, sw_group, sw_member, sw_model, sw_status = _columns(
        Switch.objects.filter(**of), "id", "fabric_id", "tier", "zone_id", "group", "member", "model_id", "status")
    # Ports in layout order: NIC ports by NIC, then each switch's ports together, by slot.
    port_id, port_nic, port_switch, port_slot, port_speed, port_status = _columns(
        Port.objects.filter(**of), "id", "nic_id", "switch_id", "slot", "speed_gbps", "status")
    port_nic, port_switch = _dense(nic_id, port_nic), _dense(sw_id, port_switch)
    order = np.lexsort((port_slot, port_switch, port_nic, port_nic < 0))
    port_id, port_nic, port_switch, port_slot, port_speed, port_status = (
        a[order] for a in (port_id, port_nic, port_switch, port_slot, port_speed, port_status))
    switch_port_count = np.bincount(port_switch[port_switch >= 0], minlength=len(sw_id)).astype(IDX)
    first_switch_port = int(np.sum(port_nic >= 0))
    switch_port_base = first_switch_port + np.concatenate(([0], np.cumsum(switch_port_count)[:-1])).astype(IDX)
    by_id = np.argsort(port_id)  # new positions of the ports, in id order: maps a port id to its position
    id_sorted = port_id[by_id]

    _, link_fabric, link_tier, link_a, link_b, link_speed, link_cable, link_status = _columns(
        Link.objects.filter(**of), "id", "fabric_id", "tier", "a_port_id", "b_port_id", "speed_gbps", "cable_id",
        "status")
    link_a, link_b = by_id[np.searchsorted(id_sorted, link_a)], by_id[np.searchsorted(id_sorted, link_b)]

    nic_model, nic_models = _model_index(nic_model, NICModel)
    sw_model, switch_models = _model_index(sw_model, SwitchModel)
    link_cable, cable_models = _model_index(link_cable, CableModel)
    tier_names = {(r, t): tier.name for r, f in enumerate(spec.fabrics) for t, tier in enumerate(f.tiers)}
    roles = lambda fabric_ids: np.array([role[f] for f in fabric_ids.tolist()], dtype=IDX)  # noqa: E731
    return ClusterLayout(
        spec=spec,
        zone_kind=zone_kind, zone_storage=_dense(storage_ids, zone_storage), zone_number=zone_number,
        rack_zone=_dense(zone_id, rack_zone), rack_number=rack_number,
        host_rack=_dense(rack_id, host_rack), host_slot=host_slot,
        gpu_host=_dense(host_id, gpu_host), gpu_slot=gpu_slot,
        server_storage=_dense(storage_ids, server_storage), server_rack=_dense(rack_id, server_rack),
        server_slot=server_slot, ssd_server=_dense(server_id, ssd_server), ssd_slot=ssd_slot,
        nic_fabric=roles(nic_fabric), nic_host=_dense(host_id, nic_host), nic_server=_dense(server_id, nic_server),
        nic_slot=nic_slot, nic_gpu=_gpu_positions(gpu_id, nic_gpu), nic_model=nic_model,
        switch_fabric=roles(sw_fabric), switch_tier=sw_tier, switch_zone=_dense(zone_id, sw_zone),
        switch_group=sw_group, switch_member=sw_member, switch_model=sw_model,
        switch_port_base=switch_port_base, switch_port_count=switch_port_count,
        port_nic=port_nic, port_switch=port_switch, port_slot=port_slot, port_speed_gbps=port_speed,
        link_fabric=roles(link_fabric), link_tier=link_tier, link_a=link_a, link_b=link_b,
        link_speed_gbps=link_speed, link_cable=link_cable,
        gpu_status=gpu_status, nic_status=nic_status, switch_status=sw_status, port_status=port_status,
        link_status=link_status, server_status=_with_rack(server_status, rack_status, _dense(rack_id, server_rack)),
        ssd_status=ssd_status,
        nic_models=nic_models, switch_models=switch_models, cable_models=cable_models, tier_names=tier_names,
        host_names=list(Host.objects.filter(**of).order_by("id").values_list("name", flat=True)),
    )


def _with_rack(status: np.ndarray, rack_status: np.ndarray, rack: np.ndarray) -> np.ndarray:
    """A storage server's status as the engine sees it: its own, or its rack's when the rack is not active (a
    failed or drained storage rack takes its servers out: sim.storage.topology leaves them out of placement)."""
    out = status.copy()
    down = rack_status[rack] != STATUS_ACTIVE
    take = down & (out == STATUS_ACTIVE)
    out[take] = rack_status[rack][take]
    return out


def _gpu_positions(gpu_ids_by_index: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """GPU foreign keys as GPU positions (the cluster index order), -1 where none."""
    by_id = np.argsort(gpu_ids_by_index)
    out = by_id[np.searchsorted(gpu_ids_by_index[by_id], np.maximum(refs, 0))].astype(IDX)
    out[refs < 0] = -1
    return out
