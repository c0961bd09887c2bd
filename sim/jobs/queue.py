"""The jobs file: a JSON list or TOML ``[[job]]`` tables of jobs, each its own keys (name, arrival, run time) and a
job's parameters, read into :class:`QueuedJob` (docs/jobs.md). It takes the job parameters' validation as an
argument, so the declarations (:mod:`sim.jobs.params`) can check a jobs file with it.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass

from sim.core.errors import ParamError

HOUR = 3600.0
JOB_KEYS = ("name", "arrival_hours", "steps", "hours")    # a queued job's own keys; the rest are JOB parameters
MAX_QUEUED = 100_000
MAX_SHARED_JOBS = 64              # jobs sharing the fabric in one ``jobs`` simulation (each may need a solve alone)


@dataclass
class QueuedJob:
    """A job of the queue: ``params`` (validated :data:`sim.jobs.params.JOB`), ``arrival`` (s), and ``steps`` or
    ``hours`` (run time)."""

    name: str
    arrival: float
    params: dict
    steps: int | None = None
    hours: float | None = None


def read_jobs(text: str, validate, timed: bool = True, max_jobs: int = MAX_QUEUED) -> list[QueuedJob]:
    """The jobs file: a JSON list of objects, or TOML ``[[job]]`` tables. Each job: ``name`` (optional),
    ``arrival_hours`` (default 0), ``steps`` or ``hours`` (one of them; with ``timed`` False, for jobs sharing the
    fabric at one instant, both optional; at most ``max_jobs`` jobs), and any job parameter (``gpus``, ``model``, ``tp``,
    ``pp``, ``dp``, ``batch_tokens``, ...), checked by ``validate`` (:data:`sim.jobs.params.JOB`'s). Refused with
    :class:`ParamError` naming ``jobs[i].field``."""
    text = text or ""
    try:
        data = json.loads(text)
    except ValueError:
        try:
            data = tomllib.loads(text).get("job")
        except tomllib.TOMLDecodeError as e:
            raise ParamError("jobs", f"neither a JSON list nor TOML [[job]] tables: {e}") from None
    if not isinstance(data, list) or not data:
        raise ParamError("jobs", "must be a non-empty list of jobs (JSON list, or TOML [[job]] tables)")
    if len(data) > max_jobs:
        raise ParamError("jobs", f"{len(data):,} jobs, at most {max_jobs:,}")
    out = []
    for i, item in enumerate(data):
        where = f"jobs[{i}]"
        if not isinstance(item, dict):
            raise ParamError(where, "must be an object (table) of job fields")
        own = {k: item[k] for k in JOB_KEYS if k in item}
        rest = {k: v for k, v in item.items() if k not in JOB_KEYS}
        rest.setdefault("placement", "topology")
        try:
            params = validate({**rest, "hottest": 0})
        except ParamError as e:
            raise ParamError({f"{where}.{k}": v for k, v in e.errors.items()}) from None
        arrival = own.get("arrival_hours", 0.0)
        if isinstance(arrival, bool) or not isinstance(arrival, (int, float)) or not 0 <= arrival < 1e6:
            raise ParamError(f"{where}.arrival_hours", "must be a number of hours from 0")
        steps, hours = own.get("steps"), own.get("hours")
        if (steps is None) == (hours is None) and (timed or steps is not None):
            raise ParamError(f"{where}.steps", "give steps or hours (one of them)")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 10**9):
            raise ParamError(f"{where}.steps", "must be a whole number from 1 to 1,000,000,000")
        if hours is not None and (isinstance(hours, bool) or not isinstance(hours, (int, float))
                                  or not 0 < hours <= 1e5):
            raise ParamError(f"{where}.hours", "must be a number of hours above 0, at most 100,000")
        name = str(own.get("name", f"job{i}"))[:64]
        out.append(QueuedJob(name, float(arrival) * HOUR, params, steps, None if hours is None else float(hours)))
    return out

