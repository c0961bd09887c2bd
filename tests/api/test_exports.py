"""The whole-fabric exports (JSON graph, DOT) are rendered once per state of the fabric and served from cached gzip:
a second download renders nothing, any write to the fabric is in the next download, and under ASGI the bytes go out
from an async iterator (never read whole in a thread)."""
import gzip
import json

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test import AsyncClient
from django.test.utils import CaptureQueriesContext

from twin.inventory.models import Link

SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
EXPORTS = ["graph", "dot"]


def body(response) -> bytes:
    return b"".join(response)


def renders(queries) -> bool:
    """Whether these queries read the links' speeds, which only a render does."""
    return any('"speed_gbps"' in q["sql"] and '"inventory_link"' in q["sql"] for q in queries)


@pytest.mark.parametrize("export", EXPORTS)
def test_a_second_download_renders_nothing(anon, demo, export):
    fabric = demo.fabrics.get(role=0)
    url = f"/api/inventory/fabrics/{fabric.id}/{export}/"
    with CaptureQueriesContext(connection) as first:
        one = body(anon.get(url))
    with CaptureQueriesContext(connection) as second:
        two = body(anon.get(url))
    assert renders(first) and not renders(second), [q["sql"] for q in second]
    assert one == two and len(second) <= 5


@pytest.mark.parametrize("export", EXPORTS)
def test_gzip_for_a_client_that_accepts_it_the_same_bytes_otherwise(anon, demo, export):
    fabric = demo.fabrics.get(role=0)
    url = f"/api/inventory/fabrics/{fabric.id}/{export}/"
    plain = anon.get(url)
    packed = anon.get(url, HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    assert "Content-Encoding" not in plain and packed["Content-Encoding"] == "gzip"
    raw, gz = body(plain), body(packed)
    assert gzip.decompress(gz) == raw and len(gz) < len(raw) / 4
    assert int(plain["Content-Length"]) == len(raw) and int(packed["Content-Length"]) == len(gz)
    assert "Accept-Encoding" in plain["Vary"]
    # a client holding this version gets a 304 and no body
    again = anon.get(url, HTTP_IF_NONE_MATCH=plain["ETag"])
    assert again.status_code == 304 and not again.content


def test_every_write_is_in_the_next_download(anon, writer, demo):
    fabric = demo.fabrics.get(role=0)
    dot = f"/api/inventory/fabrics/{fabric.id}/dot/"
    graph = f"/api/inventory/fabrics/{fabric.id}/graph/"
    before = body(anon.get(dot)).decode()
    etag = anon.get(graph)["ETag"]
    assert ", color=\"red\"" not in before
    link, other = Link.objects.filter(fabric=fabric).order_by("id")[:2]
    # a status through the API (the change log), a status around it (the status index), a rename
    assert writer.patch(f"/api/inventory/links/{link.id}/", {"status": "failed"}, format="json").status_code == 200
    Link.objects.filter(id=other.id).update(status="drained")
    assert writer.patch(f"/api/inventory/fabrics/{fabric.id}/", {"name": "renamed.be"},
                        format="json").status_code == 200
    after = body(anon.get(dot)).decode()
    assert after.startswith('graph "renamed.be"') and after.count('style="dashed"') == 2
    fresh = anon.get(graph)
    assert fresh["ETag"] != etag
    edges = {e["id"]: e["status"] for e in json.loads(body(fresh))["edges"]}
    assert (edges[link.id], edges[other.id]) == ("failed", "drained")


def test_under_asgi_the_bytes_come_from_an_async_iterator(demo):
    fabric = demo.fabrics.get(role=0)

    async def download():
        response = await AsyncClient().get(f"/api/inventory/fabrics/{fabric.id}/dot/")
        return response, b"".join([piece async for piece in response])

    # async_to_sync: the view's sync part runs on this thread, inside the test's transaction
    response, data = async_to_sync(download)()
    assert response.status_code == 200 and response.is_async
    assert data.startswith(b'graph "demo-256.be"') and data.count(b" -- ") == 576
