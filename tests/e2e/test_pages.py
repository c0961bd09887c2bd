"""Every page of the twin loads in a real browser with no console error, no failed request and no uncaught
exception, and says it is drawn with data (body[data-ready="1"]); a screenshot of each goes to var/screenshots/."""
import pytest

from tests.e2e.browser import screenshot
from tests.processes import wait_for

# Pixels of a canvas: how many are painted (not transparent), how many colours (up to 64), how many of `hex`.
PAINTED = """(canvas, hex = null) => {
  // A copy of the canvas, so that whatever context the page draws with, we read plain RGBA pixels.
  const copy = document.createElement("canvas");
  copy.width = canvas.width; copy.height = canvas.height;
  const ctx = copy.getContext("2d");
  ctx.drawImage(canvas, 0, 0);
  const px = new Uint32Array(ctx.getImageData(0, 0, copy.width, copy.height).data.buffer);
  const want = hex ? parseInt(hex.slice(1), 16) : -1, colours = new Set();
  let painted = 0, matching = 0;
  for (const p of px) {
    if (!(p >>> 24)) continue;
    painted += 1;
    if (colours.size < 64) colours.add(p);
    if ((((p & 0xff) << 16) | (p & 0xff00) | ((p >>> 16) & 0xff)) === want) matching += 1;   // ABGR -> RGB
  }
  return { width: copy.width, height: copy.height, painted, colours: colours.size, matching };
}"""
FAILED_COLOUR = "import('/static/js/twin.js').then((m) => m.COLORS.failed)"


@pytest.fixture(scope="package")
def finished_runs(twin):
    """Two finished collective runs on demo-256 that differ in routing (for the run and compare pages)."""
    ids = [twin.start_run("demo-256", collective="allgather", gpus=64, sizes="1M:64M", routing=routing, qps=2)
           for routing in ("ecmp", "eecmp")]
    for run_id in ids:
        twin.wait_run(run_id)
    return ids


def nav_pages() -> dict:
    """Every page of the navigation (discovered, not listed), cluster-scoped ones on the 24k cluster."""
    from django.urls import reverse

    from twin.web.nav import nav_items
    return {item.key: reverse(item.url_name, kwargs={"cluster": "meta-roce-24k"} if item.cluster_scoped else {})
            for item in nav_items()}


# page name (its screenshot's too) -> its path, filled in with the finished runs and the items of demo-256
PAGES = {
    "overview": "/",
    "login": "/accounts/login/",
    **{f"{view}-{name}": f"/clusters/{name}/{view}/" for name in ("meta-roce-24k", "demo-256")
       for view in ("fabric", "gpus")},
    "reliability-meta-roce-24k": "/clusters/meta-roce-24k/reliability/",    # anonymous: the form locked
    "power-meta-roce-24k": "/clusters/meta-roce-24k/power/",                # anonymous: the forms locked
    "experiments": "/experiments/",
    "experiment-run": "/experiments/{runs[0]}/",
    "experiments-compare": "/experiments/compare/?runs={runs[0]},{runs[1]}",
    "experiments-figure": "/experiments/figure/",
    "experiments-presets": "/experiments/presets/",
    "schedules": "/schedules/",                                  # anonymous: the forms locked
    "validation": "/validation/",                                # anonymous: the form locked
    "inventory": "/inventory/",
    **{f"inventory-{kind}": f"/inventory/{kind}/{{items[{kind}]}}/"
       for kind in ("cluster", "zone", "rack", "host", "gpu", "switch", "link")},
    "inventory-search": "/inventory/search/?q={names[host]}",
}
# and every page of the navigation not above (a new page is visited without anyone listing it)
PAGES.update({name: path for name, path in nav_pages().items() if path not in PAGES.values()})


@pytest.mark.parametrize("name", PAGES)
def test_page_loads_clean_and_ready(visitor, twin, finished_runs, name):
    # given the twin with two clusters and two finished runs
    path = PAGES[name].format(runs=finished_runs, items=twin.items, names=twin.names)
    # when an anonymous user opens the page
    page = visitor.visit(path, shot=name)
    # then it is drawn (visit() waited for data-ready and found no problem) and has a heading
    assert page.locator("main h1").count() >= 1, f"{path} has no heading"
    assert visitor.twin_js("window.twin.ready") is True
    assert_fits_the_width(page, path)


# How much wider than the window the page is, and the widest elements that stick out past its right edge.
OVERFLOW = """() => {
  const width = window.innerWidth, doc = document.documentElement;
  const out = [...document.querySelectorAll("body *")].map((e) => [e, e.getBoundingClientRect()])
    .filter(([e, b]) => b.right > width + 0.5 && b.width > 0 && getComputedStyle(e).position !== "fixed"
            && !e.closest(".scroll, .table-scroll, [data-scrolls]"))
    .sort((a, b) => b[1].right - a[1].right).slice(0, 5)
    .map(([e, b]) => `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${[...e.classList].join(".")} right ${Math.round(b.right)}`);
  return { excess: doc.scrollWidth - width, out };
}"""


def assert_fits_the_width(page, path: str) -> None:
    """The page scrolls only down, never sideways, in the test window (VIEWPORT: 1280 px); a wide table scrolls in
    its own box."""
    o = page.evaluate(OVERFLOW)
    assert o["excess"] <= 0, f"{path} is {o['excess']} px wider than the window: {o['out']}"


@pytest.mark.parametrize("cluster", ["meta-roce-24k", "demo-256"])
def test_gpu_grid_draws_one_cell_per_gpu(visitor, twin, cluster):
    page = visitor.visit(f"/clusters/{cluster}/gpus/")
    n = twin.gpus[cluster]
    assert n == (24_576 if cluster == "meta-roce-24k" else 256)
    grid = page.locator("canvas#gpu-grid")
    assert int(grid.get_attribute("data-cells")) == n
    assert visitor.twin_js("window.twin.cells") == n
    painted = grid.evaluate(PAINTED)
    assert painted["painted"] >= n, f"the grid is blank: {painted}"


def test_gpu_grid_coloured_by_health_shows_the_failed_gpus(visitor, twin, orm):
    from twin.inventory.models import GPU

    gpus = GPU.objects.filter(cluster_id=twin.clusters["meta-roce-24k"])
    failed = list(gpus.order_by("index").values_list("pk", flat=True)[1000:1003])
    grid = visitor.page.locator("canvas#gpu-grid")

    def red_pixels():
        visitor.page.select_option("select#gpu-color-mode", "health")
        return grid.evaluate(PAINTED, visitor.page.evaluate(FAILED_COLOUR))["matching"]

    # given a healthy cluster: no GPU in the failed colour
    visitor.visit("/clusters/meta-roce-24k/gpus/")
    assert red_pixels() == 0
    # when three GPUs fail
    gpus.filter(pk__in=failed).update(status="failed")
    try:
        # then the grid, coloured by health, shows them; every colour mode draws every GPU
        visitor.visit("/clusters/meta-roce-24k/gpus/")
        wait_for(red_pixels, what="the failed GPUs in the failed colour")
        for mode in ("job", "utilization", "health"):
            visitor.page.select_option("select#gpu-color-mode", mode)
            assert grid.evaluate(PAINTED)["painted"] >= 24_576, mode
        screenshot(visitor.page, "gpus-meta-roce-24k-health")
    finally:
        gpus.filter(pk__in=failed).update(status="active")


@pytest.mark.parametrize("cluster", ["meta-roce-24k", "demo-256"])
def test_fabric_heatmaps_cover_every_backend_link(visitor, twin, cluster):
    page = visitor.visit(f"/clusters/{cluster}/fabric/")
    assert visitor.twin_js("window.twin.links") == twin.backend_links[cluster]
    heatmaps = page.locator("canvas.heatmap")
    assert heatmaps.count() >= 1
    tiers = heatmaps.evaluate_all("cs => cs.map(c => [c.dataset.tier, Number(c.dataset.links)])")
    assert all(tier and links > 0 for tier, links in tiers), tiers
    assert sum(links for _, links in tiers) == twin.backend_links[cluster], tiers
    for i in range(heatmaps.count()):
        painted = heatmaps.nth(i).evaluate(PAINTED)
        assert painted["painted"] > 0, f"heatmap {tiers[i]} is blank"
    assert page.locator("#hottest-links").count() == 1


def test_search_finds_an_item_by_name(visitor, twin):
    page = visitor.visit("/inventory/")
    page.fill("form#inventory-search input[name=q]", twin.names["gpu"])
    with page.expect_navigation():
        page.press("form#inventory-search input[name=q]", "Enter")
    visitor.wait_ready()
    # (a link to the GPU's page: the page repeats the query whatever it finds)
    assert page.locator(f'main a[href="/inventory/gpu/{twin.items["gpu"]}/"]').count() >= 1
    visitor.probe.assert_clean()


# Per result view name: whether a module registered it, once every capability's module has loaded (registry.js).
VIEWS_REGISTERED = """(names) => import('/static/js/registry.js').then(async (r) => {
  await r.loadCapabilities();
  return Object.fromEntries(names.map((n) => [n, r.hasView(n)]));
})"""


def test_every_kind_s_result_view_is_registered_in_the_browser(visitor, twin, finished_runs):
    from twin.runs import registry

    views = sorted({k.view for k in registry.kinds().values()} - {"sweep"})   # run_view.js draws a sweep itself
    page = visitor.visit(f"/experiments/{finished_runs[0]}/")
    assert page.evaluate(VIEWS_REGISTERED, views) == {v: True for v in views}
    # and the collective run's page drew its own view (the chart and the nccl-tests table), not the summary
    assert page.locator("#results .busbw-chart .uplot canvas").count() >= 1
    assert page.locator("#results table.nccl tbody tr").count() >= 1
