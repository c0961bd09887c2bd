"""The least-squares solve of a calibration (docs/calibration.md "The fit"): ``scipy.optimize.least_squares``
(trust-region reflective, bounds) on ``log(predicted / measured)`` in the parameters' transformed coordinates, with
a forward-difference Jacobian evaluated through the :class:`sim.calibrate.predict.Predictor` (so its reuse holds).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from sim.calibrate.fittable import Fittable
from sim.calibrate.predict import Predictor

FD_STEP = 1e-3                    # forward-difference step in the transformed coordinate (0.1 % of a log parameter)
MAX_NFEV = 60                     # evaluations of the residuals least_squares may take (its Jacobians apart)
TOLERANCE = 1e-6                  # least_squares' ftol, xtol and gtol: a millionth, far inside any interval
SENSITIVITY_TOL = 1e-6            # a Jacobian column (log error per unit of transformed parameter) below this: 0


def entries_of(pred: Predictor, mask) -> set | None:
    """The entries (positions) with an observation in ``mask``: the only ones a prediction on it needs to run."""
    return None if mask is None else set(np.unique(pred.obs_entry[mask]).tolist())


def log_residuals(predicted: np.ndarray, pred: Predictor, mask: np.ndarray) -> np.ndarray:
    """log(predicted / measured) of the observations in ``mask`` (a prediction <= 0 is taken as tiny)."""
    return np.log(np.maximum(predicted[mask], 1e-300) / pred.measured[mask])


def theta_of(params: list[Fittable], z: np.ndarray, fixed: dict) -> dict:
    return fixed | {p.name: p.from_z(float(zi)) for p, zi in zip(params, z)}


def jacobian(params, z, r, evaluate, pred, mask, fixed=None) -> np.ndarray:
    """(observations in mask, parameters) d log(predicted/measured)/dz by forward differences (backward at an
    upper bound)."""
    J = np.zeros((r.size, len(params)))
    for j, p in enumerate(params):
        h = FD_STEP if z[j] + FD_STEP <= p.z_bounds[1] else -FD_STEP
        zj = z.copy()
        zj[j] += h
        J[:, j] = (log_residuals(evaluate(theta_of(params, zj, fixed or {})), pred, mask) - r) / h
    return J


def solve(params, fixed, pred, mask, evaluate, z_start=None):
    """least_squares over ``params`` (the others at ``fixed``) on the observations in ``mask``: the optimum in the
    transformed coordinate, its residuals and Jacobian, and the iterations (Jacobians) taken."""
    fixed = {k: v for k, v in fixed.items() if k not in {p.name for p in params}}
    lo = np.array([p.z_bounds[0] for p in params])
    hi = np.array([p.z_bounds[1] for p in params])
    z0 = np.array([p.to_z(p.start) for p in params]) if z_start is None else np.asarray(z_start, float)
    z0 = np.clip(z0, lo, hi)
    only = None if mask.all() else mask
    last: dict = {}

    def fun(z):
        r = log_residuals(evaluate(theta_of(params, z, fixed), "fit", only), pred, mask)
        last["z"], last["r"] = z.copy(), r
        return r

    def jac(z):
        r = last["r"] if "z" in last and np.array_equal(last["z"], z) else fun(z)
        return jacobian(params, z, r, lambda th: evaluate(th, "fit: Jacobian", only), pred, mask, fixed)

    sol = least_squares(fun, z0, jac=jac, bounds=(lo, hi) if len(params) else (-np.inf, np.inf), method="trf",
                        x_scale="jac", ftol=TOLERANCE, xtol=TOLERANCE, gtol=TOLERANCE, max_nfev=MAX_NFEV)
    z = sol.x
    r = fun(z)
    return z, r, jac(z), int(sol.njev or 0)
