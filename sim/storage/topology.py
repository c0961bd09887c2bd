"""The frontend fabric and the storage clusters as resources of one max-min solve (:mod:`sim.core.flowcore`).

Model
-----
**Frontend fabric.** The frontend Clos of :mod:`sim.fabric.layout` (leaf FRTSW per compute rack and per storage rack,
spine FCSW per zone, core FATSW per plane) becomes a :class:`FrontendTopology`: the same arrays as the backend's
:class:`sim.fabric.topology.Topology`, with the *frontend NICs* as endpoints (each host's frontend NICs, then each
storage server's NICs) in place of GPU NICs. Every active cable gives an up and a down link at its speed; a cable is
active when it, both its ports and both end devices are active (as for the backend). Routing is the backend's own
up/down ECMP (:func:`sim.fabric.routing.route` with ``"ecmp"``): a host reaches a storage server through its leaf, a spine
of its zone, a core of that plane, the spine of the same plane in the storage zone and the storage rack's leaf.

**Resources** (one capacity array, bytes/s unless noted), appended after the ``E`` frontend links:

====================  =====================================================================  =====================
resource              capacity                                                               source
====================  =====================================================================  =====================
frontend links        cable speed each way (host NICs 400G, storage NICs 100G, per preset)   spec / catalog
PCIe, per GPU         64 GB/s each way (H100 SXM: PCIe Gen5 x16, 128 GB/s both ways)         docs/sources.md [S4]
host memory copy      200 GB/s per host (:data:`HOST_MEMCPY`)                                assumption
client CPU, per host   cores of the host's storage client (FUSE daemon): 10 threads          libfuse [S61]
server CPU            cores of a storage server's chunk store: 16                            assumption
SSD write, per server sum over its *active* SSDs of the catalog's write bandwidth             catalog (assumption)
SSD read, per server  sum over its active SSDs of the catalog's read bandwidth                catalog (assumption)
metadata service      operations/s of each storage cluster (the store model's)               :mod:`sim.storage.stores`
store service         file bytes/s a storage cluster serves, reads and writes together: the    [S1, S3];
                      sum over its usable servers of their share of the store's published      fitted factor
                      peak (Tectonic: 7 TB/s / 7,500 servers; a store with none: the
                      server's frontend line rate), x ``storage_efficiency`` (set per run)
====================  =====================================================================  =====================

The **store service** resource is the storage path's limit the hardware list above leaves out: what the store's
software, disks under mixed load and other tenants let its servers serve, which their NIC, CPU and SSD ratings
overstate by an order of magnitude (a 100G NIC is 12.5 GB/s; the published peak is 0.93 GB/s per server). One
resource per storage cluster, as the figure is an aggregate; a run sets its capacity from the servers it uses
(:func:`service_capacity`: a failed or unused server adds nothing). A write flow carries stored (amplified) bytes,
so its usage of the resource is ``1 / amplification`` (it counts file bytes, as the published figure does); reads
and data loading count 1. It can never pass the published aggregate times the share of the store's servers in
use, so no checkpoint is durable sooner than its bytes at that rate (docs/storage.md, "The store's service rate").

CPUs are counted in cores (CPU-seconds per second): what a byte costs there (CPU-seconds per byte) is the flow's
*usage* of the resource, from :func:`sim.storage.stores.costs`; so is the SSD write amplification of the chunk
store (:func:`resource_usage`).

A server's SSDs are one write and one read resource: the chunk store spreads a server's chunks over its disks, so
they fill evenly; a failed or drained SSD lowers its server's capacity by its share, and the per-SSD figures a
result reports are the server's divided over its active SSDs. A server is usable when it, one of its NICs (with an
active cable and leaf) and one of its SSDs are active; others are left out of placement. Read and write are
separate resources of an SSD (NVMe drives interfere more when mixing them: a simplification).

Status: the layout's ``server_status`` and ``ssd_status`` arrays (all active from a spec; the twin fills them from
the inventory) and the usual link/port/NIC/switch statuses.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.fabric.catalog import load_catalog
from sim.fabric.layout import (FABRIC_FRONTEND, LINK_NIC_LEAF, STATUS_ACTIVE, TIER_LEAF, TIER_SPINE,
                        ClusterLayout)
from sim.fabric.names import gpu_name, host_labels, switch_label, zone_labels
from sim.core.units import GBPS, IDX
from sim.fabric.topology import DEFAULT_HOP_LATENCY, Topology, parallel_index, switch_tables
from sim.storage.published import service_rate
from sim.storage.stores import FUSE_THREADS, SERVER_CORES

PCIE_GEN5_X16 = 64e9        # bytes/s each way: H100 SXM host interface, PCIe Gen5 x16 = 128 GB/s both ways [S4]
HOST_MEMCPY = 200e9         # bytes/s a host copies (assumption: a third of 2 sockets x 8 DDR5-4800 channels)

# Resource kinds (the ``kind`` array) and the tier names results use.
RES_LINK, RES_PCIE, RES_HOSTMEM, RES_CPU, RES_SSD_WRITE, RES_SSD_READ, RES_META, RES_CLIENT, RES_SERVICE = range(9)
RES_NAMES = ("link", "pcie", "host-memory", "server-cpu", "ssd-write", "ssd-read", "metadata", "client-cpu",
             "store-service")


class FrontendTopology(Topology):
    """The frontend fabric as a :class:`sim.fabric.topology.Topology` whose "GPUs" are the frontend NICs (endpoints):
    ``gpu_nic`` is the layout NIC id of each endpoint and ``gpu_host`` its host, or ``n_hosts + server`` for a
    storage server's NIC."""

    def node_names(self, nodes) -> list[str]:
        lay = self.layout
        names = []
        labels = zone_labels(lay)
        for n in np.atleast_1d(np.asarray(nodes, dtype=IDX)).tolist():
            if n >= self.n_switches:
                names.append(endpoint_name(lay, int(self.gpu_nic[n - self.n_switches]), labels))
                continue
            tier = int(self.switch_tier[n])
            name = lay.tier_names.get((FABRIC_FRONTEND, tier), ("leaf", "spine", "core")[tier])
            zone, group = int(self.switch_zone[n]), int(self.switch_group[n])
            member = int(lay.switch_member[self.switch_layout_id[n]]) if tier not in (TIER_LEAF, TIER_SPINE) else 0
            names.append(f"{name} {switch_label(tier, labels[zone] if zone >= 0 else '', group, member)}")
        return names


def _rack_item_names(lay: ClusterLayout, ids, item_rack, item_slot, slot_format: str, labels=None) -> list[str]:
    """``<zone>.r<rack>.<slot>`` of the items ``ids`` (hosts or storage servers) from their racks and slots, in one
    pass; ``labels``: the layout's zone labels when the caller has them already."""
    labels = zone_labels(lay) if labels is None else labels
    ids = np.atleast_1d(np.asarray(ids, dtype=IDX))
    rack = item_rack[ids]
    return [f"{labels[z]}.r{n:03d}.{slot_format.format(slot)}"
            for z, n, slot in zip(lay.rack_zone[rack].tolist(), lay.rack_number[rack].tolist(),
                                  item_slot[ids].tolist())]


def server_names(lay: ClusterLayout, servers, labels=None) -> list[str]:
    """Inventory-style names of storage servers (layout ids): ``tectonic-z0.r003.s07``."""
    return _rack_item_names(lay, servers, lay.server_rack, lay.server_slot, "s{:02d}", labels)


def host_names(lay: ClusterLayout, hosts, labels=None) -> list[str]:
    """Inventory-style names of hosts: ``z03.r045.h1``."""
    return host_labels(lay, hosts, labels)


def endpoint_name(lay: ClusterLayout, nic: int, labels=None) -> str:
    """A frontend NIC's name: ``z03.r045.h1.fe0`` or ``tectonic-z0.r003.s07.fe0``."""
    h, v = int(lay.nic_host[nic]), int(lay.nic_server[nic])
    owner = host_names(lay, h, labels)[0] if h >= 0 else server_names(lay, v, labels)[0]
    return f"{owner}.fe{int(lay.nic_slot[nic])}"


def frontend_topology(lay: ClusterLayout, hop_latency: float = DEFAULT_HOP_LATENCY) -> FrontendTopology:
    """The frontend fabric of ``lay`` (see the module docstring), leaving out every inactive cable."""
    sw_ids = np.flatnonzero(lay.switch_fabric == FABRIC_FRONTEND)
    n_sw = len(sw_ids)
    node = np.full(len(lay.switch_tier), -1, dtype=IDX)
    node[sw_ids] = np.arange(n_sw)
    sw = {"ids": sw_ids, "node": node, "tier": lay.switch_tier[sw_ids], "zone": lay.switch_zone[sw_ids],
          "group": lay.switch_group[sw_ids], "member": lay.switch_member[sw_ids],
          "active": lay.switch_status[sw_ids] == STATUS_ACTIVE}
    ep_nic = np.flatnonzero(lay.nic_fabric == FABRIC_FRONTEND)
    n_ep = len(ep_nic)
    ep_of_nic = np.full(len(lay.nic_fabric), -1, dtype=IDX)
    ep_of_nic[ep_nic] = np.arange(n_ep)
    n_hosts = len(lay.host_rack)
    ep_host = np.where(lay.nic_host[ep_nic] >= 0, lay.nic_host[ep_nic], n_hosts + lay.nic_server[ep_nic])

    cab = np.flatnonzero(lay.link_fabric == FABRIC_FRONTEND)
    pa, pb = lay.link_a[cab], lay.link_b[cab]
    a_nic, a_sw, b_sw = lay.port_nic[pa], lay.port_switch[pa], lay.port_switch[pb]
    lower = np.where(a_nic >= 0, n_sw + ep_of_nic[np.maximum(a_nic, 0)], node[np.maximum(a_sw, 0)])
    upper = node[b_sw]
    dev_ok_a = np.where(a_nic >= 0, lay.nic_status[np.maximum(a_nic, 0)] == STATUS_ACTIVE,
                        lay.switch_status[np.maximum(a_sw, 0)] == STATUS_ACTIVE)
    active = ((lay.link_status[cab] == STATUS_ACTIVE) & (lay.port_status[pa] == STATUS_ACTIVE)
              & (lay.port_status[pb] == STATUS_ACTIVE) & dev_ok_a & (lay.switch_status[b_sw] == STATUS_ACTIVE))
    tier_all = lay.link_tier[cab]
    cabinfo = {"ids": cab, "pb": pb, "lower": lower, "upper": upper, "tier": tier_all, "active": active}

    nic_cab = tier_all == LINK_NIC_LEAF
    ep_leaf = np.full(n_ep, -1, dtype=IDX)
    ep_leaf[lower[nic_cab] - n_sw] = upper[nic_cab]
    ep_leaf_port = np.full(n_ep, -1, dtype=IDX)
    ep_leaf_port[lower[nic_cab] - n_sw] = lay.port_slot[pb[nic_cab]]
    tables = switch_tables(sw, cabinfo)

    ids, lo, up, tier = (x[active] for x in (cab, lower, upper, tier_all))
    C = len(ids)
    speed = lay.link_speed_gbps[ids].astype(np.float64) * GBPS
    link_tail, link_head = np.concatenate([lo, up]), np.concatenate([up, lo])
    uplink = np.full(n_ep, -1, dtype=IDX)
    is_nic = tier == LINK_NIC_LEAF
    uplink[lo[is_nic] - n_sw] = np.arange(C, dtype=IDX)[is_nic]
    downlink = np.where(uplink >= 0, uplink + C, -1)
    usable = ((lay.nic_status[ep_nic] == STATUS_ACTIVE) & (uplink >= 0) & (ep_leaf >= 0)
              & sw["active"][np.maximum(ep_leaf, 0)])
    fe = lay.spec.frontend
    topo = FrontendTopology(
        layout=lay, kind="ethernet", n_gpus=n_ep, gpu_host=ep_host.astype(IDX), gpu_nic=ep_nic.astype(IDX),
        gpu_usable=usable, n_links=2 * C, link_capacity=np.concatenate([speed, speed]),
        link_latency=np.where(link_head < n_sw, hop_latency, 0.0), link_cable=np.concatenate([ids, ids]),
        link_is_up=np.r_[np.ones(C, bool), np.zeros(C, bool)], nic_bandwidth=float(fe.nic_speed_gbps) * GBPS,
        nvlink_bandwidth=0.0, n_cables=C, n_switches=n_sw, link_tail=link_tail, link_head=link_head,
        link_tier=np.concatenate([tier, tier]).astype(IDX), switch_layout_id=sw_ids.astype(IDX),
        switch_tier=sw["tier"], switch_zone=sw["zone"], switch_group=sw["group"], switch_active=sw["active"],
        gpu_leaf=ep_leaf, gpu_leaf_port=ep_leaf_port, gpu_uplink=uplink, gpu_downlink=downlink, **tables,
        leaf_downlinks=int(ep_leaf_port.max()) + 1 if n_ep else 0, hop_latency=hop_latency)
    topo.cache["_parallel"] = parallel_index(topo)
    return topo


@dataclass
class StorageSystem:
    """The frontend fabric plus hosts' and storage servers' resources, in one capacity array (see the module
    docstring). Ids: ``host_*`` arrays are indexed by host, ``gpu_pcie`` by GPU, ``server_*`` by layout server id,
    ``metadata`` by storage cluster index (``layout.spec.storage``)."""

    layout: ClusterLayout
    topo: FrontendTopology
    capacity: np.ndarray           # (R,) per second (bytes, or operations for metadata)
    kind: np.ndarray               # (R,) RES_* code
    owner: np.ndarray              # (R,) GPU, host, server or storage cluster of a non-link resource; -1 for links
    host_ep: np.ndarray            # (H, k) endpoint ids of each host's usable frontend NICs, -1 padding
    host_mem: np.ndarray           # (H,) resource id
    host_client: np.ndarray        # (H,) resource id: the host's storage client CPU (cores)
    gpu_pcie: np.ndarray           # (G,) resource id
    server_ep: np.ndarray          # (V, m) endpoint ids of each server's usable NICs, -1 padding
    server_cpu: np.ndarray         # (V,)
    server_ssd_write: np.ndarray   # (V,)
    server_ssd_read: np.ndarray    # (V,)
    server_ssds: np.ndarray        # (V,) active SSDs
    server_rate: np.ndarray        # (V,) file bytes/s each server adds to its store's service (0: unusable)
    server_usable: np.ndarray      # (V,) bool
    metadata: np.ndarray           # (K,) resource id per storage cluster
    service: np.ndarray            # (K,) resource id per storage cluster: its service rate (file bytes/s)
    cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_links(self) -> int:
        return self.topo.n_links

    def store_index(self, kind: str) -> int:
        """The first storage cluster of ``kind`` (``tectonic``, ``hammerspace``); ValueError if none."""
        for k, s in enumerate(self.layout.spec.storage):
            if s.kind == kind:
                return k
        raise ValueError(f"the cluster has no {kind} storage")

    def resource_names(self, ids) -> list[str]:
        """Readable names: fabric links as ``frtsw z03.045 -> fcsw z03.s02 #0``, others as ``pcie z03.r045.h1.gpu5``,
        ``host-memory z03.r045.h1``, ``ssd-write tectonic-z0.r003.s07``, ``metadata tectonic``,
        ``store-service tectonic``."""
        lay = self.layout
        labels = zone_labels(lay)
        ids = np.atleast_1d(np.asarray(ids, dtype=IDX))
        out = []
        for r in ids.tolist():
            k = int(self.kind[r])
            if k == RES_LINK:
                out.append(self.topo.link_names([r])[0])
            elif k == RES_PCIE:
                g = int(self.owner[r])
                out.append(f"pcie {gpu_name(host_names(lay, lay.gpu_host[g], labels)[0], int(lay.gpu_slot[g]))}")
            elif k in (RES_HOSTMEM, RES_CLIENT):
                out.append(f"{RES_NAMES[k]} {host_names(lay, self.owner[r], labels)[0]}")
            elif k in (RES_META, RES_SERVICE):
                out.append(f"{RES_NAMES[k]} {lay.spec.storage[int(self.owner[r])].name}")
            else:
                out.append(f"{RES_NAMES[k]} {server_names(lay, self.owner[r], labels)[0]}")
        return out

    def resource_tier(self, ids) -> list[str]:
        """The tier of each resource: for fabric links the link tier and direction (``host-nic up``,
        ``frtsw-fcsw down``, ``fcsw-fatsw up``, ``storage-nic down`` ...), else the resource kind (``pcie``,
        ``host-memory``, ``server-cpu``, ``ssd-write``, ``ssd-read``, ``metadata``)."""
        codes, names = self.tier_codes()
        return [names[c] for c in codes[np.atleast_1d(np.asarray(ids, dtype=IDX))].tolist()]

    def tier_codes(self) -> tuple[np.ndarray, list[str]]:
        """``(codes (R,), names)``: each resource's tier as an index into ``names`` (cached)."""
        if "tiers" in self.cache:
            return self.cache["tiers"]
        lay, topo = self.layout, self.topo
        link_names = lay.link_tier_names()
        names = list(RES_NAMES[1:])                        # kinds other than links: codes 0..6
        codes = (self.kind.astype(IDX) - 1)
        E = topo.n_links
        up = topo.link_is_up
        end = np.where(up, topo.link_tail, topo.link_head) - topo.n_switches   # the NIC end of a NIC link
        storage_nic = (topo.link_tier == LINK_NIC_LEAF) & (topo.gpu_host[np.maximum(end, 0)] >= len(lay.host_rack))
        label = {}
        link_code = np.empty(E, dtype=IDX)
        keys = topo.link_tier * 4 + up * 2 + storage_nic
        for key in np.unique(keys).tolist():
            t, u, sn = key // 4, (key // 2) % 2, key % 2
            tier = ("storage-nic" if sn else "host-nic") if t == LINK_NIC_LEAF else \
                link_names.get((FABRIC_FRONTEND, t), str(t))
            label[key] = len(names)
            names.append(f"{tier} {'up' if u else 'down'}")
            link_code[keys == key] = label[key]
        codes[:E] = link_code
        self.cache["tiers"] = (codes, names)
        return codes, names


def build_storage(lay: ClusterLayout, *, pcie: float | None = None, host_memcpy: float | None = None,
                  client_cores: float | None = None, server_cores: float | None = None,
                  metadata_ops: list[float] | None = None, topo: FrontendTopology | None = None) -> StorageSystem:
    """The :class:`StorageSystem` of ``lay``. Capacities in bytes/s, CPUs in cores (``None``: the defaults of the
    module docstring); ``metadata_ops``: ops/s of each storage cluster's metadata service (default 1). A storage
    cluster's service rate is that of all its usable servers at full efficiency (:func:`service_capacity` sets a
    run's)."""
    topo = topo or frontend_topology(lay)
    catalog = load_catalog()
    E = topo.n_links
    G, H, V = len(lay.gpu_host), len(lay.host_rack), len(lay.server_rack)
    K = len(lay.spec.storage)
    pcie = PCIE_GEN5_X16 if pcie is None else float(pcie)
    host_memcpy = HOST_MEMCPY if host_memcpy is None else float(host_memcpy)
    client_cores = FUSE_THREADS if client_cores is None else float(client_cores)
    server_cores = SERVER_CORES if server_cores is None else float(server_cores)
    ssd_status = getattr(lay, "ssd_status", None)
    ssd_ok = np.ones(len(lay.ssd_server), bool) if ssd_status is None else ssd_status == STATUS_ACTIVE
    server_status = getattr(lay, "server_status", None)
    srv_ok = np.ones(V, bool) if server_status is None else server_status == STATUS_ACTIVE
    ssd_w = np.zeros(len(lay.ssd_server))
    ssd_r = np.zeros(len(lay.ssd_server))
    for k, s in enumerate(lay.spec.storage):
        model = catalog.get("ssd", s.ssd, f"storage[{k}].ssd")
        on = lay.server_storage[lay.ssd_server] == k
        ssd_w[on] = float(model["write_gbps"]) * GBPS
        ssd_r[on] = float(model["read_gbps"]) * GBPS
    srv_w = np.bincount(lay.ssd_server, ssd_w * ssd_ok, minlength=V)
    srv_r = np.bincount(lay.ssd_server, ssd_r * ssd_ok, minlength=V)
    n_ssd = np.bincount(lay.ssd_server, ssd_ok.astype(np.float64), minlength=V).astype(IDX)
    srv_w, srv_r = srv_w * srv_ok, srv_r * srv_ok

    # Endpoint tables: each host's / server's usable frontend NICs.
    host_ep = _owner_table(topo.gpu_host, topo.gpu_usable, H, 0)
    server_ep = _owner_table(topo.gpu_host, topo.gpu_usable, V, H)
    usable = srv_ok & (n_ssd > 0) & (server_ep[:, 0] >= 0)
    # Service rate per server: its share of the store's published peak, else its usable frontend line rate.
    line = np.zeros(V)
    has = server_ep >= 0
    line_ep = np.where(has, np.asarray(topo.link_capacity)[topo.gpu_uplink[np.maximum(server_ep, 0)]], 0.0)
    line[:] = line_ep.sum(axis=1)
    published = np.array([service_rate(s.kind) or np.nan for s in lay.spec.storage] or [np.nan])
    per_server = published[np.clip(np.asarray(lay.server_storage, dtype=IDX), 0, None)] if V else np.zeros(0)
    server_rate = np.where(np.isnan(per_server), line, per_server) * usable
    service = np.bincount(np.asarray(lay.server_storage, dtype=IDX), server_rate, minlength=K)[:K] if V else np.zeros(K)

    meta = np.ones(K) if metadata_ops is None else np.asarray(metadata_ops, dtype=np.float64)
    blocks = [(np.asarray(topo.link_capacity, np.float64), RES_LINK, np.full(E, -1)),
              (np.full(G, pcie), RES_PCIE, np.arange(G)),
              (np.full(H, host_memcpy), RES_HOSTMEM, np.arange(H)),
              (np.where(srv_ok, server_cores, 0.0), RES_CPU, np.arange(V)),
              (srv_w, RES_SSD_WRITE, np.arange(V)),
              (srv_r, RES_SSD_READ, np.arange(V)),
              (meta, RES_META, np.arange(K)),
              (np.full(H, client_cores), RES_CLIENT, np.arange(H)),
              (service, RES_SERVICE, np.arange(K))]
    base = np.cumsum([0] + [len(b[0]) for b in blocks])
    capacity = np.concatenate([b[0] for b in blocks]).astype(np.float64)
    kind = np.concatenate([np.full(len(b[0]), b[1], dtype=np.int8) for b in blocks])
    owner = np.concatenate([b[2] for b in blocks]).astype(IDX)
    return StorageSystem(
        layout=lay, topo=topo, capacity=capacity, kind=kind, owner=owner, host_ep=host_ep,
        host_mem=base[2] + np.arange(H), host_client=base[7] + np.arange(H), gpu_pcie=base[1] + np.arange(G), server_ep=server_ep,
        server_cpu=base[3] + np.arange(V), server_ssd_write=base[4] + np.arange(V),
        server_ssd_read=base[5] + np.arange(V), server_ssds=n_ssd, server_usable=usable,
        server_rate=server_rate, service=base[8] + np.arange(K),
        metadata=base[6] + np.arange(K))


def resource_usage(st: StorageSystem, ptr, links, read, cost) -> np.ndarray:
    """Per incidence entry of the flows ``ptr``/``links``: what a unit of the flow's rate costs the resource
    (:func:`sim.core.maxmin.solve_max_min` ``usage``). ``read`` (F,) bool: the flow reads from the store;
    ``cost``: a :class:`sim.storage.stores.Costs`. Client and server CPUs take CPU-seconds per byte, SSD writes
    the chunk store's amplification, a store's service rate the file bytes (``cost.service_write`` per stored
    byte written, 1 per byte read), every other resource 1 (bytes or operations)."""
    deg = np.diff(np.asarray(ptr))
    kind = st.kind[np.asarray(links)]
    rd = np.repeat(np.asarray(read, dtype=bool), deg)
    use = np.ones(kind.size)
    use[kind == RES_CPU] = cost.server
    client = kind == RES_CLIENT
    use[client] = np.where(rd[client], cost.client_read, cost.client_write)
    use[kind == RES_SSD_WRITE] = cost.ssd_write_amp
    service = kind == RES_SERVICE
    use[service] = np.where(rd[service], 1.0, cost.service_write)
    return use


def service_capacity(st: StorageSystem, k: int, servers: np.ndarray, efficiency: float) -> np.ndarray:
    """A copy of ``st.capacity`` whose storage cluster ``k`` serves at ``efficiency`` x the service rates of
    ``servers`` (layout ids: the run's servers), so a run on fewer servers gets their share only."""
    capacity = st.capacity.copy()
    capacity[st.service[k]] = float(efficiency) * float(st.server_rate[np.asarray(servers, dtype=IDX)].sum())
    return capacity


def _owner_table(owner: np.ndarray, usable: np.ndarray, n: int, offset: int) -> np.ndarray:
    """(n, k) table of the usable endpoints of owners ``offset .. offset+n-1`` (in endpoint order), -1 padding."""
    ep = np.flatnonzero(usable & (owner >= offset) & (owner < offset + n))
    o = owner[ep] - offset
    counts = np.bincount(o, minlength=n)
    k = max(int(counts.max()) if counts.size else 0, 1)
    table = np.full((n, k), -1, dtype=IDX)
    order = np.argsort(o, kind="stable")
    o, ep = o[order], ep[order]
    first = np.r_[0, np.cumsum(counts)[:-1]]
    table[o, np.arange(len(o)) - first[o]] = ep
    return table
