"""STUB for the twin's side of issue 39 (branch ``page``): the lead's ``sim/validation/entry.py`` replaces this file.

What the twin imports from here: :func:`run_validate` ``(values: dict, progress=None) -> dict``, the result document
of CONTRACTS.md (``overall``, ``kinds``, ``before``, ``cross_validated``, ``factors``, ``sources``,
``observations``, ``thresholds``, ``passed``, ``broken``). This stub predicts nothing: it says the engine is missing.
``STUB`` marks it, so that the tests that need the real engine skip until it lands."""
from __future__ import annotations

STUB = True


def run_validate(values: dict, progress=None) -> dict:
    raise NotImplementedError("sim.validation's engine has not landed on this branch (stub)")
