"""``/api/inventory/changes/``: the change log, read-only, newest first, filterable by cluster, item, user, action,
field and time; paginated as every list (``?pagination=cursor`` walks it by id).

Each row is one ``ObjectChange`` read without joins (the names are kept on the row), so a page costs two queries
whatever its size. Anonymous readers see no user (``user`` and ``user_name`` null, the ``user`` filter by ids only):
:func:`twin.api.permissions.shows_user_names`.
"""
from __future__ import annotations

import django_filters as df
from django.db.models import Q
from rest_framework import serializers, viewsets

from twin.api.fields import UserNameField
from twin.api.inventory.views import ENDPOINTS
from twin.api.permissions import shows_user_names
from twin.inventory import changelog
from twin.inventory.choices import ChangeAction
from twin.inventory.filtersets import CharInFilter, ChoiceInFilter, NumberInFilter
from twin.inventory.models import ObjectChange

# The models a change can name (``model`` filter): those the API writes, and those of the apps above that log theirs
# (changelog.LOGGED_ABOVE: calibration profiles).
LOGGED_MODELS = sorted({model._meta.model_name for model in ENDPOINTS} | changelog.LOGGED_ABOVE)


class ChangeSerializer(serializers.ModelSerializer):
    cluster = serializers.IntegerField(source="cluster_id", allow_null=True, read_only=True,
                                       help_text="the item's cluster id at the time (null for the catalog)")
    user = serializers.SerializerMethodField(help_text="the user's id (null for the system and anonymous readers)")
    user_name = UserNameField(help_text="the user's name at the time; empty: the system")

    def get_user(self, change) -> int | None:
        request = self.context.get("request")
        return change.user_id if shows_user_names(getattr(request, "user", None)) else None

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


def _users(filterset, queryset, name, values):
    """The ``user`` filter: ids or names for signed-in readers, ids only for anonymous ones (a name would tell
    whether that account exists and what it did)."""
    if not shows_user_names(getattr(filterset.request, "user", None)):
        values = [v for v in values if v.isascii() and v.isdigit()] or ["0"]
    return _ids_or_names("user_id", "user_name")(queryset, name, values)


def _changed_field(queryset, name, value):
    return queryset.filter(action=ChangeAction.UPDATE, after__has_key=value)


class ChangeFilterSet(df.FilterSet):
    cluster = CharInFilter(method=_ids_or_names("cluster_id", "cluster_name"), label="cluster by id or name")
    model = ChoiceInFilter(choices=[(m, m) for m in LOGGED_MODELS], label="the item's model: link, switch...")
    object_id = NumberInFilter(field_name="object_id", lookup_expr="in", label="the item's id")
    object_name = CharInFilter(field_name="object_name", lookup_expr="in", label="the item's name")
    user = CharInFilter(method="filter_user", label="user by id or name (anonymous readers: by id)")
    action = ChoiceInFilter(choices=ChangeAction.choices)
    field = df.CharFilter(method=_changed_field, label="updates that changed this field (status...)")
    time__gte = df.IsoDateTimeFilter(field_name="time", lookup_expr="gte", label="at or after (ISO 8601)")
    time__lte = df.IsoDateTimeFilter(field_name="time", lookup_expr="lte", label="at or before (ISO 8601)")

    class Meta:
        model = ObjectChange
        fields: list[str] = []

    def filter_user(self, queryset, name, values):
        return _users(self, queryset, name, values)


class ChangeViewSet(viewsets.ReadOnlyModelViewSet):
    """Who changed which inventory item, when, and its fields before and after (newest first)."""

    queryset = ObjectChange.objects.all()
    serializer_class = ChangeSerializer
    filterset_class = ChangeFilterSet
    ordering_fields = ["id"]
    ordering = ["-id"]
