"""An idle live stream stays open: nothing published for longer than one of the channel layer's blocking reads, then a frame
still arrives on the same socket.

Before TWIN_REDIS_SOCKET_TIMEOUT, redis-py's 5 s read timeout met channels_redis' 5 s BRPOP and the server closed
every idle socket with 1011 ("Timeout reading from 127.0.0.1:6379") after 5-6 s; frames sent in the gap were lost.
The idle time is one of those blocking reads and a margin of 3 s: the first read starts as the socket connects, before
the idle time does, so a read timeout at or under one of them (the failure: a close 5-6 s after connecting) fails
within it; a timeout above one read never fires while reads return in time.
"""
import asyncio

import numpy as np
import pytest
from asgiref.sync import async_to_sync

from channels_redis.core import RedisChannelLayer
from django.conf import settings

from tests.live.test_push import in_worker, open_socket, receive_meta
from twin.live import frames
from twin.live.publish import RunPublisher

pytestmark = pytest.mark.django_db(transaction=True)

BLOCKING_READ_S = RedisChannelLayer.brpop_timeout        # channels_redis: how long one receive blocks on Redis
IDLE_SECONDS = BLOCKING_READ_S + 3


def test_the_redis_read_timeout_outlasts_the_channel_layers_blocking_read():
    assert settings.TWIN_REDIS_SOCKET_TIMEOUT > BLOCKING_READ_S


def test_an_idle_cluster_socket_stays_open_past_a_blocking_read_and_then_gets_a_frame(demo, make_run):
    run = make_run(status="running")

    async def scenario():
        # given a client on the cluster stream, past its metadata
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        await receive_meta(ws)
        # when nothing is published for a blocking read and more
        await asyncio.sleep(IDLE_SECONDS)
        # then the server side is still serving it, has sent nothing (no close) ...
        assert not ws.future.done(), ws.future.exception()
        assert await ws.receive_nothing(timeout=0.1)
        # ... and a frame published now still arrives on the same socket
        await in_worker(RunPublisher(run).progress, 10.0, link_util=np.zeros(576), force=True)
        f = frames.decode(await ws.receive_from(timeout=5))
        await ws.disconnect()
        return f

    f = async_to_sync(scenario)()
    assert f.run_id == run.id and f.progress == 10.0
