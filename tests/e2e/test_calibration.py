"""The Calibration page in a real browser: a measurements file (two job step times the twin gives on demo-256 with
gemm_efficiency 0.6) uploaded into the form starts a calibrate run, whose progress ends live in the runs table; its
result is drawn (predicted against measured, the fitted parameters) and saved as a calibration profile, which the
API then lists; the run's page draws the same view."""
import json

from sim.fabric.topology import load_topology
from sim.jobs.entry import run_job
from sim.jobs.params import JOB
from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS

TRUE_GEMM = 0.6
JOBS = [dict(model="llama3-8b", gpus=64, tp=8, batch_tokens="1M"),
        dict(model="llama3-8b", gpus=32, tp=8, seq=4096, batch_tokens="512K")]


def test_a_measurements_file_uploaded_is_fitted_drawn_and_saved_as_a_profile(admin, twin, tmp_path):
    topo = load_topology("demo-256")[1]
    entries = [{"kind": "job", "name": f"j{i}", "params": p,
                "step_time_s": run_job(topo, JOB.validate({**p, "gemm_efficiency": TRUE_GEMM})).result.step_time}
               for i, p in enumerate(JOBS)]
    path = tmp_path / "measured.json"
    path.write_text(json.dumps({"entry": entries}))
    # given the Calibration page of demo-256; when the file is uploaded into the form and gemm_efficiency named
    page = admin.visit("/clusters/demo-256/calibration/", shot="calibration")
    form = page.locator("form#calibrate-form")
    form.locator('input[data-load-into="measurements"]').set_input_files(str(path))
    page.wait_for_function("document.querySelector('#calibrate-form [name=measurements]').value.includes('j1')")
    form.locator('[name="fit"]').fill("gemm_efficiency")
    run_id = _submit_and_wait_drawn(page, form)
    # then the run ends succeeded on the same page, its progress bar at the end, and its result is drawn
    row = page.locator(f'#cal-runs tr[data-run="{run_id}"]')
    assert row.locator(".progress").get_attribute("data-progress") == "100"
    assert "succeeded" in row.inner_text()
    run = twin.api(f"/api/runs/{run_id}/")
    fitted = run["summary"]["parameters"]["gemm_efficiency"]
    scatter = page.locator("#cal-scatter")
    assert scatter.get_attribute("data-series") == "3"                # 1:1, before, after
    assert scatter.evaluate("(el) => el.chart.points().length") == 2 * len(JOBS)
    cells = page.locator('#cal-parameters tr[data-param="gemm_efficiency"] td')
    assert float(cells.nth(1).inner_text()) == float(f"{fitted['value']:.4g}")
    assert page.locator("#cal-entries tbody tr").count() == len(JOBS)
    assert int(page.locator("#cal-residuals").get_attribute("data-bars")) >= 4  # all and job, before and after
    # the held-out error (two observations: leave-one-out) is said, beside the error at the start
    held = run["summary"]["holdout"]
    assert held["method"] == "leave-one-out" and held["count"] == len(JOBS)
    assert "leave-one-out" in page.locator("#cal-holdout").inner_text()
    assert "jacobian rank 1 of 1" in " ".join(page.locator("#cal-detail").text_content().lower().split())
    screenshot(page, "calibration-finished")
    # when it is saved as a profile
    save = page.locator("form#cal-save")
    save.locator('[name="name"]').fill(f"fitted-{run_id}")
    save.locator("[type=submit]").click()
    page.wait_for_selector("#cal-saved a", timeout=10_000)
    # then the API lists it with the fitted value, its interval and the before/after summaries
    found = twin.api(f"/api/calibrations/?cluster__name=demo-256&name=fitted-{run_id}")["results"]
    assert len(found) == 1
    profile = found[0]
    assert profile["values"] == {"gemm_efficiency": fitted["value"]}
    assert profile["intervals"]["gemm_efficiency"] == [fitted["low"], fitted["high"]]
    assert profile["summary"]["after"] == run["summary"]["after"] and profile["summary"]["run"] == run_id
    assert profile["holdout"] == held and profile["refused"] == run["summary"]["refused"] == []
    # and the run's own page draws the same view
    page = admin.visit(f"/experiments/{run_id}/")
    page.wait_for_selector("#results #cal-scatter .uplot canvas", state="attached")
    assert page.locator('#results #cal-parameters tr[data-param="gemm_efficiency"]').count() == 1


def test_raw_nccl_tests_logs_uploaded_together_are_calibrated(admin, twin, tmp_path):
    """Two raw logs chosen at once go into the measurements field one after the other; the hosts they ran on are
    asked for by the form's own field (the engine's declaration); the run takes each log as its own collective."""
    from tests.sim.nccl_logs import log
    a, b = tmp_path / "ar.log", tmp_path / "ag.log"
    a.write_text(log("all_reduce_perf"))
    b.write_text(log("all_gather_perf", layout="noroot"))
    page = admin.visit("/clusters/demo-256/calibration/")
    form = page.locator("form#calibrate-form")
    form.locator('input[data-load-into="measurements"]').set_input_files([str(a), str(b)])
    page.wait_for_function("document.querySelector('#calibrate-form [name=measurements]').value"
                           ".includes('all_gather_perf')")
    form.locator('[name="hosts"]').fill("demo-256.z00.r000.h0 slots=8\ndemo-256.z00.r001.h0 slots=8\n")
    form.locator('[name="fit"]').fill("base_rtt_us")
    run_id = _submit_and_wait_drawn(page, form)
    names = {e["name"] for e in twin.api(f"/api/runs/{run_id}/")["summary"]["entries"]}
    assert names == {"all_reduce_perf line 1", f"all_gather_perf line {len(log('all_reduce_perf').splitlines()) + 1}"}


def _submit_and_wait_drawn(page, form) -> int:
    """Submit the calibration form, check the API took the run (201), and wait until the page draws its result."""
    with page.expect_response(lambda r: r.url.endswith("/api/runs/") and r.request.method == "POST") as answer:
        form.locator("[type=submit]").click()
    assert answer.value.status == 201, answer.value.text()
    run_id = answer.value.json()["id"]
    page.wait_for_selector(f'#cal-detail[data-drawn="{run_id}"]', state="attached", timeout=RUN_SECONDS * 1000)
    return run_id
