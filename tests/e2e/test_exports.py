"""Downloads and the overview in a real browser (issue 25, items 7 and 9): a result table's CSV opens in pandas with
numbers in the units its column names say and the run's metadata (issue 40, item 7), a chart's PNG is a PNG, the run page links to its results in the API, /api/schema/ shows as a page, and the
overview shows what runs on each cluster (simulations, jobs and the GPUs they hold), its jobs kept live."""
import io
import json

import pandas as pd

from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS
from tests.processes import wait_for

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def download(page, button) -> tuple[str, bytes]:
    """Click a download button; the file's suggested name and its bytes."""
    with page.expect_download() as info:
        button.click()
    d = info.value
    return d.suggested_filename, open(d.path(), "rb").read()


def test_a_run_s_tables_and_charts_download_and_its_page_links_to_its_results(admin, twin):
    # given a finished collective run on demo-256
    run_id = twin.start_run("demo-256", collective="allreduce", gpus=64, sizes="1M:16M")
    twin.wait_run(run_id)
    # when its page is open
    page = admin.visit(f"/experiments/{run_id}/")
    page.wait_for_selector("#results table.nccl[data-exportable=table]", state="attached")
    table = page.locator("#results table.nccl")
    header = table.locator("tbody tr").all_inner_texts()
    rows = len(header)
    # then the table's CSV download opens in pandas as it is: one row per table row, numbers in the unit their
    # column's name says (the size in bytes, the bus bandwidth in GB/s), the run and the twin's version beside them
    bar = page.locator("#results .export-bar:has(+ table.nccl)")
    name, data = download(page, bar.locator("[data-export=csv]"))
    df = pd.read_csv(io.BytesIO(data))
    assert name.endswith(".csv") and len(df) == rows == len(header) and len(df) > 0
    assert {"size_bytes", "busbw_GBps"} <= set(df.columns), list(df.columns)
    assert df["size_bytes"].dtype.kind == "i" and df["busbw_GBps"].dtype.kind == "f"
    results = twin.api(f"/api/runs/{run_id}/")["summary"]
    assert sorted(df["size_bytes"]) == sorted(r["size"] for r in results["rows"])
    assert set(df["run_id"]) == {run_id} and set(df["cluster"]) == {"demo-256"} and df["twin_version"].notna().all()
    exported = pd.to_datetime(df["exported_utc"])
    assert str(exported.dt.tz) == "UTC"
    assert json.loads(df["run_params"][0])["gpus"] == 64
    # and its JSON has the same columns with their units, the run's parameters and version in its metadata
    name, data = download(page, bar.locator("[data-export=json]"))
    doc = json.loads(data)
    assert name.endswith(".json") and len(doc["rows"]) == len(df)
    table_columns = [c["name"] for c in doc["columns"]]
    assert table_columns == [c for c in df.columns if c not in doc["metadata"]], (table_columns, list(df.columns))
    assert {c["name"]: c["unit"] for c in doc["columns"]}["busbw_GBps"] == "GBps"
    assert doc["metadata"]["run_id"] == run_id and doc["metadata"]["run_params"]["gpus"] == 64
    assert doc["rows"][0]["busbw_GBps"] == df["busbw_GBps"][0]
    # and a chart's PNG download is a PNG
    page.wait_for_selector("#results .chart[data-exportable=chart] .uplot canvas", state="attached")
    chart_bar = page.locator("#results .export-bar[data-kind=chart]").first
    name, data = download(page, chart_bar.locator("[data-export=png]"))
    assert name.endswith(".png") and data[:8] == PNG_MAGIC and len(data) > 1000
    screenshot(page, "run-downloads")
    # and the page links to the run's results in the API, which answer
    link = page.locator("#run-results-api")
    assert link.get_attribute("href") == f"/api/runs/{run_id}/results/"
    answer = page.request.get(f"{twin.url}/api/runs/{run_id}/results/?format=json")
    assert answer.ok and answer.json()["id"] == run_id


def test_the_api_schema_shows_in_the_browser(admin, twin):
    # when a user opens /api/schema/ in the browser
    page = admin.context.new_page()
    # (Swagger UI's own page draws only the first tags' operations in an 800 px tall window until scrolled by a
    # person: this test is about the page being drawn, so it looks through a taller window)
    page.set_viewport_size({"width": 1280, "height": 1600})
    try:
        response = page.goto("/api/schema/")
        # then it is a page drawing the schema (Swagger UI from local files), with downloads, not a file
        assert response.ok and response.headers["content-type"].startswith("text/html")
        page.wait_for_selector(".swagger-ui .information-container .title", timeout=30000)
        assert "Cluster twin API" in page.locator(".swagger-ui .title").first.inner_text()
        wait_for(lambda: page.locator(".opblock").count() > 10, what="the schema's operations drawn")
        name, data = download(page, page.locator("#schema-downloads a", has_text="YAML"))
        assert name.endswith(".yaml") and data.startswith(b"openapi:")
        screenshot(page, "api-schema")
    finally:
        page.close()


def test_the_overview_shows_what_runs_on_each_cluster(admin, twin, orm):
    from twin.inventory.models import Cluster
    from twin.runs.models import Job, SimulationRun

    demo = Cluster.objects.get(name="demo-256")
    # given a running simulation and a running job of 64 GPUs on demo-256
    running = SimulationRun.objects.create(kind="collective", cluster=demo, params={}, status="running", progress=40)
    jobs = [Job.objects.create(name="e2e-overview", cluster=demo, state="running", n_gpus=64)]
    try:
        # when the overview is open
        page = admin.visit("/", shot="overview-activity")
        card = page.locator(".cluster-card[data-cluster=demo-256]")
        # then the card shows the simulation (linked) and the job with the GPUs it holds
        assert card.locator(f"ul.runs a[href='/experiments/{running.id}/']").count() == 1
        activity = card.locator(".activity")
        assert activity.get_attribute("data-jobs") == "1" and activity.get_attribute("data-gpus-held") == "64"
        assert "64" in activity.locator(".gpus-held").inner_text()
        # and when another job starts running and a run goes through the cluster, the card follows without a reload
        jobs.append(Job.objects.create(name="e2e-overview-2", cluster=demo, state="running", n_gpus=32))
        origin = page.evaluate("performance.timeOrigin")
        run_id = twin.start_run("demo-256", collective="allgather", gpus=16, sizes="1M")
        page.wait_for_function(
            "document.querySelector('.cluster-card[data-cluster=\"demo-256\"] .activity').dataset.gpusHeld === '96'",
            timeout=RUN_SECONDS * 1000, polling=200)
        assert page.evaluate("performance.timeOrigin") == origin
        twin.wait_run(run_id)
        screenshot(page, "overview-activity-live")
    finally:
        Job.objects.filter(pk__in=[j.pk for j in jobs]).delete()
        SimulationRun.objects.filter(pk=running.pk).delete()
