"""The names of a cluster's items: one rule for the engine and the inventory.

The inventory's builder (``twin.inventory.builder``) names every row it writes with :func:`item_names`, and the
engine reads host lists (:mod:`sim.fabric.hostlist`) against :func:`host_names`, so a host list written from the inventory
(``meta-roce-24k.z03.r045.h1``) is read by ``python -m sim`` on a preset as it is by a run in the twin. A GPU is named
``<host>.gpu<slot>`` (``meta-roce-24k.z03.r045.h1.gpu5``).
"""
from __future__ import annotations

from sim.fabric.layout import FABRIC_BACKEND, TIER_CORE, TIER_LEAF, ZONE_COMPUTE, ClusterLayout

FABRIC_SHORT = {0: "be", 1: "fe"}


def zone_labels(layout: ClusterLayout, storage_names: list[str] | None = None) -> list[str]:
    """``z03`` for compute zones, ``<storage cluster>-z<n>`` for storage zones."""
    if storage_names is None:
        storage_names = [s.name for s in layout.spec.storage]
    return [f"z{n:02d}" if kind == ZONE_COMPUTE else f"{storage_names[s]}-z{n}"
            for kind, s, n in zip(layout.zone_kind.tolist(), layout.zone_storage.tolist(),
                                  layout.zone_number.tolist())]


def host_names(layout: ClusterLayout) -> list[str]:
    """Each host's name (layout host order): ``<cluster>.z<zone>.r<rack>.h<slot>``, e.g. ``meta-roce-24k.z03.r045.h1``.
    A layout read from the inventory carries the inventory's own names (``layout.host_names``), which win."""
    given = getattr(layout, "host_names", None)
    if given is not None:
        return list(given)
    c = layout.spec.name
    zone = [f"{c}.z{n:02d}" for n in layout.zone_number.tolist()]
    rack = [f"{zone[z]}.r{n:03d}" for z, n in zip(layout.rack_zone.tolist(), layout.rack_number.tolist())]
    return [f"{rack[r]}.h{s}" for r, s in zip(layout.host_rack.tolist(), layout.host_slot.tolist())]


def gpu_name(host: str, slot: int) -> str:
    """A GPU's name from its host's name and its slot: ``<host>.gpu<slot>``."""
    return f"{host}.gpu{slot}"


def item_names(layout: ClusterLayout, storage_names: list[str] | None = None) -> dict[str, list[str]]:
    """Unique, readable names for every item: ``meta-roce-24k.z03.r045.h1.gpu5``, ``...be.rtsw.z03.045:17``."""
    c = layout.spec.name
    zone_label = zone_labels(layout, storage_names)
    zone = [f"{c}.{label}" for label in zone_label]
    rack = [f"{zone[z]}.r{n:03d}" for z, n in zip(layout.rack_zone.tolist(), layout.rack_number.tolist())]
    host = [f"{rack[r]}.h{s}" for r, s in zip(layout.host_rack.tolist(), layout.host_slot.tolist())]
    gpu = [gpu_name(host[h], s) for h, s in zip(layout.gpu_host.tolist(), layout.gpu_slot.tolist())]
    server = [f"{rack[r]}.s{s:02d}" for r, s in zip(layout.server_rack.tolist(), layout.server_slot.tolist())]
    ssd = [f"{server[v]}.ssd{s}" for v, s in zip(layout.ssd_server.tolist(), layout.ssd_slot.tolist())]
    nic = [f"{host[h]}.{'be' if f == FABRIC_BACKEND else 'fe'}{s}" if h >= 0 else f"{server[v]}.fe{s}"
           for h, v, f, s in zip(layout.nic_host.tolist(), layout.nic_server.tolist(), layout.nic_fabric.tolist(),
                                 layout.nic_slot.tolist())]
    switch = []
    for f, t, z, g, m in zip(layout.switch_fabric.tolist(), layout.switch_tier.tolist(), layout.switch_zone.tolist(),
                             layout.switch_group.tolist(), layout.switch_member.tolist()):
        prefix = f"{c}.{FABRIC_SHORT[f]}.{layout.tier_names[(f, t)]}"
        if t == TIER_LEAF:
            switch.append(f"{prefix}.{zone_label[z]}.{g:03d}")
        elif t == TIER_CORE:
            switch.append(f"{prefix}.p{g:02d}.c{m:02d}")
        else:
            switch.append(f"{prefix}.{zone_label[z]}.s{g:02d}")
    port = [f"{nic[n] if n >= 0 else switch[s]}:{slot}"
            for n, s, slot in zip(layout.port_nic.tolist(), layout.port_switch.tolist(), layout.port_slot.tolist())]
    link = [f"{port[a]}~{port[b]}" for a, b in zip(layout.link_a.tolist(), layout.link_b.tolist())]
    return {"zone": zone, "rack": rack, "host": host, "gpu": gpu, "server": server, "ssd": ssd, "nic": nic,
            "switch": switch, "port": port, "link": link}
