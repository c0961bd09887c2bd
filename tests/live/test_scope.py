"""A cluster stream asked for one zone (``?zone=``) or for the summary (``?summary=1``): the metadata states the scope,
every frame keeps the published header and carries the zone's part of each per-item section (or none of them), the
snapshot endpoint answers the same cut, and a zone the cluster does not have closes the socket with 4404."""
import json
from types import SimpleNamespace

import numpy as np
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from twin.asgi import application
from twin.live import frames, scope, sections
from twin.live.frames import CLOSE_NOT_FOUND
from twin.live.publish import RunPublisher

pytestmark = pytest.mark.django_db(transaction=True)
ZONE = "demo-256.z01"


def test_a_zone_stream_and_a_summary_stream_get_their_cut_of_each_frame(demo):
    zones = scope.cluster_zones(demo)
    items = zones.items(ZONE)
    util = np.linspace(0, 1, len(zones.link_ids))
    state = (np.arange(len(zones.gpu_ids)) % 3).astype(np.uint8)
    run = SimpleNamespace(id=4, cluster_id=demo.id, status="running", progress=1.0)

    async def scenario():
        opened = {}
        for query in (f"zone={ZONE}", "summary=1", ""):
            ws = WebsocketCommunicator(application, f"/ws/clusters/{demo.name}/?{query}")
            assert (await ws.connect(timeout=10))[0]
            opened[query] = (ws, json.loads((await ws.receive_output(timeout=10))["text"]))
        await sync_to_async(RunPublisher(run).progress, thread_sensitive=False)(
            12.5, link_util=util, gpu_state=state, force=True)
        out = {}
        for query, (ws, meta) in opened.items():
            out[query] = (meta, frames.decode((await ws.receive_output(timeout=5))["bytes"]))
            await ws.disconnect()
        return out

    got = async_to_sync(scenario)()
    meta, zone = got[f"zone={ZONE}"]
    assert meta["scope"] == {"zone": ZONE, "gpus": 128, "hosts": 16, "links": len(items.links)}
    assert meta["snapshot"].endswith(f"?zone={ZONE}")
    whole = got[""][1]
    assert not whole.scoped and zone.scoped and zone.seq == whole.seq and zone.run_id == 4
    assert zone.progress == pytest.approx(12.5)
    assert np.array_equal(zone.value("gpu_state"), state[items.gpus])
    link_util = sections.LINK_UTIL.id
    assert np.array_equal(zone.sections[link_util], whole.sections[link_util][items.links])
    meta, summary = got["summary=1"]
    assert meta["scope"] == {"summary": True} and summary.scoped and summary.sections == {}
    # the snapshot endpoint answers the same cut
    resp = APIClient().get(f"/api/live/clusters/{demo.name}/snapshot/?binary=1&zone={ZONE}")
    assert resp.status_code == 200 and np.array_equal(frames.decode(resp.content).value("gpu_state"), state[items.gpus])
    assert APIClient().get(f"/api/live/clusters/{demo.name}/snapshot/?zone=nowhere").status_code == 404


def test_a_zone_the_cluster_does_not_have_closes_with_4404(demo):
    async def scenario():
        ws = WebsocketCommunicator(application, f"/ws/clusters/{demo.name}/?zone=nowhere")
        assert (await ws.connect(timeout=10))[0]
        msg = json.loads((await ws.receive_output(timeout=10))["text"])
        closed = await ws.receive_output(timeout=10)
        return msg, closed

    msg, closed = async_to_sync(scenario)()
    assert msg["type"] == "error" and msg["code"] == CLOSE_NOT_FOUND and closed["code"] == CLOSE_NOT_FOUND


def test_scoped_sections_cut_each_section_by_what_it_is_indexed_by():
    """Every registered section: those ``per`` gpu, host or link cut to the zone's items, ``per`` storage left out,
    the others (``per`` None) as published; the summary keeps only the latter."""
    items = scope.ZoneItems((1,), "z", gpus=np.array([1, 3]), hosts=np.array([0]), links=np.array([2, 4]))
    whole = {s.id: np.arange(6, dtype=np.uint8) for s in sections.sections()}
    cut = scope.scoped_sections(whole, items)
    summary = scope.scoped_sections(whole, None)
    at = {"gpu": [1, 3], "host": [0], "link": [2, 4]}
    for s in sections.sections():
        if s.per == "storage":
            assert s.id not in cut and s.id not in summary, s.name
        elif s.per is None:
            assert cut[s.id].tolist() == list(range(6)) and s.id in summary, s.name
        else:
            assert cut[s.id].tolist() == at[s.per] and s.id not in summary, s.name
    assert {s.name for s in sections.sections() if s.per == "gpu"} >= {"gpu_state", "gpu_job", "debug_stop"}
