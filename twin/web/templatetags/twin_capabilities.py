"""The capabilities' browser modules embedded in every page (web/base.html) as JSON, read by
frontend/js/registry.js ``loadCapabilities()``."""
from django import template
from django.utils.html import format_html_join, json_script

from twin.web.capabilities import browser_modules

register = template.Library()


@register.simple_tag
def capability_modules():
    """``<script id="twin-capabilities" type="application/json">``: the URLs of every capability's browser modules."""
    return json_script(browser_modules(), "twin-capabilities")


@register.simple_tag
def capability_preloads():
    """``<link rel="modulepreload">`` of every capability's browser module: for a page that imports them at start
    (the GPU page), fetched while its own scripts load."""
    return format_html_join("", '<link rel="modulepreload" href="{}">', ((url,) for url in browser_modules()))
