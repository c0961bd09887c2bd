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

from tests.module_db import demo_cluster, demo_of_the_module  # noqa: F401 (a fixture)
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


@pytest.fixture
def demo(demo_of_the_module, db):
    """demo-256, built through the build_cluster command (the worker reads it from the same database), or the
    module's (``SHARED_DEMO``: modules without a worker)."""
    return demo_cluster(demo_of_the_module)
