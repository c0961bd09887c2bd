"""The capabilities' browser code: each capability package names its browser modules (``BROWSER``), every page
embeds their URLs (#twin-capabilities, read by frontend/js/registry.js), each module registers the result view of
each of its kinds, and the shared hubs (gpus.js, run_results.js) name no capability."""
import importlib
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from django.templatetags.static import static

from twin import discovery
from twin.runs import registry
from twin.web.capabilities import browser_files, browser_modules

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
HUBS = ("js/gpus.js", "js/run_results.js")
# what a capability is called in the browser: its colour modes, views, kinds and live sections
CAPABILITY_WORDS = ("training", "checkpoint", "failures", "debug", "job_stats", "collective", "fabric_health",
                    "figure", "startup", "storage", "fanout", "power", "rack_headroom", "gpu_power",
                    "rack_power", "power_stats", "validation", "validate", "validation_stats")
GENERIC_VIEWS = {"summary", "sweep"}                # run_results.js and run_view.js draw these


def embedded(page: str) -> list[str]:
    found = re.search(r'<script id="twin-capabilities" type="application/json">(.*?)</script>', page, re.S)
    assert found, "the page does not embed #twin-capabilities"
    return json.loads(found.group(1))


def test_every_capability_names_its_browser_modules_and_they_exist():
    for package in discovery.packages():
        files = getattr(importlib.import_module(package), "BROWSER", ())
        assert files, f"{package} names no browser module (BROWSER)"
        for path in files:
            assert (FRONTEND / path).is_file(), f"{package}: {path} is not under frontend/"
    assert browser_modules() == [static(path) for path in browser_files()]


@pytest.mark.parametrize("path", ["/", "/experiments/", "/clusters/demo-256/gpus/"])
def test_every_page_embeds_every_capability_module(client, demo, path):
    page = client.get(path).content.decode()
    urls = embedded(page)
    assert urls == browser_modules()
    for cap in ("collectives", "storage", "jobs", "failures", "debug", "power", "validation"):
        assert static(f"js/capabilities/{cap}.js") in urls
    if "/gpus/" in path:   # the GPU page imports them at start: preloaded
        for url in urls:
            assert f'<link rel="modulepreload" href="{url}">' in page


def test_an_extra_capability_module_is_embedded(client, db, settings, tmp_path, monkeypatch):
    (tmp_path / "extra_cap").mkdir()
    (tmp_path / "extra_cap" / "__init__.py").write_text(textwrap.dedent('''
        """A deployment's own capability: a browser module and nothing else."""
        BROWSER = ("js/extra/colour.js",)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.TWIN_EXTRA_CAPABILITIES = "extra_cap"
    discovery.packages.cache_clear()
    try:
        urls = embedded(client.get("/experiments/").content.decode())
        assert urls[-1] == static("js/extra/colour.js") and len(urls) == len(browser_files())
    finally:
        sys.modules.pop("extra_cap", None)
        discovery.packages.cache_clear()


def test_each_kind_view_is_registered_by_its_capability():
    """A kind's `view` is drawn by a view its own capability's browser modules register (or a generic one)."""
    for kind in registry.kinds().values():
        if kind.view in GENERIC_VIEWS:
            continue
        package = discovery.capability_of(kind.run.__module__)
        files = getattr(importlib.import_module(package), "BROWSER", ())
        text = "".join((FRONTEND / path).read_text() for path in files)
        assert f'registerView("{kind.view}"' in text, f"{kind.name}: no module of {package} registers {kind.view!r}"


def hub_words(path: str) -> list[str]:
    text = (FRONTEND / path).read_text()
    # (the value cards' CSS class, shared by every page, is no capability)
    text = text.replace('class="figure"', "")
    words = set(CAPABILITY_WORDS) | {k.view for k in registry.kinds().values()} - GENERIC_VIEWS
    words -= {"job", "jobs"}                     # the generic "job" colour mode: the GPUs of running runs
    return sorted({w for w in words if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text, re.I)})


@pytest.mark.parametrize("path", HUBS)
def test_the_shared_hubs_name_no_capability(path):
    assert hub_words(path) == [], f"{path} names capabilities"


def test_the_gpu_page_names_no_colour_mode_of_a_capability(client, demo):
    page = client.get("/clusters/demo-256/gpus/").content.decode()
    select = re.search(r'<select id="gpu-color-mode">(.*?)</select>', page, re.S).group(1)
    assert "<option" not in select
