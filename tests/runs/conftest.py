"""Real Celery workers for the runs tests (tests/processes.py): processes started with ``celery -A twin worker
--pool=solo`` against the test database (a file on SQLite, ``test_<name>`` on PostgreSQL) and the real Redis
(REDIS_URL), on the session's queue (TWIN_CELERY_QUEUE, tests/conftest.py), so that no other worker on the same Redis
can take the tests' tasks.

Tests that use workers are ``@pytest.mark.django_db(transaction=True)``: a worker sees committed rows only.
"""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from tests.processes import Workers
from twin.api.models import ApiToken


@pytest.fixture(scope="session")
def _worker_pool(django_db_setup, django_db_blocker, tmp_path_factory):
    # The workers also register the test kind of tests/runs/echo_kind.py (what a deployment's own kinds would do).
    pool = Workers(tmp_path_factory.mktemp("celery"), env={"TWIN_RUN_KIND_MODULES": "tests.runs.echo_kind"})
    try:
        yield pool
    finally:
        pool.stop()  # before the test database is dropped


@pytest.fixture
def workers(_worker_pool, transactional_db):
    """Two running workers (restarted if a test killed one: relaunched as soon as that test ends, so that their
    start-up overlaps what comes next; the next test that asks for them waits for their ping)."""
    yield _worker_pool.ensure()
    _worker_pool.launch()


@pytest.fixture
def runner(db):
    """A client with a token of a user who may start, cancel and schedule runs and edit the inventory."""
    user = User.objects.create_user("runner")
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label__in=("runs", "django_celery_beat", "inventory")))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client


def _build_demo():
    import io

    from django.core.management import call_command

    from twin.inventory.models import Cluster
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return Cluster.objects.get(name="demo-256")


@pytest.fixture
def demo(db):
    """demo-256, built through the build_cluster command (the worker reads it from the same database)."""
    return _build_demo()


@pytest.fixture(scope="module")
def _module_demo(django_db_setup, django_db_blocker):
    from django.core.management import call_command

    with django_db_blocker.unblock():
        _build_demo()
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def module_demo(_module_demo, db):
    """demo-256 built once per module and committed, for a module whose tests are all ``django_db`` (each test's
    writes, changes to the cluster included, roll back; a transactional test's flush would remove it): many tests
    that each only need a cluster to refer to. The database is flushed after the module's last test, as after a
    transactional test."""
    from twin.inventory.models import Cluster
    return Cluster.objects.get(name="demo-256")
