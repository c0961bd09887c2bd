"""The charts in a real browser at 1280 x 800 (issue 40, item 6): line and bar charts are drawn by uPlot
(frontend/js/chart.js over the vendored library); a spike does not flatten the rest of an axis; more than 8 series
show 8 and the rest behind a toggle, the legend below the plot; values spanning decades get a log / linear switch;
the hover readout gives a point's value; a PNG download carries a title band (title, cluster, run, units, date), also
as the file's text; the GPU page's default colour mode shows a running training job on its GPUs first."""
import io
from datetime import datetime, timedelta, timezone

import pytest
from PIL import Image

from tests.e2e.conftest import VIEWPORT
from tests.e2e.test_debug import JOB
from tests.e2e.test_exports import download

# a power run of Llama 3 8B on 128 GPUs of demo-256 with 16 pipeline stages: 16 per-stage waveforms
STAGES = {"model": "llama3-8b", "gpus": 128, "tp": 8, "pp": 16, "dp": 1, "batch_tokens": "1M"}


@pytest.fixture(scope="module")
def collective(twin):
    """A finished AllGather on 64 GPUs of demo-256 from 64 KiB to 1 GiB: bus bandwidths spanning decades."""
    run_id = twin.start_run("demo-256", collective="allgather", gpus=64, sizes="64K:1G")
    return twin.wait_run(run_id)


def chart(page, selector: str, expr: str):
    """`expr` evaluated on the chart element `selector` (its `el.chart` API: chart.js)."""
    return page.eval_on_selector(selector, f"(el) => {expr}")


# A page's own lineChart, drawn into a new panel of the Experiments page (which loads the charts' styles).
DRAW = """async (series) => {
  const { lineChart } = await import("/static/js/chart.js");
  const box = Object.assign(document.createElement("section"), { className: "panel", id: "probe-panel" });
  const el = Object.assign(document.createElement("div"), { id: "probe-chart" });
  box.append(el);
  document.querySelector("main").prepend(box);
  lineChart(el, { label: "probe", height: 260, series,
                  x: { scale: "linear", label: "time (s)" }, y: { scale: "linear", label: "rate (GB/s)" } });
}"""


def test_a_spike_does_not_flatten_the_rest_of_the_axis(admin, twin):
    # given a waveform of 200 points between 10 and 20, and one spike a hundred times higher
    wave = [{"x": i, "y": 15 + 5 * ((i % 20) / 10 - 1)} for i in range(200)]
    spike = 100 * max(p["y"] for p in wave)
    wave[120]["y"] = spike
    page = admin.visit("/experiments/")
    # when it is drawn
    page.evaluate(DRAW, [{"name": "rate", "points": wave}])
    el = "#probe-chart"
    lo, hi = chart(page, el, "el.chart.yRange()")
    rest = sorted(p["y"] for p in wave)[-2]
    # then the axis ends above the rest, not at the spike: the rest spans most of the plot's height
    assert hi < spike and rest <= hi, (lo, hi)
    assert (rest - lo) / (hi - lo) > 0.6, (lo, hi, rest)
    # and the chart says one point is off the axis, with a switch that shows the full range
    assert page.get_attribute(el, "data-cut") == "1"
    switch = page.locator(f"{el} [data-switch=full] input")
    switch.check()
    lo, hi = chart(page, el, "el.chart.yRange()")
    assert hi >= spike and page.get_attribute(el, "data-cut") == "0"


def test_more_than_eight_series_show_eight_and_the_rest_behind_a_toggle(admin, twin):
    # given a finished power run with 16 pipeline stages (one waveform each)
    run = twin.wait_run(twin.api("/api/runs/", {"kind": "power", "cluster": "demo-256", "params": STAGES})["id"])
    # when the Power page shows it
    page = admin.visit(f"/clusters/demo-256/power/?run={run['id']}")
    page.wait_for_selector('#power-result[data-drawn="1"]', state="attached")
    el = "#power-result .power-stage-lines"
    # then 8 stages are drawn, each in its own lane, and the legend lists 8 with a toggle for the other 8
    assert page.get_attribute(el, "data-series") == "8" and page.get_attribute(el, "data-series-total") == "16"
    assert chart(page, el, "el.chart.drawn()") == [f"stage {k}" for k in range(8)]
    legend = page.locator(f"{el} .chart-legend")
    assert legend.locator(".legend-item").count() == 8
    more = legend.locator("[data-more]")
    assert more.inner_text() == "+8 more"
    # and the legend is below the plot, never over it, and the chart fits the page's width
    plot, box = page.locator(f"{el} .uplot").bounding_box(), legend.bounding_box()
    assert box["y"] >= plot["y"] + plot["height"] - 0.5, (plot, box)
    assert plot["x"] + plot["width"] <= VIEWPORT["width"]
    # when the toggle is opened: all 16 are listed, 8 of them on
    more.click()
    assert legend.locator(".legend-item").count() == 16
    assert legend.locator(".legend-item[aria-pressed=true]").count() == 8
    # when "next 8" is asked: the other 8 are drawn
    legend.locator(".legend-page").click()
    assert chart(page, el, "el.chart.drawn()") == [f"stage {k}" for k in range(8, 16)]
    # when one more is shown: still 8 drawn, the one shown longest ago hidden
    page.locator(f'{el} .legend-item[data-name="stage 0"]').click()
    drawn = chart(page, el, "el.chart.drawn()")
    assert len(drawn) == 8 and "stage 0" in drawn and "stage 8" not in drawn


def test_a_log_scale_switch_where_values_span_decades_and_a_hover_readout(admin, twin, collective):
    # given a collective run whose bus bandwidth spans decades; when its page is open
    page = admin.visit(f"/experiments/{collective['id']}/")
    el = "#results .busbw-chart"
    page.wait_for_selector(f"{el} canvas", state="attached")
    rows = collective["summary"]["rows"]
    busbw = [r["busbw_GBps"] for r in rows]
    assert max(busbw) / min(busbw) > 30
    # then the axis is linear from 0, with a log scale switch
    assert page.get_attribute(el, "data-scale") == "linear" and chart(page, el, "el.chart.yRange()")[0] == 0
    # when the switch is turned on: the axis is logarithmic, from below the smallest value
    page.locator(f"{el} [data-switch=log] input").check()
    assert page.get_attribute(el, "data-scale") == "log"
    lo, hi = chart(page, el, "el.chart.yRange()")
    assert 0 < lo < min(busbw) and hi > max(busbw)
    # and back
    page.locator(f"{el} [data-switch=log] input").uncheck()
    assert page.get_attribute(el, "data-scale") == "linear"
    # when the pointer is over the largest size
    over = page.locator(f"{el} .u-over").bounding_box()
    page.mouse.move(over["x"] + over["width"] - 2, over["y"] + over["height"] / 2)
    # then the readout names the size and each series' value there
    tip = page.locator("#chart-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    last = max(rows, key=lambda r: r["size"])
    assert "size: 1G" in text and "busbw:" in text and "algbw:" in text, text
    shown = float(text.split("busbw:")[1].split("GB/s")[0])
    assert abs(shown - last["busbw_GBps"]) <= 0.5 + 0.001 * last["busbw_GBps"], (shown, last)


def test_a_png_download_carries_a_title_band(admin, twin, collective):
    # given the collective run's page
    page = admin.visit(f"/experiments/{collective['id']}/")
    el = "#results .busbw-chart"
    page.wait_for_selector(f"{el} canvas", state="attached")
    plot_h = chart(page, el, "el.chart.u.ctx.canvas.height")
    # when its chart is downloaded as PNG
    bar = page.locator(f"#results .export-bar[data-kind=chart]:has(+ {el.split()[-1]})")
    name, data = download(page, bar.locator("[data-export=png]"))
    image = Image.open(io.BytesIO(data))
    # then the file names the chart, the cluster, the run, the units and the date
    text = image.text
    assert name.endswith(".png") and text["Title"] == "bus bandwidth against message size", text
    for part in ("cluster demo-256", f"run #{collective['id']}", "y: bandwidth (GB/s)", "x: message size (bytes)"):
        assert part in text["Description"], (part, text["Description"])
    taken = datetime.fromisoformat(text["Creation Time"].replace("Z", "+00:00"))
    assert abs(datetime.now(timezone.utc) - taken) < timedelta(minutes=10)
    # and they are drawn above the plot: a band of text (pixels unlike the background) above the chart's own height
    assert image.height > plot_h + 40, (image.size, plot_h)
    rgb = image.convert("RGB")
    background = rgb.getpixel((0, 0))
    band = [rgb.getpixel((x, y)) for y in range(0, 40) for x in range(0, min(rgb.width, 400))]
    assert sum(p != background for p in band) > 100


def test_the_gpu_pages_default_colour_shows_a_running_job(admin, twin):
    # given a training job placed on demo-256 whose step run has finished: it holds its GPUs, no run in flight
    run = twin.wait_run(twin.api("/api/runs/", {"kind": "job", "cluster": "demo-256", "params": JOB})["id"])
    jobs = twin.api("/api/runs/jobs/?cluster__name=demo-256&ordering=-id&limit=20")["results"]
    job = next(j for j in jobs if (j.get("run") or {}).get("id") == run["id"])
    gpus = twin.api(f"/api/runs/jobs/{job['id']}/gpus/")["gpus"]
    assert job["holds_gpus"] and len(gpus) == JOB["gpus"]
    # when the GPU page is opened with no colour asked
    page = admin.visit("/clusters/demo-256/gpus/")
    grid = "window.twin.gpuGrid"
    # then the default mode colours the job's GPUs in the job's colour, which its legend names first
    assert admin.twin_js(f"{grid}.mode") == "job"
    page.wait_for_selector(f'#gpu-legend [data-job="{job["id"]}"]', state="attached")
    first = page.locator("#gpu-legend .item").first
    assert first.get_attribute("data-job") == str(job["id"])
    swatch = first.locator(".swatch").evaluate("(e) => getComputedStyle(e).backgroundColor")
    for g in (gpus[0], gpus[-1]):
        assert admin.twin_js(f"{grid}.runOf({g})") == 0                     # no run: by runs alone, idle
        color = admin.twin_js(f"{grid}.colorOf({g})")
        assert swatch == "rgb({}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5))), (swatch, color)
    idle = page.locator("#gpu-legend .item", has_text="idle").locator(".swatch").evaluate(
        "(e) => getComputedStyle(e).backgroundColor")
    assert idle != swatch
