"""The overview while the launcher builds the default clusters in the background (issue 25, item 11): each build
with its progress, moving as the build reports it, and the page loaded again with the cluster's card once it is
done."""
from twin.inventory import build_status


def test_the_overview_shows_a_build_in_progress_and_its_card_once_built(visitor, twin):
    # given a build of demo-256 reported at 10 % (the servers read this session's Redis keys)
    build_status.report("demo-256", "ports", 10, 100)
    try:
        page = visitor.visit("/")
        bar = page.locator('#building li[data-building="demo-256"]')
        assert page.locator("#building").is_visible() and "10 %" in bar.inner_text()
        # when it reports 60 %, then the page shows it within a few polls
        build_status.report("demo-256", "links", 60, 100)
        page.wait_for_function("""() => document.querySelector('#building li[data-building="demo-256"] .percent')
                                  ?.textContent === '60 %'""", timeout=10_000)
        assert "links" in bar.inner_text()
        # when the build ends, then the page loads again: no build shown, the cluster's card there
        page.evaluate("() => { window.beforeReload = true; }")
        build_status.finished("demo-256")
        page.wait_for_function("() => window.beforeReload === undefined", timeout=10_000)
        visitor.wait_ready()
        assert not page.locator("#building").is_visible()
        assert page.locator('.cluster-card[data-cluster="demo-256"]').count() == 1
    finally:
        build_status.finished("demo-256")
