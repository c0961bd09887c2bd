"""The example's live section: a per-GPU byte (``example_heat``), sent with every progress report of its kind."""
from __future__ import annotations

from twin.live.sections import Section, register

HEAT_MAX = 250                    # the largest heat a GPU reaches; the browser scales its colours by it

EXAMPLE_HEAT = register(Section(
    200, "example_heat", "uint8", "array", per="gpu", constants={"max": HEAT_MAX},
    doc="per GPU (by GPU.index): the example kind's heat, 0..max"))
