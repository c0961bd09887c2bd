import io

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.module_db import shared_rows
from twin.api.models import ApiToken
from twin.inventory.models import Cluster


def build_demo():
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())


@pytest.fixture(scope="module")
def demo_of_the_module(request, django_db_blocker):
    """True in a module that sets ``SHARED_DEMO = True``: demo-256 built once for it (tests/module_db.py). Elsewhere
    False: each test builds its own."""
    if not getattr(request.module, "SHARED_DEMO", False):
        yield False
        return
    for _ in shared_rows(request, django_db_blocker, build_demo):
        yield True


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
