"""A large list's count and a cluster's summary are kept while the inventory is unchanged (twin/inventory/kept.py),
and made again after any write through the API: never stale. Given / when / then."""
import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from twin.api import counts
from twin.inventory.kept import Kept, clear_all
from twin.inventory.models import GPU, Port

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


def test_a_build_primes_the_counts_and_summary_every_process_reads(db, writer, monkeypatch, settings,
                                                                  django_capture_on_commit_callbacks):
    # given counts shared through Redis (the tests keep them per process) and demo-256 counted as large
    settings.TWIN_KEPT_CACHE = "kept"
    monkeypatch.setattr(counts, "KEEP_MIN", 1)
    # when the cluster is built, as a user builds it
    with django_capture_on_commit_callbacks(execute=True):
        call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    # and another web process (nothing kept in this one) lists its ports, or all ports, or reads its summary
    clear_all()
    ports = "/api/inventory/ports/?cluster=demo-256&limit=10"
    n_ports = Port.objects.count()
    # then no request counts: the build did, once
    assert page(writer, ports) == (n_ports, 0)
    assert page(writer, "/api/inventory/ports/?limit=10") == (n_ports, 0)
    cluster_id = writer.get("/api/inventory/clusters/").json()["results"][0]["id"]
    with CaptureQueriesContext(connection) as queries:
        assert writer.get(f"/api/inventory/clusters/{cluster_id}/summary/").json()["counts"]["gpus"]["total"] == 256
    assert not any("COUNT(" in q["sql"].upper() for q in queries.captured_queries)
    # and a logged write (a GPU failed) makes the next process count again, right
    gpu = GPU.objects.order_by("id").first()
    assert writer.patch(f"/api/inventory/gpus/{gpu.id}/", {"status": "failed"}, format="json").status_code == 200
    clear_all()
    assert page(writer, "/api/inventory/gpus/?cluster=demo-256&status=active&limit=10") == (255, 1)


def test_shared_counts_are_off_in_a_database_before_its_first_logged_write(db, settings):
    settings.TWIN_KEPT_CACHE = "kept"
    # given no logged write yet (no version), when a value is kept, then it is kept in this process only
    assert Kept(4, shared="t")._shared_key("k", None) is None
    # and with a version its key names the database, so two databases on one Redis never share values
    assert connection.settings_dict["NAME"] in Kept(4, shared="t")._shared_key("k", "v1")
