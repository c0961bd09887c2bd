"""The rules across the failures parameters (:data:`sim.failures.params.FAILURES` checks with :func:`check_failures`):
the job's layout as a job's, the checkpoint interval and the sweep against the run, rates, repair times and the
chosen failures parse.
"""
from __future__ import annotations

from sim.core.errors import ParamError, UsageError
from sim.core.units import parse_duration, parse_durations
from sim.failures import rates as fr
from sim.failures.inject import parse_injections
from sim.jobs.layout import check_job


def _duration(value: str, field_name: str) -> float:
    try:
        return parse_duration(value)
    except UsageError as e:
        raise ParamError(field_name, str(e)) from None


def check_failures(v: dict) -> None:
    """Rules across :data:`sim.failures.params.FAILURES` (called by its ``validate``): the job's layout (as JOB), the interval
    shorter than the run, rates, repair times, injected failures and the sweep parse. Raises :class:`ParamError`
    naming the field."""
    check_job(v)
    wall = v["days"] * 86400.0
    interval = _duration(v["checkpoint_interval"], "checkpoint_interval")
    if interval >= wall:
        raise ParamError("checkpoint_interval", f"{interval / 3600:g} h is not shorter than the run "
                                                f"({v['days']:g} days)")
    fr.parse_overrides(v["rates"], "rates")
    fr.parse_overrides(v["repair_h"], "repair_h")
    parse_injections(v["inject"], wall)
    if v["sweep_interval"]:
        try:
            points = parse_durations(v["sweep_interval"])
        except UsageError as e:
            raise ParamError("sweep_interval", str(e)) from None
        if max(points) >= wall:
            raise ParamError("sweep_interval", f"{max(points) / 3600:g} h is not shorter than the run "
                                               f"({v['days']:g} days)")
