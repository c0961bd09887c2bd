"""Builds in progress, as the overview page shows them: ``scripts/run`` serves its URL at once and builds the default
clusters in the background (twin/launcher.py), so a first visitor sees "building meta-roce-24k: ports 45 %" rather
than an empty twin.

One Redis hash (``<TWIN_LIVE_KEY_PREFIX>building``: cluster name -> JSON ``{"phase", "done", "total", "at"}``),
written by whoever builds (``manage.py build_cluster``, the launcher announcing what it is about to build) and read by
the overview. An entry not refreshed within STALE_S (a build killed half-way) is not shown. Best effort: with Redis
unreachable a build goes on unreported and the page shows none."""
from __future__ import annotations

import json
import time

import redis
from django.conf import settings

STALE_S = 120.0  # seconds after which an entry that was not refreshed is taken for a build that died
WAITING = "waiting"  # the phase of a cluster announced but whose build has not written rows yet


def _client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def _key() -> str:
    return f"{settings.TWIN_LIVE_KEY_PREFIX}building"


def report(name: str, phase: str, done: int = 0, total: int = 0) -> None:
    """``name`` is being built: in ``phase`` (the table being written, or WAITING), ``done`` of ``total`` rows."""
    entry = json.dumps({"phase": str(phase), "done": int(done), "total": int(total), "at": time.time()})
    try:
        c = _client()
        c.hset(_key(), name, entry)
        c.expire(_key(), int(STALE_S))
    except redis.RedisError:
        pass


def finished(*names: str) -> None:
    """The builds of ``names`` ended (built, failed, or found built already)."""
    if not names:
        return
    try:
        _client().hdel(_key(), *names)
    except redis.RedisError:
        pass


def current() -> list[dict]:
    """The builds in progress, by name: ``{"name", "phase", "done", "total", "percent"}``."""
    try:
        raw = _client().hgetall(_key())
    except redis.RedisError:
        return []
    now, out = time.time(), []
    for name, value in sorted(raw.items()):
        try:
            e = json.loads(value)
        except ValueError:
            continue
        if now - e.get("at", 0) > STALE_S:
            continue
        total = e.get("total") or 0
        out.append({"name": name.decode(), "phase": e.get("phase", WAITING), "done": e.get("done", 0),
                    "total": total, "percent": round(100 * e.get("done", 0) / total) if total else 0})
    return out
