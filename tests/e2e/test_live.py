"""Live pages in a real browser: a run started from the form shows its progress as it happens, the fabric page takes
the frames of a run, and after a real server outage the pages reconnect and resync by themselves."""
import re

import numpy as np

from tests.e2e.browser import READY, PageProbe, screenshot
from tests.e2e.conftest import RUN_SECONDS, in_thread

# Records every value #run-progress takes, from the page's first script on (an init script runs before them).
RECORD_PROGRESS = """
window.__progress = [];
document.addEventListener("DOMContentLoaded", () => {
  const bar = document.getElementById("run-progress");
  if (!bar) return;
  const record = () => window.__progress.push([bar.dataset.progress, bar.dataset.status]);
  record();
  new MutationObserver(record).observe(bar, { attributes: true, attributeFilter: ["data-progress", "data-status"] });
});
"""
FINISHED = '["succeeded", "failed", "cancelled"].includes(document.getElementById("run-progress").dataset.status)'


def fill_form(form, values: dict):
    """Set a form's fields by name as a user would: pick the radio button or option, type into inputs."""
    for name, value in values.items():
        field = form.locator(f'[name="{name}"]')
        kind = field.first.evaluate("e => e.tagName === 'SELECT' ? 'select' : e.type")
        if kind == "radio":
            form.locator(f'[name="{name}"][value="{value}"]').check()
        elif kind == "select":
            field.select_option(str(value))
        elif kind == "checkbox":
            field.set_checked(bool(value))
        else:
            field.fill(str(value))


def wait_live(page):
    page.wait_for_selector('#live-status[data-state="live"]', state="attached")


def test_a_run_started_from_the_form_shows_its_progress_live(admin, twin):
    # given the superuser on the experiments page, every #run-progress value recorded
    admin.context.add_init_script(RECORD_PROGRESS)
    page = admin.visit("/experiments/", shot="experiments-logged-in")
    form = page.locator("form#new-run")
    # when they start a collective on demo-256 that repeats over 100 hash seeds, the most a run takes (about a
    # second of progress frames)
    fill_form(form, {"kind": "collective", "cluster": "demo-256", "collective": "allgather", "gpus": 128,
                     "placement": "random", "routing": "ecmp", "qps": 4, "sizes": "1M:256M", "seeds": 100})
    with page.expect_navigation(url=re.compile(r"/experiments/\d+/$")):
        form.locator("[type=submit]").click()
    admin.wait_ready()
    origin = page.evaluate("performance.timeOrigin")
    # then the progress bar moves by itself until the run succeeds, on the same page (no reload)
    page.wait_for_function(FINISHED, timeout=RUN_SECONDS * 1000, polling=100)
    seen = page.evaluate("window.__progress")
    assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
    progress = [float(p) for p, _ in seen]
    below = sorted({p for p in progress if p < 100})
    assert len(below) >= 2, f"fewer than two progress values below 100 were shown: {seen}"
    assert progress == sorted(progress), f"the progress went back: {seen}"
    assert seen[-1] == ["100", "succeeded"], seen
    assert "running" in {s for _, s in seen}, seen
    run_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    assert twin.api(f"/api/runs/{run_id}/")["status"] == "succeeded"
    page.wait_for_selector("#results > *")
    screenshot(page, "experiment-run-live")


def test_the_fabric_page_applies_the_frames_of_a_run_started_through_the_api(visitor, twin):
    # given the fabric page of demo-256, connected
    page = visitor.visit("/clusters/demo-256/fabric/")
    wait_live(page)
    before = int(page.evaluate("document.body.dataset.frames ?? '0'"))
    # when a run is started through the API
    run_id = twin.start_run("demo-256", collective="allgather", gpus=128, sizes="1M:256M", placement="random",
                            routing="ecmp", qps=4, seeds=100)
    # then its frames are applied (body[data-frames] grows) and the page shows that run's state
    page.wait_for_function(f"Number(document.body.dataset.frames ?? 0) > {before}", timeout=RUN_SECONDS * 1000)
    page.wait_for_selector(f'#fabric-run[data-run="{run_id}"]', state="attached", timeout=RUN_SECONDS * 1000)
    twin.wait_run(run_id)
    page.wait_for_function("Number(document.getElementById('hottest-links').dataset.count) > 0")
    stats = visitor.twin_js()
    assert stats["framesApplied"] >= 1 and len(stats["frameApplyMs"]) == stats["framesApplied"]
    screenshot(page, "fabric-demo-256-after-run")


def test_pages_reconnect_and_resync_after_the_server_drops(visitor, twin, orm):
    from twin.inventory.models import Cluster
    from twin.live.publish import RunPublisher
    from twin.runs.actions import cancelled_run
    from twin.runs.params import validate_params
    from twin.runs.models import SimulationRun

    # given a running run on demo-256, watched from its page and from the fabric page
    demo = Cluster.objects.get(name="demo-256")
    run = SimulationRun.objects.create(kind="collective", cluster=demo, status="running", progress=10.0,
                                       params=validate_params("collective", {"gpus": 64}, demo))
    try:
        fabric = visitor.visit("/clusters/demo-256/fabric/")
        run_page = visitor.context.new_page()
        run_probe = PageProbe(run_page)
        run_page.goto(f"/experiments/{run.pk}/")
        run_page.wait_for_selector(READY, state="attached")
        for page in (fabric, run_page):
            wait_live(page)
        # when the server goes down (every socket drops) ...
        with visitor.probe.outage(), run_probe.outage():
            twin.daphne.stop()
            for page in (fabric, run_page):
                page.wait_for_selector('#live-status[data-state="reconnecting"]', state="attached")
            # ... the run reports 60 % and one link at 97 % while it is down ...
            hot = twin.backend_links["demo-256"] // 3
            util = np.zeros(twin.backend_links["demo-256"], dtype=np.float32)
            util[hot] = 0.97
            SimulationRun.objects.filter(pk=run.pk).update(progress=60.0)
            run.progress = 60.0
            in_thread(lambda: RunPublisher(run).progress(60.0, link_util=util, force=True))
            # ... and the server comes back on the same port
            twin.daphne.start()
            # then both pages are live again by themselves ...
            for page in (fabric, run_page):
                wait_live(page)
        # ... and show what was published meanwhile (resynced from the snapshots: the link utilization comes only
        # from frames)
        run_page.wait_for_selector('#run-progress[data-progress="60"]', state="attached")
        run_page.wait_for_selector("#live-links:not([hidden])")
        assert "1 of" in run_page.locator("#live-links").inner_text()
        fabric.wait_for_selector(f'#fabric-run[data-run="{run.pk}"]', state="attached")
        fabric.wait_for_selector(f'#hottest-links tr[data-link="{hot}"]', state="attached")
        screenshot(fabric, "fabric-demo-256-resynced")
        screenshot(run_page, "experiment-run-resynced")
        run_probe.assert_clean()
    finally:
        if not twin.daphne.alive:        # failed mid-outage: the next tests need the server
            twin.daphne.start()
        in_thread(cancelled_run, run)    # its final frame ends it on the live streams too
