"""A cancellation asked of a run, noted in Redis besides its row (``cancel_requested``): a run that works inside one
database transaction (a cluster's build or delete: :class:`twin.runs.tasks.SideReporter`) reads it here, because on
SQLite, which takes one writer at a time, the row's write waits for that very transaction to end. Best effort: with
Redis unreachable, the row alone says it (on PostgreSQL at once, on SQLite once the run has ended)."""
from __future__ import annotations

import logging

import redis
from django.conf import settings

from twin.live import store

log = logging.getLogger("twin.runs")
KEEP_S = 24 * 3600      # a notice outlives any run's time limit


def _key(run_id: int) -> str:
    return f"{settings.TWIN_LIVE_KEY_PREFIX}cancel:{int(run_id)}"


def ask(run_id: int) -> None:
    """Note that ``run_id``'s cancellation was asked."""
    try:
        store.client().set(_key(run_id), 1, ex=KEEP_S)
    except redis.RedisError:
        log.warning("run %s: its cancellation is on its row only (Redis unreachable)", run_id)


def asked(run_id: int) -> bool:
    """Whether ``run_id``'s cancellation was noted."""
    try:
        return bool(store.client().exists(_key(run_id)))
    except redis.RedisError:
        return False
