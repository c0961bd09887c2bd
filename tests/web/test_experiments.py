"""The Experiments pages render with the server's data: the runs list and its form (fields and choices from the
kinds' parameter declarations, sim/core/params.py), a finished run, runs compared, the published figure; bad compare
requests get a clear 400/404. Given / when / then."""
import json
import re

import pytest
from django.contrib.auth.models import Permission, User

from sim.fabric import figures
from sim.fabric.collectives import COLLECTIVES
from sim.fabric.hostlist import MAX_LIST_BYTES
from sim.fabric.params import COLLECTIVE, FIGURE, MAX_QPS, META_QPS
from sim.fabric.placement import PLACEMENTS
from sim.fabric.routing import ROUTINGS
from twin.runs.calibration import CALIBRATION
from twin.runs.models import SimulationRun

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


@pytest.fixture
def starter(client):
    """A client logged in as a user who may start runs."""
    user = User.objects.create_user("starter", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_simulationrun"))
    client.force_login(user)
    return client


def page_json(html: str, element_id: str):
    """The JSON a template put in <script id=element_id type="application/json"> (json_script)."""
    m = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no #{element_id} in the page"
    return json.loads(m.group(1))


ROWS = [{"size": 1 << s, "count": (1 << s) // 4, "type": "float", "time_us": 100.0 * (s - 19),
         "algbw_GBps": 10.0 * (s - 19), "busbw_GBps": 9.0 * (s - 19), "norm_busbw": 0.02 * (s - 19)}
        for s in range(20, 31)]


def finished_collective(cluster, **params):
    return SimulationRun.objects.create(
        kind="collective", cluster=cluster, status="succeeded", progress=100.0,
        params={"collective": "allgather", "gpus": 64, "routing": None, "qps": 1, **params},
        summary={"rows": ROWS, "norm_busbw": {"median": 0.22, "min": 0.2, "max": 0.3},
                 "busbw_GBps": {"median": 99.0, "min": 90.0, "max": 120.0}, "roofline_GBps": 400.0,
                 "limit_norm_busbw": {"median": 0.25, "min": 0.25, "max": 0.25}, "hottest_links": [],
                 "table_of": "median run (seed 1)", "seeds": 3})


def test_the_runs_page_gives_the_form_the_servers_fields_and_choices(client, demo):
    # when an anonymous visitor opens the runs list
    r = client.get("/experiments/")
    html = r.content.decode()
    # then the page is the Experiments section, waits for its data, and holds the form and the runs table
    assert r.status_code == 200
    assert re.search(r'<a href="/experiments/" [^>]*aria-current="page">Experiments</a>', html)
    assert 'data-wait-ready="1"' in html and 'id="new-run"' in html and 'id="runs-table"' in html
    # and the form's fields, defaults and choices are the declaration's, and it offers the kinds that say so
    schema = page_json(html, "run-form-schema")
    assert schema["kinds"] == ["collective", "sweep"]
    kinds = page_json(html, "run-kinds")
    assert [k for k, v in kinds.items() if v["form"]] == schema["kinds"]
    assert kinds["collective"]["view"] == "collective" and kinds["collective"]["best"] == "norm_busbw"
    fields = {f["name"]: f for f in schema["params"]["collective"]}
    assert set(schema["main"]) <= set(fields)
    assert fields["routing"]["choices"] == list(ROUTINGS) and fields["routing"]["null"] is True
    assert fields["placement"]["choices"] == list(PLACEMENTS) + ["given"]
    assert fields["placement"]["default"] == "topology"
    # and a host or GPU list is a text the form draws as a textarea with a file upload (max over LONG_TEXT)
    for name in ("hosts", "gpu_list"):
        assert fields[name] == {**fields[name], "type": "text", "null": True, "default": None,
                                "max": MAX_LIST_BYTES}
    assert fields["intra_order"]["choices"] == ["gpu", "rank"] and fields["intra_order"]["default"] == "gpu"
    assert fields["collective"]["choices"] == list(COLLECTIVES)
    assert fields["qps"] == {**fields["qps"], "type": "int", "min": 1, "max": MAX_QPS, "default": META_QPS}
    assert list(fields) == [p.name for p in COLLECTIVE] + [CALIBRATION.name]     # every run form: a profile too
    assert fields["sizes"]["default"] == "1M:1G"
    # and the clusters come with their size and default routing; an anonymous visitor may not start runs
    info = {c["name"]: c for c in page_json(html, "clusters-info")}
    assert info["demo-256"] == {**info["demo-256"], "gpus": 256, "fabric": "roce", "default_routing": "ecmp"}
    assert page_json(html, "run-form-user")["can_start"] is False


def test_a_user_allowed_to_add_runs_gets_an_enabled_form(starter, demo):
    user = page_json(starter.get("/experiments/").content.decode(), "run-form-user")
    assert user == {"can_start": True, "authenticated": True, "current": "demo-256"}


def test_the_page_of_a_finished_run_renders(starter, demo):
    # given a finished collective run of the user
    run = finished_collective(demo)
    run.created_by = User.objects.get(username="starter")
    run.save(update_fields=["created_by"])
    # when that user, who may start (and cancel) runs, opens its page
    r = starter.get(f"/experiments/{run.pk}/")
    html = r.content.decode()
    # then it shows the run with its live progress bar and the links to the cluster's fabric and GPU pages
    assert r.status_code == 200
    assert re.search(r'id="run-progress"[^>]*data-progress="100"\s+data-status="succeeded"', html)
    assert 'href="/clusters/demo-256/fabric/"' in html and 'href="/clusters/demo-256/gpus/"' in html
    assert page_json(html, "run-page") == {"id": run.pk, "kind": "collective", "cluster": "demo-256", "parent": None,
                                           "can_cancel": True}
    assert "succeeded" in page_json(html, "finished-statuses")


def test_an_unknown_run_is_a_404(client, demo):
    assert client.get("/experiments/999999/").status_code == 404


def test_runs_compared_side_by_side(client, demo):
    # given two finished runs that differ in routing
    a, b = finished_collective(demo, routing="ecmp"), finished_collective(demo, routing="eecmp", qps=16)
    # when they are compared
    r = client.get(f"/experiments/compare/?runs={a.pk},{b.pk}")
    # then the page loads them in that order
    assert r.status_code == 200
    html = r.content.decode()
    assert page_json(html, "compare-page") == {"runs": [a.pk, b.pk]}
    assert 'id="compare-chart"' in html and 'id="compare-params"' in html


@pytest.mark.parametrize("query, status, says", [
    ("?runs={a},999998,999999", 404, "no run #999998, #999999"),
    ("?runs=1,two", 400, "expected run ids separated by commas"),
    ("", 400, "give the runs to compare"),
    ("?runs=" + ",".join(str(i) for i in range(1, 12)), 400, "at most 8"),
    # ids past the database's integer range (a 500, OverflowError, before)
    ("?runs=" + "9" * 30, 400, "is not a run id"),
    ("?runs={a},-1", 400, "is not a run id"),
])
def test_a_compare_of_unknown_or_malformed_ids_says_what_is_wrong(client, demo, query, status, says):
    a = finished_collective(demo)
    r = client.get("/experiments/compare/" + query.format(a=a.pk))
    assert r.status_code == status
    html = r.content.decode()
    assert says in html and 'class="bad compare-error"' in html
    assert "compare-page" not in html                 # no script tries to draw runs that are not there


def test_the_figure_page_offers_the_figure_kind_and_the_published_claims(client, demo):
    # given a finished figure run
    run = SimulationRun.objects.create(kind="figure", cluster=demo, status="succeeded",
                                       params={"figure": "allgather-scale", "jobs": [32], "seeds": 1})
    # when the figure page is opened on it
    r = client.get(f"/experiments/figure/?run={run.pk}")
    html = r.content.decode()
    # then the form's fields are the figure kind's declaration and the published claims come with the page
    assert r.status_code == 200 and 'id="new-figure"' in html
    page = page_json(html, "figure-page")
    assert page["run"] == run.pk
    fields = {f["name"]: f for f in page["params"]}
    assert fields["figure"]["choices"] == ["allgather-scale"]
    assert fields["seeds"]["default"] == figures.DEFAULT_SEEDS and fields["jobs"]["type"] == "int_list"
    assert list(fields) == [p.name for p in FIGURE] + [CALIBRATION.name]
    claims = page["published"]["claims"]
    assert {c["panel"] for c in claims} == set(range(len(figures.SCALE_PANELS)))
    assert all(0 <= c["low"] < c["high"] <= 1 for c in claims)
    # and a run page of that figure run carries the same claims for its panels
    assert page_json(client.get(f"/experiments/{run.pk}/").content.decode(), "published-claims") == page["published"]
    assert client.get("/experiments/figure/?run=x").status_code == 400


def test_the_pages_need_a_login_when_anonymous_reading_is_off(client, demo, settings):
    settings.TWIN_API_ANONYMOUS_READ = False
    for url in ("/experiments/", "/experiments/figure/", "/experiments/compare/?runs=1"):
        r = client.get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/?next=")
