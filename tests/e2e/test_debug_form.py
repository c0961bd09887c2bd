"""Issue 25, item 3, in a real browser: the Debug page's rehearsal form says inject's syntax and suggests a fault
valid for the job the form describes (rebuilt from the form's values, not a fixed rank); the default form with that
example runs; the rehearsal's heatmap marks the culprit's row, the one rank idle while its peers wait."""
import base64

import numpy as np

from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS
from tests.e2e.test_debug import CULPRIT_RED, cell_color

COMPLETED_GREEN, STARTED_AMBER = [63, 185, 80], [245, 165, 36]     # debug.js CELL_COLORS
STARTED, COMPLETED = 2, 3                                           # twin.capabilities.debug.data.HEATMAP_STATES


def test_the_default_form_with_its_example_runs_and_the_heatmap_marks_the_culprit(admin, twin):
    # given the superuser on demo-256's Debug page, the rehearsal form as it comes (tp 8: 8 ranks)
    page = admin.visit("/clusters/demo-256/debug/")
    form = page.locator("form#debug-form")
    hint = page.locator("#inject-example")
    # then inject's example is a rank of this job, and the hint gives the range
    example = hint.locator("[data-example]")
    assert example.inner_text() == "hang:rank=6" and "from 0 to 7" in hint.inner_text()
    # when the job grows (gpus 16), then the example follows the form's values
    form.locator('[name="gpus"]').fill("16")
    assert example.inner_text() == "hang:rank=12" and "from 0 to 15" in hint.inner_text()
    form.locator('[name="gpus"]').fill("")
    assert example.inner_text() == "hang:rank=6"
    # when they click the example and start the rehearsal with every other field at its default
    example.click()
    assert form.locator('[name="inject"]').input_value() == "hang:rank=6"
    with page.expect_response(lambda r: r.url.endswith("/api/runs/") and r.request.method == "POST") as answer:
        form.locator("[type=submit]").click()
    # then the server takes it (no 400) and the run succeeds naming rank 6
    assert answer.value.status == 201, answer.value.text()
    run = twin.wait_run(answer.value.json()["id"], timeout=3 * RUN_SECONDS)    # the default job: a 188 s step
    assert run["status"] == "succeeded", run.get("error")
    page = admin.visit(f"/clusters/demo-256/debug/?run={run['id']}")
    assert page.locator("#culprit-ranks").inner_text().strip() == "6"
    # and the heatmap marks the culprit's row (red in the gutter, named under the canvas)
    heat = page.locator("#stop-heatmap")
    assert heat.get_attribute("data-rows") == "8" and heat.get_attribute("data-culprit") == "6"
    assert page.evaluate("""(row) => { const c = document.getElementById("stop-heatmap"),
        px = Math.floor(c.height / Number(c.dataset.rows));
        return Array.from(c.getContext("2d").getImageData(1, row * px + Math.floor(px / 2), 1, 1).data.slice(0, 3)); }""",
                         6) == CULPRIT_RED
    assert "rank 6" in page.locator("#heatmap-culprit").inner_text()
    # and at the last instant the culprit is idle (completed) while its peers wait (started), no row absent
    h = admin.page.request.get(f"{twin.url}/clusters/demo-256/debug/{run['id']}.json").json()["heatmap"]
    cells = np.frombuffer(base64.b64decode(h["cells"]), np.uint8).reshape(h["shape"])
    last = cells.shape[1] - 1
    assert h["axis"] == "time" and (cells != 0).all()
    assert np.flatnonzero(cells[:, last] == COMPLETED).tolist() == [6]
    assert [cell_color(page, r, last) for r in (0, 6)] == [STARTED_AMBER, COMPLETED_GREEN]
    screenshot(page, "debug-culprit")
