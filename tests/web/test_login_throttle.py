"""Failed logins and API calls are throttled (twin/api/logins.py, twin/api/throttling.py), counted in Redis: after
TWIN_LOGIN_FAILURES_MAX wrong passwords for a name from one address, that name is refused from that address with 429
and Retry-After, even with the right password, while the user still logs in from elsewhere and from a browser holding
its device cookie; wrong tokens get 429 past the limit, a valid token never; API calls over their rate get 429 with
Retry-After; pages are not throttled."""
import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from twin.api import logins
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
    # the name is locked from that address only: alice logs in from another address, bob from the same one
    assert login(Client(), path, "alice", PASSWORD, address="10.0.0.2").status_code == 302
    User.objects.create_user("bob", password=PASSWORD, is_staff=True)
    assert login(Client(), path, "bob", PASSWORD).status_code == 302


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_browser_with_its_device_cookie_logs_in_through_a_lockout_from_its_own_address(alice, settings, path):
    # given alice's browser, which logged in once and got a signed, HttpOnly device cookie
    browser = Client()
    ok = login(browser, path, "alice", PASSWORD)
    assert ok.status_code == 302
    cookie = ok.cookies[logins.DEVICE_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Lax" and "alice" not in cookie.value
    # (no logout: the test client's logout drops every cookie, a browser's keeps the device cookie)
    # when a guesser at the same address (behind the same proxy) fails for alice until locked
    guesser = Client()
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX + 3):
        login(guesser, path, "alice", "wrong")
    assert login(guesser, path, "alice", PASSWORD).status_code == 429
    # then her browser still logs in from there
    assert login(browser, path, "alice", PASSWORD).status_code == 302
    # a forged or another user's cookie does not make a browser trusted
    forged = Client()
    forged.cookies[logins.DEVICE_COOKIE] = cookie.value[:-2] + "xx"
    assert login(forged, path, "alice", PASSWORD).status_code == 429
    User.objects.create_user("mallory", password=PASSWORD)
    mallory = Client()
    assert login(mallory, "/accounts/login/", "mallory", PASSWORD).status_code == 302
    assert login(mallory, path, "alice", PASSWORD).status_code == 429


def test_a_device_cookie_that_fails_too_often_is_locked_itself(alice, settings):
    browser = Client()
    assert login(browser, "/accounts/login/", "alice", PASSWORD).status_code == 302
    # (no logout: the test client's logout drops every cookie, a browser's keeps the device cookie)
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX):
        login(browser, "/accounts/login/", "alice", "wrong", address="10.0.0.5")
    # its failures were its own: the pair (alice, 10.0.0.5) of untrusted clients is not locked
    assert login(Client(), "/accounts/login/", "alice", PASSWORD, address="10.0.0.5").status_code == 302
    # and once locked the cookie counts as none: the browser is an untrusted client of its address
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX):
        login(browser, "/accounts/login/", "alice", "wrong", address="10.0.0.5")
    assert login(browser, "/accounts/login/", "alice", PASSWORD, address="10.0.0.5").status_code == 429


def test_one_address_trying_many_names_locks_none_of_the_others(alice, settings):
    client = Client()
    for i in range(settings.TWIN_LOGIN_FAILURES_MAX):
        login(client, "/accounts/login/", f"user{i}", "wrong")
    assert login(client, "/accounts/login/", "alice", PASSWORD).status_code == 302


def test_below_the_limit_the_right_password_logs_in(alice, settings):
    client = Client()
    for _ in range(settings.TWIN_LOGIN_FAILURES_MAX - 1):
        login(client, "/accounts/login/", "alice", "wrong")
    assert login(client, "/accounts/login/", "alice", PASSWORD).status_code == 302


def test_wrong_tokens_never_lock_out_a_valid_token(alice, settings):
    _row, token = ApiToken.issue(alice)
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    for i in range(settings.TWIN_LOGIN_FAILURES_MAX):
        client.credentials(HTTP_AUTHORIZATION=f"Token wrong{i}")
        assert client.get("/api/inventory/clusters/").status_code == 401
    # past the limit, that address's wrong tokens get 429
    client.credentials(HTTP_AUTHORIZATION="Token wrong-again")
    resp = client.get("/api/inventory/clusters/")
    assert resp.status_code == 429 and int(resp["Retry-After"]) > 0
    # and a valid token from the same address is served (as every user behind a proxy with TWIN_NUM_PROXIES=0)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/inventory/clusters/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_wrong_websocket_tokens_never_lock_out_a_valid_one(settings):
    from asgiref.sync import async_to_sync

    from twin.live.auth import user_for_token
    bob = User.objects.create_user("bob-ws")
    _row, token = ApiToken.issue(bob)
    for i in range(settings.TWIN_LOGIN_FAILURES_MAX):
        assert async_to_sync(user_for_token)(f"wrong{i}", "10.0.0.11") == (None, "invalid token")
    user, why = async_to_sync(user_for_token)("wrong-again", "10.0.0.11")
    assert user is None and why.startswith("too many wrong tokens")
    assert async_to_sync(user_for_token)(token, "10.0.0.11") == (bob, None)


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
