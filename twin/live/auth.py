"""WebSocket authentication as the REST API does it: the session (browser, through AuthMiddlewareStack) or a token
(`?token=<key>` in the URL, or an `Authorization: Token <key>` header for scripts that can set headers), checked
against the stored hashes as the API checks it (twin.api.models.ApiToken.user_for).

An invalid token is an error even where anonymous reading is allowed (DRF answers 401 in that case too): the
consumer closes with 4401. A session is only trusted when the socket comes from one of ALLOWED_HOSTS (an Origin
header from another site gets an anonymous user), so another site cannot open a socket as the logged-in user.
"""
from __future__ import annotations

from urllib.parse import parse_qs, urlparse

from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host


@database_sync_to_async
def user_for_token(key: str, address: str | None):
    """(user, None) for a valid token, always; else (None, why): a wrong token counts against ``address`` as for
    the API (twin.api.logins.token_failed), and past the limit says so."""
    from twin.api import logins
    from twin.api.models import ApiToken

    user = ApiToken.user_for(key)
    if user is not None:
        return user, None
    wait = logins.token_failed(address)
    return None, f"too many wrong tokens from this address: try again in {wait} s" if wait else "invalid token"


def client_address(scope) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


def _header(scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k.lower() == name:
            return v.decode("latin-1")
    return None


def token_from_scope(scope) -> str | None:
    qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if qs.get("token"):
        return qs["token"][0]
    auth = _header(scope, b"authorization")
    if auth and auth.split(" ", 1)[0].lower() == "token" and " " in auth:
        return auth.split(" ", 1)[1].strip()
    return None


def same_origin(scope) -> bool:
    origin = _header(scope, b"origin")
    if origin is None:          # not a browser: nothing to forge
        return True
    host = urlparse(origin).netloc
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


class TokenAuthMiddleware:
    """Sets scope["user"] from a token when one is given; put inside AuthMiddlewareStack (session first)."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            scope = dict(scope)
            key = token_from_scope(scope)
            if key is not None:
                user, error = await user_for_token(key, client_address(scope))
                scope["user"] = user or AnonymousUser()
                scope["auth_error"] = error
            elif not same_origin(scope):
                scope["user"] = AnonymousUser()
        return await self.inner(scope, receive, send)


def may_read(scope) -> tuple[bool, str | None]:
    """(allowed, reason) for reading a live stream."""
    if scope.get("auth_error"):
        return False, scope["auth_error"]
    user = scope.get("user")
    if user is not None and user.is_authenticated:
        return True, None
    if settings.TWIN_API_ANONYMOUS_READ:
        return True, None
    return False, "authentication required"
