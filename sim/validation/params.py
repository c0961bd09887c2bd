"""STUB for the twin's side of issue 39 (branch ``page``): the lead's ``sim/validation/params.py`` replaces this file.

What the twin imports from here: :data:`VALIDATE`, a :class:`sim.core.params.ParamSet` whose parameters are
``kind`` (choice, nullable: one of the corpus's measurement kinds, null = every kind) and ``cross_validate`` (int,
nullable: the folds of a cross-validation, null = none). The corpus is not a run parameter (the repository's own)."""
from __future__ import annotations

from sim.core.params import Param, ParamSet

# The measurement kinds of the corpus (CONTRACTS.md, "The corpus file format").
KINDS = ("collective", "nccl-tests", "job", "checkpoint", "restore", "failures", "power")

VALIDATE = ParamSet("validate", (
    Param("kind", "choice", None, "only the corpus's observations of this kind; null: every kind", choices=KINDS,
          nullable=True),
    Param("cross_validate", "int", None, "fit the fitted factors on K-1 folds and report the held-out error; "
                                         "null: no cross-validation", min=2, max=20, nullable=True),
), doc="The twin against the public validation corpus (sim/validation/corpus/).")
