"""The Clusters page in a real browser at 1280 x 800 (issue 40, item 9): a small preset built from the page, its run
shown queued then followed live to its end, the cluster listed once built, then deleted from the page the same way;
the estimates are the API's (the measured throughput), and the page's content fits the width."""
from sim.fabric.spec import PRESETS_DIR
from tests.e2e.conftest import runs_held
from tests.processes import wait_for

PRESET = "aws-p4d-pod"          # 512 GPUs, 4,551 rows
VIEWPORT = {"width": 1280, "height": 800}


def _fits(page) -> bool:
    """Whether the page's own content (main: the header is the layout's, issue 40 item 10) fits the viewport's
    width without a horizontal scroll: no element of it reaches past the right edge."""
    return page.evaluate("""() => [...document.querySelectorAll('main, main *')].every(
        (e) => e.getBoundingClientRect().right <= document.documentElement.clientWidth + 0.5)""")


def _frames(page) -> int:
    return page.evaluate("() => window.twin.framesApplied")


def _followed(page, twin, action, kind: str) -> int:
    """Start a cluster run from the page with ``action`` while no worker takes runs: its row is shown queued; once
    the worker takes it, the row follows its frames to succeeded at 100 %. Returns the run's id."""
    before = {r["id"] for r in twin.api("/api/runs/?kind=cluster_build&kind=cluster_delete")["results"]}
    with runs_held(twin):
        action()
        run = wait_for(lambda: next((r for r in twin.api(f"/api/runs/?kind={kind}")["results"]
                                     if r["id"] not in before), None), timeout=30, what=f"the {kind} run")["id"]
        row = page.locator(f'#cluster-runs tr[data-run="{run}"]')
        row.locator(".badge.queued").wait_for()
        assert row.locator(".progress").get_attribute("data-progress") == "0"
        frames = _frames(page)
    page.wait_for_selector(f'#cluster-runs tr[data-run="{run}"] .badge.succeeded', timeout=60_000)
    assert _frames(page) > frames, "the run's end came by a live frame"
    assert row.locator(".progress").get_attribute("data-progress") == "100"
    assert twin.api(f"/api/runs/{run}/")["status"] == "succeeded"
    return run


def test_a_preset_is_built_and_deleted_from_the_page_with_its_progress(admin, twin):
    page = admin.page
    page.set_viewport_size(VIEWPORT)
    page.on("dialog", lambda dialog: dialog.accept())
    # given the superuser on the Clusters page, reached from the header
    admin.visit("/clusters/", shot="clusters")
    assert page.locator('header nav a[href="/clusters/"]').get_attribute("aria-current") == "page"
    assert _fits(page)
    # the presets with their estimated build time: the API's, from the measured throughput
    presets = {p["name"]: p for p in twin.api("/api/clusters/presets/")["presets"]}
    row = page.locator(f'#presets-table tr[data-preset="{PRESET}"]')
    assert float(row.locator("[data-estimate]").get_attribute("data-estimate")) == \
        presets[PRESET]["estimated_build_s"]
    assert f"{presets[PRESET]['gpus']:,}" in row.inner_text() and presets[PRESET]["fabric"] in row.inner_text()
    assert page.locator('#presets-table tr[data-preset="demo-256"] button[data-build]').is_disabled()
    # when they build the preset: its run queued, followed live to its end, and the cluster listed
    _followed(page, twin, lambda: row.locator("button[data-build]").click(), "cluster_build")
    built = page.locator(f'#built-table tr[data-cluster="{PRESET}"]')
    built.wait_for()
    assert f"{presets[PRESET]['gpus']:,}" in built.inner_text()
    assert twin.api(f"/api/clusters/{PRESET}/")["gpus"] == presets[PRESET]["gpus"]
    assert page.locator(f'#presets-table tr[data-preset="{PRESET}"] button[data-build]').is_disabled()
    assert _fits(page)
    # when they delete it: the same, and the cluster leaves the list and the twin
    _followed(page, twin, lambda: built.locator("button[data-delete]").click(), "cluster_delete")
    page.locator(f'#built-table tr[data-cluster="{PRESET}"]').wait_for(state="detached")
    assert PRESET not in {c["name"] for c in twin.api("/api/clusters/")}
    assert page.locator(f'#presets-table tr[data-preset="{PRESET}"] button[data-build]').is_enabled()
    admin.probe.assert_clean()


def test_a_spec_upload_is_checked_and_refused_naming_the_field(admin, twin):
    page = admin.page
    page.set_viewport_size(VIEWPORT)
    admin.visit("/clusters/")
    form = page.locator("#spec-form")
    # a spec the catalog cannot build: refused (a 400, the one the probe is told to expect), the field named under
    # the text
    form.locator("textarea[name=spec]").fill('name = "x"\n[layout]\nzones = 0\n')
    form.locator("#check-spec").click()
    error = form.locator('[data-error-for="spec"]')
    page.wait_for_function("() => document.querySelector('[data-error-for=\"spec\"]').textContent !== ''")
    assert error.inner_text().startswith("layout."), error.inner_text()
    problems, admin.probe.problems = admin.probe.problems, []
    assert problems and all("400" in p for p in problems), problems
    # a preset's own file under a new name: previewed with its GPUs and estimate
    form.locator("textarea[name=spec]").fill((PRESETS_DIR / "demo-256.toml").read_text())
    form.locator("input[name=name]").fill("e2e-upload")
    form.locator("#check-spec").click()
    page.locator('#spec-check[data-name="e2e-upload"]').wait_for()
    assert "256 " in page.locator("#spec-check").inner_text() and error.inner_text() == ""
    assert _fits(page)
    admin.probe.assert_clean()

