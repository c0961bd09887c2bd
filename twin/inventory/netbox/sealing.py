"""A NetBox API token kept for a background transfer without being stored in clear: sealed (Fernet: AES-128-CBC
with an HMAC) under a key derived from Django's SECRET_KEY, which the web server and the workers share. The sealed
token is erased when the transfer ends (twin/inventory/tasks.py); the task's message carries only the transfer's id."""
from __future__ import annotations

import base64
import hashlib

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

PURPOSE = b"twin.inventory.netbox.sealing/v1"


def _fernet() -> Fernet:
    key = hashlib.sha256(PURPOSE + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(token: str) -> bytes:
    return _fernet().encrypt(token.encode())


def unseal(sealed: bytes) -> str:
    """The token; ValueError when it was erased or sealed under another SECRET_KEY."""
    if not sealed:
        raise ValueError("the token was erased (the transfer ended) or never given")
    try:
        return _fernet().decrypt(bytes(sealed)).decode()
    except InvalidToken:
        raise ValueError("the sealed token does not open with this SECRET_KEY") from None
