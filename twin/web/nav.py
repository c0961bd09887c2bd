"""The pages of the browser twin, as data: each page module under twin/web/views/ declares its routes and its
navigation entry in one place (and so does each capability's ``page`` module), ``PAGE = Page(urlpatterns=[...], nav=NavItem(...))``; :func:`pages` finds them, and
twin/web/urls.py (the routes) and twin/web/context.py (the header's navigation) are both built from it. A later
capability adds a page by adding one module."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache

PAGES_PACKAGE = "twin.web.views"


@dataclass(frozen=True)
class NavItem:
    key: str                  # matched against the page's ``nav`` context value to highlight the current section
    label: str
    url_name: str             # a URL name; cluster-scoped views take the cluster name as ``cluster``
    order: int                # position in the header, lowest first
    cluster_scoped: bool = False
    group: str = "twin"       # "twin": the cluster as built and as it behaves; "operations": what runs on it


@dataclass(frozen=True)
class Page:
    """What a page module declares as ``PAGE``: its routes (the page and the JSON it loads) and its navigation
    entry (None: not in the header, e.g. the login page)."""

    urlpatterns: list
    nav: NavItem | None = None


@cache
def pages() -> tuple[Page, ...]:
    """Every ``PAGE`` of the modules and packages directly under twin/web/views/ and of every capability's ``page``
    module (:func:`twin.discovery.modules`), in navigation order (pages without an entry last, by module name).
    Found once per process."""
    from twin import discovery
    package = importlib.import_module(PAGES_PACKAGE)
    candidates = [importlib.import_module(f"{PAGES_PACKAGE}.{info.name}")
                  for info in pkgutil.iter_modules(package.__path__)] + discovery.modules("page")
    found = []
    for module in candidates:
        page = getattr(module, "PAGE", None)
        if page is not None:
            found.append((page.nav.order if page.nav else float("inf"), module.__name__, page))
    return tuple(page for *_, page in sorted(found, key=lambda t: t[:2]))


def urlpatterns() -> list:
    """The routes of every page."""
    return [pattern for page in pages() for pattern in page.urlpatterns]


def nav_items() -> list[NavItem]:
    """The header's sections."""
    return [page.nav for page in pages() if page.nav is not None]
