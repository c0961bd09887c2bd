"""``/api/clusters/``: the clusters built and the presets, and their builds, rebuilds and deletes as runs
(:mod:`twin.runs.clusters`). Reads are as open as the inventory's (TWIN_API_ANONYMOUS_READ); a build takes
``inventory.add_cluster``, a delete ``inventory.delete_cluster``, a rebuild both (each with
``runs.add_simulationrun``); a delete or rebuild of a cluster other users' runs depend on takes staff (403 naming the
runs). Each write answers the run it queued (the runs API's row: follow it at ``/api/runs/<id>/`` or
``ws/runs/<id>/``, cancel it at ``/api/runs/<id>/cancel/``)."""
from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from sim.core.errors import ParamError
from sim.fabric.spec import SPEC_FORMATS, preset_names
from twin.api.inventory.serializers import SPEC_SCHEMA
from twin.inventory.models import Cluster
from twin.runs import actions, clusters, ownership
from twin.runs.api.serializers import RunSerializer
from twin.runs.kinds import RunRefused
from twin.runs.models import SimulationRun

NAME = {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9-]*$", "maxLength": 64}
SPEC_TEXT = {"type": "string", "minLength": 1, "maxLength": clusters.MAX_SPEC_BYTES,
             "description": "a spec file's text, as `manage.py build_cluster FILE` reads it (TOML, or JSON: format)"}


def build_body(source_required: bool) -> dict:
    """A build's request body: a ``preset`` or a ``spec`` (a table, or a file's text in ``format``), required for a
    build, optional for a rebuild (none: its stored spec); ``name``; ``replace``."""
    common = {"name": {**NAME, "description": "build it under this name instead of the spec's"},
              "replace": {"type": "boolean", "default": False,
                          "description": "rebuild the cluster of that name (deleted first, in the same transaction)"}}
    by_preset = {"type": "object", "additionalProperties": False,
                 "properties": {"preset": {"type": "string", "enum": preset_names()}, **common}}
    by_spec = {"type": "object", "additionalProperties": False, "properties": {
        "spec": {"anyOf": [SPEC_SCHEMA, SPEC_TEXT]},
        "format": {"type": "string", "enum": list(SPEC_FORMATS),
                   "description": "how to read a spec given as text (default: JSON when it starts with {, else TOML)"},
        **common}}
    if source_required:
        return {"oneOf": [{**by_preset, "required": ["preset"]}, {**by_spec, "required": ["spec"]}]}
    return {"oneOf": [{"type": "object", "additionalProperties": False, "properties": common},
                      {**by_preset, "required": ["preset"]}, {**by_spec, "required": ["spec"]}]}


class ThroughputSerializer(serializers.Serializer):
    write = serializers.FloatField(help_text="rows a build writes a second")
    delete = serializers.FloatField(help_text="rows a delete removes a second")
    write_runs = serializers.IntegerField(help_text="this twin's finished builds that measured it (0: the setting "
                                                    "TWIN_RUNS_BUILD_ROWS_PER_SECOND)")
    delete_runs = serializers.IntegerField(help_text="the same for deletes (TWIN_RUNS_DELETE_ROWS_PER_SECOND)")


class FiguresSerializer(serializers.Serializer):
    """What a spec makes (:func:`twin.runs.clusters.spec_figures`)."""

    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    gpus = serializers.IntegerField()
    gpu_model = serializers.CharField()
    hosts = serializers.IntegerField()
    zones = serializers.IntegerField()
    buildings = serializers.IntegerField()
    fabric = serializers.CharField(help_text="the backend fabric's kind (roce, infiniband)")
    storage = serializers.ListField(child=serializers.CharField())
    rows = serializers.IntegerField(help_text="inventory rows its build writes")


class PresetSerializer(FiguresSerializer):
    built = serializers.BooleanField(help_text="a cluster of this name exists")
    estimated_build_s = serializers.FloatField(help_text="its rows over the rows written a second (throughput)")


class PresetsSerializer(serializers.Serializer):
    throughput = ThroughputSerializer()
    presets = PresetSerializer(many=True)


class CheckSerializer(FiguresSerializer):
    exists = serializers.BooleanField(help_text="a cluster of this name is built (rebuild it, or give a name)")
    estimated_build_s = serializers.FloatField()


class ActiveRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    progress = serializers.FloatField()


class ClusterRowSerializer(FiguresSerializer):
    id = serializers.IntegerField()
    built_at = serializers.DateTimeField()
    status = serializers.CharField()
    preset = serializers.CharField(allow_null=True, help_text="the preset it was built from, if its spec is one")
    runs = serializers.IntegerField(help_text="simulation runs on it (its builds aside)")
    estimated_delete_s = serializers.FloatField()
    estimated_rebuild_s = serializers.FloatField()
    active = ActiveRunSerializer(allow_null=True, help_text="its build or delete queued or running, if any")
    delete_refusal = serializers.CharField(help_text="why you may not delete or rebuild it; empty when you may")


class ClusterRunsPermission(BasePermission):
    """Reads as open as the inventory's; writes need a signed-in user (each checks its permissions)."""

    opens_reads = True

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS and settings.TWIN_API_ANONYMOUS_READ:
            return True
        return bool(request.user and request.user.is_authenticated)


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "another build or delete of this cluster is under way"


def checked(make):
    """``make()`` (the parameters of a cluster run), its refusals as the API's: 400 naming the field, 403 naming the
    runs that depend on the cluster, 409 when another build or delete of the name is under way."""
    try:
        return make()
    except ParamError as e:
        raise ValidationError(e.errors) from None
    except RunRefused as e:
        raise PermissionDenied(str(e)) from None
    except clusters.Busy as e:
        raise Conflict(str(e)) from None


def _body(request, empty_ok: bool = False) -> dict:
    data = request.data
    if not isinstance(data, dict) or (not data and not empty_ok):
        raise ValidationError({"non_field_errors": ['expected an object: {"preset": name} or {"spec": ...}']})
    return dict(data)


class ClusterViewSet(viewsets.ViewSet):
    """Clusters built and presets; their builds, rebuilds and deletes, each a run."""

    permission_classes = [ClusterRunsPermission]
    lookup_field = "name"
    lookup_value_regex = r"[A-Za-z0-9][A-Za-z0-9-]{0,63}"
    queryset = Cluster.objects.none()     # for the router: no row's url points here (route_of_model)
    route_of_model = False

    def _user(self):
        return self.request.user if self.request.user.is_authenticated else None

    def _start(self, kind: str, make, perms) -> Response:
        if why := clusters.permission_refusal(self.request.user, perms):
            raise PermissionDenied(why)
        run = actions.create_run(kind, checked(make), None, user=self._user(), validated=True)
        code = status.HTTP_202_ACCEPTED if kind == clusters.DELETE else status.HTTP_201_CREATED
        return Response(RunSerializer(run, context={"request": self.request}).data, status=code)

    def _row(self, cluster: Cluster, rates: dict) -> dict:
        figures, active, user = clusters.cluster_figures(cluster), clusters.active_run(cluster.name), self.request.user
        refusal = (clusters.permission_refusal(user, clusters.REBUILD_PERMISSIONS)
                   or ownership.cluster_refusal(user, cluster) or "")
        return {**figures, "id": cluster.pk, "name": cluster.name, "title": cluster.title,
                "built_at": cluster.built_at, "status": cluster.status, "preset": clusters.preset_of(cluster.spec),
                "runs": SimulationRun.objects.filter(cluster=cluster).exclude(kind__in=clusters.KINDS).count(),
                "estimated_delete_s": clusters.estimate_seconds(0, figures["rows"], rates),
                "estimated_rebuild_s": clusters.estimate_seconds(figures["rows"], figures["rows"], rates),
                "active": None if active is None else {"id": active.pk, "kind": active.kind, "status": active.status,
                                                       "progress": active.progress},
                "delete_refusal": refusal}

    @extend_schema(responses=ClusterRowSerializer(many=True))
    def list(self, request):
        """The clusters built: size, GPUs, fabric, what deleting or rebuilding each would take, whether you may."""
        rates = clusters.throughput()
        return Response([self._row(c, rates) for c in Cluster.objects.order_by("name")])

    @extend_schema(responses=ClusterRowSerializer)
    def retrieve(self, request, name=None):
        """One cluster built, as the list shows it."""
        return Response(self._row(get_object_or_404(Cluster, name=name), clusters.throughput()))

    @extend_schema(responses=PresetsSerializer)
    @action(detail=False)
    def presets(self, request):
        """Every preset: size, GPUs, fabric, whether it is built, and its estimated build time (its rows over the
        rows this twin writes a second, ``throughput``)."""
        rates = clusters.throughput()
        built = set(Cluster.objects.values_list("name", flat=True))
        return Response({"throughput": rates, "presets": [
            {**p, "built": p["name"] in built, "estimated_build_s": clusters.estimate_seconds(p["rows"], 0, rates)}
            for p in clusters.preset_figures()]})

    @extend_schema(request={"application/json": build_body(True)}, responses={200: CheckSerializer})
    @action(detail=False, methods=["post"])
    def check(self, request):
        """A build's spec read without building it (an upload's preview): what it makes and its estimated build
        time, or 400 naming the field (the spec's own as ``{"spec": ["backend.leaf.uplinks: ..."]}``)."""
        data = _body(request)
        spec, _ = checked(lambda: clusters.spec_of(data))
        figures = clusters.spec_figures(spec)
        return Response({**figures, "exists": Cluster.objects.filter(name=spec.name).exists(),
                         "estimated_build_s": clusters.estimate_seconds(figures["rows"])})

    @extend_schema(request={"application/json": build_body(True)}, responses={201: RunSerializer})
    def create(self, request):
        """Build a cluster from a preset or a spec (``replace``: rebuild the cluster of that name): the queued run
        (201)."""
        data = _body(request)
        perms = clusters.REBUILD_PERMISSIONS if data.get("replace") is True else clusters.PERMISSIONS[clusters.BUILD]
        return self._start(clusters.BUILD, lambda: clusters.build_params(data, self._user()), perms)

    @extend_schema(request={"application/json": build_body(False)}, responses={201: RunSerializer})
    @action(detail=True, methods=["post"])
    def rebuild(self, request, name=None):
        """Rebuild the cluster (deleted and built again, in one transaction) from its stored spec, or from the preset
        or spec given: the queued run (201)."""
        cluster = get_object_or_404(Cluster, name=name)
        data = _body(request, empty_ok=True)
        if data.get("name", cluster.name) != cluster.name:
            raise ValidationError({"name": [f"a rebuild keeps the cluster's name ({cluster.name})"]})
        values = {**({"spec": cluster.spec} if not {"preset", "spec"} & set(data) else data),
                  "name": cluster.name, "replace": True}
        return self._start(clusters.BUILD, lambda: clusters.build_params(values, self._user()),
                           clusters.REBUILD_PERMISSIONS)

    @extend_schema(request=None, responses={202: RunSerializer})
    def destroy(self, request, name=None):
        """Delete the cluster, with everything in it and what the runs app keeps of it (its runs, scenarios, their
        schedules, its jobs): the queued run (202)."""
        cluster = get_object_or_404(Cluster, name=name)
        return self._start(clusters.DELETE, lambda: clusters.delete_params(cluster, self._user()),
                           clusters.PERMISSIONS[clusters.DELETE])
