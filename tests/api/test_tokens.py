"""API tokens are stored as hashes (twin.api.models): the database holds no usable token, a token made before hashing
keeps working after the migration that hashes it, a wrong token is refused (API and WebSocket)."""
import json

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from twin.api.models import ApiToken


def rows_as_text() -> str:
    return json.dumps(list(ApiToken.objects.values()), default=str)


def test_the_database_holds_only_a_hash_and_the_token_works(db):
    user = User.objects.create_user("alice")
    _row, token = ApiToken.issue(user)
    # the token is nowhere in the database: only its public key and a hash
    assert token not in rows_as_text() and token.split(".", 1)[1] not in rows_as_text()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/inventory/clusters/").status_code == 200
    # and what the database holds does not authenticate
    stored = ApiToken.objects.get()
    for guess in (stored.digest, f"twin_{stored.key}.{stored.digest}", stored.key):
        client.credentials(HTTP_AUTHORIZATION=f"Token {guess}")
        assert client.get("/api/inventory/clusters/").status_code == 401, guess


def test_a_wrong_token_is_refused_even_with_the_right_key(db):
    _row, token = ApiToken.issue(User.objects.create_user("bob"))
    client = APIClient()
    for wrong in (token[:-1] + ("A" if token[-1] != "A" else "B"), "nope", "x" * 5000, token[:17] + "\x00"):
        client.credentials(HTTP_AUTHORIZATION=f"Token {wrong}")
        resp = client.get("/api/inventory/clusters/")
        assert resp.status_code == 401 and resp.json() == {"detail": "Invalid token."}


def test_an_inactive_users_token_is_refused(db):
    user = User.objects.create_user("carol")
    _row, token = ApiToken.issue(user)
    user.is_active = False
    user.save()
    assert ApiToken.user_for(token) is None


LEGACY = "0123456789abcdef0123456789abcdef01234567"     # a plain token as Django REST framework made them


@pytest.mark.django_db(transaction=True)
def test_a_plain_token_made_before_hashing_keeps_working_after_the_migration():
    executor = MigrationExecutor(connection)
    executor.migrate([("api", "0001_api_token")])
    # given the plain token table of before, with a token of dave's
    user = User.objects.create_user("dave")
    timestamp = "datetime" if connection.vendor == "sqlite" else "timestamp with time zone"
    with connection.cursor() as c:
        c.execute('CREATE TABLE "authtoken_token" ("key" varchar(40) NOT NULL PRIMARY KEY, '
                  f'"created" {timestamp} NOT NULL, "user_id" integer NOT NULL UNIQUE)')
        c.execute('INSERT INTO "authtoken_token" ("key", "created", "user_id") VALUES (%s, %s, %s)',
                  [LEGACY, "2026-01-02 03:04:05", user.pk])
    # when the migrations run
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    # then the plain table is gone, the token hashed, and it still authenticates, over REST and WebSocket
    assert "authtoken_token" not in connection.introspection.table_names()
    assert LEGACY not in rows_as_text() and ApiToken.objects.get().created.year == 2026
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {LEGACY}")
    assert client.get("/api/inventory/clusters/").status_code == 200
    assert ApiToken.user_for(LEGACY) == user and ApiToken.user_for(LEGACY[:-1] + "8") is None


@pytest.mark.django_db(transaction=True)
def test_websocket_tokens_use_the_same_check(settings):
    from twin.asgi import application

    settings.TWIN_API_ANONYMOUS_READ = False
    _row, token = ApiToken.issue(User.objects.create_user("erin"))

    async def first(path):
        comm = WebsocketCommunicator(application, path)
        assert (await comm.connect())[0]
        msg = json.loads((await comm.receive_output(timeout=5))["text"])
        await comm.disconnect()
        return msg

    async def scenario():
        assert (await first(f"/ws/clusters/none/?token={token}"))["code"] == 4404     # authenticated: not found
        assert (await first(f"/ws/clusters/none/?token={token}x"))["code"] == 4401

    async_to_sync(scenario)()


def test_the_admin_makes_a_token_and_shows_it_once(db, client):
    admin = User.objects.create_superuser("root", password="pw-123456")
    client.force_login(admin)
    resp = client.post("/admin/api/apitoken/add/", {"user": admin.pk, "description": "ci"}, follow=True)
    shown = [str(m) for m in resp.context["messages"]]
    token = next(w for m in shown for w in m.split() if w.startswith("twin_"))
    assert ApiToken.user_for(token) == admin and token not in rows_as_text()
