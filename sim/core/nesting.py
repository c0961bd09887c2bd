"""How deep input may nest: the one check every file the engine reads as data (specs, hardware catalogs) passes
before it is parsed, walked without recursion so a hostile file cannot exhaust the stack. Its own module because
both :mod:`sim.fabric.spec` and :mod:`sim.fabric.catalog` need it and the spec reads the catalog.
"""
from __future__ import annotations

from sim.core.errors import SpecError

MAX_DEPTH = 16                    # tables and lists inside each other: a spec needs 4; deeper input is refused


def check_depth(data, source: str | None = None) -> None:
    """Refuse input nested deeper than :data:`MAX_DEPTH` tables or lists, naming the top-level field (and the file
    ``source``); walked level by level without recursion, so any depth is safe."""
    if not isinstance(data, dict):
        return
    level = [(key, value) for key, value in data.items()]
    for _ in range(MAX_DEPTH):
        level = [(key, v) for key, x in level if isinstance(x, (dict, list, tuple))
                 for v in (x.values() if isinstance(x, dict) else x)]
        if not level:
            return
    key, reason = str(level[0][0]), f"is nested more than {MAX_DEPTH} tables or lists deep"
    if source is None:
        raise SpecError(key, "...", reason)
    raise SpecError("spec", source, f"{reason} (field {key})")
