"""Inventory events on a cluster's stream, end to end: a status changed through the REST API reaches a real
WebSocket client (the real ASGI app and channels_redis layer) as one JSON text message after the commit; a bulk
change sends the count and the first changes, not one line per row; a rolled-back change sends nothing."""
import json
from datetime import datetime

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.db import transaction
from rest_framework.test import APIClient

from tests.live.test_push import in_worker, open_socket, receive_meta
from twin.api.models import ApiToken
from twin.inventory import actions
from twin.inventory.changelog import EVENT_CHANGES_MAX
from twin.inventory.models import Link

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice(transactional_db):
    """An API client of a user allowed to change links."""
    user = User.objects.create_user("alice")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    client = APIClient()
    client.token = ApiToken.issue(user)[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {client.token}")
    return client


async def receive_event(ws, timeout=3):
    msg = await ws.receive_output(timeout=timeout)
    assert msg["type"] == "websocket.send" and msg.get("text") is not None, msg
    return json.loads(msg["text"])


def test_a_link_failed_through_the_api_is_announced_on_the_cluster_stream(demo, alice):
    link = Link.objects.filter(cluster=demo).order_by("id").first()

    async def scenario():
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        signed_in = await open_socket(f"/ws/clusters/{demo.name}/?index=0&token={alice.token}")
        await receive_meta(ws)
        await receive_meta(signed_in)
        response = await in_worker(alice.patch, f"/api/inventory/links/{link.id}/", {"status": "failed"},
                                   format="json")
        assert response.status_code == 200
        event, named = await receive_event(ws), await receive_event(signed_in)
        await ws.disconnect()
        await signed_in.disconnect()
        return event, named

    event, named = async_to_sync(scenario)()
    # a signed-in reader is told who; an anonymous one that a user did it, not who (twin.api.permissions.shown_name)
    assert named["changes"][0]["by"] == "alice"
    assert event == {**named, "changes": [{**named["changes"][0], "by": "a user"}]}
    assert {k: event[k] for k in ("type", "cluster", "count")} == {"type": "inventory", "cluster": demo.id, "count": 1}
    assert "truncated" not in event
    [change] = event["changes"]
    assert {k: change[k] for k in ("model", "id", "name", "field", "before", "after", "by", "action")} == \
        {"model": "link", "id": link.id, "name": link.name, "field": "status", "before": "active", "after": "failed",
         "by": "a user", "action": "update"}
    assert datetime.fromisoformat(change["at"]).tzinfo is not None


def test_a_bulk_change_sends_the_count_and_the_first_changes(demo):
    ids = list(Link.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True))
    assert len(ids) > EVENT_CHANGES_MAX

    async def scenario():
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        await receive_meta(ws)
        await in_worker(actions.set_status, Link, ids, "maintenance")     # the system: no user
        event = await receive_event(ws)
        await ws.disconnect()
        return event

    event = async_to_sync(scenario)()
    assert event["count"] == len(ids) and event["truncated"] == len(ids) - EVENT_CHANGES_MAX
    assert [c["id"] for c in event["changes"]] == ids[:EVENT_CHANGES_MAX]
    assert {(c["before"], c["after"], c["by"]) for c in event["changes"]} == {("active", "maintenance", None)}


def test_a_rolled_back_change_sends_nothing(demo):
    link = Link.objects.filter(cluster=demo).order_by("id").first()

    def failing_write():
        with transaction.atomic():
            actions.set_status(Link, [link.id], "failed")
            raise RuntimeError("the caller's transaction fails after the change")

    def write_then_fail():
        with pytest.raises(RuntimeError):
            failing_write()
        actions.set_status(Link, [link.id], "drained")     # then a change that commits

    async def scenario():
        ws = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        await receive_meta(ws)
        await in_worker(write_then_fail)
        event = await receive_event(ws)
        await ws.disconnect()
        return event

    event = async_to_sync(scenario)()
    # the first message is the committed change: active -> drained (the failed status never existed)
    assert [(c["before"], c["after"]) for c in event["changes"]] == [("active", "drained")]
