"""Live everywhere it matters (issue 40, item 5), in a real browser at 1280 x 800: the overview follows a run's link
utilization from its frames, and a link and a GPU failed through the REST API (its counts, failed items and bisection
bandwidth, as the server figures them), and
the Schedules page follows a schedule firing and its run to its end (last start, starts, next start, the run's badge,
its last result), each without a reload; and the overview reads its cards again over REST after its stream was
dropped (a gap), so what the gap missed shows."""
import json
import urllib.request

from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from tests.e2e.test_gpus_live import patch
from tests.e2e.test_live import wait_live
from tests.processes import wait_for
from twin.celery import app as celery_app

VIEWPORT = {"width": 1280, "height": 800}
LIVE_MS = 15_000             # an inventory event to the page: one event, one read of the cards (at most 1 a second)
NO_RELOAD = "window.sinceLoad === true"


def _open(visitor, path):
    page = visitor.page
    page.set_viewport_size(VIEWPORT)
    visitor.visit(path)
    wait_live(page)
    page.evaluate("() => { window.sinceLoad = true; }")
    return page


def _cards(twin) -> dict:
    """What the server says each card shows now (the JSON the page reads)."""
    with urllib.request.urlopen(twin.url + "/overview/activity.json", timeout=30) as r:
        return json.loads(r.read())


def _figure(card, name: str) -> str:
    return card.locator(f'[data-figure="{name}"]').inner_text()


def test_the_overview_follows_a_failed_link_and_gpu_without_a_reload(visitor, twin, orm):
    from twin.inventory.models import GPU, Link

    cluster = twin.clusters["demo-256"]
    link = Link.objects.filter(cluster_id=cluster, fabric__role=0, tier=1, status="active").order_by("id").first()
    gpu = GPU.objects.filter(cluster_id=cluster, status="active").order_by("index")[5]
    # given the overview, live, with demo-256's card as the server figures it
    page = _open(visitor, "/")
    card = page.locator('.cluster-card[data-cluster="demo-256"]')
    before = _cards(twin)["demo-256"]["figures"]
    assert _figure(card, "links_failed") == f"{before['links_failed']:,}"
    assert _figure(card, "gpus_failed") == f"{before['gpus_failed']:,}"
    # when a collective runs on it, then the card shows the backend links' utilization its frames carry, and the run
    # until it ends
    run = twin.start_run("demo-256", gpus=64, sizes="1M:16M", seeds=2)
    page.wait_for_function(f"""() => /busiest .* \\(run #{run}, succeeded\\)/.test(document.querySelector(
        '.cluster-card[data-cluster="demo-256"] .link-util').textContent)""", timeout=LIVE_MS + 60_000)
    assert twin.wait_run(run)["status"] == "succeeded"
    try:
        # when a backend uplink and a GPU fail through the REST API
        assert patch(twin, f"/api/inventory/links/{link.pk}/", {"status": "failed"})["status"] == "failed"
        assert patch(twin, f"/api/inventory/gpus/{gpu.pk}/", {"status": "failed"})["status"] == "failed"
        # then the card counts them, by itself: failed links and GPUs, healthy GPUs, bisection, failed items
        _wait_counts(page, before["links_failed"] + 1, before["gpus_failed"] + 1)
        now = _cards(twin)["demo-256"]
        assert _figure(card, "gpus_active") == f"{now['figures']['gpus_active']:,}" == f"{before['gpus_active'] - 1:,}"
        assert _figure(card, "bisection_text") == now["figures"]["bisection_text"]
        assert "bad" in card.locator('[data-figure="links_failed"]').get_attribute("class")
        assert f"{now['not_active']['links']} links" in card.locator(".not-active").inner_text()
        # and when they are active again, back
        patch(twin, f"/api/inventory/links/{link.pk}/", {"status": "active"})
        patch(twin, f"/api/inventory/gpus/{gpu.pk}/", {"status": "active"})
        _wait_counts(page, before["links_failed"], before["gpus_failed"])
        assert page.evaluate(NO_RELOAD), "the page reloaded"
        # and when the link fails while the page's stream is down (no event reaches it), the reconnection reads the
        # cards again over REST: the count it missed shows
        with visitor.probe.outage():
            twin.daphne.stop()
            try:
                page.wait_for_selector('#live-status[data-state="reconnecting"]', state="attached")
                Link.objects.filter(pk=link.pk).update(status="failed")
            finally:
                twin.daphne.start()
            wait_live(page)
        _wait_counts(page, before["links_failed"] + 1, before["gpus_failed"])
        assert page.evaluate(NO_RELOAD), "the page reloaded"
    finally:
        Link.objects.filter(pk=link.pk).update(status="active")
        GPU.objects.filter(pk=gpu.pk).update(status="active")


def _wait_counts(page, links_failed: int, gpus_failed: int) -> None:
    page.wait_for_function(f"""() => {{
        const c = document.querySelector('.cluster-card[data-cluster="demo-256"]');
        return c.querySelector('[data-figure="links_failed"]').textContent === '{links_failed:,}'
            && c.querySelector('[data-figure="gpus_failed"]').textContent === '{gpus_failed:,}'; }}""",
                           timeout=LIVE_MS)


def test_the_schedules_page_follows_a_schedule_firing_and_its_run_without_a_reload(admin, twin, orm):
    # given a schedule of an 8-GPU AllGather on demo-256 (made over the API), on the Schedules page, live
    scenario = twin.api("/api/runs/scenarios/", {"name": "e2e-live-fired", "cluster": "demo-256",
                                                 "kind": "collective", "params": {"gpus": 8, "sizes": "1M"}})["id"]
    schedule = twin.api("/api/runs/schedules/", {"name": "e2e live fired", "scenario": scenario,
                                                 "interval": {"every": 1, "period": "days"}})["id"]
    page = _open(admin, "/schedules/")
    row = page.locator(f"#schedule-{schedule}")
    assert "none yet" in row.locator(".recent-runs").inner_text()
    assert row.locator(".starts").inner_text() == "0"
    assert "next" in row.locator(".next-run").inner_text()
    # when beat fires it: its start recorded on the schedule as beat records it, its message sent as beat sends it
    task = PeriodicTask.objects.get(pk=schedule)
    PeriodicTask.objects.filter(pk=schedule).update(last_run_at=timezone.now(),
                                                    total_run_count=task.total_run_count + 1)
    entry = ModelEntry(PeriodicTask.objects.get(pk=schedule), app=celery_app)
    celery_app.send_task(entry.task, entry.args, entry.kwargs, **{**entry.options, "queue": twin.workers.all[0].queue})
    run = wait_for(lambda: (twin.api(f"/api/runs/?schedule={schedule}")["results"] or [None])[0], timeout=60,
                   interval=0.25, what="the scheduled run")["id"]
    # then its run shows on the schedule's row, its start counted and dated, by itself
    row.locator(f'.recent-runs a[data-run="{run}"]').wait_for(timeout=LIVE_MS)
    assert row.locator(".starts").inner_text() == "1"
    assert row.locator(".last-run").inner_text() != "–"
    # and once it finishes, its badge and the last result say so
    twin.wait_run(run)
    page.wait_for_selector(f'#schedule-{schedule} .recent-runs a[data-run="{run}"].succeeded', timeout=LIVE_MS)
    result = row.locator(".last-result")
    result.locator(f'a[href="/experiments/{run}/"]').wait_for(timeout=LIVE_MS)
    assert "succeeded" in result.inner_text()
    assert page.evaluate(NO_RELOAD), "the page reloaded"
    admin.probe.assert_clean()
