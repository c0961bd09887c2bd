"""What a schedule may be: a crontab every field of which Celery's crontab parser reads, or an interval; either
firing at most once per TWIN_SCHEDULE_MIN_INTERVAL_SECONDS. Checked by :func:`twin.runs.actions.save_schedule`
(every write of a schedule), so beat never meets a row it cannot parse from the API; rows written before or by
hand are beat's business (:mod:`twin.runs.beat`)."""
from __future__ import annotations

from datetime import datetime
from datetime import timezone as dt_timezone

from celery.schedules import ParseException, crontab
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from sim.core.errors import ParamError
from twin.runs.constants import setting

# The crontab fields, each with its default and the values Celery accepts (the ranges of celery.schedules.crontab).
CRONTAB_FIELDS = {"minute": ("0", "0-59"), "hour": ("*", "0-23"), "day_of_week": ("*", "0-6 or sun-sat"),
                  "day_of_month": ("*", "1-31"), "month_of_year": ("*", "1-12")}
PERIOD_SECONDS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
MAX_INTERVAL_SECONDS = 365 * 86400      # an interval of at most a year (beat's timedelta, the database's integer)


def validated_crontab(fields: dict) -> dict:
    """``fields`` (any subset of :data:`CRONTAB_FIELDS`, the others at their default) as the strings stored,
    each read by Celery's parser: lists, ranges, steps and (day_of_week only) day names. Raises
    :class:`ParamError` naming each bad field; then the closest two firings must be far enough apart."""
    out, errors = {}, {}
    for name, (default, allowed) in CRONTAB_FIELDS.items():
        value = str(fields.get(name, default)).strip().lower()
        limit = CrontabSchedule._meta.get_field(name).max_length
        if len(value) > limit:
            errors[name] = [f"at most {limit} characters"]
        elif name != "day_of_week" and any(c.isalpha() for c in value):
            errors[name] = [f"{value!r}: expected numbers ({allowed}), lists, ranges or steps (*/15)"]
        else:
            try:
                crontab(**{name: value})
            except (ValueError, ParseException) as e:
                errors[name] = [f"{value!r}: {e} (allowed: {allowed}, lists, ranges or steps)"]
        out[name] = value
    unknown = sorted(set(fields) - set(CRONTAB_FIELDS))
    for name in unknown:
        errors[name] = ["not a crontab field"]
    if errors:
        raise ParamError(errors)
    try:
        crontab(**out)
    except ValueError as e:                 # each field reads, but together they name no date: 30 February
        raise ParamError("day_of_month", f"never fires: {e}") from None
    gap, field = closest_firings(out)
    least = setting("TWIN_SCHEDULE_MIN_INTERVAL_SECONDS")
    if gap < least:
        raise ParamError(field, f"fires {gap} s apart at the closest, at least {least} s "
                                f"(TWIN_SCHEDULE_MIN_INTERVAL_SECONDS)")
    return out


def closest_firings(fields: dict) -> tuple[int, str]:
    """Seconds between the closest two firings of a valid crontab, and the field that sets them (``minute`` when
    two minutes of one hour do, ``hour`` when the last minute of one hour and the first of the next do). Days are
    taken as consecutive (a day-of-week gap can only widen it), so this never says more than the truth."""
    c = crontab(**fields)
    minutes, hours = sorted(c.minute), sorted(c.hour)
    within = min((b - a for a, b in zip(minutes, minutes[1:])), default=float("inf")) * 60
    hour_steps = [b - a for a, b in zip(hours, hours[1:])] + [24 - hours[-1] + hours[0]]
    across = (min(hour_steps) * 60 - minutes[-1] + minutes[0]) * 60
    return (int(within), "minute") if within <= across else (across, "hour")


def validated_interval(every, period: str) -> dict:
    """An interval of at least TWIN_SCHEDULE_MIN_INTERVAL_SECONDS and at most a year; raises :class:`ParamError`
    naming ``every``."""
    least = setting("TWIN_SCHEDULE_MIN_INTERVAL_SECONDS")
    if period not in PERIOD_SECONDS:
        raise ParamError("period", f"choose one of {', '.join(PERIOD_SECONDS)}")
    if every * PERIOD_SECONDS[period] > MAX_INTERVAL_SECONDS:
        raise ParamError("every", f"{every} {period} is more than a year ({MAX_INTERVAL_SECONDS // 86400} days, "
                                  f"{MAX_INTERVAL_SECONDS} s)")
    if every * PERIOD_SECONDS[period] < least:
        raise ParamError("every", f"{every} {period} is {every * PERIOD_SECONDS[period]} s, at least {least} s "
                                  f"(TWIN_SCHEDULE_MIN_INTERVAL_SECONDS)")
    return {"every": every, "period": period}


def next_run_at(task, now=None):
    """When beat starts ``task`` (a PeriodicTask) next, as beat reckons it: its crontab's or interval's next time
    after its last start (never started: after now), to the second; now when that is past (beat starts it on its
    next tick); None while it is paused or when Celery cannot read it (beat skips such a row: twin.runs.beat)."""
    if not task.enabled:
        return None
    now = now or timezone.now()
    try:
        remaining = task.schedule.remaining_estimate(task.last_run_at or now)
    except Exception:  # noqa: BLE001 - a row Celery cannot read has no next start
        return None
    at = datetime.fromtimestamp(round((now + remaining).timestamp()), tz=dt_timezone.utc)  # beat's whole seconds
    return max(now, at)
