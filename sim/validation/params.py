"""The validation run's parameters (the ``validate`` run kind and ``python -m sim validate``)."""
from __future__ import annotations

from sim.calibrate.measurements import KINDS
from sim.core.params import Param, ParamSet

MAX_FOLDS = 20

VALIDATE = ParamSet("validate", (
    Param("kind", "choice", None, "validate only the observations of this kind; null: the whole corpus",
          choices=tuple(KINDS), nullable=True),
    Param("cross_validate", "int", None, "fit the fitted factors on K-1 folds and report the held-out error; "
                                         "null: no cross-validation", min=2, max=MAX_FOLDS, nullable=True),
), doc="The twin's predictions against the public validation corpus: error per kind and overall.")
