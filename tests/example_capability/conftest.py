"""The example capability's end-to-end fixtures: a daphne server and a Celery worker of their own, started with
``TWIN_EXTRA_CAPABILITIES=tests.example_capability`` (the only place the example is enabled), on the test database
with demo-256 built and committed, and headless Chromium (tests/e2e/browser.py). Torn down, and the committed rows
flushed, after the package's last test."""
from __future__ import annotations

import uuid

import pytest

from tests.e2e.browser import orm_beside_playwright, require_chromium
from tests.e2e.conftest import ServedTwin, Visitor, database, database_under_test, headless_browser
from tests.processes import Daphne, Workers

PACKAGE = "tests.example_capability"


@pytest.fixture(scope="package", autouse=True)
def chromium_here():
    require_chromium()


@pytest.fixture(scope="package", autouse=True)
def example_orm_beside_playwright():
    with orm_beside_playwright():
        yield


@pytest.fixture(scope="package")
def example_twin(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import setup_databases, teardown_databases

    from sim.fabric.spec import load_spec
    from twin.api.models import ApiToken
    from twin.inventory.builder import build_cluster

    created = None
    if connection.settings_dict["NAME"] != database_under_test():
        with database(django_db_blocker):
            created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    logs = tmp_path_factory.mktemp("example-servers")
    queue = f"twin-example-{uuid.uuid4().hex[:10]}"
    prefix = f"test:example:{uuid.uuid4().hex[:12]}:"
    env = {"TWIN_EXTRA_CAPABILITIES": PACKAGE, "TWIN_LIVE_KEY_PREFIX": prefix,
           "TWIN_THROTTLE_KEY_PREFIX": f"{prefix}throttle"}
    workers = Workers(logs, n=1, queue=queue, env=env)
    daphne = Daphne(logs, queue, env=env)
    try:
        # the servers' start-up (imports, seconds each) overlaps the build and each other, as in tests/e2e
        workers.launch()
        daphne.launch()
        with database(django_db_blocker):
            build_cluster(load_spec("demo-256"))
            admin = User.objects.create_superuser("example-admin", password="example-not-secret")
            token = ApiToken.issue(admin)[1]
        workers.ensure()
        daphne.wait_up()
        yield ServedTwin(daphne=daphne, workers=workers, token=token)
    finally:
        daphne.stop()
        workers.stop()
        with database(django_db_blocker):
            call_command("flush", interactive=False, verbosity=0)
            if created is not None:
                teardown_databases(created, verbosity=0)


@pytest.fixture(scope="package")
def example_browser(chromium_here):
    with headless_browser() as b:
        yield b


@pytest.fixture
def visitor(example_browser, example_twin):
    """An anonymous user (the twin's pages and API answer reads without a login)."""
    v = Visitor(example_browser, example_twin.url)
    yield v
    try:
        v.probe.assert_clean()
    finally:
        v.close()
