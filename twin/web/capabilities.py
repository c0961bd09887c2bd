"""The capabilities' browser modules: each capability package names its files under frontend/ in its ``__init__``
(``BROWSER = ("js/capabilities/<cap>.js",)``, static paths); :func:`browser_modules` gives their URLs, in the order of
:func:`twin.discovery.packages`, and every page embeds them (web/base.html, ``{% capability_modules %}``), so
frontend/js/registry.js ``loadCapabilities()`` imports each once and the shared pages (the GPU grid, a run's results)
find the colour modes and result views by name, naming no capability themselves."""
from __future__ import annotations

import importlib

from django.templatetags.static import static

from twin import discovery


def browser_files() -> list[str]:
    """Every capability's browser files (static paths), capability by capability."""
    found = []
    for package in discovery.packages():
        for path in getattr(importlib.import_module(package), "BROWSER", ()):
            if path not in found:
                found.append(path)
    return found


def browser_modules() -> list[str]:
    """The URLs of every capability's browser modules (django ``static()``)."""
    return [static(path) for path in browser_files()]
