"""Headless Chromium for the end-to-end tests and bench/bench_ui.py: Debian's chromium driven by Playwright (never a
browser downloaded by ``playwright install``), and a watch on each page for what a user would call broken."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from twin.env import VAR_DIR

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync"]
SCREENSHOTS = VAR_DIR / "screenshots"
# Screenshots are for people looking at the pages, not checks: taken only when asked (TWIN_E2E_SCREENSHOTS=1), since
# a full-page PNG of every page visited costs the browser about a tenth of the package's CPU.
TAKE_SCREENSHOTS = os.environ.get("TWIN_E2E_SCREENSHOTS", "") == "1"
READY = 'body[data-ready="1"]'


def launch(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)


# A request the browser itself cancelled (its page navigated away, or the page's script aborted it), not a failure of
# the server or the network: Chromium's net::ERR_ABORTED.
ABORTED = "net::ERR_ABORTED"


class PageProbe:
    """Collects a page's problems: console errors, uncaught exceptions, failed requests (but those the browser
    cancelled, :data:`ABORTED`: a page left while its reads are in flight) and HTTP 4xx/5xx answers.
    Problems seen inside :meth:`outage` (the server is down on purpose) are kept apart in ``tolerated``."""

    def __init__(self, page):
        self.page, self.problems, self.tolerated, self._outage = page, [], [], False
        page.on("console", lambda m: m.type == "error" and self._add(f"console error: {m.text} at {_where(m)}"))
        page.on("pageerror", lambda e: self._add(f"uncaught exception: {e}"))
        page.on("requestfailed", self._failed)
        page.on("response", lambda r: r.status >= 400 and self._add(f"HTTP {r.status}: {r.request.method} {r.url}"))

    def _failed(self, request):
        if request.failure != ABORTED:
            self._add(f"request failed: {request.method} {request.url}: {request.failure}")

    def _add(self, problem: str):
        (self.tolerated if self._outage else self.problems).append(f"[{self.page.url}] {problem}")

    @contextmanager
    def outage(self):
        self._outage = True
        try:
            yield
        finally:
            self._outage = False

    def assert_clean(self):
        problems, self.problems = self.problems, []
        assert not problems, "the page has problems:\n  " + "\n  ".join(problems)


def _where(message) -> str:
    loc = message.location or {}
    return f"{loc.get('url', '?')}:{loc.get('lineNumber', '?')}"


def screenshot(page, name: str) -> Path | None:
    """The whole page as var/screenshots/<name>.png, when screenshots are asked for (:data:`TAKE_SCREENSHOTS`)."""
    if not TAKE_SCREENSHOTS:
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def require_chromium() -> None:
    """Skip the calling package's tests where Debian's chromium is missing; fail them instead under
    TWIN_E2E_REQUIRED=1 (CI)."""
    import os

    import pytest

    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
        if os.environ.get("TWIN_E2E_REQUIRED") == "1":
            pytest.fail(f"end-to-end tests required (TWIN_E2E_REQUIRED=1) but {reason}", pytrace=False)
        pytest.skip(f"end-to-end tests skipped: {reason}")


@contextmanager
def orm_beside_playwright():
    """Playwright's sync API keeps an event loop running in the test thread, where Django's ORM then refuses to run
    (SynchronousOnlyOperation): allowed while this lasts, in the test process only (the servers never get it)."""
    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        yield
