"""The kinds of item the inventory browser shows: for each, its model (whose meta gives the kind's URL segment here,
its names, its REST API route and its admin page), what the item page loads with it, and where the item stands (its
parent)."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_permission_codename
from django.urls import reverse
from django.utils.text import capfirst

from twin.api.base import ROUTE_BY_MODEL
from twin.inventory import models as m

# Kinds whose status the simulations read (twin/inventory/adapter.py): changing one changes the next run.
SIMULATED = {"gpu", "nic", "switch", "port", "link", "storageserver", "ssd", "rack"}


@dataclass(frozen=True)
class Kind:
    model: type
    related: tuple[str, ...] = ()   # select_related of the item page: its location and its catalog model
    hardware: str | None = None     # the field naming the item's catalog model (model, platform, cable)
    searchable: bool = True

    @property
    def key(self) -> str:
        """The URL segment: /inventory/<key>/<pk>/."""
        return self.model._meta.model_name

    @property
    def label(self) -> str:
        return capfirst(self.model._meta.verbose_name)

    @property
    def plural(self) -> str:
        return self.model._meta.verbose_name_plural

    @property
    def verbose_name(self) -> str:
        return self.model._meta.verbose_name

    @property
    def has_serial(self) -> bool:
        return any(f.name == "serial" for f in self.model._meta.fields)

    @property
    def has_status(self) -> bool:
        return any(f.name == "status" for f in self.model._meta.fields)

    @property
    def change_permission(self) -> str:
        meta = self.model._meta
        return f"{meta.app_label}.{get_permission_codename('change', meta)}"

    def api_url(self, pk: int) -> str:
        return reverse(f"api:{ROUTE_BY_MODEL[self.model]}-detail", args=[pk])

    def admin_url(self, pk: int) -> str:
        meta = self.model._meta
        return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[pk])


def _in_rack(prefix: str) -> str:
    return f"{prefix}rack__zone__cluster"


_SWITCH = ("rack__zone__cluster", "zone__cluster", "fabric__cluster")


def _port_end(prefix: str) -> tuple[str, ...]:
    """select_related paths of a port and the device it is on, down to the cluster."""
    return (_in_rack(f"{prefix}nic__host__"), _in_rack(f"{prefix}nic__storage_server__"),
            *(f"{prefix}switch__{p}" for p in _SWITCH))


KINDS: dict[str, Kind] = {k.key: k for k in [
    Kind(m.Cluster, searchable=False),
    Kind(m.Fabric, ("cluster",), searchable=False),
    Kind(m.Zone, ("cluster", "storage_cluster")),
    Kind(m.Rack, ("zone__cluster",)),
    Kind(m.Host, (_in_rack(""), "platform"), "platform"),
    Kind(m.GPU, (_in_rack("host__"), "model"), "model"),
    Kind(m.NIC, (_in_rack("host__"), _in_rack("storage_server__"), "model", "fabric", "gpu"), "model"),
    Kind(m.Switch, (*_SWITCH, "model"), "model"),
    Kind(m.Port, _port_end("")),
    Kind(m.Link, (*_port_end("a_port__"), *_port_end("b_port__"), "fabric", "cable"), "cable"),
    Kind(m.StorageServer, (_in_rack(""), "model", "storage_cluster"), "model"),
    Kind(m.SSD, (_in_rack("server__"), "model"), "model"),
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
