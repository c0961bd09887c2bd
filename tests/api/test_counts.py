"""A large list's count and a cluster's summary are kept while the inventory is unchanged (twin/inventory/kept.py),
and made again after any write through the API: never stale. Given / when / then."""
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
    counts.COUNTS.clear()
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
    # and a list under KEEP_MIN rows is counted every time (a page of 1: a page that ends the list is its count)
    monkeypatch.setattr(counts, "KEEP_MIN", 1_000)
    failed = f"/api/inventory/gpus/?cluster={demo.name}&status=failed&limit=1"
    assert page(writer, failed) == (1, 1) and page(writer, failed) == (1, 1)
    # and a filter that can match nothing (a cluster name that names none) counts 0, no error
    assert writer.get("/api/inventory/gpus/?cluster=no-such-cluster").json()["count"] == 0


def test_a_cluster_summary_is_kept_until_a_write_changes_the_inventory(demo, writer):
    url = f"/api/inventory/clusters/{demo.id}/summary/"
    # given the summary read once; when it is read again, then it is the kept one (no query but the version's)
    first = writer.get(url).json()
    with CaptureQueriesContext(connection) as queries:
        assert writer.get(url).json() == first
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    # when a GPU fails, then the summary counts it
    gpu = GPU.objects.filter(cluster=demo).order_by("id").first()
    assert writer.patch(f"/api/inventory/gpus/{gpu.id}/", {"status": "failed"}, format="json").status_code == 200
    assert writer.get(url).json()["counts"]["gpus"]["failed"] == first["counts"]["gpus"]["failed"] + 1


def test_the_same_rows_share_one_kept_count(demo, writer, monkeypatch):
    monkeypatch.setattr(counts, "KEEP_MIN", 1)
    url = f"/api/inventory/gpus/?cluster={demo.name}&limit=10"
    # given the cluster's GPUs counted once
    assert page(writer, url) == (256, 1)
    # when the same rows are listed briefly, in another order or from another offset, then no COUNT query
    for more in ("&brief=1", "&ordering=-index", "&offset=20"):
        assert page(writer, url + more) == (256, 0)
    # and other rows are counted
    assert page(writer, url + "&status=active&slot=0") == (32, 1)
