"""Failed logins, keyed so that a valid credential is never refused because of others' failures.

**Tokens** (API ``Authorization: Token``, WebSocket ``?token=``) are long random secrets: a token is checked first,
and a valid one is always accepted. A wrong one counts against the client's address; past TWIN_LOGIN_FAILURES_MAX
wrong tokens within TWIN_LOGIN_FAILURES_WINDOW seconds, that address's wrong tokens get 429 with ``Retry-After``
instead of 401 until the window ends (a scanner is told to slow down; nobody's valid token is refused, even behind a
proxy where every client has one address).

**Passwords** (the twin's login page and the admin's; Django's ``user_login_failed`` signal, sent by
``authenticate()``) follow OWASP's device cookie scheme
(https://owasp.org/www-community/Slow_Down_Online_Guessing_Attacks_with_Device_Cookies):

- A browser that logged in as a user gets a *device cookie* (``twin_device``: the user name and a random nonce,
  signed with Django's signing and SECRET_KEY; HttpOnly, SameSite=Lax, Secure under TWIN_HTTPS, kept a year).
- A login attempt for that user from a browser holding a valid device cookie for it, not itself locked, is a
  *trusted* attempt: its failures count against that cookie alone, so lockouts of untrusted clients never refuse it.
- Any other attempt is *untrusted*: failures count per (user name, client address) pair. Past
  TWIN_LOGIN_FAILURES_MAX in the window, that name is refused from that address (429 and the login page saying for
  how long, even with the right password) until the window ends; from other addresses, and from its own browsers,
  the user still logs in.

A locked cookie makes its browser untrusted for the window. The counts live in the shared throttle cache
(twin.api.throttling), so every web process sees them. What is given up: a guesser who changes address for every
few guesses is slowed by the rate limits only (an account is never locked for everyone, so nobody can lock a user
out on purpose).
"""
from __future__ import annotations

import hashlib
import math
import secrets

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.signals import user_login_failed
from django.core import signing
from django.dispatch import receiver
from django.shortcuts import render
from django.urls import reverse

from twin.api.throttling import client_address, count_hit, read_count

DEVICE_COOKIE = "twin_device"
DEVICE_SALT = "twin.api.logins.device"
DEVICE_MAX_AGE = 365 * 24 * 3600


def _window() -> int:
    return int(settings.TWIN_LOGIN_FAILURES_WINDOW)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _name(username: str | None) -> str:
    return (username or "").strip().lower()


def _wait(hits: int, left: float) -> int:
    return max(1, math.ceil(left)) if hits >= settings.TWIN_LOGIN_FAILURES_MAX else 0


# ------------------------------------------------------------------------------------------------------- tokens
def token_failed(address: str | None) -> int:
    """Count a wrong token from ``address``; the seconds its wrong tokens are answered 429 for (0: not past the
    limit yet, a 401)."""
    hits, left = count_hit(f"login:token:{address or 'unknown'}", _window())
    return _wait(hits - 1, left)


# ---------------------------------------------------------------------------------------------------- passwords
def device_cookie_value(username: str) -> str:
    """A new signed device cookie for ``username``."""
    return signing.dumps({"u": _name(username), "n": secrets.token_urlsafe(16)}, salt=DEVICE_SALT)


def set_device_cookie(response, username: str) -> None:
    response.set_cookie(DEVICE_COOKIE, device_cookie_value(username), max_age=DEVICE_MAX_AGE, httponly=True,
                        samesite="Lax", secure=settings.SESSION_COOKIE_SECURE)


def _device_key(request, username: str | None) -> str | None:
    """The counter of the request's device cookie when it is valid for ``username`` (signature, age, name)."""
    raw = request.COOKIES.get(DEVICE_COOKIE) if request is not None else None
    if not raw or not username:
        return None
    try:
        value = signing.loads(raw, salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or value.get("u") != _name(username) or not value.get("n"):
        return None
    return f"login:device:{_digest(str(value['n']))}"


def _password_key(request, username: str | None) -> str:
    """Where an attempt for ``username`` counts: its trusted device cookie's counter, unless that cookie is locked;
    else the (name, address) pair's."""
    device = _device_key(request, username)
    if device is not None and not _wait(*read_count(device, _window())):
        return device
    address = client_address(request) if request is not None else "unknown"
    return f"login:pair:{_digest(_name(username), address)}"


def record_password_failure(request, username: str | None) -> None:
    count_hit(_password_key(request, username), _window())


def password_locked_for(request, username: str | None) -> int:
    """Seconds until this client may try ``username`` again (0: not locked)."""
    return _wait(*read_count(_password_key(request, username), _window()))


@receiver(user_login_failed)
def _count_failed_login(sender, credentials, request=None, **kwargs):
    record_password_failure(request, credentials.get("username"))


class LoginThrottleMiddleware:
    """On a login POST (the twin's login page, the admin's): refuses a locked (name, client) with 429, the login page
    saying for how long, and ``Retry-After``; gives the browser a device cookie once it logged in.

    Async-capable as well as sync: under ASGI a sync-only middleware turns the whole chain sync, so every request
    would hop from the event loop to a thread, back to the loop for the view's resolution and to a thread again for
    the view; here only a login POST leaves the loop (to read the form and the lockout counts)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self._paths = None
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self._async:
            return self._acall(request)
        if not self._is_login(request):
            return self.get_response(request)
        return self._refusal(request) or self._logged_in(request, self.get_response(request))

    async def _acall(self, request):
        if not self._is_login(request):
            return await self.get_response(request)
        refusal = await sync_to_async(self._refusal)(request)
        if refusal:
            return refusal
        response = await self.get_response(request)
        return await sync_to_async(self._logged_in)(request, response)

    def _is_login(self, request) -> bool:
        if request.method != "POST":
            return False
        if self._paths is None:
            self._paths = {reverse(settings.LOGIN_URL), reverse("admin:login")}
        return request.path in self._paths

    def _refusal(self, request):
        """The 429 page for a login POST of a locked (name, client), else None."""
        wait = password_locked_for(request, request.POST.get("username"))
        if not wait:
            return None
        form = auth_views.AuthenticationForm(request)
        response = render(request, "web/login.html", {"form": form, "locked_seconds": wait}, status=429)
        response["Retry-After"] = str(wait)
        return response

    @staticmethod
    def _logged_in(request, response):
        """A successful login (a redirect, the user now signed in) gets the device cookie of its user."""
        user = getattr(request, "user", None)
        if response.status_code in (301, 302, 303) and user is not None and user.is_authenticated:
            set_device_cookie(response, user.get_username())
        return response
