"""The calibration's parameters: the measurements (a file's text, or raw nccl-tests output), what raw logs do not
say (``hosts``, ``column``) and the names to fit."""
from __future__ import annotations

from sim.calibrate.measurements import MAX_FILE_BYTES, read_values
from sim.calibrate.nccltests import HALVES
from sim.fabric.params import MAX_LIST_BYTES
from sim.core.errors import ParamError
from sim.core.params import Param, ParamSet

MAX_FIT = 32                      # parameters one fit may name
MAX_FOLDS = 50                    # held-out folds at most (each is a fit)


def fit_names(text: str | None) -> list[str] | None:
    """The ``fit`` parameter as names (None: the default, the parameters the measurements inform)."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ParamError("fit", "names no parameter: give names such as gemm_efficiency,base_rtt_us, or leave it out")
    if len(names) > MAX_FIT:
        raise ParamError("fit", f"{len(names)} names, at most {MAX_FIT}")
    return names


def _check(v: dict) -> None:
    """The measurements parse, every entry valid (errors name ``entry[i].field``), the fit names are a list, and
    at most one held-out scheme is asked for."""
    read_values(v)
    fit_names(v["fit"])
    if v["holdout"] is not None and v["folds"] is not None:
        raise ParamError("folds", "give holdout (a fraction) or folds, not both")


CALIBRATE = ParamSet("calibrate", (
    Param("measurements", "text", None, "the measurements: TOML [[entry]] tables or JSON, or raw nccl-tests output "
                                        "(all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf... "
                                        "logs, one or several, pasted whole) (docs/calibration.md)",
          max=MAX_FILE_BYTES, blank_is_null=False),
    Param("hosts", "text", None, "raw nccl-tests output only: the cluster's hosts the logs ran on, one per line as "
                                 "mpirun takes them ('host slots=8'), each log's ranks in their order; null: each log "
                                 "placed by the collective's default placement (a log that does not say how many "
                                 "ranks ran needs them)", max=MAX_LIST_BYTES, nullable=True),
    Param("column", "choice", HALVES[0], "raw nccl-tests output only: the half of each row whose time is measured",
          choices=HALVES),
    Param("fit", "text", None, "parameters to fit, comma-separated (e.g. gemm_efficiency,base_rtt_us); null: the "
                               "fittable parameters the measurements inform", max=2000, nullable=True),
    Param("holdout", "float", None, "held-out error: the share of the observations held out at random (fit on the "
                                    "rest, predicted); null: 5 folds from 10 observations, leave-one-out from 2",
          min=0.01, max=0.9, nullable=True),
    Param("folds", "int", None, "held-out error by K folds (each fitted on the others and predicted); null: as "
                                "holdout says", min=2, max=MAX_FOLDS, nullable=True),
    Param("seed", "int", 0, "seed of the held-out split", min=0, max=2 ** 31 - 1),
), check=_check, doc="Measured results against the twin's predictions, and a least-squares fit of named "
                     "parameters.")
