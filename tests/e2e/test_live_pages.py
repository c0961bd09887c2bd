"""Pages live on their own events (issue 25, item 4), and the fabric page after a run with no link utilization
(item 6): a run created through the API joins an open runs list within seconds; the Debug page follows a rehearsal
from queued to its culprit without a reload; the live indicator says why it is not live; the fabric page does not
claim link state from a run that has none."""
import re

import numpy as np

from tests.e2e.conftest import RUN_SECONDS, in_thread, runs_held
from tests.e2e.test_debug import JOB
from tests.e2e.test_live import wait_live

SOON_MS = 5_000


def test_a_run_created_through_the_api_appears_in_an_open_runs_list(visitor, twin):
    # given the runs list, open and live
    page = visitor.visit("/experiments/")
    wait_live(page)
    origin = page.evaluate("performance.timeOrigin")
    # when a run is started through the API (not from this page)
    run_id = twin.start_run("demo-256", gpus=8, sizes="1M")
    # then its row shows within a few seconds, without a reload, and follows the run to its end
    page.wait_for_selector(f'#runs-table tr[data-run="{run_id}"]', state="attached", timeout=SOON_MS)
    assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
    twin.wait_run(run_id)
    page.wait_for_selector(f'#runs-table tr[data-run="{run_id}"] .badge.succeeded', timeout=SOON_MS * 2)


def test_the_debug_page_follows_its_rehearsal_to_the_end_without_a_reload(admin, twin):
    # given a rehearsal queued while no worker takes runs
    with runs_held(twin):
        run = twin.api("/api/runs/", {"kind": "debug", "cluster": "demo-256",
                                      "params": {**JOB, "inject": "hang:rank=5"}})
        # when the superuser opens the Debug page on it
        page = admin.visit(f"/clusters/demo-256/debug/?run={run['id']}")
        assert f"Run #{run['id']} is queued" in page.locator("#culprit").inner_text()
        origin = page.evaluate("performance.timeOrigin")
    # ... and a worker takes it
    # then the page turns to the finished rehearsal by itself: its culprit and heatmap, no reload
    page.wait_for_selector('#culprit[data-found="1"]', state="attached", timeout=RUN_SECONDS * 1000)
    assert page.locator("#culprit-ranks").inner_text().strip() == "5"
    assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
    assert twin.api(f"/api/runs/{run['id']}/")["status"] == "succeeded"


def test_live_off_or_reconnecting_says_why(visitor, twin):
    # a page with no live stream of its own says so
    page = visitor.visit(f"/inventory/host/{twin.items['host']}/")
    status = page.locator("#live-status")
    page.wait_for_selector('#live-status[data-state="off"]', state="attached")
    assert status.get_attribute("data-reason"), status.inner_text()
    assert "(" in status.inner_text()
    # given the runs list, live
    page = visitor.visit("/experiments/")
    wait_live(page)
    with visitor.probe.outage():
        # when the server goes away
        twin.daphne.stop()
        try:
            # then the indicator says it is reconnecting, why, and in how long
            page.wait_for_selector('#live-status[data-state="reconnecting"]', state="attached")
            page.wait_for_function("/unreachable/.test(document.getElementById('live-status').dataset.reason)")
            assert re.search(r"reconnecting \((in \d+ s|now) · the server is unreachable\)", status.inner_text()), \
                status.inner_text()
        finally:
            twin.daphne.start()
        # and live again once it is back, with no reason left
        wait_live(page)
    assert status.inner_text() == "live"


def test_the_fabric_page_after_a_run_without_link_utilization(visitor, twin, orm):
    from twin.inventory.models import Cluster
    from twin.live.publish import RunPublisher
    from twin.runs.models import SimulationRun

    # given a collective's link state, then a finished figure run (no link utilization) as the cluster's last frame
    demo = Cluster.objects.get(name="demo-256")
    util = np.full(twin.backend_links["demo-256"], 0.5, dtype=np.float32)
    collective = SimulationRun.objects.create(kind="collective", cluster=demo, status="succeeded", progress=100,
                                              params={})
    figure = SimulationRun.objects.create(kind="figure", cluster=demo, status="succeeded", progress=100, params={})
    in_thread(lambda: RunPublisher(collective).progress(100.0, link_util=util, force=True))
    in_thread(lambda: RunPublisher(figure).finished())
    # when the fabric page opens
    page = visitor.visit("/clusters/demo-256/fabric/")
    text = page.locator("#fabric-run").inner_text()
    # then it does not claim a state from the figure run: it names it and says it has no link utilization
    assert "State from" not in text, text
    assert f"run #{figure.pk}" in text and "no link utilization" in text, text
    assert f"run #{figure.pk} simulates none" in page.locator("#hottest-links").inner_text()
    # and once a run brings link utilization while the page is open, it says that run's state is shown; a later
    # run without any leaves it shown, naming both
    in_thread(lambda: RunPublisher(collective).progress(100.0, link_util=util, force=True))
    page.wait_for_selector(f'#fabric-run[data-util-run="{collective.pk}"]', state="attached")
    assert f"State from run #{collective.pk}" in page.locator("#fabric-run").inner_text()
    in_thread(lambda: RunPublisher(figure).finished())
    page.wait_for_function(f"document.getElementById('fabric-run').dataset.run === '{figure.pk}'")
    text = page.locator("#fabric-run").inner_text()
    assert f"Link utilization from run #{collective.pk}" in text and f"run #{figure.pk}" in text, text
