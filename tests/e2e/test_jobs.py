"""The Jobs page in a real browser: a job submitted from its form appears in the queue and its state moves live
(queued or placing or simulating, then running: it holds its GPUs until released) without a reload; its placement, step breakdown and throughput are
drawn; the GPU page coloured by training job shows it on its GPUs; its run page names the calibration profile it ran
with (named in the form); a what-if runs the same job with another placement side by side."""
from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS, runs_held
from tests.e2e.test_live import fill_form

# Records every state each job row of the queue takes, from the page's first script on.
RECORD_STATES = """
window.__jobStates = {};
document.addEventListener("DOMContentLoaded", () => {
  const body = document.querySelector("#jobs-table tbody");
  if (!body) return;
  const record = () => body.querySelectorAll("tr[data-job]").forEach((tr) => {
    const seen = (window.__jobStates[tr.dataset.job] ??= []);
    if (seen[seen.length - 1] !== tr.dataset.state) seen.push(tr.dataset.state);
  });
  new MutationObserver(record).observe(body, { childList: true, subtree: true, attributes: true });
});
"""
JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M"}


def test_a_job_submitted_from_the_jobs_page_shows_its_live_state(admin, twin, orm):
    # given a calibration profile of demo-256 (docs/runs.md, "Calibration profiles"), one of whose parameters the
    # form fills with its default (qps 8)
    from twin.inventory.models import Cluster
    from twin.runs import actions
    actions.save_calibration(cluster=Cluster.objects.get(name="demo-256"), name="e2e-fitted",
                             values={"gemm_efficiency": 0.6, "qps": 4})
    # and the superuser on demo-256's Jobs page, every state of the queue's rows recorded
    admin.context.add_init_script(RECORD_STATES)
    page = admin.visit("/clusters/demo-256/jobs/", shot="jobs")
    origin = page.evaluate("performance.timeOrigin")
    # when they submit a small Llama 3 8B job from the form, naming the profile (under "more parameters")
    form = page.locator("form#job-form")
    fill_form(form, JOB)
    form.locator("details.more summary").click()
    fill_form(form, {"calibration": "e2e-fitted"})
    with runs_held(twin):           # its row is seen queued first, however fast a worker would take it
        form.locator("[type=submit]").click()
        page.wait_for_function("Object.values(window.__jobStates ?? {}).some((s) => s.includes('queued'))",
                               timeout=RUN_SECONDS * 1000, polling=100)
    # then its row appears and reaches "running" with its step simulated by itself, on the same page
    page.wait_for_function("[...window.twin.jobs.jobs.values()].some((j) => j.results && "
                           "document.querySelector(`#jobs-table tr[data-job='${j.id}'][data-state=running]`))",
                           timeout=RUN_SECONDS * 1000, polling=100)
    assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
    states = page.evaluate("window.__jobStates")
    job_id, seen = max(states.items(), key=lambda kv: int(kv[0]))
    assert seen[-1] == "running" and len(seen) >= 2, seen
    assert set(seen[:-1]) <= {"queued", "running", "placing", "simulating"}, seen
    # and the job is selected: its 64 GPUs drawn, its step's parts and its throughput charted
    detail = page.locator("#job-detail")
    page.wait_for_function("document.getElementById('job-detail').dataset.phase === 'running'")
    page.wait_for_function("document.getElementById('job-placement').dataset.gpus === '64'")   # fetched once placed
    assert int(detail.locator("#job-breakdown").get_attribute("data-bars")) >= 5   # compute, tp, cp, pp, dp, bubble
    assert int(page.locator("#job-throughput").get_attribute("data-points")) >= 1
    # and its pipeline schedule as simulated: one lane per stage (pp 2), every forward and backward drawn
    table = detail.locator("#job-pipeline canvas.pipeline-table")
    table.wait_for()
    assert table.get_attribute("data-stages") == "2" and int(table.get_attribute("data-ops")) >= 4
    assert "idle" in detail.locator("#job-pipeline .pipeline-legend").inner_text()
    # and the nearest published run (Llama 3 405B, Table 4) beside the job's TFLOPs/GPU and MFU, with its source
    published = detail.locator("#job-published .published-table tbody tr")
    assert published.count() == 2 and "S3" in published.first.inner_text()
    assert "nearest published case" in published.first.inner_text()
    screenshot(page, "jobs-finished")
    # and the GPU page coloured by training job shows the job on its GPUs
    gpus = admin.page.request.get(f"{twin.url}/api/runs/jobs/{job_id}/gpus/").json()["gpus"]
    admin.visit("/clusters/demo-256/gpus/?color=training")
    assert admin.twin_js("window.twin.gpuGrid.mode") == "training"
    assert admin.twin_js(f"window.twin.gpuGrid.jobOf({gpus[0]})") == int(job_id)
    assert "job #" in admin.page.locator("#gpu-legend").inner_text()
    screenshot(admin.page, "gpus-training-jobs")
    # and its run's page on Experiments draws the job's own result view (capabilities/jobs.js): the step's parts
    run_id = twin.api(f"/api/runs/jobs/{job_id}/")["run"]["id"]
    page = admin.visit(f"/experiments/{run_id}/")
    page.wait_for_selector("#results .job-breakdown-chart .uplot canvas", state="attached")
    assert page.locator(f"#results a[href$='/jobs/?job={job_id}']").count() == 1
    # and the profile it ran with, with the values it applied: the form left its defaults out for the profile's
    assert page.locator("#run-facts dt:has-text('calibration')").count() == 1
    assert page.locator("#run-calibration").inner_text().split() == ["e2e-fitted:", "gemm_efficiency", "0.6,", "qps",
                                                                     "4"]


def test_a_what_if_runs_the_same_job_with_another_placement_side_by_side(admin, twin):
    page = admin.visit("/clusters/demo-256/jobs/")
    form = page.locator("form#job-form")
    fill_form(form, {**JOB, "whatif-axis": "placement", "whatif-values": "random"})
    form.locator("[type=submit]").click()
    page.wait_for_function("document.querySelectorAll('#whatif-table tbody tr[data-status=succeeded]').length === 2",
                           timeout=RUN_SECONDS * 1000, polling=200)
    rows = page.locator("#whatif-table tbody tr")
    assert [rows.nth(i).locator("td").first.inner_text() for i in range(2)] == ["as given", "placement random"]
    # and the jobs list, with the what-if's long name among its rows, fits its panel without scrolling sideways
    page.wait_for_selector("#jobs-table tbody td:has-text('what-if')")
    widths = page.evaluate("(() => { const s = document.querySelector('#jobs-table').closest('.table-scroll');"
                           " return [s.scrollWidth, s.clientWidth]; })()")
    assert widths[0] <= widths[1] + 1, widths
