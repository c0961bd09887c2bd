"""The Power page renders for a built cluster (its runs table, its result area, the form's fields from the power
kind's declaration) and says so for an unknown one; it sits in the header after Reliability; the power kind's live
sections carry each GPU's draw and its rack's peak against the budget with a figure per rack for the zone overview.
Given / when / then."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from sim.power.params import POWER, POWER_SCHEDULE
from twin.capabilities.power import live as power_live
from twin.live import sections
from twin.runs.calibration import CALIBRATION
from twin.web.nav import nav_items

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


def page_info(html: str) -> dict:
    m = re.search(r'<script id="power-info" type="application/json">(.*?)</script>', html, re.S)
    assert m, "the page embeds its data as #power-info"
    return json.loads(m.group(1))


@pytest.mark.django_db
def test_the_power_page_renders_its_shell_and_the_form_from_the_kind_s_declaration(client, demo):
    html = client.get("/clusters/demo-256/power/").content.decode()
    for hook in ('id="power-runs"', 'id="power-form"', 'id="power-detail"', 'id="power-result"', 'id="power-live"',
                 'id="power-gpus"', 'id="power-headroom"', "js/power.js"):
        assert hook in html, hook
    info = page_info(html)
    assert info["cluster"] == {"id": demo.id, "name": "demo-256", "gpus": 256}
    form = info["form"]
    assert form["kind"] == "power" and [f["name"] for f in form["fields"]] == [p.name for p in POWER] + [
        CALIBRATION.name]                                        # (every job form offers a calibration)
    cap = next(f for f in form["fields"] if f["name"] == "power_cap")
    assert cap["min"] == POWER.by_name["power_cap"].min and cap["default"] is None
    # the job's GPUs default to what fits the cluster (POWER's gpus fits)
    assert next(f for f in form["fields"] if f["name"] == "gpus")["default"] == 256
    assert set(form["main"]) <= {p.name for p in POWER} and "power_cap" in form["main"]
    # and the schedule's form below, from its own declaration
    assert 'id="schedule-form"' in html and 'id="schedule-runs"' in html and 'id="schedule-result"' in html
    schedule = info["schedule_form"]
    assert schedule["kind"] == "power_schedule"
    assert [f["name"] for f in schedule["fields"]] == [p.name for p in POWER_SCHEDULE] + [CALIBRATION.name]


@pytest.mark.django_db
def test_an_unknown_cluster_is_a_404_that_says_so(client, demo):
    response = client.get("/clusters/nope/power/")
    assert response.status_code == 404 and "no cluster named &#x27;nope&#x27;" in response.content.decode()


@pytest.mark.django_db
def test_the_page_is_in_the_header_after_reliability(client, demo):
    items = {item.key: item for item in nav_items()}
    keys = list(items)
    assert keys.index("power") == keys.index("reliability") + 1
    assert items["power"].group == "operations" and items["power"].cluster_scoped
    assert 'href="/clusters/demo-256/power/"' in client.get("/clusters/demo-256/jobs/").content.decode()


def test_the_live_sections_quantize_shares_and_give_a_figure_per_rack():
    # given a GPU at 70 % of its TDP, one at 0, one not known, and racks at 50 %, 100 % and 150 % of their budget
    gpu = power_live.quantize([0.7, 0.0, np.nan], power_live.GPU_SCALE)
    rack = power_live.quantize([0.5, 1.0, 1.5], power_live.RACK_SCALE)
    # then the bytes are the shares x scale (a rack past 127 % reads 254), NOT_KNOWN where nothing is known
    assert gpu.tolist() == [175, 0, power_live.NOT_KNOWN]
    assert rack.tolist() == [100, 200, 254]
    # and the overview's figure per rack is the share, counting known items only
    spec = sections.by_name("gpu_power")
    weight, counted = spec.rack_figure(gpu, spec.constants)
    assert counted.tolist() == [True, True, False] and weight[:2].tolist() == pytest.approx([0.7, 0.0])
    spec = sections.by_name("rack_power")
    weight, counted = spec.rack_figure(rack, spec.constants)
    assert counted.all() and weight.tolist() == pytest.approx([0.5, 1.0, 1.27])
    assert sections.by_name("power_stats").fields == power_live.POWER_FIELDS


def test_the_gpu_page_colour_modes_come_from_the_power_module():
    text = (FRONTEND / "js/capabilities/power.js").read_text()
    for name in ('registerColourMode(name', 'powerMode("power", "gpu_power"', 'powerMode("rack_headroom", "rack_power"',
                 'registerView("power"'):
        assert name in text, name
