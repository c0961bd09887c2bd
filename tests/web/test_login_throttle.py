"""Failed logins and API calls are throttled (twin/api/logins.py, twin/api/throttling.py), counted in Redis:
after TWIN_LOGIN_FAILURES_MAX wrong passwords for a name or from an address, logins are refused with 429 and
Retry-After, even with the right password; API calls over their rate get 429 with Retry-After; pages are not
throttled."""
import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from twin.api.models import ApiToken

PASSWORD = "right-password-123"


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)


def login(client, path, username, password, address="10.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_the_11th_wrong_password_is_refused_even_with_the_right_one(alice, settings, path):
    client = Client()
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX):
        assert login(client, path, "alice", "wrong").status_code == 200     # the form again, with its error
    resp = login(client, path, "alice", PASSWORD)
    assert resp.status_code == 429 and 0 < int(resp["Retry-After"]) <= settings.TWIN_LOGIN_FAILURES_WINDOW
    assert b"Too many failed logins" in resp.content and "_auth_user_id" not in client.session
    # the name is locked from another address too; another name from another address is not
    assert login(client, path, "alice", PASSWORD, address="10.0.0.2").status_code == 429
    User.objects.create_user("bob", password=PASSWORD, is_staff=True)
    assert login(Client(), path, "bob", PASSWORD, address="10.0.0.3").status_code == 302


def test_one_address_trying_many_names_is_locked(alice, settings):
    client = Client()
    for i in range(settings.TWIN_LOGIN_FAILURES_MAX):
        login(client, "/accounts/login/", f"user{i}", "wrong")
    assert login(client, "/accounts/login/", "alice", PASSWORD).status_code == 429


def test_below_the_limit_the_right_password_logs_in(alice, settings):
    client = Client()
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX - 1):
        login(client, "/accounts/login/", "alice", "wrong")
    assert login(client, "/accounts/login/", "alice", PASSWORD).status_code == 302


def test_wrong_tokens_lock_the_address_out_of_the_api(alice, settings):
    _row, token = ApiToken.issue(alice)
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    for i in range(settings.TWIN_LOGIN_FAILURES_MAX):
        client.credentials(HTTP_AUTHORIZATION=f"Token wrong{i}")
        assert client.get("/api/inventory/clusters/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    resp = client.get("/api/inventory/clusters/")
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    # another address with the right token is served
    other = APIClient(REMOTE_ADDR="10.0.0.10")
    other.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert other.get("/api/inventory/clusters/").status_code == 200


def test_api_calls_over_the_rate_get_429_with_retry_after_and_pages_are_unaffected(alice, settings, demo):
    settings.TWIN_API_RATE_ANON = "5/min"
    settings.TWIN_API_RATE_USER = "8/min"
    anon, other = APIClient(REMOTE_ADDR="10.1.0.1"), APIClient(REMOTE_ADDR="10.1.0.2")
    assert [anon.get("/api/inventory/gpus/?limit=1").status_code for _ in range(5)] == [200] * 5
    resp = anon.get("/api/inventory/gpus/?limit=1")
    assert resp.status_code == 429 and 0 < int(resp["Retry-After"]) <= 60
    assert other.get("/api/inventory/gpus/?limit=1").status_code == 200         # per address
    # per user, whatever the address
    user = APIClient()
    user.force_authenticate(alice)
    codes = [user.get("/api/inventory/gpus/?limit=1", REMOTE_ADDR=f"10.2.0.{i}").status_code for i in range(9)]
    assert codes == [200] * 8 + [429]
    # the pages (and the data they load outside the API) are not throttled
    page = Client(REMOTE_ADDR="10.1.0.1")
    for path in ("/", f"/clusters/{demo.name}/fabric/", f"/clusters/{demo.name}/fabric.json",
                 f"/clusters/{demo.name}/gpus/"):
        assert page.get(path).status_code == 200, path


def test_default_rates_let_the_pages_read_the_api(demo, settings):
    """The defaults are generous: a page's worth of reads, many times over, is never refused."""
    client = APIClient()
    codes = {client.get("/api/inventory/gpus/?limit=1").status_code for _ in range(300)}
    assert codes == {200}
