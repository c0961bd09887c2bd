"""``Authorization: Token <token>`` for the REST API, checked against the stored hashes (twin.api.models). The token
is checked first: a valid one is always accepted. A wrong one counts against the client's address
(twin.api.logins.token_failed): 401, and past the limit 429 with ``Retry-After`` for that address's wrong tokens."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from twin.api import logins
from twin.api.models import ApiToken


class HashedTokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request):
        self._request = request
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        user = ApiToken.user_for(key)
        if user is not None:
            return user, key
        request = getattr(self, "_request", None)
        wait = logins.token_failed(logins.client_address(request) if request is not None else None)
        if wait:
            raise exceptions.Throttled(wait, detail="too many wrong tokens from this address")
        raise exceptions.AuthenticationFailed("Invalid token.")
