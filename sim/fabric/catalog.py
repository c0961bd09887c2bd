"""The hardware catalog: models a cluster spec may name (GPU, NIC, switch, platform, storage server, SSD, cable).

Read from ``sim/presets/catalog.toml``. The twin's inventory seeds its catalog tables from the same file, so the
engine and the database agree on every model's specs. ``python -m sim collective --catalog FILE`` reads a catalog
of the user's own instead (:func:`read_catalog`): the whole catalog, in the same TOML shape; every entry needs a
``vendor``, a ``name`` and the specs the engine reads (:data:`REQUIRED`, positive whole numbers), and anything
else is refused naming the field (``catalog.switch.big.ports``). The other specs of :data:`SPECS` (a GPU's
generation, its NVLink SHARP, its TFLOP/s; a NIC's PCIe link and transport) are checked by type where an entry gives
them: the built-in catalog gives every one of them for every GPU and NIC (tests/sim/test_catalog_generations.py), a
user's catalog may leave them out (the mechanisms reading them say what they take then).
"""
from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sim.core.errors import SpecError
from sim.core.nesting import check_depth
from sim.fabric.ofi_tuner import TUNER_PLATFORMS

CATALOG_PATH = Path(__file__).parent.parent / "presets" / "catalog.toml"
KINDS = ("gpu", "nic", "switch", "platform", "storage_server", "ssd", "cable")
SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")  # what the inventory's slug fields accept
# The specs the engine reads from each kind of model (sim.fabric.spec, sim.fabric.topology): positive whole numbers.
REQUIRED = {"gpu": ("nvlink_gbps",), "nic": ("speed_gbps",), "switch": ("ports", "speed_gbps"),
            "platform": ("gpus", "cpus", "backend_nics", "frontend_nics"), "storage_server": ("ssd_slots", "nics"),
            "ssd": (), "cable": ("speed_gbps",)}
# The specs a catalog entry may carry beyond REQUIRED, by kind: (type, low) for numbers ("int" whole, "number" int or
# float; at least ``low``), ("bool", None), ("str", choices). A value of the wrong type is refused naming the field.
SPECS = {
    "gpu": {"memory_gb": ("int", 1), "memory_bandwidth_gbps": ("int", 1), "bf16_tflops": ("number", 1),
            "fp8_tflops": ("number", 0), "tf32_tflops": ("number", 1), "nvlink_generation": ("int", 1),
            "nvls": ("bool", None), "sms": ("int", 1), "boost_clock_mhz": ("int", 1), "power_w": ("int", 1),
            "pcie_gen": ("int", 1), "arch": ("str", ("ampere", "hopper", "blackwell")),
            "compute_capability": ("int", 1)},
    "nic": {"ports": ("int", 1), "pcie_gen": ("int", 1), "pcie_lanes": ("int", 1),
            "transport": ("str", ("ib", "roce", "efa", "ethernet", "vpi"))},
    "switch": {"capacity_tbps": ("number", 0), "buffer_mb": ("int", 0), "modular": ("bool", None),
               "sharp": ("bool", None)},   # in-network reduction (InfiniBand SHARP streaming aggregation) [S140]
    "platform": {"memory_gb": ("int", 1)},
}
# A NIC's network-plugin keys (sim/fabric/netplugin.py): whether its transport delivers aligned 128-byte writes in
# order (LL / LL128 allowed over it), the latency the plugin reports to NCCL (us), the platform whose aws-ofi-nccl
# tuner regions pick NCCL's algorithm and protocol (sim/fabric/ofi_tuner.py).
SPECS["nic"].update({"ordered_128b": ("bool", None), "net_latency_us": ("number", 0),
                     "ofi_tuner": ("str", TUNER_PLATFORMS)})
MAX_CATALOG_BYTES = 1024 * 1024         # a user's catalog file (the built-in one is about 5 KB)


@dataclass(frozen=True)
class HardwareModel:
    """One catalog entry: ``kind`` (one of KINDS), ``slug`` (the name specs use) and its specs as a dict."""

    kind: str
    slug: str
    vendor: str
    name: str
    specs: dict

    def __getitem__(self, key):
        return self.specs[key]


@dataclass(frozen=True)
class Catalog:
    """All hardware models by kind, then by slug."""

    models: dict[str, dict[str, HardwareModel]]

    def get(self, kind: str, slug: str, field: str) -> HardwareModel:
        """The model ``slug`` of ``kind``; a SpecError naming ``field`` when the catalog has no such model."""
        try:
            return self.models[kind][slug]
        except KeyError:
            known = ", ".join(sorted(self.models.get(kind, {})))
            raise SpecError(field, slug, f"is not a {kind} model in the catalog (known: {known})") from None

    def all(self):
        for kind in KINDS:
            yield from self.models.get(kind, {}).values()


def parse_catalog(data: dict) -> Catalog:
    """A catalog from its parsed TOML: ``{kind: {slug: {vendor, name, specs...}}}``; SpecError naming the field
    of anything missing or malformed."""
    if not isinstance(data, dict):
        raise SpecError("catalog", data, "must be a table of hardware kinds")
    models: dict[str, dict[str, HardwareModel]] = {}
    for kind, entries in data.items():
        if kind not in KINDS:
            raise SpecError("catalog", kind, f"is not a hardware kind (kinds: {', '.join(KINDS)})")
        if not isinstance(entries, dict):
            raise SpecError(f"catalog.{kind}", entries, "must be a table of models ([kind.slug] tables)")
        for slug, entry in entries.items():
            if not SLUG.match(slug):
                raise SpecError(f"catalog.{kind}", slug, "is not a slug (letters, digits, '-' and '_' only)")
            field = f"catalog.{kind}.{slug}"
            if not isinstance(entry, dict):
                raise SpecError(field, entry, "must be a table (vendor, name and specs)")
            for key in ("vendor", "name"):
                if not isinstance(entry.get(key), str) or not entry[key].strip():
                    raise SpecError(f"{field}.{key}", entry.get(key), "is required: a non-empty string")
            for key in REQUIRED[kind]:
                v = entry.get(key)
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise SpecError(f"{field}.{key}", v, "is required: a whole number of at least 1")
            for key, rule in SPECS.get(kind, {}).items():
                if key in entry:
                    _check_spec(f"{field}.{key}", entry[key], *rule)
            if kind == "nic" and "ofi_tuner" in entry and entry.get("transport") != "efa":
                raise SpecError(f"{field}.ofi_tuner", entry["ofi_tuner"],
                                'is aws-ofi-nccl\'s tuner: for a NIC of transport "efa" only')
            specs = {k: v for k, v in entry.items() if k not in ("vendor", "name")}
            models.setdefault(kind, {})[slug] = HardwareModel(kind, slug, entry["vendor"], entry["name"], specs)
    return Catalog(models)


def _check_spec(field: str, v, kind: str, rule) -> None:
    """One optional spec of :data:`SPECS`: a SpecError naming ``field`` when ``v`` is not of its type or range."""
    if kind == "bool":
        if not isinstance(v, bool):
            raise SpecError(field, v, "must be true or false")
    elif kind == "str":
        if v not in rule:
            raise SpecError(field, v, f"must be one of {', '.join(rule)}")
    else:
        ok = isinstance(v, int) if kind == "int" else isinstance(v, (int, float)) and math.isfinite(v)
        if isinstance(v, bool) or not ok or v < rule:
            what = "a whole number" if kind == "int" else "a number"
            raise SpecError(field, v, f"must be {what} of at least {rule}")


@lru_cache(maxsize=1)
def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    with open(path, "rb") as f:
        return parse_catalog(tomllib.load(f))


def read_catalog(path) -> Catalog:
    """A user's catalog file (TOML); SpecError naming the file (missing, too large, not TOML, nested too deeply)
    or the field (:func:`parse_catalog`)."""
    p = Path(path)
    if not p.is_file():
        raise SpecError("catalog", str(path), "is not a file")
    if p.stat().st_size > MAX_CATALOG_BYTES:
        raise SpecError("catalog", str(path), f"is larger than {MAX_CATALOG_BYTES:,} bytes "
                                              f"(sim.fabric.catalog.MAX_CATALOG_BYTES)")
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as e:
        raise SpecError("catalog", str(path), f"cannot be parsed: {e}") from None
    except RecursionError:
        raise SpecError("catalog", str(path), "cannot be parsed: nested too deeply") from None
    check_depth(data, str(path))
    return parse_catalog(data)
