"""The Power page in a real browser: a power run started from its form runs on the worker, follows live and ends
with its waveform over a step (per building), its days under failures, its racks against the budget, the cap
trade-off curve and the published references drawn; the GPU page, open before the run, colours every GPU by its
draw from the live section, and opened on the run colours by rack budget headroom from the stored array; the run's
page on Experiments draws the same view."""
from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS
from tests.e2e.test_live import fill_form

# Llama 3 8B on 64 GPUs of demo-256 (tp 8, pp 2, dp 4), a cap sweep, half a day under failures, a 15 kW rack budget
# (its job's racks draw more)
RUN = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "batch_tokens": "1M", "cap_sweep": "400,500,700",
       "rack_budget_kw": 15, "days": 0.5, "failures": True}


def test_a_power_run_from_the_form_draws_its_page_and_colours_the_gpu_page(admin, twin, browser):
    # given the GPU page coloured by power, open in a second tab before the run starts
    from tests.e2e.conftest import Visitor
    gpus = Visitor(browser, twin.url)
    try:
        gpage = gpus.visit("/clusters/demo-256/gpus/?color=power")
        assert gpus.twin_js("window.twin.gpuGrid.mode") == "power"
        options = gpage.eval_on_selector_all("#gpu-color-mode option", "els => els.map(e => e.value)")
        assert "power" in options and "rack_headroom" in options
        # when the admin starts a power run from the Power page's form
        page = admin.visit("/clusters/demo-256/power/", shot="power")
        form = page.locator("form#power-form")
        page.locator("form#power-form details.more summary").click()
        fill_form(form, RUN)
        with page.expect_response(lambda r: r.url.endswith("/api/runs/") and r.request.method == "POST") as answer:
            form.locator("[type=submit]").click()
        assert answer.value.status == 201, answer.value.text()
        run_id = answer.value.json()["id"]
        # then it is selected and ends succeeded by itself, its figures drawn
        page.wait_for_selector(f'#power-detail[data-run="{run_id}"][data-status="succeeded"]', state="attached",
                               timeout=RUN_SECONDS * 1000)
        page.wait_for_selector('#power-result[data-drawn="1"]', state="attached")
        s = twin.api(f"/api/runs/{run_id}/")["summary"]
        step = page.locator("#power-result .power-step")
        assert step.get_attribute("data-series") == str(2 + len(s["buildings"]))       # cluster, buildings, job
        assert int(step.get_attribute("data-bins")) == s["stored_bins"] > 0
        assert page.locator("#power-result .power-stage-lines").get_attribute("data-series") == str(s["layout"]["pp"])
        assert page.locator("#power-result .power-days").get_attribute("data-series") == "1"
        assert page.locator("#power-result .power-racks-chart").get_attribute("data-series") == "2"
        assert page.locator("#power-result .power-sweep-step").get_attribute("data-series") == "1"
        assert page.locator("#power-result .power-sweep-energy").get_attribute("data-series") == "1"
        worst = page.locator("#power-result table.power-racks tbody tr")
        assert worst.count() == len(s["racks"]["worst"]) > 0
        assert s["racks"]["over_budget"] > 0 and "bad" in (worst.first.locator("td").nth(4).get_attribute("class"))
        rows = page.locator("#power-result table.published-table tbody tr")
        assert rows.count() == len(s["published"]) == 2
        assert "S3" in page.locator("#power-result table.published-table").inner_text()
        # and the live indicator shows the run's figures from its last frame
        page.wait_for_selector(f'#power-live[data-run="{run_id}"][data-phase="done"]', state="attached")
        screenshot(page, "power-finished")
        # and the GPU page, open all along, took the live gpu_power section: the job's GPUs above idle
        gpage.wait_for_function(f"window.twin.gpuGrid.powerOf(0) !== null")
        arrays = twin.api(f"/api/runs/{run_id}/results/?names=gpu_power,rack_power")["arrays"]
        want = arrays["gpu_power"]["data"]
        for i in (0, 63, 200, 255):
            assert gpus.twin_js(f"window.twin.gpuGrid.powerOf({i})") == want[i]
        screenshot(gpage, "gpus-power")
    finally:
        gpus.close()
    # when the GPU page is opened on the finished run by its rack-headroom link
    page.locator("#power-headroom").click()
    page.wait_for_url("**/gpus/**color=rack_headroom**")
    admin.wait_ready()
    # then each GPU carries its rack's peak against the budget from the stored array, and the legend counts the
    # GPUs in racks over it
    assert admin.twin_js("window.twin.gpuGrid.mode") == "rack_headroom"
    rack = arrays["rack_power"]["data"]
    assert [admin.twin_js(f"window.twin.gpuGrid.rack_headroomOf({i})") for i in (0, 255)] == [rack[0], rack[255]]
    over = sum(1 for v in rack if v > 200)
    assert page.locator("#gpu-legend [data-power-over]").get_attribute("data-power-over") == str(over) and over > 0
    screenshot(page, "gpus-rack-headroom")
    # and the run's page on Experiments draws the power view
    page = admin.visit(f"/experiments/{run_id}/")
    page.wait_for_selector('#results[data-drawn="1"]', state="attached")
    assert page.locator("#results .power-step").get_attribute("data-series") == str(2 + len(s["buildings"]))


def test_a_power_schedule_is_drawn_below_on_the_power_page(admin, twin):
    # given a power schedule of 20 jobs over 2 days, run by the worker
    run = twin.api("/api/runs/", {"kind": "power_schedule", "cluster": "demo-256",
                                  "params": {"arrivals": 20, "days": 2}})
    s = twin.wait_run(run["id"])["summary"]
    # when the Power page is opened on it
    page = admin.visit(f"/clusters/demo-256/power/?schedule={run['id']}")
    # then its draw over time and its jobs are drawn below the power runs
    page.wait_for_selector(f'#schedule-detail[data-run="{run["id"]}"][data-status="succeeded"]', state="attached")
    page.wait_for_selector('#schedule-result[data-drawn="1"]', state="attached")
    assert page.locator("#schedule-result .power-schedule").get_attribute("data-series") == "1"
    assert page.locator("#schedule-result table.power-schedule-jobs tbody tr").count() == min(20, s["jobs_run"])
    assert page.locator(f'#schedule-runs tr[data-run="{run["id"]}"]').count() == 1
    screenshot(page, "power-schedule")
