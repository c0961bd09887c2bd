"""The kinds of item the inventory browser shows: for each, its model, its URL segment here, in the REST API and in
the admin, what the page header needs loaded with it, and where the item stands (its parent)."""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from twin.inventory import models as m
from twin.inventory.api.views import ENDPOINTS

# Kinds whose status the simulations read (twin/inventory/adapter.py): changing one changes the next run.
SIMULATED = {"gpu", "nic", "switch", "port", "link"}


@dataclass(frozen=True)
class Kind:
    key: str                        # /inventory/<key>/<pk>/
    model: type
    label: str
    plural: str
    related: tuple[str, ...] = ()   # select_related of the item page: its location and its catalog model
    hardware: str | None = None     # the field naming the item's catalog model (model, platform, cable)
    searchable: bool = True

    @property
    def has_serial(self) -> bool:
        return any(f.name == "serial" for f in self.model._meta.fields)

    @property
    def has_status(self) -> bool:
        return any(f.name == "status" for f in self.model._meta.fields)

    @property
    def verbose_name(self) -> str:
        return self.model._meta.verbose_name

    @property
    def change_permission(self) -> str:
        return f"inventory.change_{self.model._meta.model_name}"

    def api_url(self, pk: int) -> str:
        return f"/api/inventory/{ENDPOINTS[self.model]}/{pk}/"

    def admin_url(self, pk: int) -> str:
        return reverse(f"admin:inventory_{self.model._meta.model_name}_change", args=[pk])


def _in_rack(prefix: str) -> str:
    return f"{prefix}rack__zone__cluster"


_SWITCH = ("rack__zone__cluster", "zone__cluster", "fabric__cluster")


def _port_end(prefix: str) -> tuple[str, ...]:
    """select_related paths of a port and the device it is on, down to the cluster."""
    return (_in_rack(f"{prefix}nic__host__"), _in_rack(f"{prefix}nic__storage_server__"),
            *(f"{prefix}switch__{p}" for p in _SWITCH))


KINDS: dict[str, Kind] = {k.key: k for k in [
    Kind("cluster", m.Cluster, "Cluster", "clusters", searchable=False),
    Kind("fabric", m.Fabric, "Fabric", "fabrics", ("cluster",), searchable=False),
    Kind("zone", m.Zone, "Zone", "zones", ("cluster", "storage_cluster")),
    Kind("rack", m.Rack, "Rack", "racks", ("zone__cluster",)),
    Kind("host", m.Host, "Host", "hosts", (_in_rack(""), "platform"), "platform"),
    Kind("gpu", m.GPU, "GPU", "GPUs", (_in_rack("host__"), "model"), "model"),
    Kind("nic", m.NIC, "NIC", "NICs", (_in_rack("host__"), _in_rack("storage_server__"), "model", "fabric", "gpu"),
         "model"),
    Kind("switch", m.Switch, "Switch", "switches", (*_SWITCH, "model"), "model"),
    Kind("port", m.Port, "Port", "ports", _port_end("")),
    Kind("link", m.Link, "Link", "links", (*_port_end("a_port__"), *_port_end("b_port__"), "fabric", "cable"), "cable"),
    Kind("storageserver", m.StorageServer, "Storage server", "storage servers",
         (_in_rack(""), "model", "storage_cluster"), "model"),
    Kind("ssd", m.SSD, "SSD", "SSDs", (_in_rack("server__"), "model"), "model"),
]}
KIND_OF_MODEL = {k.model: k for k in KINDS.values()}
SEARCHABLE = [k for k in KINDS.values() if k.searchable]


def item_url(kind: str, pk: int) -> str:
    return reverse("inventory-item", kwargs={"kind": kind, "pk": pk})


def parent(obj):
    """The item ``obj`` stands in (the next step of its breadcrumb), or None for a cluster."""
    if isinstance(obj, m.Cluster):
        return None
    if isinstance(obj, (m.Zone, m.Fabric)):
        return obj.cluster
    if isinstance(obj, m.Rack):
        return obj.zone
    if isinstance(obj, (m.Host, m.StorageServer)):
        return obj.rack
    if isinstance(obj, m.GPU):
        return obj.host
    if isinstance(obj, m.NIC):
        return obj.host or obj.storage_server
    if isinstance(obj, m.SSD):
        return obj.server
    if isinstance(obj, m.Switch):
        return obj.rack or obj.zone or obj.fabric
    if isinstance(obj, m.Port):
        return obj.nic or obj.switch
    if isinstance(obj, m.Link):
        return parent(obj.a_port)     # a link stands where its lower end does
    raise TypeError(type(obj).__name__)


def breadcrumb(obj) -> list[dict]:
    """cluster / zone / rack / host ... down to the parent of ``obj``: [{kind, id, name, url}]."""
    trail = []
    item = parent(obj)
    while item is not None:
        kind = KIND_OF_MODEL[type(item)].key
        trail.append({"kind": kind, "id": item.pk, "name": item.name, "url": item_url(kind, item.pk)})
        item = parent(item)
    return trail[::-1]
