"""Serializers of the runs API. Parameters are validated per kind (:mod:`twin.runs.kinds`): a malformed scenario
or run is a 400 naming the field, e.g. ``{"params": {"qps": ["Ensure this value is greater than or equal to 1."]}}``."""
from __future__ import annotations

import json

from django_celery_beat.models import PeriodicTask
from rest_framework import serializers

from twin.api.base import InventorySerializer
from twin.inventory.models import Cluster
from twin.runs.actions import SCHEDULE_TASK
from twin.runs.choices import RunKind
from twin.runs.kinds import validate_params
from twin.runs.models import Scenario, SimulationRun


class ScenarioSerializer(InventorySerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)

    class Meta:
        model = Scenario
        fields = ("id", "url", "display", "name", "description", "kind", "cluster", "params", "created_at",
                  "created_by")
        read_only_fields = ("created_at",)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        kind = attrs.get("kind", getattr(self.instance, "kind", None))
        cluster = attrs.get("cluster", getattr(self.instance, "cluster", None))
        params = attrs.get("params", getattr(self.instance, "params", {}))
        attrs["params"] = validate_params(kind, params, cluster)
        return attrs


class RunSerializer(InventorySerializer):
    """A run as the API shows it (results are at ``.../results/``)."""

    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    brief_fields = ("id", "url", "display", "kind", "status", "progress")

    class Meta:
        model = SimulationRun
        fields = ("id", "url", "display", "kind", "params", "cluster", "scenario", "parent", "status", "progress",
                  "created_at", "started_at", "finished_at", "created_by", "error", "notes", "summary",
                  "inventory_state", "worker", "heartbeat_at", "attempts", "cancel_requested", "celery_task_id")
        read_only_fields = fields


class RunCreateSerializer(serializers.Serializer):
    """Start a run: from a saved ``scenario``, or inline with ``kind``, ``params`` and ``cluster``."""

    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.select_related("cluster"),
                                                  required=False, allow_null=True)
    kind = serializers.ChoiceField(choices=RunKind.choices, required=False)
    params = serializers.JSONField(required=False, default=dict)
    cluster = serializers.SlugRelatedField(slug_field="name", queryset=Cluster.objects.all(), required=False,
                                           help_text="cluster name (or use its id in cluster_id)")
    cluster_id = serializers.PrimaryKeyRelatedField(source="cluster_by_id", queryset=Cluster.objects.all(),
                                                    required=False)

    def validate(self, attrs):
        scenario = attrs.get("scenario")
        if scenario is not None:
            attrs.update(kind=scenario.kind, cluster=scenario.cluster,
                         params=validate_params(scenario.kind, {**scenario.params, **attrs.get("params", {})},
                                                scenario.cluster))
            return attrs
        cluster = attrs.get("cluster") or attrs.pop("cluster_by_id", None)
        missing = {f: ["required without a scenario"] for f, v in (("kind", attrs.get("kind")), ("cluster", cluster))
                   if v is None}
        if missing:
            raise serializers.ValidationError(missing)
        attrs["cluster"] = cluster
        attrs["params"] = validate_params(attrs["kind"], attrs.get("params", {}), cluster)
        return attrs


class _Crontab(serializers.Serializer):
    minute = serializers.CharField(default="0")
    hour = serializers.CharField(default="*")
    day_of_week = serializers.CharField(default="*")
    day_of_month = serializers.CharField(default="*")
    month_of_year = serializers.CharField(default="*")


class _Interval(serializers.Serializer):
    every = serializers.IntegerField(min_value=1)
    period = serializers.ChoiceField(choices=["days", "hours", "minutes", "seconds"])


class ScheduleSerializer(serializers.Serializer):
    """A periodic run: a scenario started on a crontab or an interval (a django-celery-beat PeriodicTask)."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(max_length=200)
    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.all())
    enabled = serializers.BooleanField(default=True)
    crontab = _Crontab(required=False, allow_null=True)
    interval = _Interval(required=False, allow_null=True)
    last_run_at = serializers.DateTimeField(read_only=True)
    total_run_count = serializers.IntegerField(read_only=True)

    def to_representation(self, task: PeriodicTask):
        c, i = task.crontab, task.interval
        return {
            "id": task.pk, "name": task.name, "scenario": json.loads(task.kwargs or "{}").get("scenario_id"),
            "enabled": task.enabled,
            "crontab": None if c is None else {f: getattr(c, f) for f in _Crontab().fields},
            "interval": None if i is None else {"every": i.every, "period": i.period},
            "last_run_at": task.last_run_at, "total_run_count": task.total_run_count,
        }

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
            for key in ("crontab", "interval"):
                attrs.setdefault(key, current[key])
            attrs.setdefault("scenario", Scenario.objects.filter(pk=current["scenario"]).first())
        if bool(attrs.get("crontab")) == bool(attrs.get("interval")):
            raise serializers.ValidationError({"crontab": ["give exactly one of crontab and interval"]})
        return attrs


SCHEDULE_TASK_NAME = SCHEDULE_TASK
