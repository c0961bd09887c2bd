"""The preset figures page (/experiments/presets/) in a real browser: a signed-in user starts a cluster's page of
figures from the form, sees its progress live, then its figures (a busbw chart per collective against the roofline,
the rail-local / cross-rail traffic table, the published figures or why there are none); the page reopens drawn from
the kept run; meta-roce-24k shows Meta's published ranges beside its simulated figures."""
from tests.e2e.browser import screenshot
from tests.processes import wait_for

CHARTS = "#preset-figure-results .preset-panel .busbw-chart .uplot canvas"
# the panels whose busbw chart is drawn (uPlot's canvas inside)
DRAWN = "() => [...document.querySelectorAll('#preset-figure-results .preset-panel')].filter((p) => p.querySelector('.busbw-chart .uplot canvas')).map((p) => p.dataset.collective)"
TRAFFIC = "#preset-figure-results table.preset-traffic tbody tr"


def test_a_user_starts_a_preset_figures_run_and_the_page_reopens_drawn(admin, twin):
    # given the superuser on the page of demo-256, no preset figures run yet
    page = admin.visit("/experiments/presets/?cluster=demo-256")
    assert page.locator(f"#presets tbody tr[data-preset='demo-256'] a").inner_text() == "demo-256"
    assert page.locator("#presets tbody tr").count() >= 7                # every preset of sim/presets
    # when they start a run from the form (message sizes 1M..1G)
    form = page.locator("#new-preset-figure")
    form.locator("[data-field=sizes] input").fill("1M:1G")
    form.locator("[type=submit]").click()
    # then it shows in the runs table, and its figures are drawn when it ends
    page.wait_for_selector("#preset-figure-runs tbody tr[data-run]")
    run_id = int(page.locator("#preset-figure-runs tbody tr[data-run]").first.get_attribute("data-run"))
    twin.wait_run(run_id)
    page.wait_for_selector(CHARTS, timeout=30_000)
    assert page.evaluate(DRAWN) == ["allreduce", "allgather", "reducescatter"]
    assert page.locator(TRAFFIC).count() == 3 * 3 * 3                    # collectives x configurations x jobs
    assert "No source in docs/sources.md publishes" in page.locator("#preset-figure-results .none-published").inner_text()
    # and a one-zone topology-aware job keeps some bytes on its leaves, shown as a share
    row = page.locator(f"{TRAFFIC}[data-collective=allgather][data-config=topology][data-gpus='128']")
    assert row.locator(".local-share").inner_text().endswith("%")
    # and its bar shows the leaf's share in the leaf's colour, the spine's in the spine's
    colours = row.evaluate("""(tr) => ["leaf", "spine"].map((c) => {
      const span = tr.querySelector(`.stacked-bar .cls-${c}`);
      return [getComputedStyle(span).backgroundColor, span.style.width];
    })""")
    assert colours == [["rgb(44, 160, 44)", "50%"], ["rgb(255, 127, 14)", "50%"]]
    screenshot(page, "experiments-presets-demo-256")
    # when the page is opened again
    page = admin.visit("/experiments/presets/?cluster=demo-256", shot="experiments-presets-reopened")
    # then the kept run is drawn at once, with no new run
    assert page.evaluate(DRAWN) == ["allreduce", "allgather", "reducescatter"]
    assert f"#{run_id}" in page.locator("#preset-figure-title").inner_text()


def test_meta_roce_24k_shows_its_published_figures_beside_the_simulated(visitor, twin):
    # given a finished preset figures run on meta-roce-24k (one zone and 4,096 GPUs, a few sizes)
    run = twin.api("/api/runs/", {"kind": "preset_figure", "cluster": "meta-roce-24k",
                                  "params": {"max_gpus": 4096, "sizes": "64M:4G"}})
    twin.wait_run(run["id"])
    # when an anonymous user opens its page (the form locked for them)
    page = visitor.visit("/experiments/presets/?cluster=meta-roce-24k", shot="experiments-presets-meta-roce-24k")
    # then the published ranges [S2] stand beside the simulated figures
    wait_for(lambda: page.locator("#preset-figure-results .published-table tbody tr").count() == 3, timeout=10,
             what="the published table")
    assert "S2" in page.locator("#preset-figure-results .published-table").inner_text()
    assert len(page.evaluate(DRAWN)) == 3
