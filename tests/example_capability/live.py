"""The example's live section: a per-GPU byte (``example_heat``), sent with every progress report of its kind."""
from __future__ import annotations

from tests.example_capability.model import HEAT_MAX
from twin.live.sections import Section, register

EXAMPLE_HEAT = register(Section(
    200, "example_heat", "uint8", "array", per="gpu", constants={"max": HEAT_MAX},
    doc="per GPU (by GPU.index): the example kind's heat, 0..max"))
