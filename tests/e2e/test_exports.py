"""Downloads and the overview in a real browser (issue 25, items 7 and 9): a result table's CSV carries the table's
header, a chart's PNG is a PNG, the run page links to its results in the API, /api/schema/ shows as a page, and the
overview shows what runs on each cluster (simulations, jobs and the GPUs they hold), its jobs kept live."""
import csv
import io
import json

from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS

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
    header = table.locator("thead th").all_inner_texts()
    rows = table.locator("tbody tr").count()
    # then the table's CSV download has the table's header and one line per row
    bar = page.locator("#results .export-bar:has(+ table.nccl)")
    name, data = download(page, bar.locator("[data-export=csv]"))
    lines = list(csv.reader(io.StringIO(data.decode())))
    assert name.endswith(".csv") and lines[0] == [h.strip() for h in header], (lines[0], header)
    assert len(lines) == 1 + rows
    # and its JSON is one object per row keyed by that header
    name, data = download(page, bar.locator("[data-export=json]"))
    objects = json.loads(data)
    assert name.endswith(".json") and len(objects) == rows and list(objects[0]) == lines[0]
    # and a chart's PNG download is a PNG
    page.wait_for_selector("#results .chart[data-exportable=chart] svg", state="attached")
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
    try:
        response = page.goto("/api/schema/")
        # then it is a page drawing the schema (Swagger UI from local files), with downloads, not a file
        assert response.ok and response.headers["content-type"].startswith("text/html")
        page.wait_for_selector(".swagger-ui .information-container .title", timeout=30000)
        assert "Cluster twin API" in page.locator(".swagger-ui .title").first.inner_text()
        assert page.locator(".opblock").count() > 10
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
