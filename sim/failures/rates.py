"""Failure processes of a training job, calibrated from Meta's 54-day interruption table for Llama 3 405B.

Each :class:`Category` is one cause of that table [S3] (docs/sources.md, docs/reliability.md): its count of
interruptions over :data:`TABLE_DAYS` days of a :data:`TABLE_GPUS`-GPU job, the unit it is counted per (a GPU, a
host, the job itself), what it does to a job (``crash``: the job stops and restarts from its last durable checkpoint;
``degrade``: it keeps running, slower; ``planned``: a stop announced in advance) and how long its item takes to
repair. The rate per unit and per hour is **computed** from the table, ``count / (units of the reference job x
hours)``, never typed: :func:`rate_per_unit_hour`.

Rates and repair times can be overridden per category (``gpu=2e-6,hbm=1e-6`` and ``gpu=48,network=2``:
:func:`parse_overrides`), and every unexpected rate scaled at once (``rate_scale``).

A fleet's own hardware failure rate: Meta's table is one fleet (H100 Grand Teton hosts); another fleet's hosts fail
at their own rate (Kokolis et al. [S9] measured 6.50 and 2.34 node failures per 1,000 node-days on two A100 clusters
of the same generation). A cluster preset that gives its fleet's published rate (``[reliability]``,
:attr:`sim.fabric.spec.ClusterSpec.node_failure_rate`) scales the table's node categories (:data:`NODE_CATEGORIES`:
a host's or a GPU's hardware) so that their sum per node-day is that rate: :func:`fleet_scale`. The table keeps the
mix of causes; the job-level causes and the fabric's are not a node's and stay as counted.

>>> round(rate_per_unit_hour(CATEGORIES["gpu"]) * 1e6, 3)        # 148 / (16,384 GPUs x 1,296 h), per million
6.97
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from sim.core.errors import ParamError

TABLE_DAYS = 54                   # the span of Meta's table [S3]
TABLE_HOURS = TABLE_DAYS * 24
TABLE_GPUS = 16_384               # the Llama 3 405B job the table counts [S3]
GPUS_PER_HOST = 8                 # Grand Teton: 8 GPUs per host [S1, S3]
GPUS_PER_RACK = 16                # two hosts per rack under one rack switch (RTSW) [S1, S2]
TABLE_PLANNED = 47                # planned interruptions in the 54 days [S3]
TABLE_UNEXPECTED = 419            # unexpected interruptions in the 54 days [S3]

UNITS = ("gpu", "host", "job", "network_item")    # what a category's rate is counted per
CONSEQUENCES = ("crash", "degrade", "planned")

# Repair times (hours) are assumptions: no public source gives them for these clusters (docs/reliability.md).
REPAIR_GPU_H = 72.0               # a GPU or its baseboard swapped by a technician, tested, returned to the pool
REPAIR_HOST_H = 24.0              # a host part (SSD, PSU, CPU, DIMM, board) replaced, the host re-imaged
REPAIR_NETWORK_H = 4.0            # a cable or optic reseated / replaced, or a switch line card swapped
REPAIR_NONE_H = 0.0               # software, dependency, watchdog: nothing to repair, the job restarts


@dataclass(frozen=True)
class Category:
    """One cause of interruption. ``count``: interruptions in Meta's table [S3]; ``unit``: what the rate is counted
    per (:data:`UNITS`); ``consequence``: :data:`CONSEQUENCES`; ``repair_h``: hours until the failed item is back
    (the job waits for it unless a spare host takes its place); ``replaces_host``: a restart needs a healthy host
    in place of the failed one (a spare, or the repaired one)."""

    name: str
    label: str
    count: int
    unit: str
    consequence: str
    repair_h: float
    replaces_host: bool = True

    def to_dict(self) -> dict:
        return {**asdict(self), "rate_per_unit_hour": rate_per_unit_hour(self)}


# Meta's table [S3], in its order. "network" is the table's "network switch or cable", counted per network item (a
# cable or a switch of the job's backend network: sim.failures.prepare lists them). The table counts interruptions:
# a fabric failure routed around did not stop the job and is not in it, so its 35 are the failures of the items with
# no other path, each GPU's NIC cable and its rack switch (:data:`TABLE_NETWORK_ITEMS`); every network item, those
# above the racks too, fails at that per-item rate (assumption: a cable or switch above the racks fails as often as
# one below them; docs/reliability.md).
CATEGORIES: dict[str, Category] = {c.name: c for c in (
    Category("gpu", "faulty GPU", 148, "gpu", "crash", REPAIR_GPU_H),
    Category("hbm", "GPU HBM3 memory", 72, "gpu", "crash", REPAIR_GPU_H),
    Category("software", "software bug", 54, "job", "crash", REPAIR_NONE_H, replaces_host=False),
    Category("network", "network switch or cable", 35, "network_item", "crash", REPAIR_NETWORK_H),
    Category("host_maintenance", "host maintenance (unplanned)", 32, "host", "crash", REPAIR_HOST_H),
    Category("gpu_sram", "GPU SRAM memory", 19, "gpu", "crash", REPAIR_GPU_H),
    Category("gpu_system_processor", "GPU system processor", 17, "gpu", "crash", REPAIR_GPU_H),
    Category("nic", "NIC", 7, "gpu", "crash", REPAIR_HOST_H),
    Category("nccl_watchdog", "NCCL watchdog timeout", 7, "job", "crash", REPAIR_NONE_H, replaces_host=False),
    Category("sdc", "silent data corruption", 6, "gpu", "crash", REPAIR_GPU_H),
    Category("thermal", "GPU thermal interface and sensor", 6, "gpu", "degrade", REPAIR_GPU_H),
    Category("ssd", "SSD", 3, "host", "crash", REPAIR_HOST_H),
    Category("power_supply", "power supply", 3, "host", "crash", REPAIR_HOST_H),
    Category("chassis", "server chassis", 2, "host", "crash", REPAIR_HOST_H),
    Category("io_board", "IO expansion board", 2, "host", "crash", REPAIR_HOST_H),
    Category("dependency", "dependency", 2, "job", "crash", REPAIR_NONE_H, replaces_host=False),
    Category("cpu", "CPU", 2, "host", "crash", REPAIR_HOST_H),
    Category("memory", "system memory", 2, "host", "crash", REPAIR_HOST_H),
    Category("planned", "planned maintenance", TABLE_PLANNED, "job", "planned", REPAIR_NONE_H, replaces_host=False),
)}
NAMES = tuple(CATEGORIES)

assert sum(c.count for c in CATEGORIES.values() if c.consequence != "planned") == TABLE_UNEXPECTED


# A node's hardware: the categories counted per GPU or per host whose item is in the host (the fabric's cables and
# switches, "network", are not). What a fleet's "node failures per node-day" counts [S9].
NODE_CATEGORIES = tuple(n for n, c in CATEGORIES.items() if c.unit in ("gpu", "host") and n != "network")
TABLE_NODE_FAILURES = sum(CATEGORIES[n].count for n in NODE_CATEGORIES)      # 321 of the 419


# The table's job's network items whose failure stops it: its 16,384 NIC cables (one NIC per GPU, one port each) and
# its 1,024 rack switches [S1, S2].
TABLE_NETWORK_ITEMS = TABLE_GPUS + TABLE_GPUS // GPUS_PER_RACK


def reference_units(unit: str) -> int:
    """Units of the table's job: 16,384 GPUs, 2,048 hosts, one job, 17,408 network items with no other path."""
    return {"gpu": TABLE_GPUS, "host": TABLE_GPUS // GPUS_PER_HOST, "job": 1,
            "network_item": TABLE_NETWORK_ITEMS}[unit]


def rate_per_unit_hour(c: Category) -> float:
    """The table's count over the reference job's units and the table's hours: ``count / (units x hours)``."""
    return c.count / (reference_units(c.unit) * TABLE_HOURS)


def table_node_rate() -> float:
    """Node failures per 1,000 node-days in Meta's table: its node categories over 2,048 hosts x 54 days (2.90)."""
    return 1000.0 * TABLE_NODE_FAILURES / (reference_units("host") * TABLE_DAYS)


def fleet_scale(node_failures_per_1000_node_days: float | None) -> float:
    """Factor on the node categories' rates for a fleet whose nodes fail at the given rate (None: the table's
    fleet, 1)."""
    if node_failures_per_1000_node_days is None:
        return 1.0
    return node_failures_per_1000_node_days / table_node_rate()


def parse_overrides(text: str | None, field: str, minimum: float = 0.0) -> dict[str, float]:
    """``"gpu=2e-6,hbm=1e-6"`` -> ``{"gpu": 2e-6, "hbm": 1e-6}``; :class:`ParamError` naming ``field`` for an unknown
    category, a value that is not a finite number of at least ``minimum``, or a category given twice."""
    out: dict[str, float] = {}
    if text is None or not text.strip():
        return out
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep:
            raise ParamError(field, f"expected category=value pairs separated by commas, got {part.strip()!r}")
        if name not in CATEGORIES:
            raise ParamError(field, f"unknown category {name!r}: choose among {', '.join(NAMES)}")
        if name in out:
            raise ParamError(field, f"category {name!r} given twice")
        try:
            v = float(value)
        except ValueError:
            raise ParamError(field, f"{name}: {value.strip()!r} is not a number") from None
        if not (v == v and abs(v) != float("inf")) or v < minimum:
            raise ParamError(field, f"{name}: must be a finite number of at least {minimum:g}, got {value.strip()!r}")
        out[name] = v
    return out


def rates(overrides: dict[str, float] | None = None, scale: float = 1.0,
          node_scale: float = 1.0) -> dict[str, float]:
    """Rate per unit-hour of every category: the table's (its node categories times ``node_scale``, the fleet's
    :func:`fleet_scale`), an override where given, unexpected ones times ``scale`` (planned maintenance is a
    schedule, not scaled)."""
    overrides = overrides or {}
    return {n: overrides.get(n, rate_per_unit_hour(c) * (node_scale if n in NODE_CATEGORIES else 1.0))
            * (1.0 if c.consequence == "planned" else scale) for n, c in CATEGORIES.items()}


def repair_hours(overrides: dict[str, float] | None = None) -> dict[str, float]:
    """Repair time (hours) of every category: the default, or the override."""
    overrides = overrides or {}
    return {n: overrides.get(n, c.repair_h) for n, c in CATEGORIES.items()}


def calibration_table() -> list[dict]:
    """Each category with the arithmetic of its rate (for docs and the CLI's ``--json``)."""
    return [{**c.to_dict(), "units": reference_units(c.unit), "hours": TABLE_HOURS} for c in CATEGORIES.values()]
