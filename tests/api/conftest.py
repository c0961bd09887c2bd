import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from tests.module_db import demo_cluster, demo_of_the_module  # noqa: F401 (a fixture)
from twin.api.models import ApiToken


@pytest.fixture
def demo(demo_of_the_module, db):
    return demo_cluster(demo_of_the_module)


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
