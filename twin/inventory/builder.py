"""Build a cluster's rows from a spec, and delete them: whole tables at a time, inside one transaction.

The spec is expanded by ``sim.layout.expand`` (the same arrays the engine simulates); every array becomes a
column. Primary keys are reserved up front (``bulk.reserve_ids``) so rows reference each other by
``base + layout index``. An error anywhere rolls the whole build back: nothing is half-written.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from django.db import transaction

from sim.catalog import load_catalog
from sim.layout import FABRIC_BACKEND, TIER_CORE, TIER_LEAF, ZONE_COMPUTE, ClusterLayout, expand
from sim.spec import ClusterSpec
from twin.inventory.bulk import analyze, delete_where, insert_columns, reserve_ids
from twin.inventory.choices import FABRIC_KIND_BY_SPEC, Status
from twin.inventory.models import (
    CATALOG_MODELS, GPU, NIC, SSD, Cluster, Fabric, Host, Link, Port, Rack, StorageCluster, StorageServer, Switch, Zone,
)

FABRIC_SHORT = {0: "be", 1: "fe"}
# Children before parents: the order deletes must take.
CLUSTER_TABLES = (Link, Port, SSD, NIC, GPU, StorageServer, Switch, Host, Rack, Zone, StorageCluster, Fabric)


@dataclass
class BuildResult:
    cluster: Cluster
    created: bool
    spec_differs: bool = False
    rows: int = 0


def sync_catalog() -> dict[str, dict[str, int]]:
    """Create or update the catalog tables from ``sim/presets/catalog.toml``; return ids by kind and slug."""
    ids: dict[str, dict[str, int]] = {}
    for hw in load_catalog().all():
        model = CATALOG_MODELS[hw.kind]
        obj, _ = model.objects.update_or_create(slug=hw.slug, defaults={"vendor": hw.vendor, "name": hw.name,
                                                                         **hw.specs})
        ids.setdefault(hw.kind, {})[hw.slug] = obj.id
    return ids


def _serials(prefix: str, cluster: str, n: int) -> list[str]:
    code = hashlib.sha1(cluster.encode()).hexdigest()[:6].upper()
    return [f"{prefix}-{code}-{i:07d}" for i in range(n)]


def _ids(base: int, refs: np.ndarray) -> list:
    """Database ids of the layout indexes ``refs`` (``base + index``), None where the relation does not apply (-1)."""
    out = (refs + base).astype(object)
    out[refs < 0] = None
    return out.tolist()


def _status(n: int) -> list[str]:
    return [Status.ACTIVE.value] * n


class _Writer:
    """Writes one table after another, reserving its ids and reporting rows to ``progress``."""

    def __init__(self, cluster: Cluster, progress: Callable[[str, int], None] | None):
        self.cluster, self.progress, self.rows = cluster, progress, 0

    def write(self, model, n: int, columns: dict) -> int:
        """Insert ``n`` rows of ``model`` with ids base..base+n-1 and the cluster; return base (id of index 0)."""
        base = reserve_ids(model, n)
        columns = {"id": np.arange(base, base + n), "cluster_id": [self.cluster.id] * n, **columns}
        step = (lambda k: self.progress(model._meta.verbose_name_plural, k)) if self.progress else None
        self.rows += insert_columns(model, columns, step)
        return base


def item_names(layout: ClusterLayout, storage_names: list[str]) -> dict[str, list[str]]:
    """Unique, readable names for every item: ``meta-roce-24k.z03.r045.h1.gpu5``, ``...be.rtsw.z03.045:17``."""
    c = layout.spec.name
    zone_label = [f"z{n:02d}" if kind == ZONE_COMPUTE else f"{storage_names[s]}-z{n}"
                  for kind, s, n in zip(layout.zone_kind.tolist(), layout.zone_storage.tolist(),
                                        layout.zone_number.tolist())]
    zone = [f"{c}.{label}" for label in zone_label]
    rack = [f"{zone[z]}.r{n:03d}" for z, n in zip(layout.rack_zone.tolist(), layout.rack_number.tolist())]
    host = [f"{rack[r]}.h{s}" for r, s in zip(layout.host_rack.tolist(), layout.host_slot.tolist())]
    gpu = [f"{host[h]}.gpu{s}" for h, s in zip(layout.gpu_host.tolist(), layout.gpu_slot.tolist())]
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


def total_rows(layout: ClusterLayout) -> int:
    """Rows a build writes (for progress bars)."""
    counts = layout.counts()
    return sum(counts[k] for k in ("zones", "racks", "hosts", "gpus", "storage_servers", "ssds", "nics",
                                   "switches", "ports", "links"))


def delete_cluster(cluster: Cluster) -> int:
    """Delete a cluster and everything in it with one DELETE per table (no per-object cascade); return rows."""
    with transaction.atomic():
        rows = sum(delete_where(model, "cluster_id", cluster.id) for model in CLUSTER_TABLES)
        rows += delete_where(Cluster, "id", cluster.id)
    return rows


def build_cluster(spec: ClusterSpec, replace: bool = False,
                  progress: Callable[[str, int], None] | None = None) -> BuildResult:
    """Build ``spec`` into the database, atomically. Idempotent: an existing cluster is kept unless ``replace``.

    ``progress(table, rows)`` is called as rows are written (``total_rows`` gives the total up front).
    """
    layout = expand(spec)
    with transaction.atomic():
        existing = Cluster.objects.filter(name=spec.name).first()
        if existing and not replace:
            return BuildResult(existing, created=False, spec_differs=existing.spec != spec.source)
        if existing:
            delete_cluster(existing)
        catalog = sync_catalog()
        names = item_names(layout, [s.name for s in spec.storage])
        cluster = Cluster.objects.create(name=spec.name, title=spec.title, description=spec.description,
                                         spec=spec.source)
        w = _Writer(cluster, progress)
        fabrics = [Fabric.objects.create(cluster=cluster, name=f"{spec.name}.{FABRIC_SHORT[role]}", role=role,
                                         kind=FABRIC_KIND_BY_SPEC[f.kind], speed_gbps=f.speed_gbps)
                   for role, f in enumerate(spec.fabrics)]
        storage = [StorageCluster.objects.create(cluster=cluster, name=f"{spec.name}.{s.name}", kind=s.kind)
                   for s in spec.storage]
        storage_ids = np.array([s.id for s in storage] or [0])
        fabric_ids = np.array([f.id for f in fabrics])
        ids = lambda kind, slugs: np.array([catalog[kind][s] for s in slugs], dtype=np.int64)  # noqa: E731

        nz = len(layout.zone_kind)
        zone0 = w.write(Zone, nz, {
            "name": names["zone"], "kind": layout.zone_kind, "number": layout.zone_number,
            "storage_cluster_id": [None if s < 0 else int(storage_ids[s]) for s in layout.zone_storage.tolist()],
            "status": _status(nz)})
        nr = len(layout.rack_zone)
        rack0 = w.write(Rack, nr, {"name": names["rack"], "serial": _serials("RK", spec.name, nr),
                                   "status": _status(nr), "zone_id": zone0 + layout.rack_zone,
                                   "number": layout.rack_number})
        nh = len(layout.host_rack)
        host0 = w.write(Host, nh, {"name": names["host"], "serial": _serials("HT", spec.name, nh),
                                   "status": _status(nh), "rack_id": rack0 + layout.host_rack,
                                   "platform_id": [catalog["platform"][spec.layout.host_platform]] * nh,
                                   "slot": layout.host_slot})
        ng = len(layout.gpu_host)
        gpu0 = w.write(GPU, ng, {"name": names["gpu"], "serial": _serials("GPU", spec.name, ng),
                                 "status": _status(ng), "host_id": host0 + layout.gpu_host,
                                 "model_id": [catalog["gpu"][spec.layout.gpu]] * ng, "slot": layout.gpu_slot,
                                 "index": np.arange(ng)})
        nv = len(layout.server_rack)
        server_models = ids("storage_server", [s.server for s in spec.storage])
        server0 = w.write(StorageServer, nv, {
            "name": names["server"], "serial": _serials("SRV", spec.name, nv), "status": _status(nv),
            "storage_cluster_id": storage_ids[layout.server_storage], "rack_id": rack0 + layout.server_rack,
            "model_id": server_models[layout.server_storage], "slot": layout.server_slot})
        nd = len(layout.ssd_server)
        ssd_models = ids("ssd", [s.ssd for s in spec.storage])
        w.write(SSD, nd, {"name": names["ssd"], "serial": _serials("SSD", spec.name, nd), "status": _status(nd),
                          "server_id": server0 + layout.ssd_server,
                          "model_id": ssd_models[layout.server_storage[layout.ssd_server]],
                          "slot": layout.ssd_slot})
        nn = len(layout.nic_fabric)
        nic0 = w.write(NIC, nn, {
            "name": names["nic"], "serial": _serials("NIC", spec.name, nn), "status": _status(nn),
            "fabric_id": fabric_ids[layout.nic_fabric],
            "host_id": _ids(host0, layout.nic_host),
            "storage_server_id": _ids(server0, layout.nic_server),
            "gpu_id": _ids(gpu0, layout.nic_gpu),
            "model_id": ids("nic", layout.nic_models)[layout.nic_model], "slot": layout.nic_slot})
        ns = len(layout.switch_tier)
        switch_rack = layout.switch_rack()
        switch0 = w.write(Switch, ns, {
            "name": names["switch"], "serial": _serials("SW", spec.name, ns), "status": _status(ns),
            "fabric_id": fabric_ids[layout.switch_fabric],
            "model_id": ids("switch", layout.switch_models)[layout.switch_model], "tier": layout.switch_tier,
            "role": [layout.tier_names[(f, t)] for f, t in zip(layout.switch_fabric.tolist(),
                                                                layout.switch_tier.tolist())],
            "zone_id": _ids(zone0, layout.switch_zone),
            "rack_id": _ids(rack0, switch_rack),
            "group": layout.switch_group, "member": layout.switch_member})
        np_ = len(layout.port_slot)
        port0 = w.write(Port, np_, {
            "name": names["port"], "status": _status(np_),
            "switch_id": _ids(switch0, layout.port_switch),
            "nic_id": _ids(nic0, layout.port_nic),
            "slot": layout.port_slot, "speed_gbps": layout.port_speed_gbps})
        nl = len(layout.link_a)
        w.write(Link, nl, {
            "name": names["link"], "serial": _serials("CBL", spec.name, nl), "status": _status(nl),
            "fabric_id": fabric_ids[layout.link_fabric], "tier": layout.link_tier,
            "a_port_id": port0 + layout.link_a, "b_port_id": port0 + layout.link_b,
            "a_switch_id": _ids(switch0, layout.port_switch[layout.link_a]),
            "b_switch_id": switch0 + layout.port_switch[layout.link_b],
            "speed_gbps": layout.link_speed_gbps, "cable_id": ids("cable", layout.cable_models)[layout.link_cable]})
    analyze(CLUSTER_TABLES)
    return BuildResult(cluster, created=True, rows=w.rows)
