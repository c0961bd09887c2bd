"""WebSocket consumers: ``ws/runs/<id>/`` and ``ws/clusters/<name>/``.

On connect: authenticate (twin.live.auth), join the stream's group, send ONE JSON text message (metadata, index
tables, the stream's last sequence number and its snapshot URL), then binary frames (twin.live.frames) and, on a
cluster's stream, JSON text events (``{"type": "inventory", ...}``: docs/live.md).
Close codes: 4401 not authenticated (or a bad token), 4404 no such run or cluster. The socket is accepted before
closing so that browsers see the code (a refused handshake only shows as HTTP 403).
Query parameters: ``token=<key>``; ``index=0`` leaves the link id/name tables out of the metadata.
"""
from __future__ import annotations

import json
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from urllib.parse import parse_qs

from twin.live import meta, store
from twin.live.auth import may_read

log = logging.getLogger(__name__)

CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class LiveConsumer(AsyncWebsocketConsumer):
    stream: str | None = None

    async def connect(self):
        ok, reason = may_read(self.scope)
        if not ok:
            return await self._refuse(CLOSE_UNAUTHENTICATED, reason)
        qs = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        with_tables = qs.get("index", ["1"])[0] not in ("0", "false", "no")
        info = await database_sync_to_async(self.describe)(with_tables)
        if info is None:
            return await self._refuse(CLOSE_NOT_FOUND, "not found")
        self.stream = info["stream"]
        # Join before reading the last sequence number: a frame published in between is queued, not lost.
        await self.channel_layer.group_add(store.group_name(self.stream), self.channel_name)
        await self.accept()
        info["seq"] = await database_sync_to_async(store.last_seq)(self.stream)
        await self.send(text_data=json.dumps(info, separators=(",", ":")))

    async def _refuse(self, code: int, reason: str | None):
        await self.accept()
        await self.send(text_data=json.dumps({"type": "error", "code": code, "detail": reason}))
        await self.close(code=code)

    async def disconnect(self, code):
        if self.stream:
            await self.channel_layer.group_discard(store.group_name(self.stream), self.channel_name)

    async def receive(self, text_data=None, bytes_data=None):
        pass    # the stream is one-way; resync goes through the REST snapshot

    async def live_frame(self, event):
        await self.send(bytes_data=event["frame"])

    async def live_event(self, event):
        """A JSON event of the stream (twin.live.publish.send_event), e.g. an inventory change: a text message."""
        await self.send(text_data=event["text"])

    def describe(self, with_tables: bool) -> dict | None:
        raise NotImplementedError


class RunConsumer(LiveConsumer):
    def describe(self, with_tables):
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        stream = store.run_stream(run_id)
        info = {"type": "meta", "stream": stream, **meta.protocol_info(),
                "snapshot": f"/api/live/runs/{run_id}/snapshot/"}
        run = meta.get_run(run_id)
        if run is None:
            return None
        info["run"] = meta.run_info(run)
        cluster = getattr(run, "cluster", None)
        info["cluster"] = meta.cluster_index(cluster, with_tables) if cluster is not None else None
        return info


class ClusterConsumer(LiveConsumer):
    def describe(self, with_tables):
        from twin.inventory.models import Cluster

        cluster = Cluster.objects.filter(name=self.scope["url_route"]["kwargs"]["name"]).first()
        if cluster is None:
            return None
        stream = store.cluster_stream(cluster.id)
        return {"type": "meta", "stream": stream, **meta.protocol_info(),
                "snapshot": f"/api/live/clusters/{cluster.name}/snapshot/",
                "cluster": meta.cluster_index(cluster, with_tables)}
