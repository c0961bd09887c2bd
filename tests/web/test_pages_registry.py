"""Pages register themselves: a module under twin/web/views/ that declares ``PAGE`` gets its routes and its
navigation entry with no edit of twin/web/urls.py or twin/web/nav.py."""
import importlib
import textwrap

import pytest
from django.urls import clear_url_caches, resolve, reverse

import twin.urls
import twin.web.urls
import twin.web.views
from twin.web import nav

pytestmark = pytest.mark.django_db

JOBS_PAGE = '''
"""A page as a later capability adds it."""
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path

from twin.web.nav import NavItem, Page


def jobs(request, cluster):
    return render(request, "web/placeholder.html", {"nav": "jobs-test"})


def jobs_data(request, cluster):
    return HttpResponse("{}", content_type="application/json")


PAGE = Page(nav=NavItem("jobs-test", "Jobs (test)", "jobs-test", order=45, cluster_scoped=True, group="operations"),
            urlpatterns=[path("clusters/<str:cluster>/jobs-test/", jobs, name="jobs-test"),
                         path("clusters/<str:cluster>/jobs-test.json", jobs_data, name="jobs-test-data")])
'''


def rebuild_urls():
    """What a process start does: find the pages, build the URLconf."""
    nav.pages.cache_clear()
    importlib.reload(twin.web.urls)
    importlib.reload(twin.urls)
    clear_url_caches()


@pytest.fixture
def jobs_module(tmp_path, monkeypatch):
    """twin/web/views/jobs_test_page.py, written where the page modules are looked for."""
    (tmp_path / "jobs_test_page.py").write_text(textwrap.dedent(JOBS_PAGE))
    monkeypatch.setattr(twin.web.views, "__path__", [*twin.web.views.__path__, str(tmp_path)])
    rebuild_urls()
    yield
    monkeypatch.undo()
    rebuild_urls()


def test_a_page_module_gets_its_routes_and_nav_entry(client, demo, jobs_module):
    # given a page module that declares PAGE (the fixture), when a page is served
    html = client.get("/").content.decode()
    # then its section is in the header, between Experiments and Inventory (its order), with its cluster's URL
    href = reverse("jobs-test", kwargs={"cluster": "demo-256"})
    assert f'href="{href}" data-group="operations"' in html
    labels = [item.label for item in nav.nav_items()]
    assert labels.index("Experiments") < labels.index("Jobs (test)") < labels.index("Inventory")
    # and its routes answer
    assert resolve(href).url_name == "jobs-test"
    assert client.get(href).status_code == 200
    assert client.get("/clusters/demo-256/jobs-test.json").json() == {}


def test_the_pages_of_the_twin_are_found_in_navigation_order():
    assert [i.key for i in nav.nav_items()] == ["overview", "clusters", "fabric", "gpus", "jobs", "storage",
                                                  "reliability", "power", "experiments", "debug", "schedules",
                                                  "calibration", "validation", "inventory"]
    for name in ("login", "logout", "healthz", "gpus-status", "experiments-compare", "inventory"):
        reverse(name, kwargs={"cluster": "x"} if name == "gpus-status" else None)
    assert not any(getattr(p, "name", None) == "jobs-test" for p in twin.web.urls.urlpatterns)
