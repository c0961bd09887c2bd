"""Layout checked by geometry (issue 25, item 10): element boxes (Playwright's bounding_box) neither overlap nor
overflow: the runs list's columns stay within their panel with long parameters and results, the storage page's zone
labels do not overlap, the status pop-up leaves the inventory's Search button free, the login form's boxes line up,
and a job's throughput over time is a line, not one dot."""
import json
import urllib.error

import pytest

from tests.e2e.test_debug import JOB


def overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] - 0.5 and b["x"] < a["x"] + a["width"] - 0.5
            and a["y"] < b["y"] + b["height"] - 0.5 and b["y"] < a["y"] + a["height"] - 0.5)


def boxes(page, selector: str) -> list[dict]:
    """Every element matching ``selector``: its box (as Playwright's bounding_box gives it: x, y, width, height in
    the viewport), its text and its row's run, read in one call instead of a round trip per element."""
    return page.evaluate("""(sel) => Array.from(document.querySelectorAll(sel)).map(e => {
        const b = e.getBoundingClientRect(), row = e.closest("tr");
        return {x: b.x, y: b.y, width: b.width, height: b.height, text: e.innerText,
                run: row ? row.dataset.run : null}; })""", selector)


def test_the_login_forms_boxes_line_up(visitor):
    page = visitor.visit("/accounts/login/")
    user, password = (page.locator(f"form.login-form input[name={n}]").bounding_box() for n in ("username", "password"))
    assert abs(user["x"] - password["x"]) < 1 and abs(user["width"] - password["width"]) < 1, (user, password)
    assert password["y"] >= user["y"] + user["height"]


# runs whose parameters are long in different ways (many sizes and words, a list of jobs as JSON, a sweep's axes)
# and whose results are text (a start-up's largest scale, a culprit, what bounds a checkpoint)
LONG_RUNS = [
    {"kind": "collective", "cluster": "demo-256",
     "params": {"gpus": 128, "sizes": "1K:4G", "collective": "allgather", "placement": "random", "routing": "ecmp",
                "qps": 4, "seeds": 3}},
    {"kind": "jobs", "cluster": "demo-256",
     "params": {"jobs": json.dumps([{**JOB, "name": "a-job-with-a-rather-long-name-" + "x" * 30},
                                    {**JOB, "gpus": 32, "tp": 4, "name": "another-" + "y" * 56}])}},
    {"kind": "sweep", "cluster": "demo-256",
     "params": {"kind": "collective", "params": {"gpus": 16, "sizes": "1K:1M", "collective": "allreduce"},
                "sweep": {"qps": [1, 2], "placement": ["topology", "random"]}}},
    {"kind": "startup", "cluster": "demo-256", "params": {"gpus": "1024:4096"}},
    {"kind": "debug", "cluster": "demo-256", "params": {**JOB, "inject": "hang:rank=5"}},     # a culprit as result
    {"kind": "checkpoint", "cluster": "demo-256", "params": {"gpus": 16}},          # what bounds it, as result
]


def start(twin, run: dict) -> int:
    try:
        return twin.api("/api/runs/", run)["id"]
    except urllib.error.HTTPError as e:
        pytest.fail(f"{run['kind']} refused: {e.code} {e.read()[:500]!r}")


def test_the_runs_lists_columns_stay_within_the_panel(visitor, twin):
    # given finished runs with long parameters of several kinds (and whatever runs the other tests left listed)
    ids = [start(twin, run) for run in LONG_RUNS]
    for run_id in ids:
        twin.wait_run(run_id)
    page = visitor.visit("/experiments/")
    for run_id in ids:
        page.wait_for_selector(f'#runs-table tr[data-run="{run_id}"] .badge.succeeded')
    # then no cell of any row, nor the table, reaches past the panel, and a cut text is whole in its title
    panel = page.locator(".runs-panel").bounding_box()
    right = panel["x"] + panel["width"] + 0.5
    table = page.locator("#runs-table").bounding_box()
    assert table["x"] + table["width"] <= right, (table, panel)
    assert page.locator("#runs-table tbody tr").count() >= len(ids)
    for box in boxes(page, "#runs-table tbody tr td"):
        assert box["x"] + box["width"] <= right, (box, panel)
    params = page.locator(f'#runs-table tr[data-run="{ids[1]}"] td.params-cell')
    cut = params.evaluate("td => td.scrollWidth > td.clientWidth")
    assert cut and params.get_attribute("title").startswith(params.inner_text().rstrip("…")[:20])


def rows_within(page, rows: str, panel: str) -> None:
    """Every cell of ``rows`` ends within ``panel``'s box."""
    box = page.locator(panel).bounding_box()
    right = box["x"] + box["width"] + 0.5
    cells = boxes(page, f"{rows} td")
    assert cells
    for b in cells:
        assert b["x"] + b["width"] <= right, (b, box)


# the other runs lists: a cluster's failures runs (Reliability), checkpoint runs (Storage) and power runs (Power),
# long parameters each
OTHER_LISTS = {
    "reliability": ({"kind": "failures", "cluster": "demo-256",
                     "params": {"gpus": 64, "days": 3, "checkpoint_interval": "1h", "seeds": 4, "model": "llama3-8b",
                                "tp": 8, "pp": 2, "rate_scale": 40}},
                    "/clusters/demo-256/reliability/", "#rel-runs tbody tr", "section.panel:has(#rel-runs)"),
    "storage": ({"kind": "checkpoint", "cluster": "demo-256",
                 "params": {"gpus": 64}},
                "/clusters/demo-256/storage/", "#checkpoint-runs tr", "section.panel:has(#checkpoint-runs)"),
    "power": ({"kind": "power", "cluster": "demo-256",
               "params": {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "batch_tokens": "1M",
                          "cap_sweep": [300, 400, 500, 600, 700], "rack_budget_kw": 15, "building_budget_mw": 1}},
              "/clusters/demo-256/power/", "#power-runs tbody tr", "section.panel:has(#power-runs)"),
}


@pytest.mark.parametrize("name", OTHER_LISTS)
def test_the_other_runs_lists_stay_within_their_panels(visitor, twin, name):
    run, path, rows, panel = OTHER_LISTS[name]
    run_id = start(twin, run)
    twin.wait_run(run_id)
    page = visitor.visit(path)
    page.wait_for_selector(f'{rows.rsplit(" tr", 1)[0]} tr[data-run="{run_id}"]', state="attached")
    rows_within(page, rows, panel)


def test_the_storage_pages_zone_labels_do_not_overlap(visitor):
    page = visitor.visit("/clusters/meta-roce-24k/storage/")
    page.wait_for_selector("#heatmaps .heatmap-labels span", state="attached")
    tiers = page.evaluate("""() => Array.from(document.querySelectorAll("#heatmaps .tier")).map(tier =>
        Array.from(tier.querySelectorAll(".heatmap-labels span")).map(e => {
            const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, width: b.width, height: b.height}; }))""")
    assert tiers
    for tier in tiers:
        labels = [b for b in tier if b["width"] > 0]
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                assert not overlap(a, b), (a, b)


def test_the_status_pop_up_leaves_the_inventory_search_button_free(admin, twin):
    page = admin.visit(f"/inventory/host/{twin.items['host']}/")
    form = page.locator("form#status-form")
    status = form.locator("select[name=status]")
    status.select_option(status.input_value())            # the same status: nothing changes, the pop-up shows
    form.locator("[type=submit]").click()
    page.wait_for_selector("#toast:not([hidden])")
    toast = page.locator("#toast").bounding_box()
    search = page.locator("#inventory-search button[type=submit]").bounding_box()
    assert not overlap(toast, search), (toast, search)


def test_a_jobs_throughput_over_time_is_more_than_one_point(visitor, twin):
    run = twin.api("/api/runs/", {"kind": "job", "cluster": "demo-256", "params": JOB})
    twin.wait_run(run["id"])
    jobs = twin.api("/api/runs/jobs/?cluster__name=demo-256&ordering=-id&limit=20")["results"]
    job = next(j for j in jobs if (j.get("run") or {}).get("id") == run["id"])
    page = visitor.visit(f"/clusters/demo-256/jobs/?job={job['id']}")
    page.wait_for_selector("#job-throughput[data-points]", state="attached")
    assert int(page.locator("#job-throughput").get_attribute("data-points")) >= 2
    assert page.locator("#job-throughput .uplot canvas").count() == 1
