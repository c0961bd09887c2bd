"""Where the power goes: a cluster's racks, zones and buildings as arrays, and what every device that does not
follow the job's phases draws (hosts, switches, storage), by rack, zone and the cluster (docs/power.md "Places").

Leaf switches stand in the rack of the devices below them (:meth:`sim.fabric.layout.ClusterLayout.switch_rack`);
spine switches are counted in their zone (its network racks are not in the layout) and core switches, which span
zones and buildings, at the cluster only. Storage racks are racks (they have budgets) in storage zones, which belong
to no building of the spec: they count in the cluster's total and not in a building's.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from sim.core import fitted
from sim.fabric.layout import TIER_CORE, TIER_LEAF, TIER_SPINE, ZONE_COMPUTE
from sim.fabric.names import rack_name, zone_labels
from sim.power import devices


@dataclass
class Places:
    """The cluster's places and the constant draws (W). ``host_busy_w``/``host_idle_w``: each host's non-GPU draw
    when its GPUs run the job or not; ``rack_fixed_w``: leaf switches, storage servers and SSDs of each rack;
    ``zone_fixed_w``: spine switches of each zone; ``cluster_fixed_w``: core switches. ``host_busy_w`` is at
    full load (the GPUs at their TDP: what budgets must hold); ``host_follow_w`` is the part of it that follows
    the GPUs' load, down to its idle share at none (:meth:`sim.power.devices.HostPower.following`)."""

    layout: object
    gpu: devices.GPUPower
    host: devices.HostPower
    rack_zone: np.ndarray
    zone_building: np.ndarray      # -1 for storage zones
    n_buildings: int
    gpu_rack: np.ndarray
    host_rack: np.ndarray
    host_busy_w: np.ndarray
    host_idle_w: np.ndarray
    host_follow_w: np.ndarray
    rack_fixed_w: np.ndarray
    zone_fixed_w: np.ndarray
    cluster_fixed_w: float

    @property
    def n_racks(self) -> int:
        return self.rack_zone.size

    @property
    def n_zones(self) -> int:
        return self.zone_building.size

    def rack_names(self, racks) -> list[str]:
        lay = self.layout
        zl = zone_labels(lay)
        c = lay.spec.name
        return [rack_name(f"{c}.{zl[int(lay.rack_zone[r])]}", int(lay.rack_number[r])) for r in np.atleast_1d(racks)]

    def zone_names(self) -> list[str]:
        return zone_labels(self.layout)

    def devices(self) -> dict:
        """The power models this cluster's devices use (W), as the result carries them."""
        lay = self.layout
        return {"gpu": {"model": lay.spec.layout.gpu, **asdict(self.gpu)},
                "host": {"model": lay.spec.layout.host_platform, **asdict(self.host)},
                "switches": {m: devices.switch_power(m) for m in lay.switch_models},
                "storage_servers": {s.server: devices.storage_server_power(s.server) for s in lay.spec.storage},
                "ssds": {s.ssd: devices.ssd_power(s.ssd) for s in lay.spec.storage},
                "power_shelf_w": devices.POWER_SHELF_W, "shelves_per_rack": devices.SHELVES_PER_RACK}


def places(layout, host_scale: float | None = None) -> Places:
    """The places of ``layout`` (:class:`sim.fabric.layout.ClusterLayout`) with every device's power model, the
    hosts' non-GPU draw times ``host_scale`` (None: the fitted factor ``host_power_scale``'s value in effect)."""
    spec = layout.spec
    R, Z = len(layout.rack_zone), len(layout.zone_kind)
    gpu = devices.gpu_power(spec.layout.gpu)
    scale = fitted.value("host_power_scale") if host_scale is None else float(host_scale)
    host = replace(devices.host_power(spec.layout.host_platform), scale=scale)
    n_hosts = len(layout.host_rack)
    nics = np.bincount(layout.nic_host[layout.nic_host >= 0], minlength=n_hosts)
    cpus = spec.layout.cpus_per_host
    busy = np.array([host.watts(cpus, int(k), True) for k in range(int(nics.max(initial=0)) + 1)])[nics]
    idle = np.array([host.watts(cpus, int(k), False) for k in range(int(nics.max(initial=0)) + 1)])[nics]
    sw_w = np.array([devices.switch_power(m) for m in layout.switch_models])[layout.switch_model] \
        if len(layout.switch_model) else np.zeros(0)
    rack_fixed = np.zeros(R)
    leaf = layout.switch_tier == TIER_LEAF
    srack = layout.switch_rack()
    ok = leaf & (srack >= 0)
    rack_fixed += np.bincount(srack[ok], weights=sw_w[ok], minlength=R)
    spine = layout.switch_tier == TIER_SPINE
    zone_fixed = np.bincount(layout.switch_zone[spine], weights=sw_w[spine], minlength=Z).astype(float)
    core_w = float(sw_w[layout.switch_tier == TIER_CORE].sum())
    if len(layout.server_rack):
        srv = np.array([devices.storage_server_power(s.server) for s in spec.storage])[layout.server_storage]
        ssd = np.array([devices.ssd_power(s.ssd) for s in spec.storage])[layout.server_storage[layout.ssd_server]]
        rack_fixed += np.bincount(layout.server_rack, weights=srv, minlength=R)
        rack_fixed += np.bincount(layout.server_rack[layout.ssd_server], weights=ssd, minlength=R)
    zb = np.array([spec.layout.zone_building(int(n)) if k == ZONE_COMPUTE else -1
                   for k, n in zip(layout.zone_kind.tolist(), layout.zone_number.tolist())], dtype=np.int64)
    return Places(layout=layout, gpu=gpu, host=host, rack_zone=np.asarray(layout.rack_zone), zone_building=zb,
                  n_buildings=spec.layout.buildings, gpu_rack=np.asarray(layout.host_rack)[layout.gpu_host],
                  host_rack=np.asarray(layout.host_rack), host_busy_w=busy, host_idle_w=idle,
                  host_follow_w=np.full(n_hosts, host.following(1.0) - host.following(0.0)),
                  rack_fixed_w=rack_fixed, zone_fixed_w=zone_fixed, cluster_fixed_w=core_w)
