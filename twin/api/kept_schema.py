"""The OpenAPI schema, built once per process and kept with its renderings (twin/api/schema_page.py serves it).

The schema is built from the code, the settings and the registered run kinds alone, not from the data or from who
asks (``/api/schema/`` serves the public schema: every operation, whoever the user), yet building it takes seconds
(2-3 s, and 1-2 s more to write it as YAML). So it is built on the first request and kept until what it is built
from changes: a setting (``override_settings``, as tests do; the caches excepted, which it does not read) or the run
kinds (:func:`twin.runs.registry.register` and ``unregister`` call :func:`forget`).

Kept values are never changed: the schema is shared by every response that serves it."""
from __future__ import annotations

import threading

from django.core.signals import setting_changed

# Settings the schema is not built from: a change of them keeps it (tests give every test caches of its own).
NOT_READ = frozenset({"CACHES"})

_lock = threading.RLock()   # building the schema may register run kinds (their first load), which forgets
_kept: dict = {}            # key -> the schema
_renderings: dict = {}      # (id of a kept schema, renderer, media type, indent) -> bytes


def forget() -> None:
    """Drop the kept schema: it is built anew on the next request."""
    with _lock:
        _kept.clear()
        _renderings.clear()


def _setting_changed(setting=None, **_) -> None:
    if setting not in NOT_READ:
        forget()


setting_changed.connect(_setting_changed, dispatch_uid="twin.api.kept_schema")


def schema(key, build):
    """The schema kept for ``key`` (the API version asked for), built by ``build()`` if none is."""
    with _lock:
        if key not in _kept:
            _kept[key] = build()
        return _kept[key]


def kept_renderings(renderer):
    """A subclass of ``renderer`` that renders a kept schema once per media type and keeps the bytes (any other data,
    e.g. an error, is rendered every time)."""

    class Kept(renderer):
        def render(self, data, accepted_media_type=None, renderer_context=None):
            with _lock:
                kept = any(data is s for s in _kept.values())
                key = (id(data), renderer, accepted_media_type, (renderer_context or {}).get("indent"))
                if kept and key in _renderings:
                    return _renderings[key]
            content = super().render(data, accepted_media_type, renderer_context)
            if kept:
                with _lock:
                    if any(data is s for s in _kept.values()):    # not forgotten meanwhile
                        _renderings[key] = content
            return content

    Kept.__name__ = Kept.__qualname__ = renderer.__name__
    return Kept
