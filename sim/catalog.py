"""The hardware catalog: models a cluster spec may name (GPU, NIC, switch, platform, storage server, SSD, cable).

Read from ``sim/presets/catalog.toml``. The twin's inventory seeds its catalog tables from the same file, so the
engine and the database agree on every model's specs.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sim.errors import SpecError

CATALOG_PATH = Path(__file__).parent / "presets" / "catalog.toml"
KINDS = ("gpu", "nic", "switch", "platform", "storage_server", "ssd", "cable")
SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")  # what the inventory's slug fields accept


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
    models: dict[str, dict[str, HardwareModel]] = {}
    for kind, entries in data.items():
        if kind not in KINDS:
            raise SpecError("catalog", kind, f"is not a hardware kind (kinds: {', '.join(KINDS)})")
        for slug, entry in entries.items():
            if not SLUG.match(slug):
                raise SpecError(f"catalog.{kind}", slug, "is not a slug (letters, digits, '-' and '_' only)")
            specs = {k: v for k, v in entry.items() if k not in ("vendor", "name")}
            models.setdefault(kind, {})[slug] = HardwareModel(kind, slug, entry["vendor"], entry["name"], specs)
    return Catalog(models)


@lru_cache(maxsize=1)
def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    with open(path, "rb") as f:
        return parse_catalog(tomllib.load(f))
