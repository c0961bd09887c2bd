"""Live push end to end: the real ASGI app (twin.asgi), the real channels_redis layer, publishers in worker threads.

pytest-asyncio is not installed: each test is a sync test running one coroutine with async_to_sync. The publisher
runs in another thread (sync_to_async(thread_sensitive=False)), as it does in a Celery worker.
"""
import base64
import json
import time

import numpy as np
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import transaction
from rest_framework.test import APIClient

from twin.asgi import application
from twin.live import frames, store
from twin.live.publish import RunPublisher

pytestmark = pytest.mark.django_db(transaction=True)


def in_worker(fn, *args, **kwargs):
    """Run sync code (a publisher) in a thread of its own, as a Celery worker would."""
    return sync_to_async(fn, thread_sensitive=False)(*args, **kwargs)


async def open_socket(path, timeout=5):
    comm = WebsocketCommunicator(application, path)
    connected, _ = await comm.connect(timeout=timeout)
    assert connected, path
    return comm


async def receive_meta(comm):
    msg = await comm.receive_output(timeout=5)
    assert msg["type"] == "websocket.send" and msg.get("text") is not None, msg
    return json.loads(msg["text"])


RUN_EVENTS = ("run_created", "run_deleted")      # what a cluster's stream also says of its runs (docs/live.md)


async def receive_frames(comm, until_final=True, timeout=3.0):
    """Binary frames until the final one (or silence); a text message here fails the test, except the run events a
    cluster's stream carries between frames."""
    out = []
    while True:
        msg = await comm.receive_output(timeout=timeout)
        assert msg["type"] == "websocket.send", msg
        if msg.get("text") is not None and json.loads(msg["text"]).get("type") in RUN_EVENTS:
            continue
        assert msg.get("bytes") is not None, f"text after the metadata: {msg.get('text')}"
        f = frames.decode(msg["bytes"])
        out.append(f)
        if until_final and f.final:
            return out


async def expect_close(comm, code):
    """Wait for the server's close with ``code``, then answer it as a browser does (websocket.disconnect) and let
    the consumer finish, or cancel it after 3 s, while this loop still runs: a consumer left running when
    ``async_to_sync`` returns is cancelled at the loop's close, where a thread-sensitive database call it waits for
    can no longer run (the test then hung for the whole 600 s timeout)."""
    while True:
        msg = await comm.receive_output(timeout=5)
        if msg["type"] == "websocket.close":
            assert msg.get("code") == code, msg
            await comm.disconnect(code=code, timeout=3)
            return
        assert json.loads(msg["text"])["code"] == code


def storm(pub, run, n=100, seconds=0.6, links=576, gpus=256):
    """n progress calls over `seconds` (longer on a loaded machine: the time taken is kept in ``storm.took``), each
    with fresh arrays; then the run ends."""
    rng = np.random.default_rng(1)
    start = time.monotonic()
    last = None
    for i in range(n):
        last = rng.random(links, dtype=np.float32)
        pub.progress(100.0 * i / n, link_util=last, gpu_state=np.full(gpus, i % 5, np.uint8))
        time.sleep(seconds / n)
    storm.took = time.monotonic() - start
    run.status, run.progress = "succeeded", 100.0
    if hasattr(run, "save"):
        run.save(update_fields=["status", "progress"])
    pub.finished()
    return last


def test_metadata_first_then_throttled_ordered_frames_to_run_and_cluster_sockets(demo, make_run):
    run = make_run(status="running")

    async def scenario():
        # given one client on the run and one on its cluster
        rs = await open_socket(f"/ws/runs/{run.id}/")
        cs = await open_socket(f"/ws/clusters/{demo.name}/")
        run_meta, cluster_meta = await receive_meta(rs), await receive_meta(cs)
        # then each got one JSON message with metadata and the index tables' URL, before any frame
        assert run_meta["type"] == "meta" and run_meta["run"]["id"] == run.id and run_meta["seq"] == 0
        assert run_meta["snapshot"] == f"/api/live/runs/{run.id}/snapshot/"
        links = cluster_meta["cluster"]["links"]
        index = (await sync_to_async(APIClient().get)(links["index"])).json()
        assert links["count"] == index["count"] == len(index["ids"]) == len(index["names"]) == 576
        assert index["ids"] == sorted(index["ids"]) and cluster_meta["cluster"]["gpus"]["count"] == 256
        # when a worker makes 100 progress calls in 0.6 s and finishes
        pub = RunPublisher(run)
        started = time.monotonic()
        last_util = await in_worker(storm, pub, run)
        got_run = await receive_frames(rs)
        got_cluster = await receive_frames(cs)
        elapsed = time.monotonic() - started
        await rs.disconnect()
        await cs.disconnect()
        return pub, last_util, got_run, got_cluster, elapsed

    pub, last_util, got_run, got_cluster, elapsed = async_to_sync(scenario)()
    for got, ftype in ((got_run, frames.FRAME_RUN), (got_cluster, frames.FRAME_CLUSTER)):
        # then a handful of frames arrived (TWIN_LIVE_TICK_HZ, 4 per second: t=0, .25, .5, then the final one; more
        # when the machine stretched the storm past its 0.6 s), in order
        most = int(storm.took * settings.TWIN_LIVE_TICK_HZ) + 2
        assert 3 <= len(got) <= max(5, most), ([f.seq for f in got], storm.took)
        seqs = [f.seq for f in got]
        assert seqs == list(range(seqs[0], seqs[0] + len(got)))
        assert all(f.type == ftype and f.run_id == run.id and f.cluster_id == demo.id for f in got)
        progress = [f.progress for f in got]
        assert progress == sorted(progress)
        # and the final frame carries the latest state: the run's status, 100 %, the last arrays given
        final = got[-1]
        assert final.final and final.status == "succeeded" and final.progress == 100.0
        assert np.abs(final.value("link_util") - last_util).max() <= 0.5 / 255 + 1e-6
        assert final.value("gpu_state").shape == (256,) and final.value("gpu_state")[0] == 99 % 5
    assert pub.dropped >= 90


def test_first_frame_reaches_a_client_within_a_second(demo, make_run):
    run = make_run(status="running")

    async def scenario():
        ws = await open_socket(f"/ws/runs/{run.id}/?index=0")
        await receive_meta(ws)
        t0 = time.monotonic()
        await in_worker(RunPublisher(run).progress, 0.0, link_util=np.zeros(576))
        f = frames.decode(await ws.receive_from(timeout=2))
        dt = time.monotonic() - t0
        await ws.disconnect()
        return f, dt

    f, dt = async_to_sync(scenario)()
    assert f.seq == 1 and f.progress == 0.0
    assert dt < 1.0


def test_frames_are_sent_after_commit_and_never_for_a_rollback(demo, make_run):
    run = make_run(status="running")
    stream = store.run_stream(run.id)
    pub = RunPublisher(run)
    with transaction.atomic():
        pub.progress(10, force=True)
        assert store.last_seq(stream) == 0          # not yet: the transaction is open
    assert store.last_seq(stream) == 1
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            pub.progress(20, force=True)
            raise RuntimeError("rolled back")
    assert store.last_seq(stream) == 1
    assert frames.decode(store.load_last(stream)[1]).progress == 10


def test_the_final_frame_carries_every_sections_latest_array_even_after_a_progress_frame_on_its_tick(demo, make_run):
    # the last progress call goes out at once (force, as on a tick): the final frame as sent to the run's group
    # (not only the stored snapshot) still holds the whole last state
    from channels.layers import get_channel_layer
    run = make_run(status="running")
    last = np.linspace(0, 1, 576, dtype=np.float32)

    def publish():
        pub = RunPublisher(run)
        pub.progress(50, link_util=np.zeros(576), gpu_state=np.full(256, 2, np.uint8), force=True)
        pub.progress(99, link_util=last, force=True)
        run.status, run.progress = "succeeded", 100.0
        pub.finished()

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(store.group_name(store.run_stream(run.id)), channel)
        await in_worker(publish)
        return [frames.decode((await layer.receive(channel))["frame"]) for _ in range(3)]

    sent = async_to_sync(scenario)()
    final = sent[-1]
    assert [f.seq for f in sent] == [1, 2, 3] and final.final and final.progress == 100.0
    assert np.abs(final.value("link_util") - last).max() <= 0.5 / 255 + 1e-6
    assert (final.value("gpu_state") == 2).all()


def test_anonymous_reading_follows_the_api_setting_and_tokens_work(demo, settings, token):
    async def scenario():
        # anonymous reading allowed (the default)
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        assert (await receive_meta(ws))["cluster"]["name"] == demo.name
        await ws.disconnect()
        # a bad token is refused even so, as the API answers 401
        ws = await open_socket(f"/ws/clusters/{demo.name}/?token=nope")
        await expect_close(ws, 4401)
        settings.TWIN_API_ANONYMOUS_READ = False
        # anonymous reading off: refused with 4401
        ws = await open_socket(f"/ws/clusters/{demo.name}/")
        await expect_close(ws, 4401)
        # a token in the query string, or in an Authorization header
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0&token={token}")
        assert (await receive_meta(ws))["type"] == "meta"
        await ws.disconnect()
        comm = WebsocketCommunicator(application, f"/ws/clusters/{demo.name}/?index=0",
                                     headers=[(b"authorization", f"Token {token}".encode())])
        assert (await comm.connect())[0]
        assert (await receive_meta(comm))["type"] == "meta"
        await comm.disconnect()

    async_to_sync(scenario)()


def test_unknown_cluster_or_run_closes_with_4404(demo):
    async def scenario():
        ws = await open_socket("/ws/clusters/no-such-cluster/")
        await expect_close(ws, 4404)
        ws = await open_socket("/ws/runs/987654321/")
        await expect_close(ws, 4404)

    async_to_sync(scenario)()


def test_snapshot_returns_the_last_state_with_every_section(demo, make_run, settings, token):
    run = make_run(status="running")
    pub = RunPublisher(run)
    util = np.linspace(0, 1, 576)
    pub.progress(10, link_util=util, gpu_state=np.ones(256, np.uint8), force=True)
    pub.progress(55, force=True)                   # no arrays: "unchanged" on the wire
    client = APIClient()
    for path in (f"/api/live/runs/{run.id}/snapshot/", f"/api/live/clusters/{demo.name}/snapshot/"):
        body = client.get(path).json()
        assert body["seq"] == 2 and body["progress"] == 55 and body["status"] == "running"
        assert body["sections"] == {"link_util": {"dtype": "uint8", "count": 576},
                                    "gpu_state": {"dtype": "uint8", "count": 256}}
        f = frames.decode(base64.b64decode(body["frame_b64"]))
        assert f.seq == 2 and np.abs(f.value("link_util") - util).max() <= 0.5 / 255 + 1e-6
        resp = client.get(path + "?binary=1")
        assert resp["Content-Type"] == "application/octet-stream" and resp["X-Live-Seq"] == "2"
        assert frames.decode(resp.content).progress == 55
    assert client.get("/api/live/clusters/nope/snapshot/").status_code == 404
    settings.TWIN_API_ANONYMOUS_READ = False
    assert client.get(f"/api/live/clusters/{demo.name}/snapshot/").status_code in (401, 403)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get(f"/api/live/clusters/{demo.name}/snapshot/").json()["seq"] == 2


def test_a_client_detects_a_gap_and_resyncs_from_the_snapshot(demo, make_run):
    run = make_run(status="running")
    stream = store.run_stream(run.id)

    async def scenario():
        ws = await open_socket(f"/ws/runs/{run.id}/?index=0")
        await receive_meta(ws)
        pub = RunPublisher(run)
        await in_worker(pub.progress, 10, link_util=np.full(576, 0.1), force=True)
        first = frames.decode(await ws.receive_from(timeout=2))
        # a frame is lost on the way (as channels_redis drops messages over capacity): its number is used, never
        # delivered; the next frame shows the gap
        await in_worker(store.next_seq, stream)
        await in_worker(pub.progress, 30, force=True)
        after_gap = frames.decode(await ws.receive_from(timeout=2))
        await ws.disconnect()
        return first, after_gap

    first, after_gap = async_to_sync(scenario)()
    assert after_gap.seq == first.seq + 2           # the client sees the gap...
    snap = APIClient().get(f"/api/live/runs/{run.id}/snapshot/").json()
    resync = frames.decode(base64.b64decode(snap["frame_b64"]))
    # ...and the snapshot gives the latest state, arrays included, at least as new as the frame after the gap
    assert resync.seq >= after_gap.seq and resync.progress == 30
    assert np.allclose(resync.value("link_util"), 0.1, atol=0.5 / 255 + 1e-6)


def test_a_late_client_learns_the_stream_position_from_the_metadata(demo, make_run):
    run = make_run(status="running")
    pub = RunPublisher(run)
    for p in (10, 20, 30):
        pub.progress(p, force=True)

    async def scenario():
        ws = await open_socket(f"/ws/runs/{run.id}/?index=0")
        meta = await receive_meta(ws)
        await in_worker(pub.progress, 40, force=True)
        f = frames.decode(await ws.receive_from(timeout=2))
        await ws.disconnect()
        return meta, f

    meta, f = async_to_sync(scenario)()
    assert meta["seq"] == 3 and f.seq == 4        # no gap: the client starts from the snapshot at seq 3
