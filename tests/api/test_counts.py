"""A large list's count is kept while the inventory is unchanged (twin/api/counts.py), and made again after any
write through the API: the count is never stale. Given / when / then."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from twin.api import counts
from twin.inventory.models import GPU

pytestmark = pytest.mark.django_db


def page(client, url):
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).json()
    return body["count"], sum("COUNT(" in q["sql"].upper() for q in queries.captured_queries)


def test_a_kept_count_is_used_until_a_write_changes_the_inventory(demo, writer, monkeypatch):
    monkeypatch.setattr(counts, "KEEP_MIN", 1)  # demo-256's 256 GPUs count as a large list here
    monkeypatch.setattr(counts, "_counts", type(counts._counts)())
    url = f"/api/inventory/gpus/?cluster={demo.name}&status=active&limit=10"
    # given the active GPUs counted once
    assert page(writer, url) == (256, 1)
    # when the same list is asked again, then its count is the kept one: no COUNT query
    assert page(writer, url) == (256, 0)
    # when a GPU fails through the API
    gpu = GPU.objects.filter(cluster=demo).order_by("id").first()
    assert writer.patch(f"/api/inventory/gpus/{gpu.id}/", {"status": "failed"}, format="json").status_code == 200
    # then the list is counted again, and right
    assert page(writer, url) == (255, 1)
    # and a list under KEEP_MIN rows is counted every time
    monkeypatch.setattr(counts, "KEEP_MIN", 1_000)
    failed = f"/api/inventory/gpus/?cluster={demo.name}&status=failed&limit=10"
    assert page(writer, failed) == (1, 1) and page(writer, failed) == (1, 1)
