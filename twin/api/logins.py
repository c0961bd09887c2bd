"""Failed logins: after TWIN_LOGIN_FAILURES_MAX failures within TWIN_LOGIN_FAILURES_WINDOW seconds, for one user name
or from one client address, further logins of that name or address are refused (429 with ``Retry-After``) until
the window ends, even with the right password.

Failures counted: wrong passwords on the browser's login page and the admin's (Django's ``user_login_failed``
signal, sent by ``authenticate()``), and wrong API or WebSocket tokens (by address: a token names no user). The
counts live in the shared throttle cache (twin.api.throttling), so every web process sees them. Locking a name
also locks its owner out for the window: the price of stopping a password guesser that changes address.
"""
from __future__ import annotations

import hashlib
import math

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.shortcuts import render
from django.urls import reverse

from twin.api.throttling import client_address, count_hit, read_count


def _keys(address: str | None, username: str | None) -> list[str]:
    keys = []
    if address:
        keys.append(f"login:addr:{address}")
    if username:
        keys.append("login:user:" + hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32])
    return keys


def _window() -> int:
    return int(settings.TWIN_LOGIN_FAILURES_WINDOW)


def record_failure(address: str | None = None, username: str | None = None) -> None:
    for key in _keys(address, username):
        count_hit(key, _window())


def locked_for(address: str | None = None, username: str | None = None) -> int:
    """Seconds until the name or address may try again (0: not locked)."""
    for key in _keys(address, username):
        hits, left = read_count(key, _window())
        if hits >= settings.TWIN_LOGIN_FAILURES_MAX:
            return max(1, math.ceil(left))
    return 0


@receiver(user_login_failed)
def _count_failed_login(sender, credentials, request=None, **kwargs):
    record_failure(client_address(request) if request is not None else None, credentials.get("username"))


class LoginThrottleMiddleware:
    """Refuses a login POST (the twin's login page, the admin's) from a locked name or address: 429, the login page
    saying for how long, and ``Retry-After``.

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
        return (request.method == "POST" and self._refusal(request)) or self.get_response(request)

    async def _acall(self, request):
        if request.method == "POST":
            refusal = await sync_to_async(self._refusal)(request)
            if refusal:
                return refusal
        return await self.get_response(request)

    def _refusal(self, request):
        """The 429 page for a login POST from a locked name or address, else None."""
        if self._paths is None:
            self._paths = {reverse(settings.LOGIN_URL), reverse("admin:login")}
        if request.path not in self._paths:
            return None
        wait = locked_for(client_address(request), request.POST.get("username"))
        if not wait:
            return None
        form = auth_views.AuthenticationForm(request)
        response = render(request, "web/login.html", {"form": form, "locked_seconds": wait}, status=429)
        response["Retry-After"] = str(wait)
        return response
