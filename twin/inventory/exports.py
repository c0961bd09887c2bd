"""A fabric's whole-fabric exports (the JSON graph and Graphviz DOT of twin/inventory/topology.py), rendered once
per state of the fabric, kept per web process both as is and gzipped: a download then costs a few small queries and
the sending of cached bytes, not a render of every switch, NIC and link (half a second of one CPU for a 24k fabric,
during which the process answers nothing else), nor a compression or decompression (tens of ms of the event loop
per download, which other requests wait for).

The state is read on every request, in about a millisecond: the fabric row, its cluster's last change-log entry
(every write of ``twin.inventory.actions`` logs one: statuses, names, speeds, cabling, items added or deleted) and
the fabric's non-active items (the status index, a few rows: a status set around the actions is still seen).
Bytes go out from an async iterator over the cached bytes (the gzip to a client that accepts it, the plain bytes
otherwise), on the event loop, without a thread and without a copy of the whole.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponseNotModified, StreamingHttpResponse

from twin.inventory import topology
from twin.inventory.choices import not_active_rows
from twin.inventory.models import NIC, Fabric, Link, ObjectChange, Switch
from twin.inventory.structure_cache import StructureCache

CHUNK = 64 * 1024           # bytes handed to the server at a time
GZIP_LEVEL = 6              # a 24k fabric's DOT (4.5 MB) gzips to 0.3 MB in 40 ms


@dataclass(frozen=True)
class Export:
    raw: bytes               # the rendered export
    gz: bytes                # the same, gzipped
    etag: str                # of the state it was rendered under


def state(fabric: Fabric) -> tuple:
    """What an export of ``fabric`` depends on (see the module's docstring); a few indexed queries."""
    last_change = (ObjectChange.objects.filter(cluster_id=fabric.cluster_id).order_by("-id")
                   .values_list("id", flat=True).first())
    not_active = tuple(tuple(sorted(not_active_rows(model.objects.filter(fabric=fabric))))
                       for model in (Switch, NIC, Link))
    return (fabric.name, fabric.kind, last_change, not_active)


def _render_json(fabric: Fabric) -> bytes:
    return json.dumps(topology.fabric_graph(fabric), separators=(",", ":"), ensure_ascii=False).encode()


def _render_dot(fabric: Fabric) -> bytes:
    return "".join(topology.fabric_dot(fabric)).encode()


class _Format:
    """One export format: its renderer, media type, file suffix and its cache (by fabric id)."""

    def __init__(self, render: Callable[[Fabric], bytes], content_type: str, suffix: str):
        self.render, self.content_type, self.suffix = render, content_type, suffix
        self.cache: StructureCache[Export] = StructureCache(size=settings.TWIN_EXPORT_CACHE_FABRICS)

    def get(self, fabric: Fabric) -> Export:
        key = state(fabric)

        def build() -> Export:
            raw = self.render(fabric)
            etag = hashlib.sha256(repr((self.suffix, key)).encode()).hexdigest()[:32]
            return Export(raw, gzip.compress(raw, GZIP_LEVEL, mtime=0), f'"{etag}"')

        return self.cache.get(fabric.id, key, build)


GRAPH = _Format(_render_json, "application/json", "json")
DOT = _Format(_render_dot, "text/vnd.graphviz", "dot")


def _pieces(data: bytes) -> Iterator[bytes]:
    """``data`` in pieces of CHUNK bytes."""
    view = memoryview(data)
    for start in range(0, len(view), CHUNK):
        yield bytes(view[start:start + CHUNK])


async def _async_pieces(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def _body(request, data: bytes):
    """The pieces as the server wants them: an async iterator under ASGI (consumed on the event loop; a sync one
    would be read whole in a thread first), a plain one under WSGI and the test client."""
    pieces = _pieces(data)
    return _async_pieces(pieces) if isinstance(getattr(request, "_request", request), ASGIRequest) else pieces


def accepts_gzip(request) -> bool:
    """Whether Accept-Encoding names gzip (or ``*``) without ``q=0``."""
    for part in request.headers.get("Accept-Encoding", "").split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        if coding in ("gzip", "*") and not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000")
                                               for p in params):
            return True
    return False


def response(request, fabric: Fabric, fmt: _Format) -> StreamingHttpResponse | HttpResponseNotModified:
    """The export of ``fabric`` in ``fmt``: gzip when the client accepts it, with an ETag (a 304 for a client that
    has it already)."""
    export = fmt.get(fabric)
    if export.etag in (tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")):
        answer = HttpResponseNotModified()
    elif accepts_gzip(request):
        answer = StreamingHttpResponse(_body(request, export.gz), content_type=fmt.content_type)
        answer["Content-Encoding"] = "gzip"
        answer["Content-Length"] = str(len(export.gz))
    else:
        answer = StreamingHttpResponse(_body(request, export.raw), content_type=fmt.content_type)
        answer["Content-Length"] = str(len(export.raw))
    answer["ETag"] = export.etag
    answer["Vary"] = "Accept-Encoding"
    answer["Content-Disposition"] = f'inline; filename="{fabric.name}.{fmt.suffix}"'
    return answer
