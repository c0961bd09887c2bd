"""The example capability through the whole twin: its kind runs on a real worker, its live section reaches the GPU
page (decoded by frames.js in the browser) and colours the grid by its mode, the run page draws its result view,
and its page answers; nothing but tests/example_capability names it (test_registration.py)."""
import numpy as np

from tests.example_capability.model import heat


def test_a_run_of_the_example_colours_the_gpu_page_live_and_draws_its_view(example_twin, visitor):
    # given the GPU page of demo-256 coloured by the example's mode, open before the run starts
    page = visitor.visit("/clusters/demo-256/gpus/?color=example")
    assert visitor.twin_js("window.twin.gpuGrid.mode") == "example"
    options = page.eval_on_selector_all("#gpu-color-mode option", "els => els.map(e => e.value)")
    assert "example" in options
    # when an example run is started through the API and a worker runs it
    run = example_twin.api("/api/runs/", {"kind": "example", "cluster": "demo-256",
                                          "params": {"steps": 3, "stride": 11}})
    done = example_twin.wait_run(run["id"])
    # then the page received its live section over the cluster stream: every GPU at the last step's heat
    want = heat(256, 3, 11)
    for i in (0, 17, 255):
        page.wait_for_function(f"window.twin.gpuGrid.exampleOf({i}) === {int(want[i])}")
    hot = int((want > 125).sum())
    assert page.locator("#gpu-legend [data-example-hot]").get_attribute("data-example-hot") == str(hot)
    assert done["summary"]["hot_gpus"] == hot
    # and its result page draws the example's own view
    page = visitor.visit(f"/experiments/{run['id']}/")
    page.wait_for_selector("#example-result")
    assert page.locator("#example-result").get_attribute("data-hot") == str(hot)
    # and the stored array colours a GPU page opened afterwards on that run
    page = visitor.visit(f"/clusters/demo-256/gpus/?color=example&run={run['id']}")
    assert [visitor.twin_js(f"window.twin.gpuGrid.exampleOf({i})") for i in (3, 200)] == [int(want[3]), int(want[200])]
    arrays = example_twin.api(f"/api/runs/{run['id']}/results/?names=example_heat")["arrays"]["example_heat"]
    assert np.array_equal(np.asarray(arrays["data"], np.uint8), want)


def test_the_example_page_answers(example_twin, visitor):
    page = visitor.visit("/example/")
    assert page.locator("#example-title").inner_text() == "Example capability"
