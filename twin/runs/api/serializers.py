"""Serializers of the runs API. Kinds come from the registry (:mod:`twin.runs.registry`); parameters are validated
by each kind's declaration (:mod:`twin.runs.params`, built from :mod:`sim.core.params`): a malformed scenario or run is
a 400 naming the field, e.g. ``{"params": {"qps": ["must be at least 1"]}}``, the words ``python -m sim`` uses.

Every run, scenario and schedule row says whether the request's user may change it (``can_change``: the one rule
of :mod:`twin.runs.ownership`); ``created_by`` is null for anonymous readers (twin.api.fields.UserNameField); server
paths are scrubbed from summaries, errors and notes (:mod:`twin.runs.server_paths`)."""
from __future__ import annotations

import json

from django_celery_beat.models import PeriodicTask
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from twin.api.base import InventorySerializer
from twin.api.fields import NameOrIdRelatedField, UserNameField
from twin.api.permissions import shows_user_names
from twin.inventory.models import Cluster
from twin.runs import calibration, job_actions, ownership, registry
from twin.runs.constants import START_RUNS
from twin.runs.models import CalibrationProfile, Job, Scenario, SimulationRun
from twin.runs.params import serializer_for, validate_params
from twin.runs.schedules import CRONTAB_FIELDS, MAX_INTERVAL_SECONDS, PERIOD_SECONDS, next_run_at
from twin.runs.server_paths import scrub


@extend_schema_field(OpenApiTypes.BOOL)
class CanChangeField(serializers.Field):
    """Whether the request's user may cancel, delete or edit the row (:func:`twin.runs.ownership.may_change`)."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, obj) -> bool:
        request = self.context.get("request")
        return ownership.may_change(getattr(request, "user", None), obj)


CAN_CHANGE_HELP = "whether you may cancel, delete or edit it: its owner, or a user with the manage-any permission"


class KindField(serializers.ChoiceField):
    """A registered run kind; its choices are read from the registry each time a serializer is made."""

    def __init__(self, **kwargs):
        super().__init__(choices=registry.choices(), **kwargs)


class ParamsField(serializers.JSONField):
    """A run's or scenario's parameters, validated by its kind (see :func:`twin.runs.params.validate_params`)."""


class ParamsFieldSchema(OpenApiSerializerFieldExtension):
    """In the OpenAPI schema ``params`` is any of the kinds' parameter serializers (generated from sim.core.params: one
    component per kind, e.g. ``CollectiveParams``, with each parameter's type, range, default and help)."""

    target_class = ParamsField

    def map_serializer_field(self, auto_schema, direction):
        components = [auto_schema.resolve_serializer(serializer_for(k), direction) for k in registry.kinds()]
        return {"anyOf": [c.ref for c in components if c],     # sweep's parameters have no fields of their own
                "description": "the parameters of the run's kind (the component named after it; a sweep: "
                               "{kind, params, sweep})"}


class ScenarioSerializer(InventorySerializer):
    """A scenario; it is saved through :func:`twin.runs.actions.save_scenario`, which validates its parameters."""

    created_by = UserNameField(source="created_by.username")
    can_change = CanChangeField(help_text=CAN_CHANGE_HELP)
    kind = KindField()
    cluster = NameOrIdRelatedField("cluster", queryset=Cluster.objects.all(),
                                   help_text="the cluster's name, as /api/runs/ takes it (or its id)")
    params = ParamsField(required=False, default=dict)

    class Meta:
        model = Scenario
        fields = ("id", "url", "display", "name", "description", "kind", "cluster", "params", "created_at",
                  "created_by", "can_change")
        read_only_fields = ("created_at",)


class ProfileValuesField(serializers.JSONField):
    """A profile's values, checked by :func:`twin.runs.calibration.checked_values` when saved."""


class ProfileIntervalsField(serializers.JSONField):
    """A profile's intervals, checked by :func:`twin.runs.calibration.checked_intervals` when saved."""


def _number_schema(params) -> dict:
    """One parameter name as a profile takes it: an integer if a kind declares it ``int``, within every declaring
    kind's bounds (each kind's parse must take it)."""
    out = {"type": "integer" if any(p.type == "int" for _, p in params) else "number",
           "description": f"{params[0][1].help} ({', '.join(k for k, _ in params)})"}
    lows = [p.min for _, p in params if p.min is not None]
    highs = [p.max for _, p in params if p.max is not None]
    if lows:
        out["minimum"] = max(lows)
    if highs:
        out["maximum"] = min(highs)
    return out


class ProfileValuesSchema(OpenApiSerializerFieldExtension):
    """``values`` in the schema: one property per numeric parameter of the registered kinds, with its bounds (read
    when the schema is built: every kind registered by then); any other name is refused."""

    target_class = ProfileValuesField

    def map_serializer_field(self, auto_schema, direction):
        return {"type": "object", "additionalProperties": False,
                "properties": {n: _number_schema(ps) for n, ps in sorted(calibration.numeric_params().items())},
                "description": "parameter name -> number: float or int parameters of the run kinds, each within "
                               "its declared range (a kind's runs ignore those it does not declare)"}


class ProfileIntervalsSchema(OpenApiSerializerFieldExtension):
    """``intervals`` in the schema: [low, high] per parameter name of ``values``."""

    target_class = ProfileIntervalsField

    def map_serializer_field(self, auto_schema, direction):
        pair = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
        return {"type": "object", "additionalProperties": False,
                "properties": {n: pair for n in sorted(calibration.numeric_params())},
                "description": "parameter name (one of values) -> [low, high], low <= high: e.g. the fit's 95 % "
                               "interval"}


@extend_schema_field({"type": "object", "additionalProperties": True,
                      "description": "the fit's before/after errors, as the calibration left them"})
class ProfileSummaryField(serializers.JSONField):
    """A profile's summary: any object of limited size."""


@extend_schema_field({"type": "object", "additionalProperties": True,
                      "description": "the fit's held-out error: method (folds, leave-one-out, holdout), folds, "
                                     "count, median_abs_error (a fraction), before_ and in_sample_median_abs_error"})
class ProfileHoldoutField(serializers.JSONField):
    """A profile's held-out error, checked by :func:`twin.runs.calibration.checked_holdout` when saved."""


@extend_schema_field({"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string"}, "reason": {"type": "string"}, "would": {"type": "string"}}},
    "description": "parameters the fit refused to apply (the data cannot determine them), each with the measurement "
                   "that would determine it"})
class ProfileRefusedField(serializers.JSONField):
    """A profile's refused parameters, checked by :func:`twin.runs.calibration.checked_refused` when saved."""


class CalibrationSerializer(InventorySerializer):
    """A calibration profile of a cluster, saved through :func:`twin.runs.actions.save_calibration` (values checked
    by each parameter's declaration, change log). A run names it by its name (the ``calibration`` parameter)."""

    created_by = UserNameField(source="created_by.username")
    can_change = CanChangeField(help_text="whether you may edit or delete it: its owner, or a user with "
                                          "runs.manage_any_calibration")
    cluster = NameOrIdRelatedField("cluster", queryset=Cluster.objects.all(),
                                   help_text="the cluster's name (or its id)")
    values = ProfileValuesField()
    intervals = ProfileIntervalsField(required=False, default=dict)
    summary = ProfileSummaryField(required=False, default=dict)
    holdout = ProfileHoldoutField(required=False, default=dict)
    refused = ProfileRefusedField(required=False, default=list)

    class Meta:
        model = CalibrationProfile
        fields = ("id", "url", "display", "cluster", "name", "values", "intervals", "summary", "holdout", "refused",
                  "notes",
                  "created_at", "created_by", "can_change")
        read_only_fields = ("created_at",)


class HeadlineSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    format = serializers.ChoiceField(choices=["pct", "error", "GBps", "TBps", "int", "num", "s", "text"])
    value = serializers.JSONField(allow_null=True, help_text="a number, or {median, min, max} over seeds")


class RunSerializer(InventorySerializer):
    """A run as the API shows it (results are at ``.../results/``), with what its kind says of it: its
    parameters in one line (``params_text``), its headline figures and the browser's result view."""

    created_by = UserNameField(source="created_by.username")
    can_change = CanChangeField(help_text=CAN_CHANGE_HELP)
    params_text = serializers.SerializerMethodField()
    headline = serializers.SerializerMethodField()
    view = serializers.SerializerMethodField()
    stalled = serializers.SerializerMethodField(help_text="running, but no heartbeat for TWIN_RUNS_STALE_SECONDS")
    stalled_reason = serializers.SerializerMethodField(help_text="why it looks stalled (empty when it does not)")
    dumps_refusal = serializers.SerializerMethodField(
        help_text="why you may not download its dumps archive (TWIN_DUMPS_ACCESS); empty when you may, or when its "
                  "kind keeps none")
    brief_fields = ("id", "url", "display", "kind", "status", "progress")

    class Meta:
        model = SimulationRun
        fields = ("id", "url", "display", "kind", "params", "params_text", "cluster", "scenario", "schedule", "parent",
                  "status", "progress", "created_at", "started_at", "finished_at", "created_by", "error", "notes",
                  "summary", "headline", "view", "inventory_state", "worker", "heartbeat_at", "stalled",
                  "stalled_reason", "attempts", "cancel_requested", "celery_task_id", "can_change", "dumps_refusal")
        read_only_fields = fields

    def to_representation(self, run):
        out = super().to_representation(run)
        for key in ("summary", "error", "notes"):
            if out.get(key):
                out[key] = scrub(out[key])
        return out

    @staticmethod
    def _kind(run):
        try:
            return registry.get(run.kind)
        except ValueError:                  # a kind no longer registered: its run is still shown
            return None

    def get_params_text(self, run) -> str:
        kind = self._kind(run)
        text = kind.text(run.params) if kind else ""
        record = run.params.get(calibration.KEY) if isinstance(run.params, dict) else None
        if isinstance(record, dict):            # the profile it ran with (lists name it; the run page shows more)
            text = " · ".join(filter(None, (text, f"calibration {record.get('profile')}")))
        return text

    @extend_schema_field(HeadlineSerializer(many=True))
    def get_headline(self, run):
        kind = self._kind(run)
        return kind.headline_values(run.summary) if kind else []

    def get_dumps_refusal(self, run) -> str:
        kind = self._kind(run)
        if kind is None or "dumps" not in kind.files:
            return ""
        request = self.context.get("request")
        return ownership.dumps_refusal(getattr(request, "user", None), run) or ""

    def get_stalled(self, run) -> bool:
        return bool(run.stalled())

    def get_stalled_reason(self, run) -> str:
        return run.stalled()

    @extend_schema_field(OpenApiTypes.STR)
    def get_view(self, run):
        kind = self._kind(run)
        return kind.view if kind else "summary"


class RunCreateSerializer(serializers.Serializer):
    """Start a run: from a saved ``scenario``, or inline with ``kind``, ``params`` and ``cluster``."""

    # what validate() requires, for the schema (twin/api/schema.py)
    required_alternatives = (("scenario",), ("kind", "cluster"), ("kind", "cluster_id"))

    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.select_related("cluster"),
                                                  required=False, allow_null=True)
    kind = KindField(required=False)
    params = ParamsField(required=False, default=dict)
    cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all(), required=False,
                                           help_text="cluster name (or use its id in cluster_id)")
    cluster_id = serializers.PrimaryKeyRelatedField(source="cluster_by_id", queryset=Cluster.objects.all(),
                                                    required=False)

    def validate(self, attrs):
        scenario = attrs.get("scenario")
        if scenario is not None:
            given = attrs.get("params", {})
            stored = calibration.unapplied(scenario.params) if calibration.KEY in given else scenario.params
            attrs.update(kind=scenario.kind, cluster=scenario.cluster,      # another profile: none of the first's
                         params=validate_params(scenario.kind, {**stored, **given}, scenario.cluster))
            return attrs
        cluster = attrs.get("cluster") or attrs.pop("cluster_by_id", None)
        missing = {f: ["required without a scenario"] for f, v in (("kind", attrs.get("kind")), ("cluster", cluster))
                   if v is None}
        if missing:
            raise serializers.ValidationError(missing)
        attrs["cluster"] = cluster
        attrs["params"] = validate_params(attrs["kind"], attrs.get("params", {}), cluster)
        return attrs


class _Strict(serializers.Serializer):
    """A nested object whose unknown keys are refused by name (DRF drops them: a crontab ``second`` was silently
    ignored and the schedule fired once a minute instead)."""

    what = "field"

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(str(k)[:64] for k in set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({k: [f"not {self.what}: use {', '.join(self.fields)}"]
                                                   for k in unknown})
        return super().to_internal_value(data)


CRONTAB_EXAMPLES = {"minute": ": 30, 0,30, */15, 10-20", "day_of_week": " (0 is Sunday)"}


def _crontab_field(name: str) -> serializers.CharField:
    """One crontab field: its allowed values and its default (the form's initial value) from CRONTAB_FIELDS."""
    default, allowed = CRONTAB_FIELDS[name]
    return serializers.CharField(required=False, initial=default,
                                 help_text=f"{allowed}{CRONTAB_EXAMPLES.get(name, '')}; default {default}")


class CrontabSerializer(_Strict):
    """A crontab; a field left out is at its default (minute 0, the others ``*``), or on ``PATCH`` as the schedule
    has it. Every field is read by Celery's crontab parser before it is saved (:mod:`twin.runs.schedules`). The
    Schedules page's form is built from these fields (:func:`twin.runs.params.serializer_form_fields`)."""

    minute = _crontab_field("minute")
    hour = _crontab_field("hour")
    day_of_week = _crontab_field("day_of_week")
    day_of_month = _crontab_field("day_of_month")
    month_of_year = _crontab_field("month_of_year")
    what = "a crontab field"


class IntervalSerializer(_Strict):
    """An interval: every x period, at most a year (365 days) in all."""

    what = "an interval field"
    every = serializers.IntegerField(min_value=1, max_value=MAX_INTERVAL_SECONDS, initial=1,
                                     help_text="how many periods between two starts")
    period = serializers.ChoiceField(choices=list(PERIOD_SECONDS), initial="days", help_text="the unit of every")


class ScheduleSerializer(serializers.Serializer):
    """A periodic run: a scenario started on a crontab or an interval (a django-celery-beat PeriodicTask)."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(max_length=200)
    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.all())
    enabled = serializers.BooleanField(default=True, help_text="beat starts it only while enabled (off: paused)")
    crontab = CrontabSerializer(required=False, allow_null=True)
    interval = IntervalSerializer(required=False, allow_null=True)
    last_run_at = serializers.DateTimeField(read_only=True, allow_null=True)  # null until it first runs
    next_run_at = serializers.DateTimeField(read_only=True, allow_null=True,
                                            help_text="when beat starts it next (null while paused)")
    total_run_count = serializers.IntegerField(read_only=True)
    created_by = UserNameField(help_text="the schedule's owner, whose runs it starts (null for anonymous readers)")
    can_change = serializers.BooleanField(read_only=True, help_text=CAN_CHANGE_HELP)

    def to_representation(self, task: PeriodicTask):
        c, i = task.crontab, task.interval
        return {
            "id": task.pk, "name": task.name, "scenario": json.loads(task.kwargs or "{}").get("scenario_id"),
            "enabled": task.enabled,
            "crontab": None if c is None else {f: getattr(c, f) for f in CRONTAB_FIELDS},
            "interval": None if i is None else {"every": i.every, "period": i.period},
            "last_run_at": task.last_run_at, "next_run_at": next_run_at(task),
            "total_run_count": task.total_run_count,
            "created_by": self._owner_name(task), "can_change": ownership.may_change(self._user(), task),
        }

    def _user(self):
        return getattr(self.context.get("request"), "user", None)

    def _owner_name(self, task) -> str | None:
        owner = ownership.schedule_owner(task) if shows_user_names(self._user()) else None
        return owner.get_username() if owner is not None else None

    def validate_name(self, value):
        clash = PeriodicTask.objects.filter(name=value)
        if self.instance is not None:
            clash = clash.exclude(pk=self.instance.pk)
        if clash.exists():
            raise serializers.ValidationError("a schedule with this name exists")
        return value

    def validate(self, attrs):
        if self.partial and self.instance is not None:
            current = self.to_representation(self.instance)
            for key in ("crontab", "interval"):                     # a partial crontab or interval: the rest stays
                if attrs.get(key) and current[key]:
                    attrs[key] = {**current[key], **attrs[key]}
            for key in ("crontab", "interval"):
                attrs.setdefault(key, current[key])
            attrs.setdefault("scenario", Scenario.objects.filter(pk=current["scenario"]).first())
        if bool(attrs.get("crontab")) == bool(attrs.get("interval")):
            raise serializers.ValidationError({"crontab": ["give exactly one of crontab and interval"]})
        return attrs



class JobSerializer(InventorySerializer):
    """A training job: its model and layout (``params``), its cluster and run, state, times, GPU count and the step
    model's ``results``; whether it holds its GPUs (``holds_gpus``: running and not a what-if,
    :func:`twin.runs.job_actions.holds_gpus`) and whether you may release it (``can_release``). Its rank -> GPU
    list is at ``.../gpus/`` (16,384 numbers are not for every list row)."""

    created_by = UserNameField(source="created_by.username")
    holds_gpus = serializers.SerializerMethodField(help_text="whether it holds its GPUs: running, not a what-if")
    can_release = serializers.SerializerMethodField(
        help_text="whether you may release it: it holds GPUs, and you are its owner or hold runs.manage_any_job")
    brief_fields = ("id", "url", "display", "name", "state")

    class Meta:
        model = Job
        fields = ("id", "url", "display", "name", "cluster", "run", "model", "params", "state", "n_gpus", "gpu_min",
                  "gpu_max", "created_at", "started_at", "finished_at", "results", "error", "created_by", "whatif",
                  "whatif_of", "holds_gpus", "can_release")
        read_only_fields = fields

    def get_holds_gpus(self, job) -> bool:
        return job_actions.holds_gpus(job)

    def get_can_release(self, job) -> bool:
        user = getattr(self.context.get("request"), "user", None)
        return job_actions.holds_gpus(job) and ownership.may_change(user, job) and user.has_perm(START_RUNS)

    def to_representation(self, job):
        out = super().to_representation(job)
        if out.get("error"):
            out["error"] = scrub(out["error"])
        return out


class WhatifSerializer(serializers.Serializer):
    """What-ifs of a job: the same job once per value of one parameter, or on other clusters."""

    vary = serializers.ChoiceField(choices=job_actions.WHATIF_AXES, help_text="the parameter to vary, or cluster")
    values = serializers.ListField(child=serializers.CharField(max_length=100), min_length=1,
                                   max_length=job_actions.WHATIF_MAX_VARIANTS,
                                   help_text="one what-if per value (cluster: names)")


class OccupancySerializer(serializers.Serializer):
    """What a cluster's jobs hold (:func:`twin.runs.job_actions.occupancy`)."""

    cluster = serializers.IntegerField()
    jobs = serializers.IntegerField(help_text="running jobs holding GPUs (what-ifs never do)")
    held_gpus = serializers.IntegerField(help_text="GPUs they hold")
    gpus = serializers.IntegerField(help_text="the cluster's GPUs")
