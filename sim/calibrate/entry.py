"""The calibration capability's entry point (docs/engine.md "Entry points"): ``run_calibrate(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.calibrate.params.CALIBRATE`. Its ``to_dict()`` is what ``python -m sim calibrate --json`` prints.
"""
from __future__ import annotations

from sim.calibrate.fit import Calibration, calibrate
from sim.calibrate.measurements import read_values
from sim.calibrate.params import fit_names


def run_calibrate(cluster, values: dict, progress=None) -> Calibration:
    """Every entry of ``values['measurements']`` predicted, ``values['fit']`` fitted, predicted again
    (:func:`sim.calibrate.fit.calibrate`)."""
    return calibrate(cluster, read_values(values), fit_names(values["fit"]), progress=progress,
                     holdout=values.get("holdout"), folds=values.get("folds"), seed=values.get("seed") or 0)
