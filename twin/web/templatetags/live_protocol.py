"""The live protocol's tables embedded in every page (web/base.html), so the browser decodes a REST snapshot
before any socket is open with the very tables a stream's metadata sends (twin/live/meta.py, docs/live.md)."""
from django import template
from django.utils.html import json_script

from twin.live.meta import protocol_info

register = template.Library()


@register.simple_tag
def live_protocol():
    """``<script id="live-protocol" type="application/json">``: read by frontend/js/frames.js ``protocol()``."""
    return json_script(protocol_info(), "live-protocol")
