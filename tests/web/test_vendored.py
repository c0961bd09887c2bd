"""The vendored chart library (frontend/vendor/uplot/, docs/ui.md "Charts"): uPlot at its pinned version with its
licence; chart-base.js and experiments.css load it from those files (no CDN, no build step); the static files'
finders find it, collectstatic collects it and the app serves it as a JavaScript module."""
import re
from pathlib import Path

from django.contrib.staticfiles import finders
from django.contrib.staticfiles.views import serve
from django.core.management import call_command
from django.test import RequestFactory, override_settings

FRONTEND = Path(__file__).resolve().parents[2] / "frontend"
VENDOR = FRONTEND / "vendor" / "uplot"
VERSION = "1.6.32"
FILES = ["LICENSE", "README.md", "uPlot.esm.js", "uPlot.min.css"]


def test_the_pinned_version_is_vendored_with_its_licence():
    assert sorted(p.name for p in VENDOR.iterdir()) == FILES       # what the pages load, its licence, the note
    readme = (VENDOR / "README.md").read_text()
    assert f"uPlot {VERSION}" in readme and f"uplot@{VERSION}" in readme and "MIT" in readme
    assert "uPlot.js (μPlot)" in (VENDOR / "uPlot.esm.js").read_text()[:400]
    assert f"(v{VERSION})" in (VENDOR / "uPlot.esm.js").read_text()[:400]
    assert "The MIT License" in (VENDOR / "LICENSE").read_text()


def test_the_pages_load_the_vendored_files():
    base = (FRONTEND / "js" / "chart-base.js").read_text()
    [module] = re.findall(r'^import \w+ from "([^"]*uPlot[^"]*)";', base, re.M)
    assert (FRONTEND / "js" / module).resolve() == VENDOR / "uPlot.esm.js"
    css = (FRONTEND / "css" / "experiments.css").read_text()
    [sheet] = re.findall(r'@import url\("([^"]+)"\);', css)
    assert (FRONTEND / "css" / sheet).resolve() == VENDOR / "uPlot.min.css"
    assert "://" not in base and "://" not in css


def test_static_files_find_collect_and_serve_it(tmp_path):
    for name in FILES:
        assert Path(finders.find(f"vendor/uplot/{name}")).resolve() == VENDOR / name
    with override_settings(STATIC_ROOT=tmp_path):
        call_command("collectstatic", interactive=False, verbosity=0)
    assert (tmp_path / "vendor" / "uplot" / "uPlot.esm.js").read_bytes() == (VENDOR / "uPlot.esm.js").read_bytes()
    # as the app serves static files (twin/asgi.py: ASGIStaticFilesHandler), with a JavaScript type (a browser
    # refuses a module of another type)
    response = serve(RequestFactory().get("/static/vendor/uplot/uPlot.esm.js"), "vendor/uplot/uPlot.esm.js",
                     insecure=True)
    assert response.status_code == 200 and "javascript" in response["Content-Type"]
