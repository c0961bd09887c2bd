"""The Reliability page in a real browser: a Monte Carlo started from its form fans out on the worker, follows live
and ends with its timeline (state bands, failures, lost work), its losses by cause and phase and its distribution
over seeds drawn; the replay moves over the timeline, and the GPU page marks the failed parts at the replay's hour."""
from xml.etree import ElementTree

from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS
from tests.e2e.test_exports import download
from tests.e2e.test_live import fill_form

SVG = "{http://www.w3.org/2000/svg}"

# A small job that fails often (Llama 3 8B on 64 GPUs of demo-256, three days, every rate x 40), over 12 seeds:
# two child runs (TWIN_FAILURES_SEEDS_PER_CHILD is 10).
RUN = {"gpus": 64, "days": 3, "checkpoint_interval": "1h", "seeds": 12, "model": "llama3-8b", "tp": 8, "pp": 2,
       "rate_scale": 40}


def test_a_failures_run_from_the_form_draws_its_timeline_and_replays_on_the_gpu_page(admin, twin):
    page = admin.visit("/clusters/demo-256/reliability/", shot="reliability")
    form = page.locator("form#failures-form")
    page.locator("form#failures-form details.more summary").click()
    fill_form(form, RUN)
    with page.expect_response(lambda r: r.url.endswith("/api/runs/") and r.request.method == "POST") as answer:
        form.locator("[type=submit]").click()
    assert answer.value.status == 201, answer.value.text()
    run_id = answer.value.json()["id"]
    # then that run (not an earlier one the page showed) is selected and ends succeeded by itself, on the same page
    page.wait_for_selector(f'#rel-detail[data-run="{run_id}"][data-status="succeeded"]', state="attached",
                           timeout=RUN_SECONDS * 1000)
    run = twin.api(f"/api/runs/{run_id}/")
    assert run["summary"]["children"] == 2 and len(run["summary"]["per_seed"]) == 12
    # and its timeline, failures, losses and seeds are drawn from the merged summary
    tl = page.locator("#rel-timeline")
    page.wait_for_selector("#rel-timeline svg", state="attached")
    assert int(tl.get_attribute("data-segments")) >= 3
    assert int(tl.get_attribute("data-marks")) == len(run["summary"]["replay"]["events"]) > 0
    # and the timeline (an SVG) downloads as SVG with its title band: what it is, the cluster, the run
    name, data = download(page, page.locator(".export-bar[data-export-for=rel-timeline] [data-export=svg]"))
    texts = {}
    for t in ElementTree.fromstring(data).iter(f"{SVG}text"):
        texts[t.get("class")] = f"{texts.get(t.get('class'), '')} {t.text}".strip()
    assert name.endswith(".svg") and texts["export-title"], texts
    assert "cluster demo-256" in texts["export-detail"] and f"run #{run_id}" in texts["export-detail"], texts
    assert int(page.locator("#rel-causes").get_attribute("data-bars")) >= 1
    assert int(page.locator("#rel-phases").get_attribute("data-bars")) >= 3
    assert page.locator("#rel-seeds").get_attribute("data-seeds") == "12"
    # and Meta's published record is drawn beside the simulated figures, with its source
    rows = page.locator("#rel-published table.published-table tbody tr")
    assert rows.count() == len(run["summary"]["published"]) == 3
    assert "S3" in page.locator("#rel-published").inner_text()
    assert page.locator("#rel-events tbody tr:not(.none)").count() == len(run["summary"]["replay"]["events"])
    assert admin.twin_js("window.twin.reliabilityFrames ?? 0") > 0, "no live frame of the run reached the page"
    screenshot(page, "reliability-finished")
    # when the replay goes to the hour of the first failure that took a GPU down
    doc = twin.api(f"/clusters/demo-256/reliability/failed.json?run={run_id}")
    hit = next(e for e in doc["events"] if e["gpus"] and e["consequence"] in ("crash", "degrade"))
    hours = run["summary"]["replay"]["wall_s"] / 3600
    page.eval_on_selector("#replay-time", "(e, v) => { e.value = v; e.dispatchEvent(new Event('input')); }",
                          str(round(1000 * (hit["t_hours"] + 0.01) / hours)))
    assert page.locator("#replay-at").get_attribute("data-state") in ("down", "restarting", "degraded")
    # then the GPU page, opened from it, shows that GPU down at that hour, and none at the run's start
    admin.visit(page.locator("#replay-gpus").get_attribute("href"))
    assert admin.twin_js("window.twin.gpuGrid.mode") == "failures"
    assert admin.twin_js(f"window.twin.failureReplay.downOf({hit['gpus'][0]})") == 1
    assert "failures so far" in admin.page.locator("#gpu-legend").inner_text()
    screenshot(admin.page, "gpus-failures-replay")
    admin.twin_js("window.twin.failureReplay.at(0)")
    assert admin.twin_js(f"window.twin.failureReplay.downOf({hit['gpus'][0]})") == 0
    # and the run's page on Experiments draws the failures result view (capabilities/failures.js)
    page = admin.visit(f"/experiments/{run_id}/")
    assert "mean time lost per phase" in page.locator("#results").inner_text().lower()   # (h3: upper case in CSS)
    assert page.locator("#results a[href*='/reliability/?run=']").count() == 1
