"""Status changes from an inventory item page: the superuser sets a link's status through the page's form (the REST
API underneath), the fabric page then shows the link as not active; an anonymous visitor gets no form."""
from tests.e2e.browser import screenshot


def test_the_superuser_marks_a_link_failed_from_its_page(admin, twin, orm):
    from twin.inventory.models import Link

    pk = twin.items["link"]
    try:
        # given the superuser on a backend link's page
        page = admin.visit(f"/inventory/link/{pk}/")
        form = page.locator("form#status-form")
        # when they set its status to failed
        form.locator("select[name=status]").select_option("failed")
        form.locator("[type=submit]").click()
        # then the page says so, the database holds it, and it stays so after a reload
        page.wait_for_function("document.getElementById('item-status').textContent.trim() === 'failed'")
        assert Link.objects.get(pk=pk).status == "failed"
        assert "status active → failed" in page.locator("#change-list tbody tr").first.inner_text()
        admin.visit(f"/inventory/link/{pk}/", shot="inventory-link-failed")
        assert page.locator("form#status-form select[name=status]").input_value() == "failed"
        # and its change log, kept by the server, says who did it
        latest = page.locator("#change-list tbody tr").first.inner_text()
        assert "admin" in latest and "status active → failed" in latest
        # and the fabric page counts it among the non-active links
        page = admin.visit("/clusters/demo-256/fabric/")
        assert page.locator("#failed-count").inner_text().startswith("1 ")
        screenshot(page, "fabric-demo-256-link-failed")
    finally:
        Link.objects.filter(pk=pk).update(status="active")


def test_an_anonymous_visitor_gets_no_status_form(visitor, twin):
    page = visitor.visit(f"/inventory/link/{twin.items['link']}/")
    assert page.locator("form#status-form").count() == 0
    assert page.locator("#item-status").inner_text().strip() == "active"
