"""Offset pages read without the rows before them (twin/api/pagination.py): a deep page starts at an id, a page
that ends the list gives its count. Each must be the page and the count a plain ``OFFSET``/``COUNT`` gives.
Given / when / then."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from twin.api import pagination
from twin.inventory.models import GPU, Link

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def ids(client, url, **params):
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url, params).json()
    return [row["id"] for row in body["results"]], body["count"], queries.captured_queries


def test_a_deep_page_is_the_page_a_plain_offset_gives(demo, anon, monkeypatch):
    monkeypatch.setattr(pagination, "DEEP_OFFSET", 5)  # demo-256's lists count as deep from row 5 on
    url = "/api/inventory/gpus/"
    every = sorted(GPU.objects.values_list("id", flat=True))
    # given the GPUs written with consecutive ids (dense): every offset, both orders, the page a slice gives
    for offset in (5, 17, 200, 250, 255, 256, 300):
        assert ids(anon, url, cluster=demo.name, limit=7, offset=offset)[:2] == (every[offset:offset + 7], 256)
        assert ids(anon, url, limit=7, offset=offset, ordering="-id")[0] == every[::-1][offset:offset + 7]
    # and the page starts at an id: the OFFSET is not read past
    sql = [q["sql"] for q in ids(anon, url, cluster=demo.name, limit=7, offset=100)[2]]
    assert not any("OFFSET" in q.upper() for q in sql)


def test_a_deep_page_of_a_list_with_gaps_is_found_by_its_first_id(demo, anon, writer, monkeypatch):
    monkeypatch.setattr(pagination, "DEEP_OFFSET", 5)
    # given links of tier 1 only (ids with gaps: the tier-0 links lie between) and a deleted link among them
    tier1 = sorted(Link.objects.filter(tier=1).values_list("id", flat=True))
    assert writer.delete(f"/api/inventory/links/{tier1[40]}/").status_code == 204
    tier1.pop(40)
    url = "/api/inventory/links/"
    # when pages are read deep in it, in both orders, then each is the slice of the list
    for offset in (5, 39, 40, 41, len(tier1) - 3, len(tier1)):
        page, count, queries = ids(anon, url, tier=1, limit=10, offset=offset)
        assert (page, count) == (tier1[offset:offset + 10], len(tier1))
        assert ids(anon, url, tier=1, limit=10, offset=offset, ordering="-id")[0] == tier1[::-1][offset:offset + 10]
    # and the first id came from a subquery of ids, not from reading the rows before it
    assert any("OFFSET" in q["sql"].upper() and q["sql"].upper().count("SELECT") == 2 for q in queries)


def test_a_page_that_ends_the_list_is_its_count(demo, anon):
    # given a list of 8 GPUs (one host's); when a page holds all of it, then no COUNT query is made
    host = GPU.objects.filter(cluster=demo).order_by("id").first().host_id
    page, count, queries = ids(anon, "/api/inventory/gpus/", host_id=host, limit=100)
    assert count == len(page) == 8 and not any("COUNT(" in q["sql"].upper() for q in queries)
    # when the page ends the list after an offset, then the count is the offset plus the page
    assert ids(anon, "/api/inventory/gpus/", host_id=host, limit=5, offset=5)[:2] == (page[5:], 8)
    # when a page is full or empty, then the list is counted
    for params in ({"limit": 8}, {"limit": 3}, {"offset": 9}):
        page_, count, queries = ids(anon, "/api/inventory/gpus/", host_id=host, **params)
        assert count == 8 and any("COUNT(" in q["sql"].upper() for q in queries)
    assert ids(anon, "/api/inventory/gpus/", host_id=host, offset=8)[:2] == ([], 8)
    assert ids(anon, "/api/inventory/gpus/", name="no-such-gpu")[:2] == ([], 0)


def test_a_filter_on_a_choice_selects_no_distinct_rows(demo, anon):
    # the filter's field is the row's own (status) or a forward relation's (a port's switch tier): rows cannot repeat
    for url in ("/api/inventory/links/?status=active&tier=2", "/api/inventory/ports/?tier=1",
                "/api/inventory/nics/?role=0"):
        with CaptureQueriesContext(connection) as queries:
            body = anon.get(url).json()
        assert body["count"] > 0 and not any("DISTINCT" in q["sql"].upper() for q in queries.captured_queries)
        assert len({row["id"] for row in body["results"]}) == len(body["results"])
