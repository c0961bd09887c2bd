"""Where the twin finds its capabilities: every package under ``twin/capabilities/``, then those named in
``TWIN_EXTRA_CAPABILITIES`` (comma-separated; a deployment's own, or a test's example).

A capability package holds one module per role it plays, by a fixed name: ``kinds`` (its run kinds, registered
with :mod:`twin.runs.registry`), ``live`` (its live frame sections, :mod:`twin.live.sections`), ``page`` (its page,
found by :func:`twin.web.nav.pages`), and its ``__init__`` names its browser files. The shared code (the task
runner, the wire protocol, the publisher, the runs API, the GPU and result pages) asks :func:`modules` for the
modules of one role and loops over what they registered; none of it names a capability. Each role's modules are
imported when that role is first used, so a process that only serves pages does not import the run kinds.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache
from types import ModuleType

CAPABILITIES_PACKAGE = "twin.capabilities"


def extra_capabilities() -> tuple[str, ...]:
    """Capability packages outside twin/capabilities: the setting ``TWIN_EXTRA_CAPABILITIES`` (read from the
    environment by twin/settings.py, each package checked to exist), a tuple or a comma-separated string."""
    from django.conf import settings

    raw = getattr(settings, "TWIN_EXTRA_CAPABILITIES", ())
    if isinstance(raw, str):
        raw = raw.split(",")
    return tuple(name.strip() for name in raw if name.strip())


@cache
def packages() -> tuple[str, ...]:
    """Every capability package, by name: twin/capabilities' in alphabetical order, then the extra ones."""
    root = importlib.import_module(CAPABILITIES_PACKAGE)
    own = tuple(f"{CAPABILITIES_PACKAGE}.{m.name}" for m in sorted(pkgutil.iter_modules(root.__path__),
                                                                    key=lambda m: m.name) if m.ispkg)
    return own + tuple(p for p in extra_capabilities() if p not in own)


def modules(role: str) -> list[ModuleType]:
    """The ``role`` module (``kinds``, ``live``, ``page``) of every capability that has one, imported."""
    found = []
    for package in packages():
        name = f"{package}.{role}"
        if importlib.util.find_spec(name) is not None:
            found.append(importlib.import_module(name))
    return found


def capability_of(module_name: str) -> str:
    """The capability package a module belongs to (its name up to the role), e.g. for a registered item's origin."""
    for package in packages():
        if module_name == package or module_name.startswith(package + "."):
            return package
    return module_name
