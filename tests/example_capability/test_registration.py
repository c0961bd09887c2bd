"""The example capability (tests/example_capability) is whole through discovery alone: named only in
TWIN_EXTRA_CAPABILITIES, its kind, live section, page and browser file are found, its kind runs and reports its
section, and frames.js decodes that section in Node from the server's tables as Frame.value does in Python.

It runs in a process of its own (the example must not stay registered in the suite's process), which prints what
it found as JSON."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.test_frames import run_node

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "tests.example_capability"

PROBE = r"""
import base64, json, os
import django
django.setup()
import numpy as np
from django.contrib.staticfiles import finders
from django.urls import reverse
from sim.fabric.layout import expand
from sim.fabric.spec import load_spec
from twin import discovery
from twin.live import frames, sections
from twin.runs import registry
from twin.web import nav
from twin.web.capabilities import browser_modules

kind = registry.get("example")
layout = expand(load_spec("demo-256"))
reports = []
def progress(fraction=None, message="", *, force=False, **values):
    raw = frames.encode(frames.Frame(seq=len(reports) + 1, run_id=1, progress=100 * fraction, status="running",
                                     time_ms=1.0, sections=frames.build_sections(**values)))
    reports.append(base64.b64encode(raw).decode())
summary, arrays = kind.run(layout, kind.params.validate({"steps": 3}), progress)
last = frames.decode(base64.b64decode(reports[-1]))
print(json.dumps({
    "packages": list(discovery.packages()),
    "kinds": list(registry.kinds()),
    "view": kind.view,
    "section": {"id": sections.by_name("example_heat").id, "owner": sections.by_name("example_heat").owner},
    "spec": frames.tables()["section_specs"]["example_heat"],
    "tables": frames.tables(),
    "page": reverse("example"),
    "nav": [p.nav.key for p in nav.pages() if p.nav],
    "static": bool(finders.find("js/capabilities/example.js")),
    "browser": browser_modules(),
    "summary": summary,
    "reports": reports,
    "heat": last.value("example_heat").tolist(),
    "array": arrays["example_heat"].tolist(),
}))
"""


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    env = {**os.environ, "TWIN_EXTRA_CAPABILITIES": PACKAGE, "DJANGO_SETTINGS_MODULE": "twin.settings",
           "TWIN_WARM_STRUCTURES": "false", "TWIN_VAR_DIR": str(tmp_path_factory.mktemp("var"))}
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_discovery_finds_the_example_and_everything_it_registers(found):
    assert found["packages"][-1] == PACKAGE
    assert "example" in found["kinds"] and found["view"] == "example"
    assert found["section"] == {"id": 200, "owner": f"{PACKAGE}.live"}
    assert found["spec"]["codec"] == "array" and found["spec"]["per"] == "gpu" and found["spec"]["constants"]["max"]
    assert found["page"] == "/example/" and "example" not in found["nav"]      # a page without a header entry
    assert found["static"] and any(url.endswith("js/capabilities/example.js") for url in found["browser"])


def test_the_kind_reports_its_section_every_step_and_keeps_it(found):
    assert len(found["reports"]) == 3 and found["summary"]["steps"] == 3
    assert found["heat"] == found["array"] and len(found["heat"]) == found["summary"]["gpus"] == 256
    assert found["summary"]["hot_gpus"] == sum(h > found["spec"]["constants"]["max"] // 2 for h in found["heat"])


def test_node_decodes_the_section_from_the_servers_tables_as_python_does(found, tmp_path):
    out = run_node(tmp_path, (
        f"frames.useProtocol({json.dumps(found['tables'])});\n"
        f"const f = frames.decodeFrame(bytes({json.dumps(found['reports'][-1])}));\n"
        "console.log(JSON.stringify({ heat: Array.from(f.sections.example_heat),\n"
        "  max: frames.sectionConstants('example_heat').max, per: frames.sectionSpec('example_heat').per }));\n"))
    assert out["heat"] == found["heat"]
    assert out["max"] == found["spec"]["constants"]["max"] and out["per"] == "gpu"


def test_the_example_package_is_the_only_place_that_names_it():
    hits = subprocess.run(["git", "grep", "-l", "-i", "example_heat\\|tests.example_capability\\|example\\.js"],
                          cwd=ROOT, capture_output=True, text=True).stdout.split()
    docs = ("docs/", "README.md")                 # prose may point newcomers at it
    outside = [h for h in hits if not h.startswith("tests/example_capability/") and not h.startswith(docs)]
    assert not outside, outside
