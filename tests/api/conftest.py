import io

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db import transaction
from rest_framework.test import APIClient

from twin.api.models import ApiToken
from twin.inventory.models import Cluster


def build_demo():
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())


def transactional_test(item) -> bool:
    marker = item.get_closest_marker("django_db")
    return bool(marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))
                or {"transactional_db", "live_server", "django_db_reset_sequences"} & set(item.fixturenames))


@pytest.fixture(scope="module")
def demo_of_the_module(request, django_db_blocker):
    """In a module that sets ``SHARED_DEMO = True``: demo-256 built once, in a transaction left open until the
    module's last test, then rolled back. Each test's own transaction (pytest-django's, as for any ``db`` test) is a
    savepoint inside it: what a test writes is rolled back at its end as before, and the next test finds demo-256 as
    built. Every test of the module after the first that asks for it sees it, asking or not: a module shares it only
    where that is fine for all of its tests, and only if none of them is transactional (``transactional_db`` flushes
    every table). Elsewhere nothing (each test builds its own)."""
    if not getattr(request.module, "SHARED_DEMO", False):
        yield False
        return
    transactional = [item.name for item in request.session.items
                     if getattr(item, "module", None) is request.module and transactional_test(item)]
    assert not transactional, f"SHARED_DEMO in a module with transactional tests: {transactional}"
    request.getfixturevalue("django_db_setup")
    with django_db_blocker.unblock():
        module = transaction.atomic()
        module.__enter__()
        try:
            build_demo()
        except BaseException:
            module.__exit__(None, None, None)
            raise
    yield True
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        module.__exit__(None, None, None)


@pytest.fixture
def demo(demo_of_the_module, db):
    if not demo_of_the_module:
        build_demo()
    return Cluster.objects.get(name="demo-256")


@pytest.fixture
def anon():
    return APIClient()


@pytest.fixture
def writer(db):
    """A client with a token of a user holding every inventory permission (not a superuser)."""
    user = User.objects.create_user("writer")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="inventory"))
    client = APIClient()
    client.token = ApiToken.issue(user)[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {client.token}")
    return client


@pytest.fixture
def reader(db):
    """A client with a token of a user holding no permission."""
    user = User.objects.create_user("reader")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    return client
