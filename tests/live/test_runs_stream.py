"""The runs stream (``ws/runs/``): a run created anywhere (here through the REST API) or deleted is announced to the
runs list, which lists it again (issue 25, item 4: a run started through the API did not appear in an open runs
list)."""
import json

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tests.live.test_push import in_worker, open_socket, receive_meta
from twin.api.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


async def receive_event(ws, timeout=5):
    msg = await ws.receive_output(timeout=timeout)
    assert msg["type"] == "websocket.send" and msg.get("text") is not None, msg
    return json.loads(msg["text"])


def test_a_run_created_and_deleted_through_the_api_is_announced_on_the_runs_stream(demo):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(User.objects.create_superuser('root'))[1]}")

    async def scenario():
        ws = await open_socket("/ws/runs/")
        meta = await receive_meta(ws)
        cluster_ws = await open_socket(f"/ws/clusters/{demo.name}/?summary=1")
        await receive_meta(cluster_ws)
        r = await in_worker(client.post, "/api/runs/", {"kind": "collective", "cluster": demo.name,
                                                        "params": {"gpus": 8}}, format="json")
        assert r.status_code == 201, r.content
        created, on_cluster = await receive_event(ws), await receive_event(cluster_ws)
        gone = await in_worker(client.delete, f"/api/runs/{r.data['id']}/")
        assert gone.status_code == 204
        deleted = await receive_event(ws)
        await ws.disconnect()
        await cluster_ws.disconnect()
        return meta, r.data["id"], created, on_cluster, deleted

    meta, run_id, created, on_cluster, deleted = async_to_sync(scenario)()
    assert (meta["type"], meta["stream"], meta["seq"], meta["snapshot"]) == ("meta", "runs", 0, None)
    assert created == {"type": "run_created", "run": run_id, "cluster": demo.id, "kind": "collective", "parent": None,
                       "schedule": None}
    assert on_cluster == created
    assert deleted == {"type": "run_deleted", "run": run_id}
