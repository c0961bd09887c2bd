"""Which run messages the broker still holds. Celery's Redis transport (kombu) keeps a queue as Redis lists of JSON
messages (one list per priority step: the queue's name, then ``<name>\\x06\\x16<step>``) whose ``headers.id`` is the
task id, and the messages a worker took but has not acknowledged in the hash ``unacked`` (late acks). A task id
that is in neither is lost: Redis restarted or was flushed (:func:`twin.runs.actions.requeue_lost_runs`)."""
from __future__ import annotations

import logging

import redis
from kombu.transport.redis import PRIORITY_STEPS, Channel

log = logging.getLogger("twin.runs")

SOCKET_TIMEOUT = 5.0        # seconds: a broker that does not answer is "cannot tell", never "lost"


def held(task_ids: list[str]) -> set[str] | None:
    """The ``task_ids`` the broker holds (queued or unacknowledged) on the run tasks' queue; None when it cannot
    tell (broker not Redis, or not answering), so that nothing is sent twice on a guess."""
    from twin.celery import app
    url = app.conf.broker_url or ""
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return None
    queue = app.conf.task_default_queue
    keys = [queue] + [f"{queue}{Channel.sep}{step}" for step in PRIORITY_STEPS if step]
    try:
        client = redis.Redis.from_url(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT)
        with client.pipeline(transaction=True) as pipe:       # one snapshot: a message moving to unacked is seen
            for key in keys:
                pipe.lrange(key, 0, -1)
            pipe.hvals(Channel.unacked_key)
            lists = pipe.execute()
        client.close()
    except redis.RedisError as e:
        log.warning("sweeper: cannot read the broker's queue %r (%s): no run re-sent this pass", queue, e)
        return None
    blob = b"\n".join(m for messages in lists for m in messages)
    return {t for t in task_ids if t.encode() in blob}
