"""The example's page, ``/example/``: found by twin.web.nav.pages() like every capability's ``page`` module, with no
entry in the header (a test capability)."""
from __future__ import annotations

from django.template import engines
from django.urls import path

from twin.web.nav import Page

TEMPLATE = engines["django"].from_string("""{% extends "web/base.html" %}
{% block title %}Example{% endblock %}
{% block content %}<h1 id="example-title">Example capability</h1>
<p>A test-only capability: its run kind, live section, result view and colour mode come from one package.</p>
{% endblock %}""")


def example_page(request):
    from django.http import HttpResponse

    return HttpResponse(TEMPLATE.render({"nav": "example"}, request))


PAGE = Page(urlpatterns=[path("example/", example_page, name="example")])
