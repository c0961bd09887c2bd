"""``/api/inventory/changes/``: the change log, read-only, newest first, filterable by cluster, item, user, action,
field and time; paginated as every list (``?pagination=cursor`` walks it by id).

Each row is one ``ObjectChange`` read without joins (the names are kept on the row), so a page costs two queries
whatever its size.
"""
from __future__ import annotations

import django_filters as df
from django.db.models import Q
from rest_framework import serializers, viewsets

from twin.inventory.choices import ChangeAction
from twin.api.inventory.views import ENDPOINTS
from twin.inventory.filtersets import CharInFilter, ChoiceInFilter, NumberInFilter
from twin.inventory.models import ObjectChange

# The models a change can name (``model`` filter): those the API writes.
LOGGED_MODELS = sorted(model._meta.model_name for model in ENDPOINTS)


class ChangeSerializer(serializers.ModelSerializer):
    cluster = serializers.IntegerField(source="cluster_id", allow_null=True, read_only=True,
                                       help_text="the item's cluster id at the time (null for the catalog)")

    class Meta:
        model = ObjectChange
        fields = ["id", "time", "user", "user_name", "action", "model", "object_id", "object_name", "cluster",
                  "cluster_name", "before", "after"]
        read_only_fields = fields


def _ids_or_names(id_field: str, name_field: str):
    """A filter method: each value an id (digits) or a name, rows matching any of them."""
    def method(queryset, name, values):
        digits = [v.isascii() and v.isdigit() for v in values]     # "²".isdigit() holds, int("²") fails
        ids = [int(v) for v, d in zip(values, digits) if d]
        names = [v for v, d in zip(values, digits) if not d]
        return queryset.filter(Q(**{f"{id_field}__in": ids}) | Q(**{f"{name_field}__in": names}))
    return method


def _changed_field(queryset, name, value):
    return queryset.filter(action=ChangeAction.UPDATE, after__has_key=value)


class ChangeFilterSet(df.FilterSet):
    cluster = CharInFilter(method=_ids_or_names("cluster_id", "cluster_name"), label="cluster by id or name")
    model = ChoiceInFilter(choices=[(m, m) for m in LOGGED_MODELS], label="the item's model: link, switch...")
    object_id = NumberInFilter(field_name="object_id", lookup_expr="in", label="the item's id")
    object_name = CharInFilter(field_name="object_name", lookup_expr="in", label="the item's name")
    user = CharInFilter(method=_ids_or_names("user_id", "user_name"), label="user by id or name")
    action = ChoiceInFilter(choices=ChangeAction.choices)
    field = df.CharFilter(method=_changed_field, label="updates that changed this field (status...)")
    time__gte = df.IsoDateTimeFilter(field_name="time", lookup_expr="gte", label="at or after (ISO 8601)")
    time__lte = df.IsoDateTimeFilter(field_name="time", lookup_expr="lte", label="at or before (ISO 8601)")

    class Meta:
        model = ObjectChange
        fields: list[str] = []


class ChangeViewSet(viewsets.ReadOnlyModelViewSet):
    """Who changed which inventory item, when, and its fields before and after (newest first)."""

    queryset = ObjectChange.objects.all()
    serializer_class = ChangeSerializer
    filterset_class = ChangeFilterSet
    ordering_fields = ["id"]
    ordering = ["-id"]
