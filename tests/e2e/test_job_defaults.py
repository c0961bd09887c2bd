"""Defaults that run, in a real browser at 1280 x 800 (issue 40, item 4): on the 24k cluster's Jobs page, choosing
each model fills the form with its default layout as the server chose it (GET /api/runs/jobs/default/), shows why
beside the form, and the form as filled is accepted; Llama 3 405B's (Meta's published layout) runs to the end. A
refused layout's error on the page names the nearest layouts that fit this cluster."""
import re

from tests.e2e.browser import screenshot
from tests.e2e.conftest import RUN_SECONDS, runs_held
from tests.e2e.test_form_defaults import record_run_posts

CLUSTER = "meta-roce-24k"
SHOWN = ("gpus", "tp", "cp", "pp")              # the layout fields the form shows first (the kind's ``main``)


def beyond(page, width: int = 1280) -> list:
    """The elements of the Jobs panels (the queue, the form, its default and its errors) whose right edge passes
    ``width``: the page's own content fits the window (the site header's width is the layout item's business)."""
    return page.evaluate("""(w) => [...document.querySelectorAll('.jobs-layout, .jobs-layout *')]
        .filter((e) => e.getBoundingClientRect().right > w + 0.5 && !e.closest('.table-scroll'))
        .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`)""", width)


def choose(page, twin, model: str) -> dict:
    """Pick ``model`` in the job form as a user does; wait for the page's default of it; return the server's."""
    page.locator('form#job-form select[name="model"]').select_option(model)
    page.wait_for_function("([m]) => { const b = document.getElementById('job-default');"
                           " return b.dataset.model === m && b.dataset.source !== 'asking'; }", arg=[model])
    return twin.api(f"/api/runs/jobs/default/?cluster={twin.clusters[CLUSTER]}&model={model}")


def submit(page, answers: list) -> tuple[int, dict]:
    """Press Submit; the answer to the page's POST /api/runs/ (Playwright's own wait runs the route handler)."""
    seen = len(answers)
    page.locator("form#job-form [type=submit]").click()
    for _ in range(600):
        if len(answers) > seen:
            break
        page.wait_for_timeout(50)
    assert len(answers) > seen, "the form sent no run"
    return answers[seen]


def test_each_models_default_on_the_24k_cluster_shows_why_and_is_accepted(admin, twin):
    # given the superuser on the 24k cluster's Jobs page, in a 1280 x 800 window
    admin.page.set_viewport_size({"width": 1280, "height": 800})
    page = admin.visit(f"/clusters/{CLUSTER}/jobs/")
    assert not beyond(page), beyond(page)
    models = [m for m in page.locator('form#job-form select[name="model"] option').evaluate_all(
        "os => os.map((o) => o.value)") if m != "custom"]
    assert models and "llama3-405b" in models
    answers = record_run_posts(page)
    form, box = page.locator("form#job-form"), page.locator("#job-default")
    # when they choose each model, the form holds its default and says why; submitted as filled, it is accepted
    last = "llama3-405b"                      # run to the end: Meta's published layout
    for model in [m for m in models if m != last] + [last]:
        expected = choose(page, twin, model)
        assert all(form.locator(f'[name="{k}"]').input_value() == str(expected["params"][k]) for k in SHOWN), model
        assert expected["params"]["gpus"] <= twin.gpus[CLUSTER]
        assert expected["why"] in box.inner_text() and f"{expected['params']['gpus']:,} GPUs" in box.inner_text()
        assert not beyond(page), beyond(page)
        screenshot(page, f"job-default-{model}")
        if model != last:                     # accepted and queued is enough: cancelled before any worker takes it
            with runs_held(twin):
                status, body = submit(page, answers)
                assert status == 201, body
                twin.api(f"/api/runs/{body['id']}/cancel/", {})
            continue
        status, body = submit(page, answers)
        assert status == 201, body
        run = twin.wait_run(body["id"], timeout=RUN_SECONDS)
        assert run["summary"]["layout"]["gpus"] == expected["params"]["gpus"]
    # and the 405B job ran Meta's published layout: its published figures are beside it as the same case
    same = [x["same_case"] for x in run["summary"]["published"]]
    assert same and all(same), run["summary"]["published"]


def test_a_refused_layout_names_the_nearest_layouts_that_fit_this_cluster(admin, twin):
    # given the 405B default on the 24k cluster's Jobs page, the GPU count raised to the whole cluster
    admin.page.set_viewport_size({"width": 1280, "height": 800})
    page = admin.visit(f"/clusters/{CLUSTER}/jobs/")
    choose(page, twin, "llama3-405b")
    page.locator('form#job-form [name="gpus"]').fill(str(twin.gpus[CLUSTER]))
    answers = record_run_posts(page)
    # when they submit it, the server refuses it (its batch does not split over 192 replicas)
    status, body = submit(page, answers)
    assert status == 400, body
    # then the error on the page names layouts that fit this cluster's GPUs, none for more
    errors = page.locator("form#job-form .field-error").all_inner_texts()
    said = " ".join(e for e in errors if "nearest layouts" in e)
    assert f"nearest layouts that fit {CLUSTER}" in said, errors
    named = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) GPUs, [\d.]+ GB\)", said)]
    assert named and max(named) <= twin.gpus[CLUSTER], said
    assert not beyond(page), beyond(page)
    screenshot(page, "job-default-refused")
    # the page's only problems are that refusal (its 400 and the console's line for it): expected here
    problems = admin.probe.problems
    assert problems and all("/api/runs/" in p and "400" in p for p in problems), problems
    problems.clear()
