"""The Validation page in a real browser: the last finished validate run's result drawn (the error by kind, the
log-log scatter with a point per observation, the y = x line and the +-10 % band, the factors and the sources), a
hover on a point shows its source and a click keeps it with its link, the filters by kind and GPU redraw it; a user's
measurements against a calibration profile; and "rerunning it is a run": the form starts a validate run whose row
follows it live to its end. The stored result (tests/validation_fixture.py) stands in for a finished run where the
page only draws it."""
import pytest

from sim.validation.params import VALIDATE
from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS
from tests.validation_fixture import OBSERVATIONS, SOURCES, calibrate_summary, stored_run


@pytest.fixture(scope="module")
def stored(twin, django_db_blocker):
    """A finished validate run and a finished calibrate run with the profile saved from it, committed on demo-256."""
    from tests.e2e.conftest import database
    from twin.inventory.models import Cluster
    from twin.runs.models import CalibrationProfile, SimulationRun
    with database(django_db_blocker):
        demo = Cluster.objects.get(name="demo-256")
        run = stored_run(demo)
        cal = SimulationRun.objects.create(kind="calibrate", cluster=demo, status="succeeded",
                                           summary=calibrate_summary(), params={"measurements": "", "fit": None})
        # (update_or_create: the module's fixture may run again on the same served database)
        profile, _ = CalibrationProfile.objects.update_or_create(
            cluster=demo, name="e2e-fitted", defaults={"values": {"gemm_efficiency": 0.6}, "summary": {"run": cal.id}})
        return {"run": run.id, "calibrate": cal.id, "profile": profile.id}


def hover(page, chart: str, point_id: str):
    """Move the pointer onto the point `point_id` of the chart `chart` (where chart.js drew it)."""
    at = page.eval_on_selector(chart, "(el, id) => el.chart.pointAt(id)", point_id)
    assert at, f"no point {point_id} drawn"
    page.mouse.move(at["x"], at["y"])


def ids(page, chart: str) -> list:
    """The ids of the points drawn in the chart `chart`."""
    return page.eval_on_selector(chart, "(el) => el.chart.points().map((p) => p.id).filter((id) => id != null)")


def test_the_last_validation_is_drawn_with_its_sources_on_hover_and_filters(admin, twin, stored):
    # given a finished validate run; when the page is opened
    page = admin.visit("/validation/", shot="validation")
    page.wait_for_selector(f'main[data-drawn="{stored["run"]}::"]', state="attached")
    # then the error by kind has a row for all and one per kind, the verdict says what broke
    assert page.locator("#val-summary tbody tr").count() == 1 + 2
    assert page.locator(".val-verdict").get_attribute("data-passed") == "0"
    # and the scatter has a point per observation, the y = x line and the +-10 % band
    scatter = page.locator("#val-scatter")
    assert scatter.get_attribute("data-points") == str(len(OBSERVATIONS))
    assert sorted(ids(page, "#val-scatter")) == sorted(o["id"] for o in OBSERVATIONS)
    drawn = page.eval_on_selector("#val-scatter", "(el) => el.chart.drawn()")
    assert "y = x" in drawn and "±10 %" in drawn
    # and the factors and the sources are listed, each source linked
    assert page.locator('#val-factors tr[data-factor="nvlink_efficiency"]').count() == 1
    assert page.locator("#val-sources tbody tr").count() == len(SOURCES)
    assert page.locator("#val-sources a").first.get_attribute("href") == SOURCES[0]["url"]
    # when a point is hovered
    point = OBSERVATIONS[3]                                  # paper-2/llama-8b
    hover(page, "#val-scatter", point["id"])
    # then the readout names its source, where in it and the note
    tip = page.locator("#chart-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert SOURCES[1]["title"] in text and point["where"] in text and point["note"] in text
    # and a click keeps it beside the chart with the link to its source
    page.mouse.down()
    page.mouse.up()
    page.wait_for_selector(f'#val-point[data-id="{point["id"]}"]', state="attached")
    assert page.locator("#val-point a.val-source-link").get_attribute("href") == point["url"]
    screenshot(page, "validation-point")
    # when the kind filter keeps the jobs, then the GPU filter the A100s
    page.select_option("#val-kind", "job")
    page.wait_for_selector(f'main[data-drawn="{stored["run"]}:job:"]', state="attached")
    assert len(ids(page, "#val-scatter")) == 2
    assert page.locator('#val-summary tr[data-kind="selected"]').count() == 1
    page.select_option("#val-gpu", "a100-sxm-80gb")
    page.wait_for_selector(f'main[data-drawn="{stored["run"]}:job:a100-sxm-80gb"]', state="attached")
    assert len(ids(page, "#val-scatter")) == 1
    assert "kind=job" in page.url and "gpu=a100-sxm-80gb" in page.url
    # and the user's measurements against the profile are drawn with the same filters (the kind filter still keeps
    # the jobs)
    page.select_option("#val-gpu", "")
    page.select_option("#val-calibration", f"profile:{stored['profile']}")
    page.wait_for_selector(f'#val-mine-result[data-drawn="profile:{stored["profile"]}"]', state="attached")
    assert len(ids(page, "#val-mine-scatter")) == 2                               # its two job entries
    assert "e2e-fitted" in page.locator("#val-mine-shown").inner_text()
    admin.probe.assert_clean()
    # and the run's own page draws the validation view
    page = admin.visit(f"/experiments/{stored['run']}/")
    page.wait_for_selector("#results .val-scatter .uplot canvas", state="attached")
    assert len(ids(page, "#results .val-scatter")) == len(OBSERVATIONS)
    assert page.locator("#results table.val-sources tbody tr").count() == len(SOURCES)


def test_the_form_starts_a_validate_run_followed_live_to_its_end(admin, twin, stored):
    # given the page on the stored result; when the admin starts a validate run of one kind from the form
    page = admin.visit("/validation/")
    page.wait_for_selector(f'main[data-drawn="{stored["run"]}::"]', state="attached")
    form = page.locator("form#validate-form")
    kinds = VALIDATE.by_name["kind"].choices
    kind = "collective" if "collective" in kinds else kinds[0]           # a kind of the corpus (collective: quick)
    form.locator('[name="kind"]').select_option(kind)
    with page.expect_response(lambda r: r.url.endswith("/api/runs/") and r.request.method == "POST") as answer:
        form.locator("[type=submit]").click()
    assert answer.value.status == 201, answer.value.text()
    run_id = answer.value.json()["id"]
    # then its row appears and follows it to its end, and the live indicator names it from its first frame
    row = page.locator(f'#val-runs tr[data-run="{run_id}"]')
    row.wait_for(state="attached")
    page.wait_for_selector(f'#val-live[data-run="{run_id}"][data-phase]', state="attached", timeout=RUN_SECONDS * 1000)
    page.wait_for_function(f"""() => /succeeded|failed/.test(document.querySelector('#val-runs tr[data-run="{run_id}"]')
                               ?.innerText ?? "")""", timeout=RUN_SECONDS * 1000)
    run = twin.api(f"/api/runs/{run_id}/")
    if run["status"] == "succeeded":
        # and, finished, the page shows it: the observations of that kind
        page.wait_for_selector(f'main[data-run="{run_id}"]', state="attached", timeout=10_000)
        page.wait_for_selector(f'#val-live[data-run="{run_id}"][data-phase="done"]', state="attached")
        median = float(page.locator("#val-live [data-median]").get_attribute("data-median"))
        assert abs(median - run["summary"]["overall"]["median"]) <= 1e-6 * max(1.0, median)
        assert int(page.locator("#val-scatter").get_attribute("data-points")) == sum(
            1 for o in run["summary"]["observations"] if o["measured"] > 0 and o["predicted"] > 0) > 0
    else:
        # (where the engine does not run on this branch, the run fails saying why, and the page keeps showing the
        # last one that finished; the engine's own tests and `validate --check` hold the engine)
        assert run["status"] == "failed" and run["error"]
        assert page.locator("main").get_attribute("data-run") == str(stored["run"])
        pytest.skip(f"the validate run failed on this branch (the engine's business): {run['error'][:300]}")
