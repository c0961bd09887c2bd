"""The fabric page follows the inventory without a reload and without polling: a link failed through the REST API
shows as not active on an open page, and on top of its change list (the cluster stream's inventory event makes it
re-read the statuses once), then back to active."""
from tests.e2e.browser import screenshot
from tests.e2e.test_gpus_live import EVENT_SECONDS, patch
from tests.e2e.test_live import wait_live

NOT_ACTIVE = "() => Number(document.getElementById('failed-count').textContent.split(' ')[0].replace(/\\D/g, ''))"
LINK_ROWS = "(id) => [...document.querySelectorAll(`#change-list tr[data-model='link'][data-id='${id}']`)]" \
            ".map((tr) => tr.textContent.replace(/\\s+/g, ' ').trim())"


def test_the_fabric_page_shows_a_link_failed_through_the_api_without_a_reload(visitor, twin, orm):
    from twin.inventory.choices import FabricRole
    from twin.inventory.models import Link

    # a backend link no other test changes (test_inventory.py fails the first one)
    pk = Link.objects.filter(cluster_id=twin.clusters["demo-256"], fabric__role=FabricRole.BACKEND) \
        .order_by("id").values_list("id", flat=True)[7]
    status_reads = []
    visitor.page.on("request", lambda r: "/fabric/status.json" in r.url and status_reads.append(r.url))
    visitor.page.clock.install()        # the page's timers on a clock the test can move
    # given the fabric page of demo-256, connected, its change list loaded
    page = visitor.visit("/clusters/demo-256/fabric/")
    wait_live(page)
    page.wait_for_selector("#change-list[data-count]", state="attached")
    origin = page.evaluate("performance.timeOrigin")
    before = page.evaluate(NOT_ACTIVE)
    listed = len(page.evaluate(LINK_ROWS, pk))
    # which reads no status by itself, even minutes later (no polling)
    page.clock.fast_forward("05:00")
    page.wait_for_timeout(300)
    assert not status_reads, status_reads
    try:
        # when the link is failed through the API
        assert patch(twin, f"/api/inventory/links/{pk}/", {"status": "failed"})["status"] == "failed"
        # then the open page counts one more link not active, and lists the change, by whom
        page.wait_for_function(f"({NOT_ACTIVE})() === {before + 1}", timeout=EVENT_SECONDS * 1000)
        page.wait_for_function(f"({LINK_ROWS})({pk}).length === {listed + 1}", timeout=EVENT_SECONDS * 1000)
        row = page.evaluate(LINK_ROWS, pk)[0]
        assert "active → failed" in row and "a user" in row, row        # an anonymous visitor: no names
        screenshot(page, "fabric-demo-256-link-failed-live")
        # and when it is active again, it goes back, with the second change on top
        patch(twin, f"/api/inventory/links/{pk}/", {"status": "active"})
        page.wait_for_function(f"({NOT_ACTIVE})() === {before}", timeout=EVENT_SECONDS * 1000)
        page.wait_for_function(f"({LINK_ROWS})({pk}).length === {listed + 2}", timeout=EVENT_SECONDS * 1000)
        assert "failed → active" in page.evaluate(LINK_ROWS, pk)[0]
        assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
        assert len(status_reads) == 2, status_reads        # one read per event
    finally:
        Link.objects.filter(pk=pk).update(status="active")
