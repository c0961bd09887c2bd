"""REST snapshots for resync: the last frame published on a stream; and a cluster stream's link index tables.

GET /api/live/runs/<id>/snapshot/ and /api/live/clusters/<name>/snapshot/ answer JSON: the header fields of the
last frame (seq, progress, status, final...), the sections it holds, and the frame itself as base64 (``frame_b64``,
the same bytes as on the WebSocket, holding the latest of every section). ``?binary=1`` answers the raw frame
(application/octet-stream, header X-Live-Seq). Before anything was published the answer is a frame with seq 0
built from the run row (or an empty one for a cluster).
"""
from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from twin.inventory.models import Cluster
from twin.inventory.zones import ScopeError, parse_building
from twin.live import frames, meta, scope, store


class LiveReadPermission(BasePermission):
    """Like the API's reads: open when TWIN_API_ANONYMOUS_READ, else any authenticated user."""

    opens_reads = True  # the schema declares authentication optional (twin/api/schema.py)

    def has_permission(self, request, view):
        return bool(settings.TWIN_API_ANONYMOUS_READ or (request.user and request.user.is_authenticated))


class SectionSerializer(serializers.Serializer):
    dtype = serializers.ChoiceField(choices=["uint8", "float16"])
    count = serializers.IntegerField()


class SnapshotSerializer(serializers.Serializer):
    """The last frame of a live stream (docs/live.md)."""

    stream = serializers.CharField(help_text="run.<id> or cluster.<id>")
    type = serializers.IntegerField(help_text="1 run stream, 2 cluster stream")
    seq = serializers.IntegerField(help_text="sequence number of the frame in its stream (0: nothing published yet)")
    run = serializers.IntegerField(allow_null=True)
    cluster = serializers.IntegerField(allow_null=True)
    progress = serializers.FloatField()
    status = serializers.CharField()
    final = serializers.BooleanField()
    time_ms = serializers.FloatField(help_text="publish time, ms since the Unix epoch")
    sections = serializers.DictField(child=SectionSerializer(), help_text="link_util, gpu_state")
    frame_b64 = serializers.CharField(help_text="the binary frame (as sent on the WebSocket), base64")


BINARY_PARAM = OpenApiParameter("binary", OpenApiTypes.BOOL, description="answer the raw frame "
                                "(application/octet-stream, header X-Live-Seq) instead of JSON")
SNAPSHOT_SCHEMA = dict(
    responses={200: SnapshotSerializer, 404: OpenApiResponse(description="no such run or cluster")},
    tags=["live"],
)


class SnapshotView(APIView):
    permission_classes = [LiveReadPermission]

    def stream_and_fallback(self, **kwargs) -> tuple[str, frames.Frame]:
        raise NotImplementedError

    def scope(self, request, **kwargs):
        """A function of the raw frame giving the form the client asked for (None: the frame as published)."""
        return None

    def get(self, request, **kwargs):
        stream, fallback = self.stream_and_fallback(**kwargs)
        transform = self.scope(request, **kwargs)
        last = store.load_last(stream)
        if last is None:
            raw = frames.encode(fallback)
        else:
            raw = last[1]
        if transform is not None:
            raw = transform(raw)
        frame = frames.decode(raw)
        if request.query_params.get("binary") in ("1", "true", "yes"):
            resp = HttpResponse(raw, content_type="application/octet-stream")
            resp["X-Live-Seq"] = str(frame.seq)
            return resp
        return Response({"stream": stream, **frames.to_json(frame, raw)})


@extend_schema(parameters=[OpenApiParameter("run_id", OpenApiTypes.INT, OpenApiParameter.PATH), BINARY_PARAM],
               **SNAPSHOT_SCHEMA,
               summary="Last live frame of a run (resync after a gap)")
class RunSnapshotView(SnapshotView):
    def stream_and_fallback(self, run_id):
        stream = store.run_stream(run_id)
        fallback = frames.Frame(type=frames.FRAME_RUN, run_id=run_id, time_ms=time.time() * 1000.0)
        run = meta.get_run(run_id)
        if run is None:
            raise NotFound(f"no run {run_id}")
        fallback.status = str(run.status)
        fallback.progress = float(run.progress or 0)
        fallback.cluster_id = run.cluster_id or 0
        return stream, fallback


@extend_schema(parameters=[OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH), BINARY_PARAM,
                           OpenApiParameter("zone", OpenApiTypes.STR, description="the frame cut to this zone's "
                                            "GPUs, hosts and backend links (docs/live.md, scoped frames)"),
                           OpenApiParameter("building", OpenApiTypes.INT, description="the frame cut to this "
                                            "building's GPUs, hosts and backend links"),
                           OpenApiParameter("summary", OpenApiTypes.BOOL, description="the frame without its "
                                            "per-item sections")],
               **SNAPSHOT_SCHEMA,
               summary="Last live frame of a cluster stream (resync after a gap)")
class ClusterSnapshotView(SnapshotView):
    def scope(self, request, name):
        cluster = Cluster.objects.filter(name=name).first()
        zone = request.query_params.get("zone", "")
        summary = request.query_params.get("summary") in ("1", "true", "yes")
        if cluster is None:
            return None
        try:
            building = parse_building(request.query_params.get("building"))
        except ScopeError as e:
            raise ValidationError({"building": [str(e).removeprefix("building: ")]}) from None
        try:
            return scope.frame_scope(cluster, zone, summary, building)
        except ScopeError as e:
            raise NotFound(str(e)) from None

    def stream_and_fallback(self, name):
        cluster = Cluster.objects.filter(name=name).only("id").first()
        if cluster is None:
            raise NotFound(f"no cluster {name!r}")
        return store.cluster_stream(cluster.id), frames.Frame(type=frames.FRAME_CLUSTER, cluster_id=cluster.id,
                                                              time_ms=time.time() * 1000.0)


@extend_schema(parameters=[OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH)],
               responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="{cluster, backend_fabric, count, "
                                               "ids, names}: the backend links in the link_util section's order"),
                          404: OpenApiResponse(description="no such cluster")},
               tags=["live"], summary="Link index of a cluster stream (the order of the link_util section)")
class ClusterLinkIndexView(APIView):
    """The order of the link_util section, ``links.index`` in the stream's metadata: link ids and names, 4 MB of
    JSON for a 24k cluster (0.38 MB gzipped, sent gzipped to clients that accept it), built once per structure and
    answered 304 to a client that holds it (ETag)."""

    permission_classes = [LiveReadPermission]

    def get(self, request, name):
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            raise NotFound(f"no cluster {name!r}")
        etag, body, gzipped = meta.link_index(cluster)
        if etag in request.headers.get("If-None-Match", ""):
            resp = HttpResponse(status=304)
        elif "gzip" in request.headers.get("Accept-Encoding", ""):
            resp = HttpResponse(gzipped, content_type="application/json")
            resp["Content-Encoding"] = "gzip"
        else:
            resp = HttpResponse(body, content_type="application/json")
        resp["ETag"] = etag
        resp["Vary"] = "Accept-Encoding"
        resp["Cache-Control"] = "no-cache"
        return resp
