"""The Debug page renders for a built cluster (its rehearsal picker, heatmap canvas, forms from the DEBUG and STARTUP
declarations) and says so for an unknown one; ``debug/<run>.json`` gives a rehearsal's heatmap cells from the stored
arrays, and only for the cluster's debug and startup runs; the GPU page offers the debug colouring."""
import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

from twin.capabilities.debug.data import HEATMAP_STATES
from twin.runs.models import RunArray, SimulationRun

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def page_info(html: str) -> dict:
    m = re.search(r'<script id="debug-info" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page embeds its data as #debug-info"
    return json.loads(m.group(1))


def test_the_debug_page_renders_its_shell_and_forms(client, demo):
    html = client.get("/clusters/demo-256/debug/").content.decode()
    for hook in ('id="debug-run"', 'id="stop-heatmap"', 'id="culprit"', 'id="stragglers"', 'id="debug-form"',
                 'id="startup-form"', 'id="startup-chart"', "js/debug.js", 'href="/clusters/demo-256/debug/"'):
        assert hook in html, hook
    info = page_info(html)
    assert info["cluster"] == {"id": demo.id, "name": "demo-256", "gpus": 256}
    fields = {k: [f["name"] for f in f_["fields"]] for k, f_ in info["forms"].items()}
    assert {"inject", "entries", "timeout_s", "tp", "pp", "dp"} <= set(fields["debug"])
    assert {"gpus", "creation", "split", "store_backend"} <= set(fields["startup"])


def test_an_unknown_cluster_is_a_404_that_says_so(client, demo):
    response = client.get("/clusters/nope/debug/")
    assert response.status_code == 404 and "no cluster named &#x27;nope&#x27;" in response.content.decode()


def test_a_rehearsals_data_holds_its_heatmap_cells_and_culprit_rows(client, demo):
    # given a finished rehearsal of 4 ranks whose rank 2 stopped (as the debug kind stores it)
    state = np.array([[3, 3, 3], [3, 3, 2], [3, 1, 0], [3, 3, 2]], np.uint8)
    summary = {"verdict": "hang", "ranks": 4, "culprit": {"ranks": [2], "explanation": "rank 2 never entered"},
               "heatmap": {"level": "rank", "labels": ["0", "1", "2", "3"], "record_ids": [40, 41, 42],
                           "culprit_rows": [2]}}
    run = SimulationRun.objects.create(kind="debug", cluster=demo, status="succeeded", params={}, summary=summary)
    RunArray.pack(run, "heatmap_state", state, "uint8").save()
    # when the page asks for it
    doc = client.get(f"/clusters/demo-256/debug/{run.pk}.json").json()
    # then the cells are the stored states, row-major, and the culprit's row is marked
    h = doc["heatmap"]
    cells = np.frombuffer(base64.b64decode(h["cells"]), np.uint8).reshape(h["shape"])
    assert cells.tolist() == state.tolist() and h["culprit"] == [2] and h["rows"] == ["0", "1", "2", "3"]
    assert h["states"] == {str(k): v for k, v in HEATMAP_STATES.items()}
    assert doc["summary"]["culprit"]["ranks"] == [2] and "heatmap" not in doc["summary"]


def test_only_the_clusters_debug_and_startup_runs_are_served(client, demo):
    other = SimulationRun.objects.create(kind="collective", cluster=demo, status="succeeded", params={})
    queued = SimulationRun.objects.create(kind="startup", cluster=demo, params={})
    assert client.get(f"/clusters/demo-256/debug/{other.pk}.json").status_code == 404
    assert client.get(f"/clusters/demo-256/debug/{2**63}.json").status_code == 404
    doc = client.get(f"/clusters/demo-256/debug/{queued.pk}.json").json()
    assert doc["status"] == "queued" and doc["summary"] is None


def test_the_gpu_page_and_the_fabric_page_take_the_debug_links(client, demo):
    gpus = client.get("/clusters/demo-256/gpus/").content.decode()
    # the colour mode is registered by the debug capability's browser module, which every page embeds
    assert '"/static/js/capabilities/debug.js"' in gpus
    assert 'registerColourMode("debug"' in (FRONTEND / "js/capabilities/debug.js").read_text()
    fabric = client.get("/clusters/demo-256/fabric/").content.decode()
    assert 'id="marked-list"' in fabric
