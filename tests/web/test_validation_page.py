"""The Validation page (``/validation/``): its shell (in the header, the form from the validate kind's declaration),
its data views over the last finished validate run (the engine's blocks, the filters by kind and GPU and the |error|
summarized again over what they keep), a user's measurements against a calibration profile, and their refusals; the
validate kind's live section. A stored result (tests/validation_fixture.py) stands in for the engine, which these
views do not call. Given / when / then."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from sim.validation.params import VALIDATE
from tests.validation_fixture import OBSERVATIONS, calibrate_summary, result, stored_run
from twin.capabilities.validation import live as validation_live
from twin.capabilities.validation.data import error_summary
from twin.live import frames, sections
from twin.runs.models import CalibrationProfile, SimulationRun
from twin.web.nav import nav_items

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def page_info(html: str) -> dict:
    m = re.search(r'<script id="validation-info" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page embeds its data as #validation-info"
    return json.loads(m.group(1))


def summary_of(errors) -> dict:
    e = np.abs(errors)
    return {"count": len(e), "median": pytest.approx(float(np.median(e))),
            "p90": pytest.approx(float(np.percentile(e, 90))), "max": pytest.approx(float(e.max()))}


@pytest.mark.django_db
def test_the_page_renders_its_shell_the_form_from_the_kind_s_declaration_and_says_none_has_run(client, demo):
    html = client.get("/validation/").content.decode()
    for hook in ('id="val-summary"', 'id="val-scatter"', 'id="val-kind"', 'id="val-gpu"', 'id="val-factors"',
                 'id="val-sources"', 'id="val-runs"', 'id="validate-form"', 'id="val-calibration"', 'id="val-none"',
                 "js/validation.js"):
        assert hook in html, hook
    info = page_info(html)
    assert info["latest"] is None and info["cluster"] == {"id": demo.id, "name": "demo-256"}
    assert info["form"]["kind"] == "validate"
    assert [f["name"] for f in info["form"]["fields"]] == [p.name for p in VALIDATE]
    kind = next(f for f in info["form"]["fields"] if f["name"] == "kind")
    assert kind["default"] is None and kind["choices"] == list(VALIDATE.by_name["kind"].choices)
    assert info["user"] == {"can_start": False, "authenticated": False}
    # and with no finished validate run, the data says so
    assert client.get("/validation/data/").json() == {"run": None}


@pytest.mark.django_db
def test_the_page_is_in_the_header_after_calibration_and_not_a_cluster_s(client, demo):
    items = {item.key: item for item in nav_items()}
    keys = list(items)
    assert keys.index("validation") == keys.index("calibration") + 1
    assert items["validation"].group == "operations" and not items["validation"].cluster_scoped
    assert 'href="/validation/"' in client.get("/clusters/demo-256/jobs/").content.decode()


@pytest.mark.django_db
def test_the_data_is_the_last_finished_validate_run_s_result(client, demo):
    # given an older succeeded run, a newer one, and a newest that failed
    older = stored_run(demo, summary={**result(), "passed": True, "broken": []})
    newer = stored_run(demo)
    stored_run(demo, status="failed", summary=None)
    # when the page and its data are read without naming a run
    info = page_info(client.get("/validation/").content.decode())
    d = client.get("/validation/data/").json()
    # then they show the newer succeeded run, its engine blocks as stored, every observation
    assert info["latest"] == newer.id == d["run"]["id"] and d["run"]["cluster"] == "demo-256"
    want = result()
    for key in ("overall", "kinds", "before", "cross_validated", "factors", "sources", "passed", "broken"):
        assert d["result"][key] == want[key], key
    assert d["observations"] == OBSERVATIONS
    assert d["choices"] == {"kind": [{"value": "collective", "count": 3}, {"value": "job", "count": 2}],
                            "gpu": [{"value": "a100-sxm-80gb", "count": 2}, {"value": "h100-sxm-80gb", "count": 3}]}
    # and the selection's figures, with no filter, are the engine's overall ones, before the factors too
    assert d["selected"]["overall"] == summary_of([o["error"] for o in OBSERVATIONS])
    assert d["selected"]["before"]["overall"] == summary_of([o["before"]["error"] for o in OBSERVATIONS])
    # and an older run is shown when named
    assert client.get(f"/validation/data/?run={older.id}").json()["result"]["passed"] is True


@pytest.mark.django_db
@pytest.mark.parametrize("kind,gpu,ids", [
    ("collective", None, ["ar-8G", "ar-1G", "ag-1G"]),
    (None, "a100-sxm-80gb", ["ag-1G", "llama-70b"]),
    ("job", "h100-sxm-80gb", ["llama-8b"]),
    ("power", None, []),
])
def test_the_filters_keep_a_kind_and_a_gpu_and_summarize_what_they_keep(client, demo, kind, gpu, ids):
    # given a finished validate run
    stored_run(demo)
    # when its data is read filtered
    q = "&".join(f"{k}={v}" for k, v in (("kind", kind), ("gpu", gpu)) if v)
    d = client.get(f"/validation/data/?{q}").json()
    # then exactly the observations of that kind on that GPU are kept
    assert [o["id"].split("/")[1] for o in d["observations"]] == ids
    assert all((kind is None or o["kind"] == kind) and (gpu is None or o["gpu"] == gpu) for o in d["observations"])
    assert d["filters"] == {"kind": kind, "gpu": gpu}
    # and their |error| is summarized again over them alone (count, median, p90, max), per kind too
    errors = [o["error"] for o in OBSERVATIONS if o["id"].split("/")[1] in ids]
    if errors:
        assert d["selected"]["overall"] == summary_of(errors)
        assert set(d["selected"]["kinds"]) == {o["kind"] for o in d["observations"]}
    else:
        assert d["selected"]["overall"] == {"count": 0, "median": None, "p90": None, "max": None}
    # and the choices still offer every kind and GPU of the run (the filters do not narrow them)
    assert len(d["choices"]["kind"]) == 2 and len(d["choices"]["gpu"]) == 2


def test_the_summary_of_errors_is_of_their_absolute_values():
    # collective's errors -0.05, 0.10, 0.20: median 0.10, max 0.20; the p90 interpolates 0.10..0.20 at 0.8 -> 0.18
    s = error_summary([-0.05, 0.10, 0.20, None])
    assert s["count"] == 3 and s["median"] == pytest.approx(0.10) and s["max"] == pytest.approx(0.20)
    assert s["p90"] == pytest.approx(0.18)


@pytest.mark.django_db
def test_a_bad_or_unknown_run_is_refused_naming_run(client, demo):
    failed = stored_run(demo, status="failed", summary=None)
    r = client.get("/validation/data/?run=abc")
    assert r.status_code == 400 and "run" in r.json() and "integer" in r.json()["run"][0]
    r = client.get("/validation/data/?run=999999")
    assert r.status_code == 404 and "no validate run 999999" in r.json()["run"][0]
    r = client.get(f"/validation/data/?run={failed.id}")
    assert r.status_code == 404 and "failed" in r.json()["run"][0]


@pytest.mark.django_db
def test_the_user_s_measurements_against_a_profile_by_its_run_or_the_profile(client, demo):
    # given a finished calibrate run and the profile saved from it
    run = SimulationRun.objects.create(kind="calibrate", cluster=demo, status="succeeded", summary=calibrate_summary(),
                                       params={"measurements": "...", "fit": "gemm_efficiency"})
    profile = CalibrationProfile.objects.create(cluster=demo, name="fitted", values={"gemm_efficiency": 0.6},
                                                summary={"run": run.id, "fit": ["gemm_efficiency"]})
    # then the page offers both
    info = page_info(client.get("/validation/").content.decode())
    assert [r["id"] for r in info["calibrations"]["runs"]] == [run.id]
    assert info["calibrations"]["profiles"] == [{"id": profile.id, "name": "fitted", "cluster": "demo-256",
                                                 "run": run.id}]
    # when the measurements are read by the profile
    d = client.get(f"/validation/measurements/?profile={profile.id}").json()
    # then they are the run's entries in the corpus's shape: predicted with the fit, before it apart, on the GPU of
    # the run's cluster
    assert d["run"]["id"] == run.id and d["profile"]["values"] == {"gemm_efficiency": 0.6}
    assert [(o["measured"], o["predicted"], o["error"]) for o in d["observations"]] == [
        (2.0, 2.2, 0.1), (4.0, 3.6, -0.1), (10.0, 13.0, 0.3)]
    assert {o["gpu"] for o in d["observations"]} == {"h100-sxm-80gb"}
    assert d["selected"]["overall"] == summary_of([0.1, -0.1, 0.3])
    assert d["selected"]["before"]["overall"] == summary_of([0.5, 0.5, 1.0])
    assert d["selected"]["kinds"]["job"] == summary_of([0.1, -0.1])
    # and by the run itself, filtered by kind, the same observations of that kind
    d = client.get(f"/validation/measurements/?run={run.id}&kind=checkpoint").json()
    assert d["profile"] is None and [o["name"] for o in d["observations"]] == ["c0"]
    assert d["selected"]["before"]["overall"] == summary_of([1.0])


@pytest.mark.django_db
def test_measurements_refuse_naming_the_field(client, demo):
    r = client.get("/validation/measurements/")
    assert r.status_code == 400 and "run" in r.json()
    r = client.get("/validation/measurements/?profile=x")
    assert r.status_code == 400 and "profile" in r.json()
    r = client.get("/validation/measurements/?profile=424242")
    assert r.status_code == 404 and "no calibration profile 424242" in r.json()["profile"][0]
    empty = CalibrationProfile.objects.create(cluster=demo, name="by-hand", values={})
    r = client.get(f"/validation/measurements/?profile={empty.id}")
    assert r.status_code == 404 and "names no calibrate run" in r.json()["profile"][0]
    queued = SimulationRun.objects.create(kind="calibrate", cluster=demo, params={})
    r = client.get(f"/validation/measurements/?run={queued.id}")
    assert r.status_code == 404 and f"no finished calibrate run {queued.id}" in r.json()["run"][0]


def test_the_live_section_carries_the_run_s_figures():
    spec = sections.by_name("validation_stats")
    assert spec.fields == validation_live.FIELDS and spec.codec == "rows"
    # given the rows a validate run sends at its start and at its end, through the wire's codec and back
    for phase, doc in ((validation_live.PHASE_RUNNING, None), (validation_live.PHASE_DONE, result())):
        row = frames.decode_value(spec, frames.encode_value(spec, [validation_live.stats_row(phase, doc)]))[0]
        if doc is None:     # nothing known yet
            assert row["phase"] == "running" and row["median"] is None and row["count"] is None
            continue
        # then the end's row holds the run's figures
        assert row["phase"] == "done" and row["count"] == 5 and row["passed"] == 0
        assert row["median"] == pytest.approx(doc["overall"]["median"], rel=1e-6)
        assert row["median_before"] == pytest.approx(doc["before"]["overall"]["median"], rel=1e-6)
        assert row["cv_median"] == pytest.approx(0.25)


def test_the_result_view_and_the_scatter_come_from_the_validation_module():
    text = (FRONTEND / "js/capabilities/validation.js").read_text()
    for name in ('registerView("validation"', 'hover: "point"', '"y = x"', "band: true"):
        assert name in text, name
    assert "https://" not in (FRONTEND / "js/validation.js").read_text()      # no CDN: the project's chart.js
