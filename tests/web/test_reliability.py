"""The Reliability page renders for a built cluster (its runs table, the timeline, the charts, the form's fields from
the failures kind's declaration, real items to inject) and says so for an unknown one; it sits in the header after
Jobs and Storage; its failed-parts data answers for a failures run of the cluster only; the GPU page offers the failures replay."""
import json
import re
from pathlib import Path

import pytest

from sim.failures.params import FAILURES
from twin.inventory.models import GPU
from twin.runs.calibration import CALIBRATION
from twin.runs.models import SimulationRun
from twin.web.nav import nav_items

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def page_info(html: str) -> dict:
    m = re.search(r'<script id="reliability-info" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page embeds its data as #reliability-info"
    return json.loads(m.group(1))


def test_the_reliability_page_renders_its_shell_and_the_form_from_the_kind_s_declaration(client, demo):
    html = client.get("/clusters/demo-256/reliability/").content.decode()
    for hook in ('id="rel-runs"', 'id="failures-form"', 'id="rel-timeline"', 'id="rel-causes"', 'id="rel-phases"',
                 'id="rel-seeds"', 'id="rel-sweep"', 'id="rel-events"', 'id="replay-time"', "js/reliability.js"):
        assert hook in html, hook
    info = page_info(html)
    assert info["cluster"] == {"id": demo.id, "name": "demo-256", "gpus": 256}
    form = info["form"]
    assert form["kind"] == "failures" and [f["name"] for f in form["fields"]] == [p.name for p in FAILURES] + [
        CALIBRATION.name]
    days = next(f for f in form["fields"] if f["name"] == "days")
    assert days["default"] == FAILURES.by_name["days"].default and days["min"] == FAILURES.by_name["days"].min
    assert set(form["main"]) <= {p.name for p in FAILURES} and "inject" in form["main"]
    # and the injection hint names real items of this cluster's inventory
    assert info["examples"]["gpu"] == GPU.objects.get(cluster=demo, index=0).name
    assert info["examples"]["link"].startswith("demo-256.") and "~" in info["examples"]["link"]
    # and the engine's categories and states, for the charts
    assert info["tables"]["categories"]["gpu"]["consequence"] == "crash"
    assert info["tables"]["states"][:2] == ["training", "checkpointing"]


def test_an_unknown_cluster_is_a_404_that_says_so(client, demo):
    response = client.get("/clusters/nope/reliability/")
    assert response.status_code == 404 and "no cluster named &#x27;nope&#x27;" in response.content.decode()


def test_the_page_is_in_the_header_after_jobs_and_storage(client, demo):
    items = {item.key: item for item in nav_items()}
    keys = list(items)
    assert keys.index("reliability") == keys.index("storage") + 1 and items["reliability"].order == 39
    assert items["reliability"].group == "operations" and items["reliability"].cluster_scoped
    html = client.get("/clusters/demo-256/jobs/").content.decode()
    assert 'href="/clusters/demo-256/reliability/"' in html


def test_failed_parts_answer_for_a_failures_run_of_the_cluster_only(client, demo):
    other = SimulationRun.objects.create(kind="collective", cluster=demo, params={})
    assert client.get("/clusters/demo-256/reliability/failed.json").status_code == 400
    assert client.get("/clusters/demo-256/reliability/failed.json", {"run": other.pk}).status_code == 404
    assert client.get("/clusters/nope/reliability/failed.json", {"run": other.pk}).status_code == 404
    # a run whose timeline crashed a host and degraded a leaf: the host's GPUs, then the leaf's
    host = GPU.objects.get(cluster=demo, index=8).host
    leaf = "demo-256.be.rtsw.z00.000"
    summary = {"replay": {"wall_s": 86400.0, "events": [
        {"time": 3600.0, "category": "cpu", "item": host.name, "consequence": "crash", "lost_work": 60.0},
        {"time": 7200.0, "category": "network", "item": leaf, "consequence": "degrade", "lost_work": 0.0,
         "until": 9000.0}]}}
    run = SimulationRun.objects.create(kind="failures", cluster=demo, params={}, status="succeeded", summary=summary)
    doc = client.get("/clusters/demo-256/reliability/failed.json", {"run": run.pk}).json()
    cpu, net = doc["events"]
    assert doc["hours"] == 24 and cpu["item_kind"] == "host" and net["item_kind"] == "switch"
    assert cpu["gpus"] == sorted(GPU.objects.filter(host=host).values_list("index", flat=True))
    assert (cpu["t_hours"], cpu["lost_hours"]) == (1.0, 60 / 3600)
    assert (net["t_hours"], net["until_hours"]) == (2.0, 2.5) and len(net["gpus"]) > 0


def test_the_gpu_page_offers_the_failures_replay(client, demo):
    html = client.get("/clusters/demo-256/gpus/").content.decode()
    assert 'data-failed-url="/clusters/demo-256/reliability/failed.json"' in html
    # the colour mode and its replay slider come from the failures capability's browser module, embedded in every page
    assert '"/static/js/capabilities/failures.js"' in html
    module = (FRONTEND / "js/capabilities/failures.js").read_text()
    assert 'registerColourMode("failures"' in module and 'id="gpu-replay-time"' in module
