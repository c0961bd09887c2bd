"""Calibration profiles in runs: the one ``calibration`` parameter every kind with parameters takes, what a profile
may hold, and how a run's parameters take a profile's values.

- :data:`CALIBRATION` is declared here, once, in the runs layer and not in ``sim.core``: a profile is a row of the
  twin's database (:class:`twin.runs.models.CalibrationProfile`, per cluster), which the engine and its command line
  know nothing of; the API's serializers, the schema and the runs form add it to every kind's own parameters
  (:mod:`twin.runs.params`).
- :func:`checked_values` is what a profile's ``values`` may be: names of ``float`` or ``int`` parameters of some
  registered kind, each value accepted by that parameter's own validation (:meth:`sim.core.params.Param.parse`, the
  same words as the command line) for every kind that declares it.
- :func:`resolve` applies a profile to a run's parameters before they are validated: each value the profile holds
  for a parameter the kind declares is taken unless the request gives that parameter a value of its own (not null);
  names the kind does not have are ignored and listed. The validated parameters keep the record
  ``{"profile", "id", "applied", "ignored"}`` under ``calibration``; given back (a scenario's stored parameters, a
  what-if of a run), the record names the profile again and the values it applied then are taken from the profile
  as it is now (:func:`unapplied`: a value that differs from what was applied was the user's own, and wins).
"""
from __future__ import annotations

import math

from sim.core.errors import ParamError
from sim.core.params import Param
from twin.runs import registry
from twin.runs.models import CalibrationProfile

KEY = "calibration"
NUMBER_TYPES = ("float", "int")
MAX_SUMMARY_CHARS = 65_536         # a profile's summary (the fit's before/after errors), as JSON text
MAX_REFUSED = 64                   # refused parameters a profile lists

CALIBRATION = Param(KEY, "text", None, "a calibration profile of the run's cluster (/api/calibrations/): its values "
                                       "replace the defaults of the parameters this kind declares (a value the run "
                                       "gives itself wins); null: none, the engine's own defaults", nullable=True,
                    max=100)


def numeric_params() -> dict[str, list[tuple[str, Param]]]:
    """Every ``float`` or ``int`` parameter of the registered kinds: name -> [(kind, its Param)]."""
    out: dict[str, list[tuple[str, Param]]] = {}
    for kind in registry.kinds().values():
        for p in kind.params or ():
            if p.type in NUMBER_TYPES:
                out.setdefault(p.name, []).append((kind.name, p))
    return out


def checked_values(values) -> dict:
    """``values`` (name -> number) as a profile keeps them, each parsed by its parameter's declaration; raises
    :class:`ParamError` naming each bad name (an unknown or non-numeric parameter, a value out of its range)."""
    if not isinstance(values, dict):
        raise ParamError("values", "expected an object: parameter name -> number")
    known = numeric_params()
    errors: dict[str, list[str]] = {}
    out = {}
    for name, value in values.items():
        key = str(name)[:64]
        if name not in known:
            errors[key] = ["not a number parameter of any run kind"]
            continue
        if value is None or isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
            errors[key] = [f"must be a number, got {str(value)[:40]!r}"]
            continue
        try:
            parsed = [p.parse(value) for _, p in known[name]]        # every kind that declares it takes it
        except ParamError as e:
            errors[key] = [m for msgs in e.errors.values() for m in msgs]
            continue
        out[name] = parsed[0]
    if errors:
        raise ParamError(errors)
    return out


def checked_intervals(intervals, values: dict) -> dict:
    """``intervals`` (name -> [low, high], optional): names of ``values``, two finite numbers, low <= high."""
    if intervals in (None, ""):
        return {}
    if not isinstance(intervals, dict):
        raise ParamError("intervals", "expected an object: parameter name -> [low, high]")
    errors: dict[str, list[str]] = {}
    out = {}
    for name, pair in intervals.items():
        key = str(name)[:64]
        if name not in values:
            errors[key] = ["not a parameter of the profile's values"]
        elif not (isinstance(pair, list) and len(pair) == 2
                  and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in pair)):
            errors[key] = ["expected [low, high]: two finite numbers"]
        elif pair[0] > pair[1]:
            errors[key] = [f"low {pair[0]:g} is above high {pair[1]:g}"]
        else:
            out[name] = [float(pair[0]), float(pair[1])]
    if errors:
        raise ParamError(errors)
    return out


def checked_holdout(holdout) -> dict:
    """``holdout`` (optional): the fit's held-out error as ``python -m sim calibrate --json`` gives it, an object
    whose ``median_abs_error`` (and the other ``*_abs_error``, ``count``) is a finite number >= 0 or null."""
    if holdout in (None, ""):
        return {}
    if not isinstance(holdout, dict) or len(str(holdout)) > MAX_SUMMARY_CHARS:
        raise ParamError("holdout", "expected an object: the fit's held-out error (method, folds, count, "
                                    "median_abs_error)")
    for key, v in holdout.items():
        if (key.endswith("_abs_error") or key == "count") and v is not None and not (
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0):
            raise ParamError("holdout", f"{str(key)[:40]}: must be a number >= 0 or null")
    return dict(holdout)


def checked_refused(refused) -> list:
    """``refused`` (optional): ``[{name, reason, would}]``, each a text, at most MAX_REFUSED."""
    if refused in (None, ""):
        return []
    if not isinstance(refused, list) or len(refused) > MAX_REFUSED:
        raise ParamError("refused", f"expected a list of at most {MAX_REFUSED} objects {{name, reason, would}}")
    out = []
    for i, r in enumerate(refused):
        if not isinstance(r, dict) or set(r) - {"name", "reason", "would"} or not all(
                isinstance(r.get(k), str) and 0 < len(r[k]) <= 1000 for k in ("name", "reason", "would")):
            raise ParamError("refused", f"[{i}]: expected {{name, reason, would}}, each a text of 1 to 1,000 "
                                        f"characters")
        out.append({k: r[k] for k in ("name", "reason", "would")})
    return out


def _profile(name: str, cluster) -> CalibrationProfile:
    name = name.strip()
    if cluster is None:
        raise ParamError(KEY, "a calibration profile is a cluster's: give the run's cluster")
    profile = CalibrationProfile.objects.filter(cluster=cluster, name=name).first()
    if profile is None:
        elsewhere = CalibrationProfile.objects.filter(name=name).exclude(cluster=cluster).exists()
        raise ParamError(KEY, f"calibration profile {name[:100]!r} does not exist on {cluster.name}"
                              + (" (a profile of that name is another cluster's)" if elsewhere else ""))
    return profile


def resolve(kind: registry.Kind, values, cluster) -> tuple[dict, dict | None]:
    """``values`` (a run's parameters as given) with the profile they name applied, and the record of what was
    applied (None when they name none). Raises :class:`ParamError` on ``calibration``: no such profile on
    ``cluster``, or not a profile name."""
    if not isinstance(values, dict) or KEY not in values:
        return values, None
    given = values[KEY]
    if isinstance(given, dict):                     # a record given back: a stored run's or scenario's parameters
        given = given.get("profile")
    values = unapplied(values)
    given = CALIBRATION.parse(given)                # text of at most 100 characters; null, "" or "null": none
    if given is None:
        return values, None
    profile = _profile(given, cluster)
    declared = kind.params.by_name if kind.params is not None else {}
    applied, ignored = {}, []
    for name, value in profile.values.items():
        if name not in declared:
            ignored.append(name)
        elif values.get(name) is None:             # a value of the user's own wins
            values[name] = applied[name] = value
    return values, {"profile": profile.name, "id": profile.pk, "applied": applied, "ignored": sorted(ignored)}


def unapplied(values: dict) -> dict:
    """Stored parameters (a run's, a scenario's) as the user gave them: without the calibration record, and without
    the values it applied that are still as applied (a value changed since, a what-if's, is the user's own)."""
    values = dict(values)
    record = values.pop(KEY, None)
    applied = record.get("applied") if isinstance(record, dict) else None
    for name, value in (applied if isinstance(applied, dict) else {}).items():
        if name in values and values[name] == value:
            del values[name]
    return values
