"""The registry of live frame sections: what each section of a frame is, declared by whoever owns it.

The twin declares the two base sections every run may report (``link_util``, ``gpu_state``, below); each capability
declares its own in its ``live`` module (``twin/capabilities/<cap>/live.py``, found by :func:`twin.discovery.modules`).
The wire format (:mod:`twin.live.frames`), the publisher, the scoped frames (:mod:`twin.live.scope`) and the browser
decoder (frontend/js/frames.js, from :func:`twin.live.frames.tables`) loop over what is registered here and name no
capability.

A section is one array of one wire dtype. Its ``codec`` says how a value becomes that array and back:

- ``array``: per-item values as they are (``dtype``), e.g. ``gpu_state`` codes per GPU;
- ``util``: utilization 0..1 quantized to uint8 by ``constants["scale"]`` (NaN -> 0, clamped); a float16 array is
  sent as it is (0..1, the accepted alternative);
- ``rows``: float32 rows of ``fields`` (row-major), a field of ``codes`` given by name or code, None/missing as NaN;
  the newest ``max_rows`` rows at most;
- ``code``: one uint8, a code of ``codes["value"]`` given by name or code.

A kind reports a section with the keyword of its ``name`` (``progress(f, link_util=..., job_stats=[...])``).
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DTYPES = ("uint8", "uint16", "float16", "float32")
CODECS = ("array", "util", "rows", "code")
PERS = ("gpu", "host", "link", "storage", None)


@dataclass(frozen=True, eq=False)
class Section:
    id: int                                    # uint8 on the wire, unique
    name: str                                  # unique; the keyword a kind's progress call uses
    dtype: str = "uint8"                       # DTYPES
    codec: str = "array"                       # CODECS
    fields: tuple[str, ...] = ()               # rows: the row's fields
    codes: dict | Callable[[], dict] = field(default_factory=dict)   # field -> {code: name}, or a callable giving it
    constants: dict = field(default_factory=dict)   # sent to clients as they are (e.g. {"scale": 255})
    per: str | None = None                     # what a per-item section is indexed by (scoped frames): PERS
    encode: Callable[[Any], np.ndarray] | None = None   # value -> array (default: the codec's)
    max_rows: int | None = None                # rows: the newest this many at most
    ints: tuple[str, ...] = ()                 # rows: fields decoded as ints
    doc: str = ""                              # one line for people reading the registry (not sent to clients)
    # a per-GPU or per-host section's figure per rack in the zone overview (twin/web/gpu_data.py): value ->
    # (each item's weight 0..1, whether it counts); the rack's figure is the mean weight of its counted items
    rack_figure: Callable[[np.ndarray, dict], tuple[np.ndarray, np.ndarray]] | None = None
    owner: str = ""                            # the module that registered it (set by register)

    def __post_init__(self):
        if not (0 < self.id < 256):
            raise ValueError(f"live section {self.name!r}: id {self.id} is not 1..255 (a uint8)")
        if self.dtype not in DTYPES:
            raise ValueError(f"live section {self.name!r}: dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if self.codec not in CODECS:
            raise ValueError(f"live section {self.name!r}: codec {self.codec!r} is not one of {', '.join(CODECS)}")
        if self.per not in PERS:
            raise ValueError(f"live section {self.name!r}: per {self.per!r} is not one of {PERS}")
        if self.codec == "rows" and (self.dtype != "float32" or not self.fields):
            raise ValueError(f"live section {self.name!r}: rows are float32 with fields")
        if self.codec in ("util", "code") and self.dtype != "uint8":
            raise ValueError(f"live section {self.name!r}: a {self.codec} section is uint8")
        if self.codec == "util" and "scale" not in self.constants:
            raise ValueError(f"live section {self.name!r}: a util section needs constants['scale']")

    def code_tables(self) -> dict[str, dict[int, str]]:
        """``codes`` as field -> {code: name} (a callable's, read now)."""
        return dict(self.codes() if callable(self.codes) else self.codes)


class Registry:
    def __init__(self, loaded: bool = False):
        self.by_id: dict[int, Section] = {}
        self.by_name: dict[str, Section] = {}
        self.loaded = loaded

    def register(self, section: Section) -> Section:
        for other in (self.by_id.get(section.id), self.by_name.get(section.name)):
            if other is not None and other is not section:
                raise ValueError(f"live section {section.name!r} (id {section.id}, {section.owner or '?'}) clashes "
                                 f"with section {other.name!r} (id {other.id}, {other.owner or '?'}): ids and names "
                                 f"are unique")
        self.by_id[section.id] = self.by_name[section.name] = section
        return section


_registry = Registry()


def register(section: Section, owner: str | None = None) -> Section:
    """Add ``section`` to the registry (its owner: the calling module); a ValueError naming both owners when
    another section has its id or name."""
    if not section.owner:
        owner = owner or sys._getframe(1).f_globals.get("__name__", "")
        object.__setattr__(section, "owner", owner)
    return _registry.register(section)


def _load() -> Registry:
    reg = _registry
    if not reg.loaded:
        reg.loaded = True
        from twin import discovery
        try:
            discovery.modules("live")
        except Exception:
            reg.loaded = False
            raise
    return reg


def sections() -> list[Section]:
    """Every registered section, by id (the capabilities' ``live`` modules imported on the first call)."""
    return sorted(_load().by_id.values(), key=lambda s: s.id)


def by_name(name: str) -> Section:
    reg = _load()
    try:
        return reg.by_name[name]
    except KeyError:
        raise KeyError(f"no live section named {name!r}: the sections are {', '.join(sorted(reg.by_name))}") \
            from None


def by_id(sid: int) -> Section | None:
    return _load().by_id.get(sid)


# ------------------------------------------------------------------------------------------ the base sections
# Every run may report these; they are the twin's own, not a capability's.
LINK_UTIL_SCALE = 255   # a uint8 link_util byte is utilization * LINK_UTIL_SCALE (resolution 0.4 %)

# The GPU states a run reports in gpu_state (uint8). This table is the only definition: runs import the codes from
# here, and clients get it in the stream's metadata (section_specs.gpu_state.codes.value).
GPU_IDLE, GPU_IN_JOB, GPU_UNUSABLE = 0, 1, 2
GPU_STATES = {GPU_IDLE: "idle", GPU_IN_JOB: "in_job", GPU_UNUSABLE: "unusable"}

LINK_UTIL = register(Section(
    1, "link_util", "uint8", "util", constants={"scale": LINK_UTIL_SCALE}, per="link",
    doc="per backend link (Link rows of the backend fabric by id), utilization of its capacity"))
GPU_STATE = register(Section(
    2, "gpu_state", "uint8", "array", codes={"value": GPU_STATES}, per="gpu",
    doc="per GPU (by GPU.index), a GPU state code"))
