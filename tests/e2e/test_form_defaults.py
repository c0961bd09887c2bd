"""Issue 25, items 5 and 8 in a real browser: the default form of every capability page runs on demo-256 (Start
without touching a field: the API answers 201, no field shows an error), and what the pages print is in human
units with the parameters' help as labels: bytes as KiB/MiB/GiB, durations in their unit, "none" in an empty
table."""
import re

import pytest

from tests.e2e.browser import screenshot

CLUSTER = "demo-256"
# A clean rehearsal as the Debug form's default job (8 GPUs, TP 8: one group, one host) with a batch of 8 sequences
# instead of the default 2,048 (a 188 s step: a worker's half-minute), enough for straggler tables with no rows.
CLEAN_JOB = {"batch_tokens": "64K"}
# Each capability page's run form: (page, form, submit button); the Experiments forms pick their cluster.
FORMS = [
    ("/experiments/", "form#new-run", "collective"),
    ("/experiments/figure/", "form#new-figure", "figure"),
    (f"/clusters/{CLUSTER}/jobs/", "form#job-form", "job"),
    (f"/clusters/{CLUSTER}/reliability/", "form#failures-form", "failures"),
    (f"/clusters/{CLUSTER}/debug/", "form#debug-form", "debug"),
    (f"/clusters/{CLUSTER}/debug/", "form#startup-form", "startup"),
    (f"/clusters/{CLUSTER}/storage/", "form#checkpoint-form", "checkpoint"),
    (f"/clusters/{CLUSTER}/power/", "form#power-form", "power"),
    (f"/clusters/{CLUSTER}/power/", "form#schedule-form", "power_schedule"),
]


def record_run_posts(page) -> list:
    """The answers (status, body) to the page's POST /api/runs/, read before the page navigates to the run."""
    answers = []

    def handle(route):
        if route.request.method != "POST":
            route.fallback()
            return
        response = route.fetch()
        answers.append((response.status, response.json()))
        route.fulfill(response=response)
    page.route("**/api/runs/", handle)
    return answers


def test_form_labels_are_the_parameters_help_and_gpu_counts_are_numbers(admin, twin):
    # the storage page's checkpoint form: labels read as the declaration's help, the name beside it
    page = admin.visit(f"/clusters/{CLUSTER}/storage/")
    label = page.locator('form#checkpoint-form label[data-field="bytes_per_gpu"] .field-label')
    assert label.inner_text().startswith("Checkpoint bytes each writing rank saves"), label.inner_text()
    assert label.locator(".param-name").inner_text() == "bytes_per_gpu"
    # the GPU count is a number within the cluster (its 256 usable GPUs), not "default"
    assert page.locator('form#checkpoint-form input[name="gpus"]').input_value() == "256"
    page = admin.visit(f"/clusters/{CLUSTER}/reliability/")
    assert page.locator('form#failures-form input[name="gpus"]').input_value() == "256"
    # the collective's GPU count says what its default is: 64
    page = admin.visit("/experiments/")
    assert page.locator('form#new-run input[name="gpus"]').get_attribute("placeholder") == "64"
    assert page.locator('form#new-run label[data-field="udp_sport"] .field-label').text_content().strip().startswith(
        "RoCEv2 UDP source port of each QP")
    screenshot(page, "form-labels")


def test_bytes_are_printed_in_binary_units_and_an_empty_table_says_none(admin, twin):
    # given a checkpoint run of 4 GiB per GPU, its page prints the size as 4 GiB, not 4294967296
    run = twin.api("/api/runs/", {"kind": "checkpoint", "cluster": CLUSTER, "params": {"gpus": 16}})
    twin.api(f"/api/runs/{run['id']}/cancel/", {})
    page = admin.visit(f"/experiments/{run['id']}/")
    row = page.locator("#run-params tr", has=page.locator("th", has_text=re.compile(r"^bytes_per_gpu$")))
    assert row.locator("td").inner_text() == "4 GiB"
    assert "4294967296" not in page.locator("#run-params").inner_text()
    # and a clean rehearsal's straggler tables, which have no rows, say "none" under readable names (the small job
    # test_debug.py rehearses: the tables are empty for want of a fault, not of size)
    run = twin.api("/api/runs/", {"kind": "debug", "cluster": CLUSTER, "params": CLEAN_JOB})
    twin.wait_run(run["id"])
    page = admin.visit(f"/clusters/{CLUSTER}/debug/?run={run['id']}")
    page.wait_for_selector("#stragglers table[data-stragglers]", state="attached")
    tables = page.locator("#stragglers table[data-stragglers]")
    empty = [t for t in tables.all() if t.locator("tbody tr:not(.none)").count() == 0]
    assert empty, page.locator("#stragglers").inner_html()
    assert all(t.locator("tbody tr.none").inner_text().strip() == "none" for t in empty)
    headings = [h.strip() for h in page.locator("#stragglers h3").all_text_contents()]   # CSS upper-cases them
    assert "Process groups" in headings and "process_groups" not in headings, headings
    # the dumps' size is in binary units too (e.g. "1.2 MiB"), not a count of bytes
    link = page.locator("a#dumps-link")
    if link.count():
        assert re.search(r"\d (B|KiB|MiB|GiB)\b", link.inner_text()) and "bytes" not in link.inner_text()
    screenshot(page, "debug-stragglers-none")


@pytest.mark.parametrize("path,selector,kind", FORMS, ids=[k for _, _, k in FORMS])
def test_the_default_form_of_each_capability_page_runs_on_demo_256(admin, twin, path, selector, kind):
    # given the superuser on the page, its form as the page filled it
    page = admin.visit(path)
    form = page.locator(selector)
    form.locator("[type=submit]").wait_for()
    if form.locator("select[name=cluster]").count():
        form.locator("select[name=cluster]").select_option(CLUSTER)
    answers = record_run_posts(page)
    # when they press its Start button without changing anything
    form.locator("[type=submit]").click()
    for _ in range(600):                                  # Playwright's own wait: the route handler runs meanwhile
        if answers:
            break
        page.wait_for_timeout(50)
    assert answers, f"the {kind} form sent no run"
    # then the run is accepted (201) on demo-256
    status, body = answers[0]
    assert status == 201, body
    assert body["kind"] == kind and body["cluster"]["id"] == twin.clusters[CLUSTER], body
    twin.api(f"/api/runs/{body['id']}/cancel/", {})            # its work is not what is tested: free the worker
