"""Publishing a run's state to its WebSocket groups, from sync code (a Celery task) or a view.

    pub = RunPublisher(run)
    for step in ...:
        pub.progress(100 * step / n, link_util=util, gpu_state=states)   # throttled to the tick
    run.status = "succeeded"; run.save()
    pub.finished()                                                         # always sent

Each call is sent after the current transaction commits (``transaction.on_commit``; at once outside a transaction),
so a client never sees a state the database does not hold. ``progress`` is throttled to settings.TWIN_LIVE_TICK_HZ
(default 4 per second): calls between ticks only replace the pending state, which goes out with the next call past
the tick, with ``flush()``, or with ``finished()``. ``force=True`` and ``finished()`` bypass the throttle.

A frame goes to two streams: the run's (``ws/runs/<id>/``) and its cluster's (``ws/clusters/<name>/``), each with its
own sequence numbers. Sections left out of a call (``link_util=None``) mean "unchanged" on the wire; the snapshot kept
in Redis for resync holds the latest of every section. Publishing never raises into the caller: a failure (Redis
down) is logged and the run goes on.
"""
from __future__ import annotations

import json
import logging
import time

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from twin.live import frames, store

log = logging.getLogger(__name__)

MESSAGE_TYPE = "live.frame"     # handled by LiveConsumer.live_frame


def tick_seconds() -> float:
    hz = float(getattr(settings, "TWIN_LIVE_TICK_HZ", 4) or 4)
    return 1.0 / hz


def send_frame(stream: str, frame: frames.Frame, snapshot_sections: dict | None = None,
               snapshot_base: frames.Frame | None = None) -> int:
    """Number the frame in its stream, keep it as the stream's snapshot (``snapshot_sections`` under
    ``snapshot_base``'s header when given), send it to the stream's group. Returns the sequence number."""
    frame.seq = store.next_seq(stream)
    frame.time_ms = frame.time_ms or time.time() * 1000.0
    raw = frames.encode(frame)
    if snapshot_sections is not None and snapshot_sections.keys() != frame.sections.keys():
        head = frame.__dict__ if snapshot_base is None else {**snapshot_base.__dict__, "seq": frame.seq,
                                                               "time_ms": frame.time_ms}
        snap = frames.Frame(**{**head, "sections": snapshot_sections})
        store.store_last(stream, frame.seq, frames.encode(snap))
    else:
        store.store_last(stream, frame.seq, raw)
    layer = get_channel_layer()
    async_to_sync(layer.group_send)(store.group_name(stream), {"type": MESSAGE_TYPE, "seq": frame.seq, "frame": raw})
    return frame.seq


class RunPublisher:
    """Publishes a run's state to its WebSocket group (and its cluster's group), throttled to a fixed tick
    (settings.TWIN_LIVE_TICK_HZ, default 4), sent after the DB commit (transaction.on_commit).

    Duck-typed: uses ``run.id``, ``run.cluster_id``, ``run.status``, ``run.progress``.
    """

    def __init__(self, run):
        self.run = run
        self.tick = tick_seconds()
        self._next_at = 0.0             # monotonic time from which the next progress frame may go
        self._pending: dict | None = None
        self._sections: dict = {}       # latest array of every section, for the snapshot
        self.sent = 0                   # frames handed to on_commit (both streams count as one)
        self.dropped = 0                # progress calls coalesced by the throttle

    # -- public API -------------------------------------------------------------------------------------------

    def progress(self, percent: float, *, force: bool = False, **sections) -> None:
        """Report progress (0..100) and, optionally, sections by name (:func:`twin.live.frames.build_sections`:
        any registered section, e.g. ``link_util`` 0..1 per backend link, ``gpu_state`` codes per GPU, a
        capability's own)."""
        pending = self._pending or {"sections": {}}
        pending["percent"] = float(percent)
        pending["sections"].update(frames.build_sections(**sections))
        self._pending = pending
        now = time.monotonic()
        if force or now >= self._next_at:
            # A fixed grid: under frequent calls the rate is exactly the tick, not a little below it.
            self._next_at = self._next_at + self.tick if now - self._next_at < self.tick else now + self.tick
            self._emit(final=False)
        else:
            self.dropped += 1

    def flush(self) -> None:
        """Send the pending (throttled) state now, if any."""
        if self._pending is not None:
            self._emit(final=False)

    def finished(self) -> None:
        """The final frame (flag ``final``, the run's current status), always sent, with every section's latest
        array: the last progress call may have gone out on its tick just before, and a client that gets only the
        final frame must still hold the run's whole last state."""
        pending = self._pending or {"sections": {}}
        pending["sections"] = {**self._sections, **pending["sections"]}
        pending["percent"] = self._run_progress()
        self._pending = pending
        self._emit(final=True)

    # -- internals --------------------------------------------------------------------------------------------

    def _run_progress(self) -> float:
        p = getattr(self.run, "progress", None)
        if p is None:
            return float(self._pending.get("percent", 0.0)) if self._pending else 0.0
        return float(p)

    def _emit(self, final: bool) -> None:
        pending, self._pending = self._pending, None
        self._sections.update(pending["sections"])
        status = str(getattr(self.run, "status", "") or "unknown")
        snapshot_sections = dict(self._sections)
        run_id = int(self.run.id)
        cluster_id = int(getattr(self.run, "cluster_id", 0) or 0)
        percent = pending.get("percent", self._run_progress())
        self.sent += 1

        def send():
            try:
                t = time.time() * 1000.0
                common = dict(run_id=run_id, cluster_id=cluster_id, progress=percent, status=status, final=final,
                              time_ms=t, sections=pending["sections"])
                send_frame(store.run_stream(run_id), frames.Frame(type=frames.FRAME_RUN, **common), snapshot_sections)
                if cluster_id:
                    send_frame(store.cluster_stream(cluster_id), frames.Frame(type=frames.FRAME_CLUSTER, **common),
                               snapshot_sections)
            except Exception:  # a live view must never fail a run
                log.exception("live: could not publish run %s", run_id)

        # After the commit when a transaction is open; at once otherwise (without opening a DB connection in a
        # thread that has none, as transaction.on_commit would).
        if transaction.get_connection().in_atomic_block:
            transaction.on_commit(send)
        else:
            send()


# ------------------------------------------------------------------------------------------ JSON events
EVENT_MESSAGE_TYPE = "live.event"   # handled by LiveConsumer.live_event: the JSON goes out as a text message


def send_event(stream: str, message: dict) -> None:
    """Send a JSON message to a stream's group as a text message (an inventory change: docs/live.md). Events are
    not numbered nor kept for resync: a client that reconnects reloads what they describe."""
    layer = get_channel_layer()
    text = json.dumps(message, separators=(",", ":"), cls=DjangoJSONEncoder)     # times as ISO 8601
    async_to_sync(layer.group_send)(store.group_name(stream), {"type": EVENT_MESSAGE_TYPE, "text": text})


def publish_cluster_event(cluster_id: int, message: dict) -> None:
    """Send ``message`` on the cluster's stream once the current transaction commits (never for a rollback; at once
    outside a transaction). Never raises into the caller: a failure (Redis down) is logged."""
    def send():
        try:
            send_event(store.cluster_stream(cluster_id), message)
        except Exception:  # noqa: BLE001 - a live view must never fail an inventory write
            log.exception("live: could not publish an event on cluster %s", cluster_id)

    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(send)
    else:
        send()


def publish_cluster_sections(cluster_id: int, **sections) -> None:
    """Send sections by name (:func:`twin.live.frames.build_sections`) on the cluster's stream as a frame of no run
    (a change no run makes: a job released), once the current transaction commits. The stream's snapshot keeps its
    last frame's header and other sections, these replaced. Never raises into the caller."""
    built = frames.build_sections(**sections)

    def send():
        stream = store.cluster_stream(cluster_id)
        try:
            last = store.load_last(stream)
            base = frames.decode(last[1]) if last else None
            frame = frames.Frame(type=frames.FRAME_CLUSTER, cluster_id=cluster_id, status="unknown",
                                 time_ms=time.time() * 1000.0, sections=built)
            send_frame(stream, frame, None if base is None else {**base.sections, **built},
                       snapshot_base=base)
        except Exception:  # noqa: BLE001 - a live view must never fail a write
            log.exception("live: could not publish sections on cluster %s", cluster_id)

    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(send)
    else:
        send()
