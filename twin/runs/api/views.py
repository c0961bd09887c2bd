"""Runs API: scenarios (CRUD, trend, start), runs (create, list, retrieve, cancel, results) and schedules.
Views are thin: every write goes through :mod:`twin.runs.actions`. Cancelling, deleting and editing take the owner
or a "manage any" permission (:class:`OwnerOrManager`, the rule of :mod:`twin.runs.ownership`); dumps archives
follow TWIN_DUMPS_ACCESS (:func:`twin.runs.ownership.dumps_refusal`)."""
from __future__ import annotations

import base64

from django.http import FileResponse, StreamingHttpResponse
from django_celery_beat.models import PeriodicTask
from django_filters import rest_framework as filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated, PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from sim.core.errors import ParamError
from sim.debug import archive, dumpstate
from sim.debug.dumpformat import DumpError
from sim.jobs.models import MODELS
from twin.api.permissions import InventoryPermission

from twin.inventory.filtersets import IntegerFilter, NumberInFilter
from twin.runs import actions, files, ownership, registry
from twin.runs.api.serializers import (CalibrationSerializer, JobSerializer, OccupancySerializer,
                                      RunCreateSerializer, RunSerializer, ScenarioSerializer, ScheduleSerializer,
                                      WhatifSerializer)
from twin.runs import job_actions, job_layouts
from twin.runs.choices import JobState, RunStatus
from twin.runs.constants import SCHEDULE_TASK, START_RUNS, TREND_LIMIT
from twin.runs.models import CalibrationProfile, Job, Scenario, SimulationRun
from twin.runs.registry import median_of
from twin.runs.server_paths import scrub


class IdFilters(filters.FilterSet):
    """Ids (``id``, ``id__in``, ``cluster``) compared as 64-bit integers: an id past the database's range is a 400
    naming the filter, never an overflow (a 500)."""

    id = IntegerFilter()
    id__in = NumberInFilter(field_name="id", lookup_expr="in")
    cluster = IntegerFilter(field_name="cluster_id")


class ScenarioFilter(IdFilters):
    class Meta:
        model = Scenario
        fields = {"name": ["exact", "icontains"], "kind": ["exact"], "cluster__name": ["exact"]}


@extend_schema_field({"$ref": "#/components/schemas/RunKindEnum"})
class KindsFilter(filters.MultipleChoiceFilter):
    """Run kinds: their choices read when used (every kind registered by then), documented as the kinds' enum
    (drf-spectacular does not call a choices callable, and would document any string)."""

    def __init__(self, **kwargs):
        super().__init__(choices=registry.choices, **kwargs)


class RunFilter(IdFilters):
    status = filters.MultipleChoiceFilter(choices=RunStatus.choices)
    kind = KindsFilter()
    scenario = IntegerFilter(field_name="scenario_id")
    schedule = IntegerFilter(field_name="schedule_id", help_text="the schedule that started it")
    parent = IntegerFilter(field_name="parent_id")

    class Meta:
        model = SimulationRun
        fields = {"cluster__name": ["exact"], "parent": ["isnull"], "schedule": ["isnull"], "worker": ["exact"]}


class OwnerOrManager(BasePermission):
    """The view's ``owner_actions`` (cancel, delete, edit) on an object take its owner or a "manage any"
    permission (:func:`twin.runs.ownership.refusal`): else 403 saying why. Other actions are the model
    permissions' business (InventoryPermission)."""

    message = "only the owner or a user with the manage-any permission may change it"
    opens_reads = True  # it judges owner actions only: reads stay as open as InventoryPermission makes them

    def has_object_permission(self, request, view, obj):
        if view.action not in view.owner_actions:
            return True
        why = ownership.refusal(request.user, obj)
        if why is not None:
            self.message = why
        return why is None


OWNED = [InventoryPermission, OwnerOrManager]


class StartsRuns(BasePermission):
    """A signed-in user holding the permission to start runs (START_RUNS): what releasing a job and asking its
    what-ifs take, on top of the owner rule for a release."""

    message = f"only a signed-in user with the permission {START_RUNS!r} may do this"

    def has_permission(self, request, view):
        if not request.user or not request.user.is_authenticated:
            raise NotAuthenticated()
        return request.user.has_perm(START_RUNS)


class ScenarioViewSet(viewsets.ModelViewSet):
    """Saved parameters of a simulation kind on a cluster; ``trend`` is the history of its runs."""

    queryset = Scenario.objects.select_related("created_by", "cluster")
    permission_classes = OWNED
    owner_actions = ("update", "partial_update", "destroy")
    serializer_class = ScenarioSerializer
    filterset_class = ScenarioFilter
    ordering_fields = ("id", "name", "created_at")

    def perform_create(self, serializer):
        user = self.request.user if self.request.user.is_authenticated else None
        serializer.instance = actions.save_scenario(**serializer.validated_data, user=user)

    def perform_update(self, serializer):
        s = serializer.instance
        d = {"name": s.name, "kind": s.kind, "cluster": s.cluster, "params": s.params,
             "description": s.description, **serializer.validated_data}
        if "kind" in serializer.validated_data and "params" not in serializer.validated_data:
            d["params"] = {}                  # another kind's parameters do not carry over
        serializer.instance = actions.save_scenario(**d, instance=s)

    def perform_destroy(self, instance):
        actions.delete_scenario(instance)

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def run(self, request, pk=None):
        """Start a run of this scenario."""
        user = request.user if request.user.is_authenticated else None
        run = actions.create_run_from_scenario(self.get_object(), user=user)
        return Response(RunSerializer(run, context={"request": request}).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses=OpenApiTypes.OBJECT, filters=False, parameters=[
        OpenApiParameter("metric", str, description="summary key to follow (default norm_busbw; a figure over seeds, "
                                                    "{median, min, max}, is followed by its median)"),
        OpenApiParameter("limit", int, description=f"latest points (default and at most {TREND_LIMIT})")])
    @action(detail=True, filter_backends=[], pagination_class=None)
    def trend(self, request, pk=None):
        """The time series of a summary value over the scenario's finished runs, oldest first."""
        scenario = self.get_object()
        metric = request.query_params.get("metric", "norm_busbw")
        try:
            limit = max(1, min(TREND_LIMIT, int(request.query_params.get("limit", TREND_LIMIT))))
        except ValueError:
            return Response({"limit": ["expected an integer"]}, status=status.HTTP_400_BAD_REQUEST)
        rows = list(SimulationRun.objects.filter(scenario=scenario, status=RunStatus.SUCCEEDED)
                    .order_by("-finished_at").values_list("id", "finished_at", "summary", "inventory_state")[:limit])
        points = [{"run": rid, "time": finished, "value": median_of((summary or {}).get(metric)),
                   "status_hash": (state or {}).get("status_hash")}
                  for rid, finished, summary, state in reversed(rows)]
        return Response({"scenario": scenario.pk, "metric": metric, "points": points})


class CalibrationFilter(IdFilters):
    class Meta:
        model = CalibrationProfile
        fields = {"name": ["exact", "icontains"], "cluster__name": ["exact"]}


class CalibrationViewSet(viewsets.ModelViewSet):
    """Calibration profiles: named parameter values per cluster (``cluster`` filters by id, ``cluster__name`` by
    name) that a run names in its ``calibration`` parameter. Everyone who may read runs reads them; editing and
    deleting take the owner or runs.manage_any_calibration (:mod:`twin.runs.ownership`); every write is in the
    change log (``/api/inventory/changes/?model=calibrationprofile``)."""

    queryset = CalibrationProfile.objects.select_related("created_by", "cluster")
    permission_classes = OWNED
    owner_actions = ("update", "partial_update", "destroy")
    serializer_class = CalibrationSerializer
    filterset_class = CalibrationFilter
    ordering_fields = ("id", "name", "created_at")
    lookup_value_regex = r"\d+"

    def _user(self):
        return self.request.user if self.request.user.is_authenticated else None

    def perform_create(self, serializer):
        serializer.instance = actions.save_calibration(**serializer.validated_data, user=self._user())

    def perform_update(self, serializer):
        p = serializer.instance
        d = {"cluster": p.cluster, "name": p.name, "values": p.values, "intervals": p.intervals,
             "summary": p.summary, "notes": p.notes, "holdout": p.holdout, "refused": p.refused,
             **serializer.validated_data}
        serializer.instance = actions.save_calibration(**d, user=self._user(), instance=p)

    def perform_destroy(self, instance):
        actions.delete_calibration(instance, user=self._user())


DUMPS_ARCHIVE_PARAM = OpenApiParameter("archive", str, enum=list(archive.FORMATS), default=archive.DEFAULT_FORMAT,
                                       description="the archive's format: a folder of per-rank dumps as PyTorch's "
                                                   "fr_trace reads it, as a tar.gz or a zip")


class RunViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                 mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """Simulation runs: create (from a scenario or inline), list, inspect, cancel, fetch results."""

    queryset = SimulationRun.objects.select_related("created_by")
    permission_classes = OWNED
    owner_actions = ("destroy", "cancel")
    serializer_class = RunSerializer
    filterset_class = RunFilter
    ordering_fields = ("id", "created_at", "finished_at", "status")
    lookup_value_regex = r"\d+"

    def get_serializer_class(self):
        if self.action == "create":
            return RunCreateSerializer
        return RunSerializer

    @extend_schema(request=RunCreateSerializer, responses={201: RunSerializer})
    def create(self, request, *args, **kwargs):
        s = RunCreateSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        d = s.validated_data
        user = request.user if request.user.is_authenticated else None
        run = actions.create_run(d["kind"], d["params"], d["cluster"], scenario=d.get("scenario"), user=user,
                                 validated=True)
        return Response(RunSerializer(run, context={"request": request}).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        actions.delete_run(instance)

    @extend_schema(request=None, responses=RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Ask the run to stop: a queued run is cancelled at once, a running one at its next progress report."""
        run = actions.cancel_run(self.get_object())
        run.refresh_from_db()
        return Response(RunSerializer(run, context={"request": request}).data)

    @extend_schema(responses=OpenApiTypes.OBJECT, filters=False, parameters=[
        OpenApiParameter("arrays", str, enum=["list", "base64", "none"],
                         description="arrays as JSON lists (default), as base64 of the raw little-endian bytes, "
                                     "or left out"),
        OpenApiParameter("names", str, description="only these arrays (comma-separated names; default: all)")])
    @action(detail=True, filter_backends=[], pagination_class=None)
    def results(self, request, pk=None):
        """Summary and arrays of a run (arrays: name -> {dtype, shape, data})."""
        run = self.get_object()
        mode = request.query_params.get("arrays", "list")
        arrays = {}
        if mode != "none":
            names = [n.strip() for n in request.query_params.get("names", "").split(",") if n.strip()]
            for a in (run.arrays.filter(name__in=names) if names else run.arrays.all()):
                data = a.unpack()
                arrays[a.name] = {"dtype": a.dtype, "shape": a.shape,
                                  "data": base64.b64encode(data.tobytes()).decode() if mode == "base64"
                                  else data.astype(float if data.dtype.kind == "f" else int).tolist()}
        return Response({"id": run.pk, "kind": run.kind, "status": run.status, "error": scrub(run.error),
                         "summary": scrub(run.summary), "inventory_state": run.inventory_state, "arrays": arrays})

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY, (200, "application/zip"):
                              OpenApiTypes.BINARY, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
                   filters=False, parameters=[DUMPS_ARCHIVE_PARAM])
    @action(detail=True, filter_backends=[], pagination_class=None)
    def dumps(self, request, pk=None):
        """The dumps a run keeps (a kind whose ``files`` name them: a debug rehearsal's per-rank flight-recorder
        files, docs/debugging.md), as one archive (``archive``: tar.gz or zip) holding the folder
        ``run-<id>-dumps/`` of every rank's ``nccl_trace_rank_<rank>`` as PyTorch's fr_trace reads it, and the
        placement beside it (:func:`sim.debug.archive.stream`), built while it is sent from what the run keeps;
        for a run made before that, the tar.gz as stored (404 while the run has none: not finished, or a kind that
        keeps none)."""
        return self._dumps(request, None)

    @extend_schema(responses={(200, "application/gzip"): OpenApiTypes.BINARY, (200, "application/zip"):
                              OpenApiTypes.BINARY, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
                   filters=False, operation_id="runs_dumps_rank_retrieve",
                   parameters=[DUMPS_ARCHIVE_PARAM, OpenApiParameter("rank", int, OpenApiParameter.PATH,
                                                                     description="the rank whose dump to download")])
    @action(detail=True, url_path=r"dumps/(?P<rank>[0-9]{1,9})", filter_backends=[], pagination_class=None)
    def rank_dumps(self, request, pk=None, rank=None):
        """One rank's dump of a run that keeps dumps, as an archive (``archive``: tar.gz or zip) holding the
        folder ``run-<id>-rank-<rank>/`` with its ``nccl_trace_rank_<rank>`` alone (404 when the rank left none)."""
        return self._dumps(request, int(rank))

    def _dumps(self, request, rank):
        run = self.get_object()
        why = ownership.dumps_refusal(request.user, run)
        if why is not None:
            raise PermissionDenied(why) if request.user.is_authenticated else NotAuthenticated(why)
        fmt = request.query_params.get("archive", archive.DEFAULT_FORMAT)
        if fmt not in archive.FORMATS:
            return Response({"archive": [f"{str(fmt)[:40]!r} is not an archive format: one of "
                                         f"{', '.join(archive.FORMATS)}"]}, status=status.HTTP_400_BAD_REQUEST)
        path = files.stored_dumps(run.pk)
        if path is None:
            kept = "dumps" in getattr(registry.kinds().get(run.kind), "files", ())
            why = "it is not finished" if not run.finished else "none were stored" if kept \
                else f"a {run.kind} run keeps none"
            return Response({"detail": f"run {run.pk} has no dumps: {why}"}, status=status.HTTP_404_NOT_FOUND)
        if path.name == files.DUMPS_ARCHIVE:                 # a run made before DUMPS_STATE: its archive as stored
            if rank is not None or fmt != archive.DEFAULT_FORMAT:
                return Response({"detail": f"run {run.pk} keeps its dumps only as the archive it stored (made "
                                           f"before downloads held the dumps as they are): GET /api/runs/{run.pk}/"
                                           f"dumps/, then python -m sim debug unpack"},
                                status=status.HTTP_404_NOT_FOUND)
            return FileResponse(path.open("rb"), as_attachment=True, filename=f"run-{run.pk}-{files.DUMPS_ARCHIVE}",
                                content_type="application/gzip")
        top = files.dumps_folder(run.pk, rank)
        try:
            dumps = dumpstate.load(path, keep=1)       # one stage's times in memory at a time
        except DumpError as e:
            return Response({"detail": f"run {run.pk}'s dumps cannot be read back: {scrub(str(e))}"},
                            status=status.HTTP_500_INTERNAL_SERVER_ERROR)
        try:
            pieces = archive.stream(dumps, top, path.stat().st_mtime, fmt, rank=rank)
        except DumpError as e:                         # a rank the job lacks, or one that left no dump
            return Response({"detail": f"run {run.pk} has no such dump: {scrub(str(e))}"},
                            status=status.HTTP_404_NOT_FOUND)
        out = StreamingHttpResponse(pieces, content_type=archive.FORMATS[fmt])
        out["Content-Disposition"] = f'attachment; filename="{top}.{fmt}"'
        return out


class ScheduleViewSet(viewsets.ModelViewSet):
    """Periodic runs of a scenario (django-celery-beat PeriodicTasks; also editable in the admin)."""

    queryset = PeriodicTask.objects.filter(task=SCHEDULE_TASK).select_related("crontab", "interval",
                                                                             "twin_owner__user")
    permission_classes = OWNED
    owner_actions = ("update", "partial_update", "destroy")
    serializer_class = ScheduleSerializer
    filter_backends = []
    ordering = ("id",)

    def get_queryset(self):
        return super().get_queryset().order_by("id")

    def perform_create(self, serializer):
        user = self.request.user if self.request.user.is_authenticated else None
        serializer.instance = actions.save_schedule(**serializer.validated_data, user=user)

    def perform_update(self, serializer):
        d = {k: serializer.validated_data.get(k) for k in ("scenario", "name", "crontab", "interval")}
        d["name"] = d["name"] or serializer.instance.name
        d["enabled"] = serializer.validated_data.get("enabled", serializer.instance.enabled)
        serializer.instance = actions.save_schedule(instance=serializer.instance, **d)

    def perform_destroy(self, instance):
        actions.delete_schedule(instance)


class JobFilter(IdFilters):
    state = filters.MultipleChoiceFilter(choices=JobState.choices)
    run = IntegerFilter(field_name="run_id")

    class Meta:
        model = Job
        fields = {"name": ["exact", "icontains"], "model": ["exact"], "cluster__name": ["exact"]}


def _cluster_of(request):
    """The cluster the query's ``cluster`` id names, or the 400 answer that says why there is none."""
    from twin.inventory.models import Cluster
    raw = request.query_params.get("cluster")
    try:
        cluster = Cluster.objects.filter(pk=int(raw)).first() if 0 <= int(raw) < 2**63 else None
    except (TypeError, ValueError):
        return None, Response({"cluster": ["required: a cluster id" if raw is None else f"not a cluster id: "
                                                                                      f"{str(raw)[:32]!r}"]},
                              status=status.HTTP_400_BAD_REQUEST)
    if cluster is None:
        return None, Response({"cluster": [f"no cluster {raw}"]}, status=status.HTTP_400_BAD_REQUEST)
    return cluster, None


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    """Training jobs (written by ``job`` and ``jobs`` runs): list, filter by cluster and state, inspect; the rank ->
    GPU list of one; the job a GPU runs; a cluster's occupancy; release a running job (its owner or
    runs.manage_any_job); what-ifs of a job."""

    queryset = Job.objects.select_related("created_by")
    owner_actions = ("release",)
    serializer_class = JobSerializer
    filterset_class = JobFilter
    ordering_fields = ("id", "created_at", "finished_at", "state", "n_gpus")
    lookup_value_regex = r"\d+"

    @extend_schema(responses=OpenApiTypes.OBJECT, filters=False)
    @action(detail=True, filter_backends=[], pagination_class=None)
    def gpus(self, request, pk=None):
        """Rank -> GPU index (cluster order) of the job: ``{"job", "cluster", "gpus": [...]}``."""
        job = self.get_object()
        return Response({"job": job.pk, "cluster": job.cluster_id, "gpus": job.gpus.tolist()})

    @extend_schema(responses={200: JobSerializer, 404: OpenApiTypes.OBJECT}, filters=False, parameters=[
        OpenApiParameter("cluster", int, required=True, description="cluster id"),
        OpenApiParameter("gpu", int, required=True, description="GPU index in the cluster (GPU.index)")])
    @action(detail=False, url_path="on-gpu", filter_backends=[], pagination_class=None)
    def on_gpu(self, request):
        """The job a GPU runs: the newest job of the cluster holding it (running, not a what-if)."""
        from twin.inventory.models import Cluster
        errors, values = {}, {}
        for name in ("cluster", "gpu"):
            raw = request.query_params.get(name)
            try:
                values[name] = int(raw)
                if not 0 <= values[name] < 2**31:
                    raise ValueError
            except (TypeError, ValueError):
                errors[name] = ["required: a non-negative integer" if raw is None else f"not a GPU or cluster id: "
                                                                                      f"{str(raw)[:32]!r}"]
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        cluster = Cluster.objects.filter(pk=values["cluster"]).first()
        if cluster is None:
            return Response({"cluster": [f"no cluster {values['cluster']}"]}, status=status.HTTP_400_BAD_REQUEST)
        job = job_actions.gpu_job_lookup(cluster, values["gpu"])
        if job is None:
            return Response({"detail": f"GPU {values['gpu']} of {cluster.name} runs no job"},
                            status=status.HTTP_404_NOT_FOUND)
        return Response(JobSerializer(job, context={"request": request}).data)

    @extend_schema(responses={200: OccupancySerializer}, filters=False, parameters=[
        OpenApiParameter("cluster", int, required=True, description="cluster id")])
    @action(detail=False, filter_backends=[], pagination_class=None)
    def occupancy(self, request):
        """What the cluster's jobs hold: running jobs (what-ifs and finished jobs never count) and their GPUs."""
        cluster, refused = _cluster_of(request)
        if refused is not None:
            return refused
        return Response({"cluster": cluster.pk, **job_actions.occupancy(cluster)})

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT}, filters=False, parameters=[
        OpenApiParameter("cluster", int, required=True, description="cluster id"),
        OpenApiParameter("model", str, required=True, enum=list(MODELS), description="a model preset")])
    @action(detail=False, filter_backends=[], pagination_class=None)
    def default(self, request):
        """The default layout of a model on a cluster (:func:`sim.jobs.defaults.default_layout`: its published
        recipe when it fits, else the fastest layout that fits): ``{"cluster", "model", "params", "why", "source",
        "layouts", "step_s", "memory_gb"}``; 400 naming ``cluster`` or ``model`` (one too large for the cluster
        says so)."""
        cluster, refused = _cluster_of(request)
        if refused is not None:
            return refused
        try:
            return Response(job_layouts.default_for(cluster, str(request.query_params.get("model", ""))[:64]))
        except ParamError as e:
            return Response(e.errors, status=status.HTTP_400_BAD_REQUEST)

    @extend_schema(request=None, responses={200: JobSerializer, 409: OpenApiTypes.OBJECT}, filters=False)
    @action(detail=True, methods=["post"], permission_classes=[StartsRuns, OwnerOrManager], filter_backends=[])
    def release(self, request, pk=None):
        """End the running job: its GPUs are free again (409 when it holds none: queued, finished, failed, a
        what-if)."""
        try:
            job = job_actions.release_job(self.get_object())
        except job_actions.NotRunning as e:
            return Response({"detail": str(e)}, status=status.HTTP_409_CONFLICT)
        return Response(JobSerializer(job, context={"request": request}).data)

    @extend_schema(request=WhatifSerializer, responses={201: RunSerializer(many=True)}, filters=False)
    @action(detail=True, methods=["post"], permission_classes=[StartsRuns], filter_backends=[])
    def whatif(self, request, pk=None):
        """What-ifs of the job: one run per value of ``vary`` (or per cluster), each job named for what it varies
        (``<name> (what-if: placement random)``); they are simulated and never hold GPUs."""
        s = WhatifSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        user = request.user if request.user.is_authenticated else None
        runs = actions.create_whatifs(self.get_object(), s.validated_data["vary"], s.validated_data["values"],
                                      user=user)
        return Response(RunSerializer(runs, many=True, context={"request": request}).data,
                        status=status.HTTP_201_CREATED)
