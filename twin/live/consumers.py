"""WebSocket consumers: ``ws/runs/<id>/``, ``ws/clusters/<name>/`` and ``ws/runs/`` (the runs list's: events only).

On connect: authenticate (twin.live.auth), join the stream's group, send ONE JSON text message (metadata: counts,
the URL of the link index tables, the stream's last sequence number and its snapshot URL), then binary frames
(twin.live.frames) and, on a cluster's stream, JSON text events (``{"type": "inventory", ...}``: docs/live.md).
Close codes: 4401 not authenticated (or a bad token), 4404 no such run or cluster, 1013 "try again later" (Redis,
which carries the stream, unreachable: on connecting, or later while connected). The socket is accepted before
closing so that browsers see the code (a refused handshake only shows as HTTP 403), and one JSON message
``{"type": "error", "code": ..., "detail": ...}`` says why.
Query parameters: ``token=<key>``; on a cluster's stream ``zone=<zone name>`` or ``building=<n>`` (the frames cut to
that zone's or building's GPUs, hosts and backend links) or ``summary=1`` (the frames without their per-item
sections): twin/live/scope.py. A zone or building the cluster does not have closes with 4404. (``index=0`` is
accepted and changes nothing: the metadata never carries the link tables.)
"""
from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs, quote

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from redis.exceptions import RedisError

from twin.api.permissions import shown_name, shows_user_names
from twin.inventory.zones import ScopeError, parse_building
from twin.live import meta, scope, store
from twin.live.frames import CLOSE_NOT_FOUND, CLOSE_TRY_AGAIN_LATER, CLOSE_UNAUTHENTICATED
from twin.live.auth import may_read

log = logging.getLogger(__name__)

LAYER_DOWN = "live.unavailable"             # handled by LiveConsumer.live_unavailable
LAYER_RETRY_SECONDS = 1.0                   # between reads of a channel layer that failed
# What an unreachable Redis raises, through redis-py or channels_redis (which wraps some in OSError)
REDIS_DOWN = (RedisError, OSError, asyncio.TimeoutError)


def _without_names(message: dict) -> dict:
    """An event with every change line's ``by`` (a user name) hidden (:func:`twin.api.permissions.shown_name`)."""
    changes = message.get("changes")
    if isinstance(changes, list):
        message["changes"] = [{**c, "by": shown_name(c["by"], None)} if isinstance(c, dict) and "by" in c else c
                              for c in changes]
    return message


class LiveConsumer(AsyncWebsocketConsumer):
    stream: str | None = None
    accepted = False
    transform = None            # raw frame -> the frame this client asked for (a scoped form), None: as published

    @property
    def channel_receive(self):
        return self._channel_receive

    @channel_receive.setter
    def channel_receive(self, receive):
        """Channels sets the layer's receive here, then reads it back to wait on: it gets the guarded one."""
        self._layer_receive = receive

    async def _channel_receive(self):
        """The channel layer's next message; with Redis unreachable, a LAYER_DOWN message (after a pause) instead
        of the exception, which would end the consumer with an HTTP 500 before the handshake or a 1011 after."""
        try:
            return await self._layer_receive()
        except REDIS_DOWN:
            await asyncio.sleep(LAYER_RETRY_SECONDS)
            return {"type": LAYER_DOWN}

    async def connect(self):
        ok, reason = may_read(self.scope)
        if not ok:
            return await self._refuse(CLOSE_UNAUTHENTICATED, reason)
        info = await database_sync_to_async(self.describe)()
        if info is None:
            return await self._refuse(CLOSE_NOT_FOUND, "not found")
        try:
            # Join before reading the last sequence number: a frame published in between is queued, not lost.
            await self.channel_layer.group_add(store.group_name(info["stream"]), self.channel_name)
            self.stream = info["stream"]
            await self.accept()
            self.accepted = True
            info["seq"] = await database_sync_to_async(store.last_seq)(self.stream)
        except REDIS_DOWN as e:
            log.warning("live: refusing a connection to %s, Redis unreachable: %s", info["stream"], e)
            return await self._refuse(CLOSE_TRY_AGAIN_LATER, "live push unavailable (Redis unreachable): "
                                                             "try again later")
        await self.send(text_data=json.dumps(info, separators=(",", ":")))

    async def _refuse(self, code: int, reason: str | None):
        if not self.accepted:
            await self.accept()
            self.accepted = True
        await self.send(text_data=json.dumps({"type": "error", "code": code, "detail": reason}))
        await self.close(code=code)

    async def live_unavailable(self, event):
        """The channel layer failed (Redis down) while connected: close with 1013, so that the client reconnects
        (and resyncs) once Redis is back, instead of waiting on a stream that may no longer reach it."""
        if self.accepted and self.stream:
            self.stream = None
            await self.send(text_data=json.dumps({"type": "error", "code": CLOSE_TRY_AGAIN_LATER,
                                                  "detail": "live push interrupted (Redis unreachable)"}))
            await self.close(code=CLOSE_TRY_AGAIN_LATER)

    async def disconnect(self, code):
        if self.stream:
            try:
                await self.channel_layer.group_discard(store.group_name(self.stream), self.channel_name)
            except REDIS_DOWN:
                pass    # the group's membership expires (group_expiry)

    async def receive(self, text_data=None, bytes_data=None):
        pass    # the stream is one-way; resync goes through the REST snapshot

    async def live_frame(self, event):
        raw = event["frame"]
        await self.send(bytes_data=self.transform(raw) if self.transform else raw)

    async def live_event(self, event):
        """A JSON event of the stream (twin.live.publish.send_event), e.g. an inventory change: a text message;
        for a reader who may not see user names (twin.api.permissions.shows_user_names) without its ``by``."""
        text = event["text"]
        if '"by"' in text and not shows_user_names(self.scope.get("user")):
            text = json.dumps(_without_names(json.loads(text)), separators=(",", ":"))
        await self.send(text_data=text)

    def describe(self) -> dict | None:
        raise NotImplementedError


class RunConsumer(LiveConsumer):
    def describe(self):
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        stream = store.run_stream(run_id)
        info = {"type": "meta", "stream": stream, **meta.protocol_info(),
                "snapshot": f"/api/live/runs/{run_id}/snapshot/"}
        run = meta.get_run(run_id)
        if run is None:
            return None
        info["run"] = meta.run_info(run)
        cluster = getattr(run, "cluster", None)
        info["cluster"] = meta.cluster_index(cluster) if cluster is not None else None
        return info


class RunsConsumer(LiveConsumer):
    """Every run's creation and deletion (``{"type": "run_created", ...}``, ``{"type": "run_deleted", ...}``), for
    the runs list: events only, so no snapshot (``seq`` stays 0)."""

    def describe(self):
        return {"type": "meta", "stream": store.RUNS_STREAM, **meta.protocol_info(), "snapshot": None}


class ClusterConsumer(LiveConsumer):
    def describe(self):
        from twin.inventory.models import Cluster

        cluster = Cluster.objects.filter(name=self.scope["url_route"]["kwargs"]["name"]).first()
        if cluster is None:
            return None
        stream = store.cluster_stream(cluster.id)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        zone, summary = query.get("zone", [""])[0], query.get("summary", [""])[0] in ("1", "true", "yes")
        try:
            building = parse_building(query.get("building", [""])[0])
            self.transform = scope.frame_scope(cluster, zone, summary, building)
            info = scope.scope_info(cluster, zone, summary, building)
        except ScopeError:
            return None
        snapshot = f"/api/live/clusters/{cluster.name}/snapshot/"
        if info:
            snapshot += "?" + (f"zone={quote(zone)}" if zone else f"building={building}" if building is not None
                               else "summary=1")
        return {"type": "meta", "stream": stream, **meta.protocol_info(), "snapshot": snapshot,
                "cluster": meta.cluster_index(cluster), **({"scope": info} if info else {})}
