"""What Meta published about the store behind the two 24k clusters, declared once (docs/sources.md [S1, S3]), and
the checkpoint's published figures beside the simulated ones (:mod:`sim.core.published`).

Facts [S1, S3]: Tectonic for these clusters is 240 PB on 7,500 SSD servers, sustaining 2 TB/s and peaking at
7 TB/s; checkpoints save 1 MB to 4 GB per GPU and are "highly bursty", saturating the storage fabric for short
durations [S3]. Each preset's spec holds one cluster's half of that store (:data:`CLUSTER_SHARE`): docs/storage.md,
"The store's size and who shares it". Nothing here sets a simulated figure: these are compared with, never tuned to.
"""
from __future__ import annotations

from sim.core.published import Reference, beside
from sim.core.units import GBPS

STORE_SERVERS = 7500           # SSD servers of the store both 24k clusters use [S1, S3]
STORE_BYTES = 240e15           # its capacity, 240 PB [S1, S3]
SUSTAINED_BPS = 2e12           # bytes/s it sustains [S1, S3]
PEAK_BPS = 7e12                # bytes/s at its measured peak [S1, S3]
CLUSTERS = 2                   # the 24k RoCE and InfiniBand clusters share it [S1]
CLUSTER_SHARE = 1 / CLUSTERS   # the share of the store a preset gives one cluster (docs/storage.md)
GPU_HOSTS = CLUSTERS * 24_576 // 8   # GPU hosts the store serves: two clusters of 24,576 GPUs, 8 per host [S1]
# Training-data reads per GPU host: the store's sustained rate spread over the GPU hosts it serves (Gb/s). The
# published 2 TB/s is the store's steady load; with no public breakdown, all of it is counted as data loading.
DATA_LOADING_GBPS = round(SUSTAINED_BPS / GPU_HOSTS / GBPS, 3)
# The store's published peak per server: what one of its servers serves at the store's measured peak, in file bytes
# (what clients write and read, before the erasure code's amplification: docs/storage.md, "The store's service
# rate"). The storage model caps the servers a run uses at this rate each, times ``storage_efficiency``
# (:mod:`sim.storage.topology`, ``store-service``), so no run can beat the published aggregate.
PEAK_PER_SERVER_BPS = PEAK_BPS / STORE_SERVERS
SERVICE_RATES = {"tectonic": PEAK_PER_SERVER_BPS}   # bytes/s per server, by store kind; absent: no published figure


def service_rate(store: str) -> float | None:
    """The published file bytes/s one server of a ``store`` kind serves at the store's peak; None where no
    aggregate is published (the server's own line rate stands in: :func:`sim.storage.topology.build_storage`)."""
    return SERVICE_RATES.get(store)

WHY_PEAK = ("Published: the whole store's (7,500 servers, both clusters) measured peak under production load, in "
            "file bytes. Simulated: one job's checkpoint burst on this cluster's half of the servers, in stored "
            "bytes (the erasure code's chunks included); each server serves at most its share of the published "
            "peak times storage_efficiency (docs/storage.md, \"The store's service rate\"), so the file bytes "
            "never pass 7 TB/s x the share of the store's servers in use; other tenants are not flows.")
WHY_SUSTAINED = ("Published: the store's long-run rate (training data, checkpoints and other traffic of both "
                 "clusters, averaged). Simulated: one checkpoint's mean rate over its upload, a burst, so it is "
                 "expected to exceed the sustained figure.")

TECTONIC_PEAK = Reference(
    "tectonic-peak", "storage peak rate (bytes/s at the servers)", PEAK_BPS / 1e12, PEAK_BPS / 1e12, "TB/s",
    "S1, S3", "Tectonic for both 24k clusters: 240 PB on 7,500 SSD servers", WHY_PEAK)
TECTONIC_SUSTAINED = Reference(
    "tectonic-sustained", "storage sustained rate", SUSTAINED_BPS / 1e12, SUSTAINED_BPS / 1e12, "TB/s",
    "S1, S3", "Tectonic for both 24k clusters, long-run", WHY_SUSTAINED)
REFERENCES = {"tectonic": (TECTONIC_PEAK, TECTONIC_SUSTAINED)}


def published(store: str, *, peak_rate: float, mean_rate: float, servers: int, restore: bool) -> list[dict]:
    """The published figures of ``store`` beside the simulated peak and mean rates (bytes/s at the servers;
    none published for Hammerspace). The cases are never the same: the published store is the whole one."""
    refs = REFERENCES.get(store, ())
    differs = (f"{servers:,} of the store's {STORE_SERVERS:,} servers, one job's "
               f"{'restore' if restore else 'checkpoint'}")
    sim = {"tectonic-peak": peak_rate, "tectonic-sustained": mean_rate}
    return [beside(r, sim[r.key] / 1e12, same_case=False, differs=differs) for r in refs]
