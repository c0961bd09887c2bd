"""A small NetBox REST client (plain ``requests``): lists that follow pagination, bulk create and bulk update (a
list of objects in one POST or PATCH, ``CHUNK`` at a time), and errors that name the option to fix."""
from __future__ import annotations

import time
from collections.abc import Callable

import requests

CHUNK = 500              # objects per bulk POST/PATCH: NetBox validates and saves them in one transaction each
PAGE = 1000              # objects per list page (NetBox's default MAX_PAGE_SIZE)
TIMEOUT_S = 600


class NetBoxError(Exception):
    """A NetBox request failed. ``option`` names the command-line option to fix (--url, --token), if any."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


def authorization(token: str) -> str:
    """The Authorization header for ``token``: a v2 token (``nbt_KEY.SECRET``, NetBox 4.5+) is a Bearer token, a
    v1 token (40 hex characters) a ``Token``; a value that already starts with ``Bearer``/``Token`` is kept."""
    token = token.strip()
    if token.startswith(("Bearer ", "Token ")):
        return token
    return f"Bearer {token}" if token.startswith("nbt_") else f"Token {token}"


class NetBox:
    def __init__(self, url: str, token: str, on_request: Callable[[float], None] | None = None):
        if not url.startswith(("http://", "https://")):
            raise NetBoxError(f"{url!r} is not an http(s) URL", "--url")
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update({"Authorization": authorization(token), "Accept": "application/json",
                                     "Content-Type": "application/json"})
        self.seconds = 0.0       # time spent waiting for NetBox (the measurement's "NetBox side")
        self.requests = 0

    def _call(self, method: str, path: str, **kw):
        url = path if path.startswith("http") else f"{self.url}/api/{path.lstrip('/')}"
        t0 = time.perf_counter()
        try:
            r = self.session.request(method, url, timeout=TIMEOUT_S, **kw)
        except requests.RequestException as e:
            raise NetBoxError(f"cannot reach NetBox at {self.url}: {e}", "--url") from None
        finally:
            self.seconds += time.perf_counter() - t0
            self.requests += 1
        if r.status_code in (401, 403):
            raise NetBoxError(f"NetBox refused the token ({r.status_code}): {r.text[:200]}", "--token")
        if r.status_code == 404 and path == "status/":
            raise NetBoxError(f"{self.url} has no NetBox API (/api/status/ is 404)", "--url")
        if r.status_code >= 400:
            raise NetBoxError(f"NetBox {method} {path}: {r.status_code} {r.text[:2000]}")
        return r.json() if r.content else None

    def status(self) -> dict:
        """NetBox's /api/status/ (checks URL and token: a token-less status is allowed, so a write check follows)."""
        doc = self._call("GET", "status/")
        if not isinstance(doc, dict) or "netbox-version" not in doc:
            raise NetBoxError(f"{self.url} does not answer as a NetBox (no netbox-version in /api/status/)", "--url")
        self._call("GET", "users/tokens/", params={"limit": 1})    # 403 without a valid token
        return doc

    def list(self, endpoint: str, **params) -> list[dict]:
        params = {"limit": PAGE, **params}
        out, url = [], endpoint
        while url:
            doc = self._call("GET", url, params=params)
            out += doc["results"]
            url, params = doc.get("next"), None
        return out

    def create(self, endpoint: str, objects: list[dict], progress: Callable[[int], None] | None = None) -> list[dict]:
        out = []
        for i in range(0, len(objects), CHUNK):
            chunk = objects[i:i + CHUNK]
            out += self._call("POST", endpoint, json=chunk)
            if progress:
                progress(len(chunk))
        return out

    def update(self, endpoint: str, objects: list[dict], progress: Callable[[int], None] | None = None) -> None:
        for i in range(0, len(objects), CHUNK):
            chunk = objects[i:i + CHUNK]
            self._call("PATCH", endpoint, json=chunk)
            if progress:
                progress(len(chunk))
