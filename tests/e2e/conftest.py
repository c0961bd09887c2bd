"""End-to-end fixtures: the twin as a user gets it, in a real browser.

A daphne server (``twin.asgi:application``) and a Celery worker run as subprocesses on the pytest-django test
database and the real Redis (REDIS_URL), the worker on a queue of this session's own; meta-roce-24k (24,576 GPUs) and
demo-256 are built and committed (the servers see committed rows only); headless Debian Chromium, driven by
Playwright, opens the pages, one browser for all the tests and a fresh context (cookies, storage) per test.

All of it is set up once for the package and torn down after its last test: the committed rows are flushed then,
as a transactional test does, so the other test packages start from an empty database.

Without /usr/bin/chromium the tests are skipped, unless TWIN_E2E_REQUIRED=1 (CI), where they fail.
"""
from __future__ import annotations

import json
import threading
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from django.db import connections

from tests.e2e.browser import READY, PageProbe, launch, orm_beside_playwright, require_chromium, screenshot
from tests.processes import Daphne, Workers, stop_all, wait_for



def database_under_test() -> str:
    """The test database's name, once the session has named it (pytest-django's django_db_modify_db_settings: under
    pytest-xdist a suffix per worker), whether or not it is set up yet (set-up renames the connection's database)."""
    return connections["default"].creation._get_test_db_name()


PASSWORD = "e2e-password-not-secret"
# The smallest screen every page must fit without scrolling sideways (issue 40, item 10): a 1280 px laptop.
VIEWPORT = {"width": 1280, "height": 800}
PAGE_TIMEOUT_MS = 30_000          # correctness, not speed: bench/bench_ui.py measures against the budgets
RUN_SECONDS = 120


@pytest.fixture(scope="package", autouse=True)
def chromium():
    require_chromium()


@pytest.fixture(scope="package", autouse=True)
def _orm_beside_playwright():
    with orm_beside_playwright():
        yield


@contextmanager
def database(django_db_blocker):
    """Database access from the test thread, its connections closed after. While Playwright's event loop runs in this
    thread, Django keeps them per async context (asgiref's Local), apart from pytest-django's, which closes only its
    own: left open, a SQLite test database leaves its WAL file behind."""
    with django_db_blocker.unblock():
        try:
            yield
        finally:
            connections.close_all()


def in_thread(fn, *args):
    """Call ``fn`` in a thread without an event loop: async_to_sync (the live publisher) refuses to run in the test
    thread, where Playwright's loop runs. The thread's database connection is closed after."""
    out = {}

    def target():
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            out["error"] = e
        finally:
            connections.close_all()

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


# ------------------------------------------------------------------------------------------------- the twin
@dataclass
class ServedTwin:
    """A running twin as its tests reach it: the server, the workers and a superuser's API token."""

    daphne: Daphne
    workers: Workers
    token: str                                     # the superuser's API token

    @property
    def url(self) -> str:
        return self.daphne.url

    def api(self, path: str, body=None):
        """GET (or POST ``body``) the REST API on the running server as the superuser (token auth)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="GET" if body is None else "POST",
                                     headers={"Authorization": f"Token {self.token}",
                                              "Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"null")

    def wait_run(self, run_id: int, timeout: float = RUN_SECONDS) -> dict:
        def done():
            run = self.api(f"/api/runs/{run_id}/")
            return run if run["status"] in ("succeeded", "failed", "cancelled") else None
        run = wait_for(done, timeout=timeout, interval=0.25, what=f"run {run_id} to finish")
        assert run["status"] == "succeeded", f"{run}\nworker log:\n{self.workers.all[0].tail()}"
        return run


@dataclass
class Twin(ServedTwin):
    """What the tests of this package know of the running twin."""

    clusters: dict[str, int] = field(default_factory=dict)        # name -> id
    backend_links: dict[str, int] = field(default_factory=dict)   # name -> number of backend links
    gpus: dict[str, int] = field(default_factory=dict)            # name -> number of GPUs
    items: dict[str, int] = field(default_factory=dict)   # inventory kind -> pk of one item of demo-256
    names: dict[str, str] = field(default_factory=dict)   # inventory kind -> its name

    def start_run(self, cluster: str, **params) -> int:
        return self.api("/api/runs/", {"kind": "collective", "cluster": cluster, "params": params})["id"]


def _build(django_db_blocker) -> dict:
    """Build the clusters, the superuser and its token, committed; returns what the tests look up."""
    from django.contrib.auth.models import User
    from twin.api.models import ApiToken

    from sim.fabric.spec import load_spec
    from twin.inventory import models as m
    from twin.inventory.builder import build_cluster
    from twin.inventory.choices import FabricRole

    with database(django_db_blocker):
        clusters = {name: build_cluster(load_spec(name)).cluster for name in ("meta-roce-24k", "demo-256")}
        admin = User.objects.create_superuser("admin", password=PASSWORD)
        demo = clusters["demo-256"]
        sample = {
            "cluster": demo,
            "zone": m.Zone.objects.filter(cluster=demo).order_by("id").first(),
            "rack": m.Rack.objects.filter(cluster=demo).order_by("id").first(),
            "host": m.Host.objects.filter(cluster=demo).order_by("id").first(),
            "gpu": m.GPU.objects.filter(cluster=demo).order_by("index").first(),
            "switch": m.Switch.objects.filter(cluster=demo).order_by("id").first(),
            "link": m.Link.objects.filter(cluster=demo, fabric__role=FabricRole.BACKEND).order_by("id").first(),
        }
        return {
            "token": ApiToken.issue(admin)[1],
            "clusters": {name: c.id for name, c in clusters.items()},
            "backend_links": {name: m.Link.objects.filter(cluster=c, fabric__role=FabricRole.BACKEND).count()
                              for name, c in clusters.items()},
            "gpus": {name: m.GPU.objects.filter(cluster=c).count() for name, c in clusters.items()},
            "items": {kind: item.pk for kind, item in sample.items()},
            "names": {kind: item.name for kind, item in sample.items()},
        }


@pytest.fixture(scope="package")
def server_settings():
    """The servers' environment: live-push Redis keys of this session (Redis outlives the test database, whose
    run and cluster ids start from 1 again: a run page must not resync from a previous session's snapshot); this
    process publishes under the same keys. Rate-limit counters of this session too. A page tries a dropped live
    socket again within a second (TWIN_LIVE_RETRY_MAX_MS, 5 s by default): the server outages of test_live*.py are
    waited for."""
    from django.test import override_settings

    from tests.conftest import live_settings
    from twin.live import store
    prefix = f"test:e2e:{uuid.uuid4().hex[:12]}:"
    override = override_settings(**live_settings(prefix))
    override.enable()
    yield {"TWIN_LIVE_KEY_PREFIX": prefix, "TWIN_THROTTLE_KEY_PREFIX": f"{prefix}throttle",
           "TWIN_LIVE_RETRY_MAX_MS": "1000"}
    try:
        r = store.client()
        keys = list(r.scan_iter(match=prefix + "*", count=1000))
        if keys:
            r.delete(*keys)
    finally:
        override.disable()


@pytest.fixture(scope="package")
def test_database(django_db_setup, django_db_blocker):
    """The test database. pytest-django creates it only when a collected test is marked for it (``django_db`` or
    the ``db`` fixtures); these tests are not (they share committed data, not per-test transactions), so when they
    run alone it is created here."""
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    name = database_under_test()
    if connection.settings_dict["NAME"] == name:
        yield
        return
    with database(django_db_blocker):
        created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
        assert connection.settings_dict["NAME"] == name
    yield
    with database(django_db_blocker):
        teardown_databases(created, verbosity=0)


@pytest.fixture(scope="package")
def twin(test_database, django_db_blocker, server_settings, tmp_path_factory):
    from django.core.management import call_command

    logs = tmp_path_factory.mktemp("e2e-servers")
    queue = f"twin-e2e-{uuid.uuid4().hex[:10]}"
    workers = Workers(logs, n=1, queue=queue, env=server_settings)
    daphne = Daphne(logs, queue, env=server_settings)
    try:
        # the servers' start-up (imports, seconds each) overlaps the build; they read the clusters once asked
        workers.launch()
        daphne.launch()
        data = _build(django_db_blocker)      # in here: a build that fails half-way is flushed too
        workers.ensure()
        daphne.wait_up()
        yield Twin(daphne=daphne, workers=workers, **data)
    finally:
        stop_all(daphne, *workers.all)
        with database(django_db_blocker), connections["default"].constraint_checks_disabled():
            # (SQLite checks every deleted row's foreign keys, seconds for meta-roce-24k's rows, unless turned off:
            # the flush empties every table, so none is left dangling)
            call_command("flush", interactive=False, verbosity=0)


@contextmanager
def runs_held(twin: ServedTwin):
    """No worker takes a run while this lasts (each stops reading the queue: a restart would cost seconds), so a
    test sees a run queued whatever the machine's speed; they read it again after (a worker busy with an earlier
    test's run answers once it is done with it: nothing is taken meanwhile)."""
    from twin.celery import app as celery_app
    queue, workers = twin.workers.all[0].queue, sorted(twin.workers.hostnames)
    stopped = celery_app.control.cancel_consumer(queue, destination=workers, reply=True, timeout=RUN_SECONDS)
    assert len(stopped) == len(workers), stopped
    try:
        yield
    finally:
        replies = celery_app.control.add_consumer(queue, destination=workers, reply=True, timeout=RUN_SECONDS)
        assert len(replies) == len(workers), replies


@pytest.fixture(autouse=True)
def jobs_released(request, django_db_blocker):
    """A placed job holds its GPUs until released (docs/jobs.md), and the twin's GPUs are shared by every test of
    the package: the jobs a test leaves running are released after it, so that the next test's jobs find room."""
    yield
    if "twin" not in request.fixturenames:
        return
    from twin.runs import job_actions
    with database(django_db_blocker):
        for job in job_actions.holding():
            in_thread(job_actions.release_job, job)    # it publishes the freed GPUs live: not in Playwright's loop


@pytest.fixture
def orm(django_db_blocker):
    """Database access from a test (committed at once: the servers read the same database)."""
    with database(django_db_blocker):
        yield


# --------------------------------------------------------------------------------------------------- browser
@contextmanager
def headless_browser():
    """Headless Chromium through Playwright, closed after."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        b = launch(pw)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()


@pytest.fixture(scope="package")
def browser(chromium):
    with headless_browser() as b:
        yield b


class Visitor:
    """A user in the browser: one context (cookies) and one page, watched by a :class:`PageProbe`."""

    def __init__(self, browser, base_url: str, storage_state=None):
        self.context = browser.new_context(base_url=base_url, storage_state=storage_state,
                                           viewport=VIEWPORT)
        self.context.set_default_timeout(PAGE_TIMEOUT_MS)
        self.page = self.context.new_page()
        self.probe = PageProbe(self.page)

    def visit(self, path: str, shot: str | None = None):
        """Open ``path``, wait until the page says it is drawn with data, save a screenshot, check for problems.
        The page left is not waited for: the reads it still has in flight are cancelled, which the probe does not
        count (browser.ABORTED)."""
        response = self.page.goto(path)
        assert response is not None and response.ok, f"GET {path}: HTTP {response and response.status}"
        self.wait_ready()
        if shot:
            screenshot(self.page, shot)
        self.probe.assert_clean()
        return self.page

    def follow(self, action, **expected):
        """Leave the page by ``action`` (a click on a link, say); wait for the navigation."""
        with self.page.expect_navigation(**expected):
            action()

    def wait_ready(self):
        self.page.wait_for_selector(READY, state="attached")

    def twin_js(self, expr: str = "window.twin"):
        return self.page.evaluate(f"() => {expr}")

    def close(self):
        self.context.close()


@pytest.fixture(scope="package")
def admin_state(browser, twin):
    """The superuser's session, logged in once through /accounts/login/ as a user does."""
    v = Visitor(browser, twin.url)
    try:
        page = v.visit("/accounts/login/", shot="login")
        page.fill("input[name=username]", "admin")
        page.fill("input[name=password]", PASSWORD)
        with page.expect_navigation():
            page.click("form.login-form [type=submit]")
        assert "/accounts/login/" not in page.url, "the login was refused"
        assert page.locator("header .user").inner_text() == "admin"
        v.wait_ready()
        v.probe.assert_clean()
        return v.context.storage_state()
    finally:
        v.close()


@pytest.fixture
def visitor(browser, twin):
    """An anonymous user."""
    v = Visitor(browser, twin.url)
    yield v
    try:
        v.probe.assert_clean()
    finally:
        v.close()


@pytest.fixture
def admin(browser, twin, admin_state):
    """The superuser, logged in."""
    v = Visitor(browser, twin.url, storage_state=admin_state)
    yield v
    try:
        v.probe.assert_clean()
    finally:
        v.close()
