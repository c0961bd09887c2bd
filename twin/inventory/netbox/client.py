"""A small NetBox REST client (plain ``requests``): lists that follow pagination, bulk create and bulk update (a
list of objects in one POST or PATCH, ``CHUNK`` at a time), and errors that name the option to fix."""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager

import requests

CHUNK = 250              # objects per bulk POST/PATCH: NetBox validates and saves them in one transaction each
PAGE = 1000              # objects per list page (NetBox's default MAX_PAGE_SIZE)
TIMEOUT_S = 600
DEADLOCK_RETRIES = 3     # a bulk write PostgreSQL aborted as a deadlock (one transaction: nothing written): sent again
PARALLEL = 2             # bulk requests in flight at once (NetBox saves object by object: its workers' CPUs are the
                         # limit, and a gunicorn NetBox serves one request per worker process at a time)


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
    def __init__(self, url: str, token: str, parallel: int = PARALLEL, timeout: float = TIMEOUT_S):
        if not url.startswith(("http://", "https://")):
            raise NetBoxError(f"{url!r} is not an http(s) URL", "--url")
        self.url = url.rstrip("/")
        self.parallel = max(1, int(parallel))
        self.timeout = timeout
        self.headers = {"Authorization": authorization(token), "Accept": "application/json",
                        "Content-Type": "application/json"}
        self._local = threading.local()       # one requests.Session per thread (a Session is not thread-safe)
        self._lock = threading.Lock()
        self.seconds = 0.0       # wall time spent waiting for NetBox (the measurement's "NetBox side")
        self.requests = 0
        self.by_endpoint: dict[str, float] = defaultdict(float)   # "GET dcim/cables" -> wall seconds waiting

    @property
    def session(self) -> requests.Session:
        s = getattr(self._local, "session", None)
        if s is None:
            s = self._local.session = requests.Session()
            s.headers.update(self.headers)
        return s

    def _call(self, method: str, path: str, **kw):
        url = path if path.startswith("http") else f"{self.url}/api/{path.lstrip('/')}"
        for attempt in range(DEADLOCK_RETRIES + 1):
            try:
                r = self.session.request(method, url, timeout=self.timeout, **kw)
            except requests.RequestException as e:
                raise NetBoxError(f"cannot reach NetBox at {self.url}: {e}", "--url") from None
            finally:
                with self._lock:
                    self.requests += 1
            # two bulk writes in flight may still lock rows in opposite orders: PostgreSQL aborts one, whole
            if not (r.status_code == 500 and "deadlock detected" in r.text) or attempt == DEADLOCK_RETRIES:
                break
            time.sleep(0.2 * (attempt + 1))
        if r.status_code in (401, 403):
            raise NetBoxError(f"NetBox refused the token ({r.status_code}): {r.text[:200]}", "--token")
        if r.status_code == 404 and path == "status/":
            raise NetBoxError(f"{self.url} has no NetBox API (/api/status/ is 404)", "--url")
        if r.status_code >= 400:
            raise NetBoxError(f"NetBox {method} {path}: {r.status_code} {r.text[:2000]}")
        return r.json() if r.content else None

    @contextmanager
    def _timed(self, label: str):
        """Adds the wall time of a whole operation (its requests may run in parallel) to ``seconds`` and to
        ``by_endpoint[label]``: the NetBox side of the measurement."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            dt = time.perf_counter() - t0
            self.seconds += dt
            self.by_endpoint[label] += dt

    def status(self) -> dict:
        """NetBox's /api/status/ (checks URL and token: a token-less status is allowed, so a write check follows)."""
        with self._timed("GET status"):
            doc = self._call("GET", "status/")
            if not isinstance(doc, dict) or "netbox-version" not in doc:
                raise NetBoxError(f"{self.url} does not answer as a NetBox (no netbox-version in /api/status/)",
                                  "--url")
            self._call("GET", "users/tokens/", params={"limit": 1})    # 403 without a valid token
        return doc

    def _ordered(self, calls: list[Callable[[], object]], done: Callable[[int], None] | None = None) -> list:
        """Run ``calls`` with up to ``parallel`` in flight; their results in order. ``done(i)`` is called in this
        thread as each finishes (the progress bar); the first error is raised once the others have finished."""
        if self.parallel == 1 or len(calls) < 2:
            out = []
            for i, c in enumerate(calls):
                out.append(c())
                if done:
                    done(i)
            return out
        with ThreadPoolExecutor(self.parallel, thread_name_prefix="netbox") as pool:
            futures = {pool.submit(c): i for i, c in enumerate(calls)}
            out = [None] * len(calls)
            for f in as_completed(futures):
                out[futures[f]] = f.result()
                if done:
                    done(futures[f])
        return out

    def list(self, endpoint: str, progress: Callable[[int], None] | None = None, **params) -> list[dict]:
        """Every object of ``endpoint`` matching ``params``: the first page gives the count, the other pages are
        read by offset, ``parallel`` at a time."""
        with self._timed(f"GET {endpoint.strip('/')}"):
            first = self._call("GET", endpoint, params={**params, "limit": PAGE, "offset": 0})
            if progress:
                progress(len(first["results"]))
            offsets = range(len(first["results"]), first.get("count") or 0, PAGE) if first.get("next") else ()
            pages = self._ordered(
                [lambda o=o: self._call("GET", endpoint, params={**params, "limit": PAGE, "offset": o})["results"]
                 for o in offsets],
                None)
            out = list(first["results"])
            for page in pages:
                out += page
                if progress:
                    progress(len(page))
        return out

    def create(self, endpoint: str, objects: list[dict], progress: Callable[[int], None] | None = None,
               together: Callable[[dict], object] | None = None) -> list[dict]:
        """Bulk-create ``objects`` (CHUNK per POST, ``parallel`` POSTs at a time); NetBox's answers in order.
        ``together(obj)``: objects with the same key (their device: NetBox updates its counters) go in one chunk,
        so that chunks in flight never write the same row."""
        chunks = _chunks(objects, together)
        with self._timed(f"POST {endpoint.strip('/')}"):
            made = self._ordered([lambda c=c: self._call("POST", endpoint, json=c) for c in chunks],
                                 (lambda i: progress(len(chunks[i]))) if progress else None)
        return [o for m in made for o in m]

    def update(self, endpoint: str, objects: list[dict], progress: Callable[[int], None] | None = None,
               together: Callable[[dict], object] | None = None) -> None:
        """Bulk-update ``objects`` (each with its ``id``), as :meth:`create`."""
        chunks = _chunks(objects, together)
        with self._timed(f"PATCH {endpoint.strip('/')}"):
            self._ordered([lambda c=c: self._call("PATCH", endpoint, json=c) for c in chunks],
                          (lambda i: progress(len(chunks[i]))) if progress else None)

    def cable_ends(self, site_id: int) -> dict[int, dict[str, list[dict]]]:
        """Cable id -> {"A": [...], "B": [...]} terminations (``object_type``, ``object_id``) of the site's cables,
        read from ``dcim/cable-terminations/``: a cable list with its terminations nested costs NetBox ~15x more
        (5.1 s against 0.35 + 0.22 s for 823 cables)."""
        out: dict[int, dict[str, list[dict]]] = defaultdict(lambda: {"A": [], "B": []})
        for t in self.list("dcim/cable-terminations/", site_id=site_id,
                           fields="cable,cable_end,termination_type,termination_id"):
            cable = t["cable"]["id"] if isinstance(t["cable"], dict) else t["cable"]
            out[cable][t["cable_end"]].append({"object_type": t["termination_type"], "object_id": t["termination_id"]})
        return out

    def delete(self, endpoint: str, ids: list[int]) -> None:
        """Bulk-delete the objects ``ids`` of ``endpoint``."""
        chunks = [ids[i:i + CHUNK] for i in range(0, len(ids), CHUNK)]
        with self._timed(f"DELETE {endpoint.strip('/')}"):
            self._ordered([lambda c=c: self._call("DELETE", endpoint, json=[{"id": i} for i in c]) for c in chunks])


def _chunks(objects: list[dict], together: Callable[[dict], object] | None) -> list[list[dict]]:
    """CHUNK objects per chunk; with ``together``, a chunk ends only where the key changes (objects come grouped by
    key), so no two chunks share a key."""
    if together is None:
        return [objects[i:i + CHUNK] for i in range(0, len(objects), CHUNK)]
    out, cur, last = [], [], object()
    for o in objects:
        k = together(o)
        if len(cur) >= CHUNK and k != last:
            out.append(cur)
            cur = []
        cur.append(o)
        last = k
    return out + ([cur] if cur else [])
