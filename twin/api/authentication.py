"""``Authorization: Token <token>`` for the REST API, checked against the stored hashes (twin.api.models). A wrong
token counts as a failed login of the client's address (twin.api.logins): past the limit the address is refused
with 429 before any token is checked."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from twin.api import logins
from twin.api.models import ApiToken


class HashedTokenAuthentication(authentication.TokenAuthentication):
    def authenticate(self, request):
        self._request = request
        return super().authenticate(request)

    def authenticate_credentials(self, key):
        request = getattr(self, "_request", None)
        address = logins.client_address(request) if request is not None else None
        wait = logins.locked_for(address=address)
        if wait:
            raise exceptions.Throttled(wait, detail="too many failed logins from this address")
        user = ApiToken.user_for(key)
        if user is None:
            logins.record_failure(address=address)
            raise exceptions.AuthenticationFailed("Invalid token.")
        return user, key
