"""The jobs file: a JSON list or TOML ``[[job]]`` tables of jobs, each its own keys (name, arrival, run time) and a
job's parameters, read into :class:`QueuedJob` (docs/jobs.md). It takes the job parameters' validation as an
argument, so the declarations (:mod:`sim.jobs.params`) can check a jobs file with it.
"""
from __future__ import annotations

import functools
import json
import re
import tomllib
from dataclasses import dataclass

from sim.core.errors import ParamError

HOUR = 3600.0
JOB_KEYS = ("name", "arrival_hours", "steps", "hours")    # a queued job's own keys; the rest are JOB parameters
MAX_QUEUED = 100_000
MAX_SHARED_JOBS = 64              # jobs sharing the fabric in one ``jobs`` simulation (each may need a solve alone)
MAX_NAME = 64                     # characters of a job's name
TOML_JOB = re.compile(r"^[ \t]*\[\[[ \t]*job[ \t]*\]\]", re.M)


@dataclass
class QueuedJob:
    """A job of the queue: ``params`` (validated :data:`sim.jobs.params.JOB`), ``arrival`` (s), and ``steps`` or
    ``hours`` (run time)."""

    name: str
    arrival: float
    params: dict
    steps: int | None = None
    hours: float | None = None
    line: int | None = None           # where its entry starts in the file


def read_jobs(text: str, validate, timed: bool = True, max_jobs: int = MAX_QUEUED) -> list[QueuedJob]:
    """The jobs file: a JSON list of objects, or TOML ``[[job]]`` tables. Each job: ``name`` (optional, unique, at
    most :data:`MAX_NAME` characters), ``arrival_hours`` (default 0), ``steps`` or ``hours`` (one of them; with
    ``timed`` False, for jobs sharing the fabric at one instant, both optional; at most ``max_jobs`` jobs), and any
    job parameter (``gpus``, ``model``, ``tp``, ``pp``, ``dp``, ``batch_tokens``, ...), checked by ``validate``
    (:data:`sim.jobs.params.JOB`'s). Refused with :class:`ParamError` naming ``jobs`` or ``jobs[i].field``, each
    entry's reason ending with the line it starts on. The last few files read are remembered: one request checks
    its file several times (the parameters, the GPUs, the cost, the time estimate), and 100,000 jobs take seconds."""
    return list(_read_remembered(text or "", validate, timed, max_jobs))


@functools.lru_cache(maxsize=4)
def _read_remembered(text: str, validate, timed: bool, max_jobs: int) -> tuple[QueuedJob, ...]:
    return tuple(_read(text, validate, timed, max_jobs))


def _read(text: str, validate, timed: bool, max_jobs: int) -> list[QueuedJob]:
    try:
        data, lines = _parse(text)
    except RecursionError:
        raise ParamError("jobs", "nested too deeply to read (a job is a flat table of fields)") from None
    if not isinstance(data, list) or not data:
        raise ParamError("jobs", "must be a non-empty list of jobs (JSON list, or TOML [[job]] tables)")
    if len(data) > max_jobs:
        raise ParamError("jobs", f"{len(data):,} jobs, at most {max_jobs:,}")
    out, names = [], {}
    for i, item in enumerate(data):
        where, line = f"jobs[{i}]", lines[i]
        at = f" (line {line})" if line else ""
        try:
            job = _read_job(item, i, where, at, validate, timed)
        except RecursionError:
            raise ParamError(where, f"nested too deeply to read (a job is a flat table of fields){at}") from None
        if job.name in names:
            raise ParamError(f"{where}.name", f"{job.name!r} is already the name of jobs[{names[job.name]}]{at}")
        names[job.name] = i
        job.line = line
        out.append(job)
    return out


def _parse(text: str) -> tuple[object, list]:
    """The decoded file and, for a list, the line each entry starts on (None where it cannot be told)."""
    try:
        data = json.loads(text)
        toml = False
    except ValueError as json_error:
        try:
            data = tomllib.loads(text).get("job")
            toml = True
        except tomllib.TOMLDecodeError as e:
            raise ParamError("jobs", f"neither a JSON list ({json_error}) nor TOML [[job]] tables ({e})") from None
    if not isinstance(data, list):
        return data, []
    starts = [m.start() for m in TOML_JOB.finditer(text)] if toml else _json_starts(text, len(data))
    if len(starts) != len(data):
        return data, [None] * len(data)
    lines, line, pos = [], 1, 0
    for s in starts:                    # increasing offsets: one pass over the text
        line += text.count("\n", pos, s)
        pos = s
        lines.append(line)
    return data, lines


def _json_starts(text: str, n: int) -> list[int]:
    """Offsets of the ``n`` entries of a JSON list that has parsed: each decoded in turn from where it starts."""
    decoder, skip = json.JSONDecoder(), re.compile(r"[ \t\n\r,]*")
    starts, i = [], text.index("[") + 1
    for _ in range(n):
        i = skip.match(text, i).end()
        starts.append(i)
        i = decoder.raw_decode(text, i)[1]
    return starts


def _read_job(item, i: int, where: str, at: str, validate, timed: bool) -> QueuedJob:
    if not isinstance(item, dict):
        raise ParamError(where, f"must be an object (table) of job fields{at}")
    own = {k: item[k] for k in JOB_KEYS if k in item}
    rest = {k: v for k, v in item.items() if k not in JOB_KEYS}
    rest.setdefault("placement", "topology")
    try:
        params = validate({**rest, "hottest": 0})
    except ParamError as e:
        raise ParamError({f"{where}.{k}": [f"{r}{at}" for r in v] for k, v in e.errors.items()}) from None
    name = own.get("name", f"job{i}")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise ParamError(f"{where}.name", f"must be text of 1 to {MAX_NAME} characters{at}")
    arrival = own.get("arrival_hours", 0.0)
    if isinstance(arrival, bool) or not isinstance(arrival, (int, float)) or not 0 <= arrival < 1e6:
        raise ParamError(f"{where}.arrival_hours", f"must be a number of hours from 0 (below 1,000,000){at}")
    steps, hours = own.get("steps"), own.get("hours")
    if (steps is None) == (hours is None) and (timed or steps is not None):
        raise ParamError(f"{where}.steps", f"give steps or hours (one of them){at}")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 10**9):
        raise ParamError(f"{where}.steps", f"must be a whole number from 1 to 1,000,000,000{at}")
    if hours is not None and (isinstance(hours, bool) or not isinstance(hours, (int, float))
                              or not 0 < hours <= 1e5):
        raise ParamError(f"{where}.hours", f"must be a number of hours above 0, at most 100,000{at}")
    return QueuedJob(name, float(arrival) * HOUR, params, steps, None if hours is None else float(hours))
