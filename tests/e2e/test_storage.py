"""The Storage page in a real browser: a finished checkpoint (a real run on the worker) draws its timeline against
the rated bandwidth and replays its per-server rates on the server grid; a running checkpoint's frames (the real
publisher on the real Redis) colour the grid and the frontend heatmaps and say its phase, live; the GPU page colours
the job's hosts by checkpoint progress; meta-roce-24k's full storage is drawn."""
import numpy as np

from tests.e2e.browser import screenshot
from tests.e2e.conftest import in_thread
from tests.e2e.test_live import wait_live

# The colour of a server's cell on the grid canvas ("#rrggbb"), found through the page's own layout.
SERVER_COLOUR = """(i) => {
  const canvas = document.getElementById("server-grid"), c = window.twin.storageGrid.cell(i);
  const [r, g, b] = canvas.getContext("2d").getImageData(c.x + 2, c.y + 2, 1, 1).data;
  return "#" + [r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("");
}"""
NONE_COLOUR = "#262b36"          # COLORS.none of twin.js: a server without data


def test_a_finished_checkpoint_draws_its_timeline_and_replays_its_servers(visitor, twin):
    # given a checkpoint of 64 GPUs x 256 MiB to demo-256's tectonic, run by the worker
    run = twin.wait_run(twin.api("/api/runs/", {"kind": "checkpoint", "cluster": "demo-256", "params": {
        "gpus": 64, "bytes_per_gpu": "256M", "store": "tectonic", "mode": "async"}})["id"])
    servers = twin.api("/clusters/demo-256/storage.json")["servers"]
    # when the Storage page opens
    page = visitor.visit("/clusters/demo-256/storage/")
    # then it draws every server, the timeline of that run with the rated lines, and lists the run
    assert page.locator("#server-grid").get_attribute("data-cells") == str(servers["count"])
    page.wait_for_selector(f'#checkpoint-runs tr[data-run="{run["id"]}"].selected', state="attached")
    page.wait_for_selector("#timeline .uplot canvas", state="attached")
    assert int(page.locator("#timeline").get_attribute("data-series")) >= 2
    # (its GPU -> host copies reach 1.6 TB/s, 8 hosts' memory copies: the rated lines are on the chart's scale)
    assert "rated sustained 2 TB/s" in page.locator("#timeline .chart-desc").inner_text()
    lo, hi = page.eval_on_selector("#timeline", "(el) => el.chart.yRange()")
    assert lo <= 2.0 <= hi, (lo, hi)
    assert "blocked" in page.locator("#phase-bar").inner_text()
    # and the published figures beside the simulated ones (Tectonic's 7 TB/s peak, 2 TB/s sustained [S1, S3])
    page.wait_for_selector('#published table.published-table tr[data-key="tectonic-peak"]', state="attached")
    assert "S1, S3" in page.locator("#published").inner_text()
    # and the grid shows the busiest sample: tectonic servers busy, hammerspace's idle
    page.wait_for_selector("#scrub-label:not([hidden])", state="attached")
    tectonic = [i for i, k in enumerate(servers["store"]) if k == 0]
    other = [i for i, k in enumerate(servers["store"]) if k != 0]
    assert page.evaluate(SERVER_COLOUR, tectonic[0]) != NONE_COLOUR
    assert page.evaluate(SERVER_COLOUR, other[0]) not in (NONE_COLOUR, page.evaluate(SERVER_COLOUR, tectonic[0]))
    screenshot(page, "storage-demo-256-finished")
    # and the run's own page draws the same timeline, with its bottlenecks
    run_page = visitor.visit(f"/experiments/{run['id']}/")
    run_page.wait_for_selector("#results .timeline .uplot canvas", state="attached")
    assert "blocked" in run_page.locator("#results .phase-bar").inner_text()
    assert run_page.locator("#results table.data tbody tr").count() >= 2
    screenshot(run_page, "experiment-checkpoint")


def test_a_running_checkpoint_is_shown_live_on_the_storage_and_gpu_pages(visitor, twin, orm):
    from twin.inventory.models import Cluster, Host, Link
    from twin.capabilities.storage import live as storage_live
    from twin.live.publish import RunPublisher
    from twin.runs.actions import cancelled_run
    from twin.runs.models import SimulationRun
    from twin.runs.params import validate_params

    demo = Cluster.objects.get(name="demo-256")
    run = SimulationRun.objects.create(kind="checkpoint", cluster=demo, status="running", progress=40.0,
                                       params=validate_params("checkpoint", {"gpus": 64}, demo))
    servers = twin.api("/clusters/demo-256/storage.json")["servers"]
    hosts = Host.objects.filter(cluster=demo).count()
    n_front = Link.objects.filter(cluster=demo, fabric__role=1).count()
    try:
        # given the Storage page and the GPU page coloured by checkpoint progress, both live
        page = visitor.visit("/clusters/demo-256/storage/")
        gpus = visitor.context.new_page()
        gpus.goto("/clusters/demo-256/gpus/?color=checkpoint")
        gpus.wait_for_selector('body[data-ready="1"]', state="attached")
        for p in (page, gpus):
            wait_live(p)
        # when the run publishes its state: uploading, server 3 at 10 GB/s, 8 hosts half done, a hot frontend link
        rate = np.zeros(servers["count"], np.float32)
        rate[3] = 10.0
        share = np.full(hosts, np.nan)
        share[:8] = 0.5
        util = np.zeros(n_front, np.float32)
        util[n_front // 2] = 0.9
        in_thread(lambda: RunPublisher(run).progress(
            40.0, server_write=rate, host_progress=storage_live.quantize_progress(share), frontend_util=util,
            checkpoint_phase="uploading", force=True))
        # then the Storage page says the run is uploading and colours server 3 (and not server 4)
        page.wait_for_selector(f'#storage-run[data-run="{run.pk}"][data-phase="uploading"]', state="attached")
        assert page.evaluate(SERVER_COLOUR, 3) != NONE_COLOUR
        assert page.evaluate(SERVER_COLOUR, 4) != page.evaluate(SERVER_COLOUR, 3)
        assert page.evaluate("window.twin.storageGrid.hot()") == 3
        screenshot(page, "storage-demo-256-running")
        # and the GPU page counts the 8 hosts' GPUs in the checkpoint
        gpus.wait_for_selector('#gpu-legend [data-checkpoint="64"]', state="attached")
        screenshot(gpus, "gpus-demo-256-checkpoint")
        gpus.close()
    finally:
        in_thread(cancelled_run, run)


def test_the_storage_page_draws_meta_roce_24k_s_full_storage(visitor, twin):
    servers = twin.api("/clusters/meta-roce-24k/storage.json")["servers"]["count"]
    page = visitor.visit("/clusters/meta-roce-24k/storage/", shot="storage-meta-roce-24k")
    assert page.locator("#server-grid").get_attribute("data-cells") == str(servers) == "3790"
    assert page.locator("#heatmaps canvas.heatmap").count() == 3
