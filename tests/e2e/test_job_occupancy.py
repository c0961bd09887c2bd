"""Occupancy on the Jobs page in a real browser (issue 25, item 2): a job and its what-if submitted from the form;
the page counts the GPUs held by running jobs only (the what-if, named for what it varies, holds none); the job's
release button ends it, the count drops, and the GPU page coloured by training job, open beside it, stops showing
the job's GPUs without a reload."""
from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS, Visitor
from tests.e2e.test_live import fill_form

JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M"}
HELD = "Number(document.getElementById('jobs-summary').dataset.held ?? -1)"


def test_the_jobs_page_counts_running_jobs_only_and_releases_one(admin, twin, browser, admin_state):
    # given the superuser on demo-256's Jobs page, what running jobs already hold counted
    page = admin.visit("/clusters/demo-256/jobs/", shot="jobs-occupancy-before")
    page.wait_for_function(f"{HELD} >= 0")
    before = page.evaluate(HELD)
    # when they submit a 64-GPU job with a what-if on another placement
    form = page.locator("form#job-form")
    fill_form(form, JOB)
    form.locator("select[name=whatif-axis]").select_option("placement")
    form.locator("input[name=whatif-values]").fill("random")
    form.locator("[type=submit]").click()
    # then both runs end, side by side
    page.wait_for_function("document.querySelectorAll('#whatif-table tr[data-status=succeeded]').length === 2",
                           timeout=RUN_SECONDS * 1000, polling=200)
    jobs = twin.api("/api/runs/jobs/?cluster__name=demo-256&ordering=-id&limit=2")["results"]
    whatif, job = jobs[0], jobs[1]
    assert whatif["name"] == f"{job['name']} (what-if: placement random)", whatif["name"]
    assert whatif["whatif_of"]["id"] == job["id"] and not whatif["holds_gpus"] and job["holds_gpus"]
    # and the page counts the job's 64 GPUs, not the what-if's: it is finished, with no release button
    page.wait_for_function(f"{HELD} === {before + 64}")
    assert "held by" in page.locator("#jobs-summary").inner_text()
    page.wait_for_selector(f"#jobs-table tr[data-job='{whatif['id']}'][data-state=finished]")
    assert page.locator(f"#jobs-table tr[data-job='{whatif['id']}'] button[data-release]").count() == 0
    assert "(what-if: placement random)" in page.locator(f"#jobs-table tr[data-job='{whatif['id']}']").inner_text()
    screenshot(page, "jobs-occupancy-held")
    # and the GPU page coloured by training job, open beside it, shows the job on its GPUs
    gpus = twin.api(f"/api/runs/jobs/{job['id']}/gpus/")["gpus"]
    watcher = Visitor(browser, twin.url, storage_state=admin_state)
    try:
        watcher.visit("/clusters/demo-256/gpus/?color=training")
        assert watcher.twin_js("window.twin.gpuGrid.mode") == "training"
        assert watcher.twin_js(f"window.twin.gpuGrid.jobOf({gpus[0]})") == job["id"]
        # when they release the job from its row
        page.locator(f"#jobs-table button[data-release='{job['id']}']").click()
        # then it is finished, the count drops by its 64 GPUs
        page.wait_for_selector(f"#jobs-table tr[data-job='{job['id']}'][data-state=finished]")
        page.wait_for_function(f"{HELD} === {before}")
        assert page.locator(f"#jobs-table button[data-release='{job['id']}']").count() == 0
        screenshot(page, "jobs-occupancy-released")
        # and the GPU page, without a reload, no longer shows the job on any of its GPUs
        watcher.page.wait_for_function(f"[{','.join(map(str, gpus))}].every((g) => "
                                       f"window.twin.gpuGrid.jobOf(g) !== {job['id']})", timeout=15_000)
        screenshot(watcher.page, "gpus-training-released")
        # nor after one (what runs where, read again)
        watcher.visit("/clusters/demo-256/gpus/?color=training")
        assert watcher.twin_js(f"[{','.join(map(str, gpus))}].some((g) => "
                               f"window.twin.gpuGrid.jobOf(g) === {job['id']})") is False
    finally:
        watcher.close()
    assert twin.api(f"/api/runs/jobs/occupancy/?cluster={job['cluster']['id']}")["held_gpus"] == before
