"""API rate limits: per user (TWIN_API_RATE_USER) and per anonymous client address (TWIN_API_RATE_ANON), counted in
fixed windows that start at a client's first call, in the shared throttle cache (CACHES["throttle"], Redis), so that
every web process counts together.

A fixed window costs one counter per client and window, counted and read in one round trip to Redis (a small Lua
script: INCR, and PEXPIRE on the window's first hit), where DRF's own throttles keep, read and rewrite the list of
every request's time. Over the limit: 429 with ``Retry-After`` (the seconds left in the window).
"""
from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import caches
from rest_framework.throttling import BaseThrottle

log = logging.getLogger(__name__)
_warned_at = 0.0

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600,
           "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"600/min"`` -> (600, 60): requests and the window in seconds."""
    count, _, period = str(rate).partition("/")
    if not count.strip().isdigit() or period.strip().lower() not in PERIODS:
        raise ValueError(f"{rate!r} is not a rate such as 600/min")
    return int(count), PERIODS[period.strip().lower()]


def client_address(request) -> str:
    """The client's address as DRF's throttles read it: REMOTE_ADDR, or behind TWIN_NUM_PROXIES trusted proxies
    (REST_FRAMEWORK NUM_PROXIES) the address they saw, from X-Forwarded-For. Works on Django and DRF requests."""
    return BaseThrottle().get_ident(request) or "unknown"


def cache():
    return caches[settings.TWIN_THROTTLE_CACHE]


# KEYS[1]: the counter. ARGV[1]: the window in ms. The window starts at the first hit (the key's expiry).
_COUNT_HIT = """
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local left = redis.call('PTTL', KEYS[1])
if left < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); left = tonumber(ARGV[1]) end
return {hits, left}
"""
_READ_COUNT = """
return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('PTTL', KEYS[1])}
"""


def _run(script: str, key: str, *args):
    """Run ``script`` on ``key`` of the throttle cache (Django's Redis cache: its key prefix, its client), by its
    SHA once Redis knows it."""
    c = cache()
    name = c.make_and_validate_key(f"{key}:window")
    client = c._cache.get_client(name, write=True)
    return client.register_script(script)(keys=[name], args=list(args), client=client)


def _warn() -> None:
    global _warned_at
    now = time.time()
    if now - _warned_at > 60:
        _warned_at = now
        log.warning("throttle cache unreachable: rate limits and login lockouts are not counted", exc_info=True)


def count_hit(key: str, window: int) -> tuple[int, float]:
    """Count one hit on ``key`` in its window: (hits so far, seconds until the window ends), in one round trip. A
    window starts at the first hit on the key and lasts ``window`` seconds (a window on the wall clock would reset
    every count at its boundary: ten failed logins at 10:29:59 and ten more at 10:30:00). With the cache
    unreachable (Redis down) nothing is counted, and the API keeps answering: 0 hits."""
    try:
        hits, left_ms = _run(_COUNT_HIT, key, int(window * 1000))
        return int(hits), max(0.0, int(left_ms) / 1000)
    except Exception:  # noqa: BLE001 - redis errors: rate limits fail open rather than the whole API failing
        _warn()
        return 0, window


def read_count(key: str, window: int) -> tuple[int, float]:
    """The hits on ``key`` in its current window (0 when none is open or the cache is unreachable) and the seconds
    left in it."""
    try:
        hits, left_ms = _run(_READ_COUNT, key)
        return (int(hits), int(left_ms) / 1000) if int(left_ms) > 0 else (0, window)
    except Exception:  # noqa: BLE001 - as count_hit
        return 0, window


class _FixedWindowThrottle(BaseThrottle):
    setting = ""
    scope = ""

    def ident_for(self, request) -> str | None:
        raise NotImplementedError

    def allow_request(self, request, view):
        ident = self.ident_for(request)
        if ident is None:
            return True
        limit, window = parse_rate(getattr(settings, self.setting))
        hits, self._wait = count_hit(f"api:{self.scope}:{ident}", window)
        return hits <= limit

    def wait(self):
        return max(1.0, self._wait)


class AnonRateThrottle(_FixedWindowThrottle):
    """Anonymous calls, per client address."""

    setting, scope = "TWIN_API_RATE_ANON", "anon"

    def ident_for(self, request):
        return None if request.user and request.user.is_authenticated else client_address(request)


class UserRateThrottle(_FixedWindowThrottle):
    """Authenticated calls, per user."""

    setting, scope = "TWIN_API_RATE_USER", "user"

    def ident_for(self, request):
        return str(request.user.pk) if request.user and request.user.is_authenticated else None
