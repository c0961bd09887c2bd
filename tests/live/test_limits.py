"""The live streams within the WebSocket limits, and refusing cleanly when Redis is down.

A 24k-class cluster's link tables are 4 MB of JSON, over the 1 MiB message limit of daphne (autobahn's default
maxMessagePayloadSize): the metadata carries counts and the tables' URL, never the tables. With Redis down a
connection is refused with 1013 "try again later" (never an HTTP 500), and a connected socket is closed the same way.
"""
import gzip
import io
import json
from types import SimpleNamespace
from unittest.mock import ANY

import numpy as np
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from rest_framework.test import APIClient

from twin.asgi import application
from twin.inventory.models import Cluster, Link
from twin.live import frames
from twin.live.frames import CLOSE_TRY_AGAIN_LATER
from twin.live.publish import RunPublisher
from twin.redis_server import EmbeddedRedis, free_port

pytestmark = pytest.mark.django_db(transaction=True)

WEBSOCKET_MESSAGE_LIMIT = 1024 * 1024    # daphne's (autobahn's) default maxMessagePayloadSize


async def first_message(path):
    comm = WebsocketCommunicator(application, path)
    connected, _ = await comm.connect(timeout=10)
    assert connected, path
    return comm, await comm.receive_output(timeout=10)


def test_a_24k_cluster_stream_without_index_0_gets_a_small_meta_and_stays_open(transactional_db):
    call_command("build_cluster", "meta-roce-24k", "--no-progress", stdout=io.StringIO())
    cluster = Cluster.objects.get(name="meta-roce-24k")
    backend = Link.objects.filter(cluster=cluster, fabric__role=0)
    n_links = backend.count()
    run = SimpleNamespace(id=1, cluster_id=cluster.id, status="running", progress=1.0)

    async def scenario():
        # a client connects as docs/live.md describes, without ?index=0
        ws, msg = await first_message(f"/ws/clusters/{cluster.name}/")
        # then its first message is the metadata, under the 1 MiB limit
        assert msg["type"] == "websocket.send" and len(msg["text"].encode()) < WEBSOCKET_MESSAGE_LIMIT
        # and the socket stays open: a frame published afterwards reaches it
        await sync_to_async(RunPublisher(run).progress, thread_sensitive=False)(1.0, link_util=np.zeros(n_links),
                                                                                force=True)
        frame = await ws.receive_output(timeout=5)
        await ws.disconnect()
        return json.loads(msg["text"]), frame

    meta, frame = async_to_sync(scenario)()
    assert meta["type"] == "meta" and meta["cluster"]["links"]["count"] == n_links
    assert frames.decode(frame["bytes"]).value("link_util").shape == (n_links,)
    # the tables come from REST: every backend link in id order, gzipped for a client that accepts it
    client = APIClient()
    resp = client.get(meta["cluster"]["links"]["index"], HTTP_ACCEPT_ENCODING="gzip")
    assert resp.status_code == 200 and resp["Content-Encoding"] == "gzip"
    index = json.loads(gzip.decompress(resp.content))
    assert index["ids"] == list(backend.order_by("id").values_list("id", flat=True)) and len(index["names"]) == n_links
    assert len(resp.content) < len(gzip.decompress(resp.content)) / 4
    # and a client that holds them gets a 304
    assert client.get(meta["cluster"]["links"]["index"], HTTP_IF_NONE_MATCH=resp["ETag"]).status_code == 304


@pytest.fixture
def private_redis(settings, tmp_path):
    """The live layer and snapshots on a Redis of this test's own, which the test may stop."""
    server = EmbeddedRedis(free_port(), directory=tmp_path).start()
    settings.REDIS_URL = server.url
    settings.CHANNEL_LAYERS = {"default": {**settings.CHANNEL_LAYERS["default"],
                                           "CONFIG": {**settings.CHANNEL_LAYERS["default"]["CONFIG"],
                                                      "hosts": [{"address": server.url, "socket_timeout": 5}]}}}
    channel_layers.backends = {}
    yield server
    server.stop()
    channel_layers.backends = {}


async def expect_try_again_later(ws):
    msg = await ws.receive_output(timeout=10)
    assert json.loads(msg["text"]) == {"type": "error", "code": CLOSE_TRY_AGAIN_LATER, "detail": ANY}
    msg = await ws.receive_output(timeout=10)
    assert msg == {"type": "websocket.close", "code": CLOSE_TRY_AGAIN_LATER, "reason": ANY} or \
        msg == {"type": "websocket.close", "code": CLOSE_TRY_AGAIN_LATER}


def test_with_redis_down_a_connection_is_refused_with_1013_and_a_connected_one_closed(demo, private_redis):
    async def scenario():
        # given a client connected while Redis is up
        ws, msg = await first_message(f"/ws/clusters/{demo.name}/")
        assert json.loads(msg["text"])["type"] == "meta"
        # when Redis stops
        private_redis.stop()
        # then the connected client is told and closed with 1013 (it reconnects and resyncs when Redis is back)
        await expect_try_again_later(ws)
        # and a client (re)connecting meanwhile is accepted, told, and closed with 1013: no HTTP 500
        ws2 = WebsocketCommunicator(application, f"/ws/clusters/{demo.name}/")
        connected, _ = await ws2.connect(timeout=10)
        assert connected
        await expect_try_again_later(ws2)

    async_to_sync(scenario)()
