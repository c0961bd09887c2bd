"""The Debug page in a real browser: a finished rehearsal of a hang shows its culprit and the heatmap of where each
rank stopped; the GPU page coloured by that rehearsal (``?color=debug&run=<id>``) marks the culprit's GPU; the run's
page on Experiments shows the culprit and the start-up run's rows."""
import base64

import numpy as np

from tests.e2e.browser import screenshot

JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "batch_tokens": "1M"}
# debug.js: CULPRIT_COLOR (the mark left of a culprit's heatmap row), CELL_COLORS by state, the cells' layout
CULPRIT_RED, COMPLETED_GREEN, STARTED_AMBER = [229, 72, 77], [63, 185, 80], [245, 165, 36]
STARTED, COMPLETED = 2, 3             # twin.capabilities.debug.data.HEATMAP_STATES
LABEL_PX, COL_PX = 10, 18
PIXEL = """([x, row]) => {
  const c = document.getElementById("stop-heatmap"), px = Math.floor(c.height / Number(c.dataset.rows));
  return Array.from(c.getContext("2d").getImageData(x, row * px + Math.floor(px / 2), 1, 1).data.slice(0, 3)); }"""


def cell_color(page, row: int, col: int) -> list[int]:
    return page.evaluate(PIXEL, [LABEL_PX + col * COL_PX + COL_PX // 2, row])


def test_a_rehearsed_hang_shows_its_culprit_heatmap_and_gpu(admin, twin):
    # given a finished rehearsal of rank 5 hanging on demo-256, and a start-up run
    run = twin.api("/api/runs/", {"kind": "debug", "cluster": "demo-256", "params": {**JOB, "inject": "hang:rank=5"}})
    up = twin.api("/api/runs/", {"kind": "startup", "cluster": "demo-256", "params": {"gpus": "1024:4096"}})
    twin.wait_run(run["id"])
    twin.wait_run(up["id"])
    gpu = twin.api(f"/api/runs/{run['id']}/results/?names=rank_gpu")["arrays"]["rank_gpu"]["data"][5]
    # when the superuser opens the Debug page on it
    page = admin.visit(f"/clusters/demo-256/debug/?run={run['id']}")
    # then the culprit is rank 5, and the heatmap has a row per rank, the culprit's row marked red
    assert page.locator("#culprit").get_attribute("data-found") == "1"
    assert page.locator("#culprit-ranks").inner_text().strip() == "5"
    assert "never entered" in page.locator("#culprit-text").inner_text()
    heat = page.locator("#stop-heatmap")
    assert heat.get_attribute("data-rows") == "64"
    row = int(heat.get_attribute("data-culprit"))
    assert row == 5
    pixel = page.evaluate(PIXEL, [1, row])
    assert pixel == CULPRIT_RED
    # and drawn: an instant at which its TP peers wait in a collective (started) and rank 5 is idle (completed)
    h = admin.page.request.get(f"{twin.url}/clusters/demo-256/debug/{run['id']}.json").json()["heatmap"]
    cells = np.frombuffer(base64.b64decode(h["cells"]), np.uint8).reshape(h["shape"])
    col = int(np.flatnonzero((cells[0] == STARTED) & (cells[5] == COMPLETED))[-1])
    assert [cell_color(page, r, col) for r in (0, 5)] == [STARTED_AMBER, COMPLETED_GREEN]
    assert page.locator("#startup-rows tbody tr").count() == 3             # 1,024, 2,048, 4,096 ranks
    screenshot(page, "debug")
    # when they follow the link to the GPU page coloured by the rehearsal
    admin.follow(lambda: page.click("#gpu-link"))
    admin.wait_ready()
    # then the culprit's GPU is marked, and the legend counts one culprit GPU
    assert admin.twin_js("window.twin.gpuGrid.mode") == "debug"
    page.wait_for_function(f"window.twin.gpuGrid.debugOf({gpu}) === 254")   # twin.capabilities.debug.live.DEBUG_CULPRIT
    assert "1" in page.locator("#gpu-legend [data-debug-culprit]").inner_text()
    screenshot(page, "gpus-debug")
    # and the runs' pages on Experiments show the culprit and the start-up rows
    page = admin.visit(f"/experiments/{run['id']}/")
    assert "never entered" in page.locator("#debug-explanation").inner_text()
    page = admin.visit(f"/experiments/{up['id']}/")
    assert page.locator(".startup-rows tbody tr").count() == 3
