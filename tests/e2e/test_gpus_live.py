"""The GPU grid follows the inventory without a reload: a GPU failed through the REST API turns red on an open page
(the cluster stream's inventory event makes it re-read the statuses), and back when it is active again."""
import json
import urllib.request

from tests.e2e.browser import screenshot
from tests.e2e.test_live import wait_live
from tests.e2e.test_pages import FAILED_COLOUR

EVENT_SECONDS = 15           # an inventory change to the page: one event, one status read, one draw

# The colour of a GPU's cell on the canvas ("#rrggbb"), found through the page's own layout (window.twin.gpuGrid).
CELL_COLOUR = """(i) => {
  const canvas = document.getElementById("gpu-grid"), c = window.twin.gpuGrid.cellCenter(i);
  const dpr = canvas.width / canvas.getBoundingClientRect().width;
  const [r, g, b] = canvas.getContext("2d").getImageData(Math.floor(c.x * dpr), Math.floor(c.y * dpr), 1, 1).data;
  return "#" + [r, g, b].map((v) => v.toString(16).padStart(2, "0")).join("");
}"""
FAILED_COUNT = """() => document.querySelector('#gpu-legend [data-health="failed"] b')?.textContent"""


def patch(twin, path: str, body: dict) -> dict:
    """PATCH the REST API on the running server as the superuser (token auth)."""
    req = urllib.request.Request(twin.url + path, data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Authorization": f"Token {twin.token}",
                                          "Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_the_gpu_grid_shows_a_gpu_failed_through_the_api_without_a_reload(visitor, twin, orm):
    from twin.inventory.models import GPU

    gpu = GPU.objects.filter(cluster_id=twin.clusters["demo-256"]).order_by("index")[37]
    # given the GPU grid of demo-256 coloured by health, connected, with no failed GPU
    page = visitor.visit("/clusters/demo-256/gpus/?color=health")
    wait_live(page)
    origin = page.evaluate("performance.timeOrigin")
    failed_colour = page.evaluate(FAILED_COLOUR)
    assert page.evaluate(FAILED_COUNT) == "0"
    healthy = page.evaluate(CELL_COLOUR, gpu.index)
    assert healthy != failed_colour
    try:
        # when the GPU is marked failed through the API
        assert patch(twin, f"/api/inventory/gpus/{gpu.pk}/", {"status": "failed"})["status"] == "failed"
        # then the open page counts it and paints its cell in the failed colour, by itself
        page.wait_for_function(f"({FAILED_COUNT})() === '1'", timeout=EVENT_SECONDS * 1000)
        assert page.evaluate(CELL_COLOUR, gpu.index) == failed_colour
        screenshot(page, "gpus-demo-256-gpu-failed-live")
        # and when it is active again, it goes back
        patch(twin, f"/api/inventory/gpus/{gpu.pk}/", {"status": "active"})
        page.wait_for_function(f"({FAILED_COUNT})() === '0'", timeout=EVENT_SECONDS * 1000)
        assert page.evaluate(CELL_COLOUR, gpu.index) == healthy
        assert page.evaluate("performance.timeOrigin") == origin, "the page reloaded"
        assert page.evaluate("window.twin.gpuGrid.statusReads") >= 2
    finally:
        GPU.objects.filter(pk=gpu.pk).update(status="active")


# The colour modes the page registered (registry.js: gpus.js's generic ones and the capabilities' modules), in order.
COLOUR_MODES = """() => import('/static/js/registry.js').then((r) => r.colourModes().map((m) => [m.name, m.label]))"""
OPTIONS = """() => [...document.querySelectorAll('#gpu-color-mode option')].map((o) => [o.value, o.textContent])"""


def test_every_colour_mode_is_offered_and_colours_every_gpu(visitor, twin):
    from tests.e2e.test_pages import PAINTED

    n = twin.gpus["demo-256"]
    # given the GPU grid of demo-256 opened with no mode asked: the default one, "run"
    page = visitor.visit("/clusters/demo-256/gpus/")
    modes = page.evaluate(COLOUR_MODES)
    # then the select offers every registered colour mode, the generic ones and each capability's, in their order
    assert page.evaluate(OPTIONS) == modes
    assert {name for name, _ in modes} >= {"job", "training", "health", "utilization", "checkpoint", "failures",
                                           "debug"}
    assert page.locator("#gpu-color-mode").input_value() == "job" == visitor.twin_js("window.twin.gpuGrid.mode")
    grid = page.locator("canvas#gpu-grid")
    # and each mode, chosen, colours every GPU, says so in the URL and words its legend and the zones' figures
    for name, label in modes:
        page.select_option("select#gpu-color-mode", name)
        assert grid.get_attribute("data-mode") == name
        assert grid.evaluate(PAINTED)["painted"] >= n, name
        assert f"color={name}" in page.url
        assert page.locator("#gpu-legend .item, #gpu-legend .muted").count() >= 1, name
    visitor.probe.assert_clean()


def test_the_colour_mode_comes_from_the_url(visitor, twin):
    # a capability's mode asked in the URL is the one drawn; an unknown one falls back to the default
    page = visitor.visit("/clusters/demo-256/gpus/?color=checkpoint")
    assert page.locator("#gpu-color-mode").input_value() == "checkpoint"
    assert visitor.twin_js("window.twin.gpuGrid.mode") == "checkpoint"
    assert page.locator("#gpu-legend [data-checkpoint]").count() == 1
    page = visitor.visit("/clusters/demo-256/gpus/?color=no-such-mode")
    assert page.locator("#gpu-color-mode").input_value() == "job"
    assert visitor.twin_js("window.twin.gpuGrid.mode") == "job"
