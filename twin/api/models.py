"""API tokens stored as hashes (as NetBox's v2 tokens are): the database holds a short public key to find the row and
the SHA-256 of the whole token, never the token itself. A token is shown once, when it is made
(``manage.py create_api_token``, or the admin's "add API token"); a lost token is replaced, not recovered.

A token reads ``twin_<key>.<secret>`` (key: TOKEN_KEY_LENGTH hex characters, public; secret: 32 random bytes,
URL-safe base64). Tokens made before hashing (40 hex characters, Django REST framework's) were hashed in place by
migration 0002 and keep working: their key is their first TOKEN_KEY_LENGTH characters.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from django.conf import settings
from django.db import models

TOKEN_PREFIX = "twin_"
TOKEN_KEY_LENGTH = 12


def token_key(token: str) -> str:
    """The public part of ``token`` that finds its row."""
    if token.startswith(TOKEN_PREFIX) and "." in token:
        return token[len(TOKEN_PREFIX):token.index(".")][:TOKEN_KEY_LENGTH]
    return token[:TOKEN_KEY_LENGTH]


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key = models.CharField(max_length=TOKEN_KEY_LENGTH, db_index=True, editable=False,
                           help_text="the public start of the token, to find it")
    digest = models.CharField(max_length=64, editable=False, help_text="SHA-256 of the whole token (hex)")
    created = models.DateTimeField(auto_now_add=True)
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["id"]

    def __str__(self):
        return f"{TOKEN_PREFIX}{self.key}… ({self.user})"

    @classmethod
    def issue(cls, user, description: str = "") -> tuple["ApiToken", str]:
        """A new token for ``user``: the row (holding its hash) and the token itself, to show once."""
        key = secrets.token_hex(TOKEN_KEY_LENGTH // 2)
        token = f"{TOKEN_PREFIX}{key}.{secrets.token_urlsafe(32)}"
        row = cls.objects.create(user=user, key=key, digest=token_digest(token), description=description)
        return row, token

    @classmethod
    def user_for(cls, token: str):
        """The active user ``token`` belongs to, or None. Compares hashes in constant time."""
        if not token or len(token) > 200 or "\x00" in token:     # PostgreSQL refuses NUL in a string
            return None
        digest = token_digest(token)
        for row in cls.objects.filter(key=token_key(token)).select_related("user"):
            if hmac.compare_digest(row.digest, digest):
                return row.user if row.user.is_active else None
        return None
