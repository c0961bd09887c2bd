"""Build a cluster's rows from a spec, and delete them: whole tables at a time, inside one transaction.

The spec is expanded by ``sim.fabric.layout.expand`` (the same arrays the engine simulates); every array becomes a
column. Primary keys are reserved up front (``bulk.reserve_ids``) so rows reference each other by
``base + layout index``; ``bulk.BulkLoad`` checks those references on the arrays before each table is written (and
PostgreSQL's per-row foreign-key triggers are skipped where the role may). An error anywhere rolls the whole build
back: nothing is half-written.

A build is split by what it writes, each step a function of the shared ``_Build``: the named parents (fabrics,
storage clusters), the sites (zones, racks), compute (hosts, GPUs), storage (servers, SSDs) and the network (NICs,
switches, ports, links).
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db import IntegrityError, transaction

from sim.fabric.catalog import load_catalog
from sim.fabric.layout import ClusterLayout, expand
from sim.fabric.names import FABRIC_SHORT, item_names  # noqa: F401  (one naming rule, shared with the engine)
from sim.fabric.spec import ClusterSpec
from twin.inventory import changelog
from twin.inventory.bulk import (
    BulkLoad, analyze, delete_where, foreign_key_triggers_off, referenced_from_outside,
)
from twin.inventory.choices import FABRIC_KIND_BY_SPEC, ChangeAction, Status
from twin.inventory.signals import cluster_built, cluster_deleting
from twin.inventory.models import (
    CATALOG_MODELS, GPU, NIC, SSD, Cluster, Fabric, Host, Link, ObjectChange, Port, Rack, StorageCluster, StorageServer,
    Switch, Zone,
)

# Children before parents: the order deletes must take.
CLUSTER_TABLES = (Link, Port, SSD, NIC, GPU, StorageServer, Switch, Host, Rack, Zone, StorageCluster, Fabric)
# A build of this many rows or more refreshes the planner's statistics (bulk.analyze): for a 24k cluster (311k rows)
# they decide whether the indexes are used; a small one (demo-256: 2.9k rows) is planned well without, and ANALYZE
# of every table costs about a second on PostgreSQL.
ANALYZE_MIN_ROWS = 20_000


@dataclass
class BuildResult:
    cluster: Cluster
    created: bool
    spec_differs: bool = False
    rows: int = 0
    replaced: dict | None = None    # a replaced cluster's delete: what went with it ({"runs": n, "scenarios": n, ...})


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


def _ids(base: int, refs: np.ndarray) -> np.ndarray:
    """Database ids of the layout indexes ``refs`` (``base + index``), -1 (NULL to ``bulk``) where the relation
    does not apply (-1)."""
    return np.where(refs < 0, -1, refs + base).astype(np.int64)


def _full(n: int, value: int) -> np.ndarray:
    return np.full(n, value, dtype=np.int64)


def _status(n: int) -> list[str]:
    return [Status.ACTIVE.value] * n


class _Writer:
    """Writes one table after another, reserving its ids and reporting rows to ``progress``."""

    def __init__(self, cluster: Cluster, load: BulkLoad, progress: Callable[[str, int], None] | None):
        self.cluster, self.load, self.progress, self.rows = cluster, load, progress, 0

    def write(self, model, n: int, columns: dict) -> int:
        """Insert ``n`` rows of ``model`` with ids base..base+n-1 and the cluster; return base (id of index 0)."""
        step = (lambda k: self.progress(model._meta.verbose_name_plural, k)) if self.progress else None
        base = self.load.write(model, n, {"cluster_id": _full(n, self.cluster.id), **columns}, step)
        self.rows += n
        return base


def total_rows(layout: ClusterLayout) -> int:
    """Rows a build writes (for progress bars)."""
    counts = layout.counts()
    return sum(counts[k] for k in ("zones", "racks", "hosts", "gpus", "storage_servers", "ssds", "nics",
                                   "switches", "ports", "links"))


def cluster_rows(cluster: Cluster) -> int:
    """Rows a delete of ``cluster`` removes from the hardware tables (for progress bars and estimates)."""
    return sum(model.objects.filter(cluster_id=cluster.id).count() for model in CLUSTER_TABLES)


def delete_cluster(cluster: Cluster, user=None, progress: Callable[[str, int], None] | None = None) -> ObjectChange:
    """Delete a cluster and everything in it with one DELETE per table (no per-object cascade), in one transaction
    with what the apps above keep of it (``cluster_deleting``: its runs, scenarios, their schedules, its jobs; the
    runs' stored files once it commits); log one entry for the cluster (its fields, the rows deleted and, under
    ``with_it``, the counts the apps above deleted). ``progress(table, rows)`` is called after each table's
    DELETE (:func:`cluster_rows` gives the total up front). Returns the entry."""
    with transaction.atomic():
        before = changelog.snapshot(cluster)
        with_it: dict[str, int] = {}
        for _, deleted in cluster_deleting.send(sender=Cluster, cluster=cluster):
            for what, n in (deleted or {}).items():
                with_it[what] = with_it.get(what, 0) + n
        # the per-row foreign-key triggers (minutes at COMMIT for a 600k cluster) replaced by one join per key
        if foreign_key_triggers_off():
            outside = referenced_from_outside((*CLUSTER_TABLES, Cluster), cluster.id)
            if outside:
                raise IntegrityError(f"cluster {cluster.name} cannot be deleted: {outside} names its rows")
        rows = 0
        for model in CLUSTER_TABLES:
            n = delete_where(model, "cluster_id", cluster.id)
            rows += n
            if progress is not None:
                progress(model._meta.verbose_name_plural, n)
        rows += delete_where(Cluster, "id", cluster.id)
        [change] = changelog.write([changelog.entry(ChangeAction.DELETE, Cluster, cluster.id, cluster.name, cluster.id,
                                                    user, before={**before, "rows": rows, "with_it": with_it},
                                                    cluster_names={cluster.id: cluster.name})])
    return change


@dataclass
class _Build:
    """What the steps of one build share: the spec and its expansion, the item names, the catalog ids, the writer,
    and the database id of index 0 of each table written so far (``base["host"] + layout index`` is a host's id)."""

    spec: ClusterSpec
    layout: ClusterLayout
    names: dict[str, list[str]]
    catalog: dict[str, dict[str, int]]
    writer: _Writer
    fabric_ids: np.ndarray | None = None
    storage_ids: np.ndarray | None = None
    base: dict[str, int] = field(default_factory=dict)

    def catalog_ids(self, kind: str, slugs) -> np.ndarray:
        return np.array([self.catalog[kind][s] for s in slugs], dtype=np.int64)

    def common(self, kind: str, prefix: str | None, n: int) -> dict:
        """The columns of every item with a status: name, status and, given a prefix, serial (not zones, ports)."""
        columns = {"name": self.names[kind], "status": _status(n)}
        if prefix:
            columns["serial"] = _serials(prefix, self.spec.name, n)
        return columns


def _write_fabrics_and_storage(b: _Build) -> None:
    """The cluster's few named parents (a fabric per role, a storage cluster per service), through the ORM."""
    cluster, spec = b.writer.cluster, b.spec
    fabrics = [Fabric.objects.create(cluster=cluster, name=f"{spec.name}.{FABRIC_SHORT[role]}", role=role,
                                     kind=FABRIC_KIND_BY_SPEC[f.kind], speed_gbps=f.speed_gbps)
               for role, f in enumerate(spec.fabrics)]
    storage = [StorageCluster.objects.create(cluster=cluster, name=f"{spec.name}.{s.name}", kind=s.kind)
               for s in spec.storage]
    b.fabric_ids = np.array([f.id for f in fabrics])
    b.storage_ids = np.array([s.id for s in storage] or [0])
    b.writer.load.add_parents(Fabric, b.fabric_ids.tolist())
    b.writer.load.add_parents(StorageCluster, [s.id for s in storage])


def _write_sites(b: _Build) -> None:
    """Zones and their racks."""
    lo, w = b.layout, b.writer
    nz = len(lo.zone_kind)
    b.base["zone"] = w.write(Zone, nz, {
        **b.common("zone", None, nz), "kind": lo.zone_kind, "number": lo.zone_number,
        "storage_cluster_id": np.where(lo.zone_storage < 0, -1, b.storage_ids[np.maximum(lo.zone_storage, 0)])})
    nr = len(lo.rack_zone)
    b.base["rack"] = w.write(Rack, nr, {**b.common("rack", "RK", nr), "zone_id": b.base["zone"] + lo.rack_zone,
                                        "number": lo.rack_number})


def _write_compute(b: _Build) -> None:
    """GPU hosts and their GPUs."""
    lo, w, spec = b.layout, b.writer, b.spec
    nh = len(lo.host_rack)
    b.base["host"] = w.write(Host, nh, {
        **b.common("host", "HT", nh), "rack_id": b.base["rack"] + lo.host_rack,
        "platform_id": _full(nh, b.catalog["platform"][spec.layout.host_platform]), "slot": lo.host_slot})
    ng = len(lo.gpu_host)
    b.base["gpu"] = w.write(GPU, ng, {
        **b.common("gpu", "GPU", ng), "host_id": b.base["host"] + lo.gpu_host,
        "model_id": _full(ng, b.catalog["gpu"][spec.layout.gpu]), "slot": lo.gpu_slot, "index": np.arange(ng)})


def _write_storage(b: _Build) -> None:
    """Storage servers and their SSDs."""
    lo, w, spec = b.layout, b.writer, b.spec
    nv = len(lo.server_rack)
    server_models = b.catalog_ids("storage_server", [s.server for s in spec.storage])
    b.base["server"] = w.write(StorageServer, nv, {
        **b.common("server", "SRV", nv), "storage_cluster_id": b.storage_ids[lo.server_storage],
        "rack_id": b.base["rack"] + lo.server_rack, "model_id": server_models[lo.server_storage],
        "slot": lo.server_slot})
    nd = len(lo.ssd_server)
    ssd_models = b.catalog_ids("ssd", [s.ssd for s in spec.storage])
    b.base["ssd"] = w.write(SSD, nd, {
        **b.common("ssd", "SSD", nd), "server_id": b.base["server"] + lo.ssd_server,
        "model_id": ssd_models[lo.server_storage[lo.ssd_server]], "slot": lo.ssd_slot})


def _write_network(b: _Build) -> None:
    """NICs (in hosts and storage servers), switches, their cabled ports, and the links between ports."""
    lo, w = b.layout, b.writer
    nn = len(lo.nic_fabric)
    b.base["nic"] = w.write(NIC, nn, {
        **b.common("nic", "NIC", nn), "fabric_id": b.fabric_ids[lo.nic_fabric],
        "host_id": _ids(b.base["host"], lo.nic_host), "storage_server_id": _ids(b.base["server"], lo.nic_server),
        "gpu_id": _ids(b.base["gpu"], lo.nic_gpu), "model_id": b.catalog_ids("nic", lo.nic_models)[lo.nic_model],
        "slot": lo.nic_slot})
    ns = len(lo.switch_tier)
    switch0 = b.base["switch"] = w.write(Switch, ns, {
        **b.common("switch", "SW", ns), "fabric_id": b.fabric_ids[lo.switch_fabric],
        "model_id": b.catalog_ids("switch", lo.switch_models)[lo.switch_model], "tier": lo.switch_tier,
        "role": [lo.tier_names[(f, t)] for f, t in zip(lo.switch_fabric.tolist(), lo.switch_tier.tolist())],
        "zone_id": _ids(b.base["zone"], lo.switch_zone), "rack_id": _ids(b.base["rack"], lo.switch_rack()),
        "group": lo.switch_group, "member": lo.switch_member})
    np_ = len(lo.port_slot)
    port0 = b.base["port"] = w.write(Port, np_, {
        **b.common("port", None, np_), "switch_id": _ids(switch0, lo.port_switch),
        "nic_id": _ids(b.base["nic"], lo.port_nic), "slot": lo.port_slot, "speed_gbps": lo.port_speed_gbps})
    nl = len(lo.link_a)
    b.base["link"] = w.write(Link, nl, {
        **b.common("link", "CBL", nl), "fabric_id": b.fabric_ids[lo.link_fabric], "tier": lo.link_tier,
        "a_port_id": port0 + lo.link_a, "b_port_id": port0 + lo.link_b,
        "a_switch_id": _ids(switch0, lo.port_switch[lo.link_a]), "b_switch_id": switch0 + lo.port_switch[lo.link_b],
        "speed_gbps": lo.link_speed_gbps, "cable_id": b.catalog_ids("cable", lo.cable_models)[lo.link_cable]})


def build_cluster(spec: ClusterSpec, replace: bool = False,
                  progress: Callable[[str, int], None] | None = None, *, user=None,
                  attrs: dict | None = None) -> BuildResult:
    """Build ``spec`` into the database, atomically. Idempotent: an existing cluster is kept unless ``replace``.

    ``progress(table, rows)`` is called as rows are written (``total_rows`` gives the total up front). ``attrs``
    sets the cluster's title, description or status instead of the spec's. The build is logged as one change-log
    entry for the cluster, by ``user`` (None: the system); a replaced cluster's delete as another.
    """
    layout = expand(spec)
    with transaction.atomic():
        existing = Cluster.objects.filter(name=spec.name).first()
        if existing and not replace:
            return BuildResult(existing, created=False, spec_differs=existing.spec != spec.source)
        replaced = None
        if existing:
            replaced = delete_cluster(existing, user=user).before["with_it"]
        catalog = sync_catalog()
        names = item_names(layout, [s.name for s in spec.storage])
        cluster = Cluster.objects.create(**{"name": spec.name, "title": spec.title, "description": spec.description,
                                            "spec": spec.source, **(attrs or {})})
        # the catalog rows are locked by sync_catalog (update_or_create selects them FOR UPDATE) until commit
        load = BulkLoad({Cluster: [cluster.id], **{CATALOG_MODELS[kind]: ids.values() for kind, ids in catalog.items()}})
        b = _Build(spec, layout, names, catalog, _Writer(cluster, load, progress))
        for step in (_write_fabrics_and_storage, _write_sites, _write_compute, _write_storage, _write_network):
            step(b)
        changelog.write([changelog.entry(ChangeAction.CREATE, Cluster, cluster.id, cluster.name, cluster.id, user,
                                         after={**changelog.snapshot(cluster), "rows": b.writer.rows},
                                         cluster_names={cluster.id: cluster.name})])
    if b.writer.rows >= ANALYZE_MIN_ROWS:
        analyze(CLUSTER_TABLES)
    transaction.on_commit(lambda: cluster_built.send(sender=Cluster, cluster=cluster))
    return BuildResult(cluster, created=True, rows=b.writer.rows, replaced=replaced)
