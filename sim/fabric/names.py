"""The names of a cluster's items: one module that makes and parses them, for the engine and the inventory.

The inventory's builder (``twin.inventory.builder``) names every row it writes with :func:`item_names`, and the
engine reads host lists (:mod:`sim.fabric.hostlist`) against :func:`host_names`, so a host list written from the inventory
(``meta-roce-24k.z03.r045.h1``) is read by ``python -m sim`` on a preset as it is by a run in the twin. A GPU is named
``<host>.gpu<slot>`` (``meta-roce-24k.z03.r045.h1.gpu5``; :func:`parse_gpu_name` reads it back).

The engine's reports name the nodes and links of a fabric more briefly, from the same parts: a switch by its tier
and :func:`switch_label` (``rtsw z03.090``), a NIC and an NVLink by the host's index (``nic h00012.r3``,
``nvlink egress h00012.g3``: :func:`nic_node_name`, :func:`nvlink_link_name`); the storage engine names hosts within
the cluster (``z03.r045.h1``: :func:`host_labels`).
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.layout import FABRIC_BACKEND, TIER_CORE, TIER_LEAF, ZONE_COMPUTE, ClusterLayout

FABRIC_SHORT = {0: "be", 1: "fe"}
GPU_SEPARATOR = ".gpu"             # <host>.gpu<slot>


def compute_zone_label(number: int) -> str:
    """A compute zone's label: ``z03``."""
    return f"z{number:02d}"


def rack_name(zone: str, number: int) -> str:
    """A rack's name in its zone's: ``<zone>.r045``."""
    return f"{zone}.r{number:03d}"


def host_name(rack: str, slot: int) -> str:
    """A host's name in its rack's: ``<rack>.h1``."""
    return f"{rack}.h{slot}"


def zone_labels(layout: ClusterLayout, storage_names: list[str] | None = None) -> list[str]:
    """``z03`` for compute zones, ``<storage cluster>-z<n>`` for storage zones."""
    if storage_names is None:
        storage_names = [s.name for s in layout.spec.storage]
    return [compute_zone_label(n) if kind == ZONE_COMPUTE else f"{storage_names[s]}-z{n}"
            for kind, s, n in zip(layout.zone_kind.tolist(), layout.zone_storage.tolist(),
                                  layout.zone_number.tolist())]


def host_names(layout: ClusterLayout) -> list[str]:
    """Each host's name (layout host order): ``<cluster>.z<zone>.r<rack>.h<slot>``, e.g. ``meta-roce-24k.z03.r045.h1``.
    A layout read from the inventory carries the inventory's own names (``layout.host_names``), which win."""
    given = getattr(layout, "host_names", None)
    if given is not None:
        return list(given)
    c = layout.spec.name
    zone = [f"{c}.{compute_zone_label(n)}" for n in layout.zone_number.tolist()]
    rack = [rack_name(zone[z], n) for z, n in zip(layout.rack_zone.tolist(), layout.rack_number.tolist())]
    return [host_name(rack[r], s) for r, s in zip(layout.host_rack.tolist(), layout.host_slot.tolist())]


def host_labels(layout: ClusterLayout, hosts, labels: list[str] | None = None) -> list[str]:
    """The names of the hosts ``hosts`` (layout ids) within the cluster, without its name: ``z03.r045.h1``.
    ``labels``: the layout's :func:`zone_labels` when the caller has them already."""
    labels = zone_labels(layout) if labels is None else labels
    hosts = np.atleast_1d(np.asarray(hosts, dtype=IDX))
    rack = layout.host_rack[hosts]
    return [host_name(rack_name(labels[z], n), s)
            for z, n, s in zip(layout.rack_zone[rack].tolist(), layout.rack_number[rack].tolist(),
                               layout.host_slot[hosts].tolist())]


def gpu_name(host: str, slot: int) -> str:
    """A GPU's name from its host's name and its slot: ``<host>.gpu<slot>``."""
    return f"{host}{GPU_SEPARATOR}{slot}"


def parse_gpu_name(name: str) -> tuple[str, str] | None:
    """``(host, slot)`` of a GPU's name as :func:`gpu_name` makes it (the slot as written, unchecked), or ``None``
    when ``name`` is not one.

    >>> parse_gpu_name("meta-roce-24k.z03.r045.h1.gpu5"), parse_gpu_name("h1:5")
    (('meta-roce-24k.z03.r045.h1', '5'), None)
    """
    host, sep, slot = name.rpartition(GPU_SEPARATOR)
    return (host, slot) if sep else None


def switch_label(tier: int, zone: str, group: int, member: int, member_digits: int = 2) -> str:
    """A switch's place in its fabric: leaf ``<zone>.090``, spine ``<zone>.s07``, core ``p07.c02`` (the core
    member's number padded to ``member_digits``)."""
    if tier == TIER_LEAF:
        return f"{zone}.{group:03d}"
    if tier == TIER_CORE:
        return f"p{group:02d}.c{member:0{member_digits}d}"
    return f"{zone}.s{group:02d}"


def host_code(host: int) -> str:
    """A host by its index, as the engine's fabric reports name it: ``h00012``."""
    return f"h{host:05d}"


def nic_node_name(host: int, slot: int) -> str:
    """A backend NIC as a node of the fabric: ``nic h00012.r3`` (the rail of GPU slot 3 of host 12)."""
    return f"nic {host_code(host)}.r{slot}"


def nvlink_link_name(way: str, host: int, slot: int) -> str:
    """A GPU's virtual NVLink link (``way``: egress or ingress): ``nvlink egress h00012.g3``."""
    return f"nvlink {way} {host_code(host)}.g{slot}"


def item_names(layout: ClusterLayout, storage_names: list[str] | None = None) -> dict[str, list[str]]:
    """Unique, readable names for every item: ``meta-roce-24k.z03.r045.h1.gpu5``, ``...be.rtsw.z03.045:17``."""
    c = layout.spec.name
    zone_label = zone_labels(layout, storage_names)
    zone = [f"{c}.{label}" for label in zone_label]
    rack = [rack_name(zone[z], n) for z, n in zip(layout.rack_zone.tolist(), layout.rack_number.tolist())]
    host = [host_name(rack[r], s) for r, s in zip(layout.host_rack.tolist(), layout.host_slot.tolist())]
    gpu = [gpu_name(host[h], s) for h, s in zip(layout.gpu_host.tolist(), layout.gpu_slot.tolist())]
    server = [f"{rack[r]}.s{s:02d}" for r, s in zip(layout.server_rack.tolist(), layout.server_slot.tolist())]
    ssd = [f"{server[v]}.ssd{s}" for v, s in zip(layout.ssd_server.tolist(), layout.ssd_slot.tolist())]
    nic = [f"{host[h]}.{'be' if f == FABRIC_BACKEND else 'fe'}{s}" if h >= 0 else f"{server[v]}.fe{s}"
           for h, v, f, s in zip(layout.nic_host.tolist(), layout.nic_server.tolist(), layout.nic_fabric.tolist(),
                                 layout.nic_slot.tolist())]
    switch = []
    for f, t, z, g, m in zip(layout.switch_fabric.tolist(), layout.switch_tier.tolist(), layout.switch_zone.tolist(),
                             layout.switch_group.tolist(), layout.switch_member.tolist()):
        switch.append(f"{c}.{FABRIC_SHORT[f]}.{layout.tier_names[(f, t)]}.{switch_label(t, zone_label[z], g, m)}")
    port = [f"{nic[n] if n >= 0 else switch[s]}:{slot}"
            for n, s, slot in zip(layout.port_nic.tolist(), layout.port_switch.tolist(), layout.port_slot.tolist())]
    link = [f"{port[a]}~{port[b]}" for a, b in zip(layout.link_a.tolist(), layout.link_b.tolist())]
    return {"zone": zone, "rack": rack, "host": host, "gpu": gpu, "server": server, "ssd": ssd, "nic": nic,
            "switch": switch, "port": port, "link": link}
