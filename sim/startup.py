"""Process-group start-up of a 4D job at 1k to 32k+ ranks (docs/debugging.md, "Start-up model")."""
from __future__ import annotations


def check_startup(v: dict) -> None:
    """Rules of :data:`sim.params.STARTUP` across fields (the sizes parse, each divisible by tp x cp x pp)."""
    raise NotImplementedError


def model(values: dict) -> dict:
    """The start-up time of every job size of ``values`` (:data:`sim.params.STARTUP`), term by term, the dominant
    term and what each optimization removes (schema: docs/debugging.md)."""
    raise NotImplementedError
