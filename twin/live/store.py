"""Per-stream state in Redis: the sequence counter and the last frame (for the REST snapshot after a gap).

A stream is one WebSocket group: ``run.<id>``, ``cluster.<id>`` or ``runs`` (every run's creation and deletion,
events only: no frames, no snapshot). Keys (prefix settings.TWIN_LIVE_KEY_PREFIX):
``<prefix>seq:<stream>`` (INCR counter) and ``<prefix>last:<stream>`` (hash: seq, frame), kept
settings.TWIN_LIVE_SNAPSHOT_TTL seconds after the last publish.
"""
from __future__ import annotations

import os
import threading

import redis
from django.conf import settings

_local = threading.local()

# Keep the newest frame only: concurrent publishers to one cluster stream may finish out of order.
_SET_IF_NEWER = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'seq') or '0')
if tonumber(ARGV[1]) > cur then
  redis.call('HSET', KEYS[1], 'seq', ARGV[1], 'frame', ARGV[2])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return cur
"""


def run_stream(run_id) -> str:
    return f"run.{int(run_id)}"


def cluster_stream(cluster_id) -> str:
    return f"cluster.{int(cluster_id)}"


RUNS_STREAM = "runs"        # the runs list's stream: a run created or deleted anywhere (events only)


def group_name(stream: str) -> str:
    """The channel-layer group of a stream (ASCII letters, digits, '.', '-', '_' only)."""
    return "live." + stream


def client() -> redis.Redis:
    """A Redis client per thread and process (Celery prefork children must not share their parent's sockets)."""
    key = (os.getpid(), settings.REDIS_URL)
    c = getattr(_local, "client", None)
    if c is None or getattr(_local, "key", None) != key:
        c = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5)
        _local.client, _local.key = c, key
    return c


def _key(kind: str, stream: str) -> str:
    return f"{settings.TWIN_LIVE_KEY_PREFIX}{kind}:{stream}"


def next_seq(stream: str) -> int:
    r = client()
    pipe = r.pipeline()
    pipe.incr(_key("seq", stream))
    pipe.expire(_key("seq", stream), settings.TWIN_LIVE_SNAPSHOT_TTL)
    return int(pipe.execute()[0])


def store_last(stream: str, seq: int, frame: bytes) -> None:
    client().eval(_SET_IF_NEWER, 1, _key("last", stream), seq, frame, settings.TWIN_LIVE_SNAPSHOT_TTL)


def load_last(stream: str) -> tuple[int, bytes] | None:
    seq, frame = client().hmget(_key("last", stream), "seq", "frame")
    if seq is None or frame is None:
        return None
    return int(seq), bytes(frame)


def last_seq(stream: str) -> int:
    v = client().hget(_key("last", stream), "seq")
    return int(v) if v is not None else 0
