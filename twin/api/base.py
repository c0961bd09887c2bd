"""The one pattern every inventory endpoint follows (as NetBox does): list, retrieve, create, update, partial
update, delete, and bulk create / update / delete on the list URL, each bulk call in one transaction; ``?brief=1``
for a short representation; filters, ordering and pagination from the settings. Writes go through
``twin.inventory.actions`` (atomic, logged in the change log, announced on the cluster's live stream).

A model's endpoint declares only its serializer, filterset and queryset; ``InventorySerializer`` maps foreign keys
to ``{"id", "url"}`` without joins, and validates model constraints and cluster consistency before writing.
"""
from __future__ import annotations

import copy
import functools

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.routers import DefaultRouter, Route

from twin.api.fields import LinkedRelatedField, url_prefix
from twin.api.rows import RowRenderer
from twin.api.schema import BRIEF_FIELDS, BULK
from twin.inventory import actions
from twin.inventory.filtersets import INT64_MAX

ROUTE_BY_MODEL: dict[type, str] = {}


class BulkRouter(DefaultRouter):
    """DefaultRouter plus PUT/PATCH/DELETE on the list URL for bulk update and delete."""

    routes = list(DefaultRouter.routes)
    routes[0] = Route(url=r"^{prefix}{trailing_slash}$",
                      mapping={"get": "list", "post": "create", "put": "bulk_update",
                               "patch": "bulk_partial_update", "delete": "bulk_destroy"},
                      name="{basename}-list", detail=False, initkwargs={"suffix": "List"})

    def register(self, prefix, viewset, basename=None):
        if getattr(viewset, "route_of_model", True):  # False: not where its model's rows link to (/api/clusters/)
            ROUTE_BY_MODEL[viewset.queryset.model] = basename
        accept_format_suffix(viewset)
        super().register(prefix, viewset, basename)


def accept_format_suffix(viewset) -> None:
    """Let every custom action of ``viewset`` take the ``format`` keyword of its format-suffix route.

    The router gives each route a suffixed twin (``/api/runs/4/results.json``) and DRF hands the suffix to the
    handler as ``format=``; an action written as ``def results(self, request, pk=None)`` then failed with a
    TypeError (a 500). Each action (and each method its ``mapping`` names) is wrapped once here, for every viewset
    the router registers; the suffix has already chosen the renderer (``self.format_kwarg``), so it is dropped."""
    for act in viewset.get_extra_actions():
        for name in {act.__name__, *act.mapping.values()}:
            method = getattr(viewset, name)
            if getattr(method, "accepts_format", False):
                continue

            @functools.wraps(method)
            def accepting(self, request, *args, _method=method, format=None, **kwargs):
                return _method(self, request, *args, **kwargs)

            accepting.accepts_format = True
            setattr(viewset, name, accepting)


@extend_schema_field({"type": "string", "format": "uri", "readOnly": True})
class SelfUrlField(serializers.Field):
    """The object's own API URL, built from a cached prefix rather than one reverse() per row."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, obj):
        return f"{url_prefix(ROUTE_BY_MODEL[type(obj)], self.context)}{obj.pk}/"


class InventorySerializer(serializers.ModelSerializer):
    """Base serializer: ``id``, ``url``, ``display`` and the model's fields; foreign keys as ``{"id", "url"}``."""

    url = SelfUrlField()
    display = serializers.SerializerMethodField()
    serializer_related_field = LinkedRelatedField
    brief_fields: tuple[str, ...] = ("id", "url", "display", "name")

    def get_display(self, obj) -> str:
        return str(obj)

    def build_relational_field(self, field_name, relation_info):
        field_class, kwargs = super().build_relational_field(field_name, relation_info)
        kwargs["route"] = ROUTE_BY_MODEL[relation_info.related_model]
        return LinkedRelatedField, kwargs

    def validate(self, attrs):
        """Model constraints (checks, unique together) and cluster consistency, as a 400 naming the fields."""
        attrs = super().validate(attrs)
        probe = copy.copy(self.instance) if self.instance else self.Meta.model()
        for key, value in attrs.items():
            setattr(probe, key, value)
        self._check_same_cluster(probe, attrs.keys() if self.instance else None)
        probe.validate_constraints()
        return attrs

    @staticmethod
    def _check_same_cluster(obj, changed=None):
        """An item's parents (host, rack, switch...) must belong to the item's own cluster. On an update only the
        relations it sets are read (all of them when it moves the item to another cluster): a status change
        reads none."""
        cluster_id = getattr(obj, "cluster_id", None)
        if cluster_id is None:
            return
        for f in obj._meta.concrete_fields:
            if not f.is_relation or f.name == "cluster":
                continue
            if changed is not None and "cluster" not in changed and f.name not in changed:
                continue
            related = getattr(obj, f.name, None)
            other = getattr(related, "cluster_id", None) if related is not None else None
            if other is not None and other != cluster_id:
                raise ValidationError({f.name: f"belongs to another cluster (id {other}) than this item ({cluster_id})"})


@functools.cache
def brief_serializer(serializer_class):
    """A subclass of ``serializer_class`` with only its brief fields (``?brief=1``); one per class, made once."""
    meta = type("Meta", (serializer_class.Meta,), {"fields": serializer_class.brief_fields})
    return type(f"Brief{serializer_class.__name__}", (serializer_class,), {"Meta": meta})


BRIEF_VALUES = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False, "": False}


def brief_parameter(serializer_class) -> OpenApiParameter:
    """``?brief=``, its answer's fields listed for the schema (twin/api/schema.py documents the brief answer)."""
    fields = list(serializer_class.brief_fields)
    return OpenApiParameter("brief", bool, description=f"short representation: {', '.join(fields)}",
                            extensions={BRIEF_FIELDS: fields})


def _annotate_schema(viewset_class):
    """Give each viewset its own annotated copies of the shared actions (unique operation ids, list bodies)."""
    name = viewset_class.serializer_class.Meta.model.__name__
    op = name.lower()
    many = viewset_class.serializer_class(many=True)
    brief = brief_parameter(viewset_class.serializer_class)
    annotations = {
        "list": dict(parameters=[brief]),
        "retrieve": dict(parameters=[brief]),
        "bulk_update": dict(operation_id=f"{op}_bulk_update", request=many, responses=many,
                            extensions={BULK: "update"},
                            description=f"Update several {name}s at once: a list of objects, each with its id. "
                                        "One transaction: all or nothing."),
        "bulk_partial_update": dict(operation_id=f"{op}_bulk_partial_update", request=many, responses=many,
                                    extensions={BULK: "partial"},
                                    description="Partial bulk update. One transaction."),
        "bulk_destroy": dict(operation_id=f"{op}_bulk_destroy", responses={204: None}, extensions={BULK: "delete"},
                             description=f"Delete several {name}s: a list of {{\"id\": n}}. One transaction."),
    }
    for action, kwargs in annotations.items():
        method = getattr(viewset_class, action)

        def copy(self, *args, _method=method, **kw):
            return _method(self, *args, **kw)

        copy.__name__, copy.__doc__ = action, method.__doc__
        setattr(viewset_class, action, extend_schema(**kwargs)(copy))


class InventoryViewSet(viewsets.ModelViewSet):
    """Base viewset. Subclasses set ``queryset``, ``serializer_class`` and ``filterset_class``."""

    brief_prefetch: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if getattr(cls, "serializer_class", None) is not None:
            _annotate_schema(cls)

    @property
    def brief(self) -> bool:
        """``?brief=``: 1/true/yes or 0/false/no (any case); anything else is a 400 naming it."""
        request = getattr(self, "request", None)
        if not request:
            return False
        raw = request.query_params.get("brief", "")
        if raw.lower() not in BRIEF_VALUES:
            raise ValidationError({"brief": [f"expected true or false (1/0, yes/no), got {raw[:40]!r}"]})
        return BRIEF_VALUES[raw.lower()]

    def get_serializer_class(self):
        if self.request.method == "GET" and self.brief:
            return brief_serializer(self.serializer_class)
        return self.serializer_class

    def list(self, request, *args, **kwargs):
        """A page of rows, rendered from ``.values()`` (see twin.api.rows): two queries and a few ms per page."""
        renderer = RowRenderer(self.get_serializer(), ROUTE_BY_MODEL, request)
        rows = self.filter_queryset(self.get_queryset()).values(*renderer.columns)
        page = self.paginate_queryset(rows)
        if page is None:
            return Response(renderer.render(rows))
        return self.get_paginated_response(renderer.render(page))

    def create(self, request, *args, **kwargs):
        """One object, or a list of objects created in one transaction (all or nothing)."""
        many = isinstance(request.data, list)
        serializer = self.get_serializer(data=request.data, many=many)
        serializer.is_valid(raise_exception=True)
        actions.create_items(serializer, user=request.user)
        return Response(serializer.data, status=status.HTTP_201_CREATED)

    def perform_update(self, serializer):
        actions.update_items([serializer], user=self.request.user)

    def perform_destroy(self, instance):
        actions.delete_items(type(instance), [instance], user=self.request.user)

    def _objects_for(self, data, want_keys=("id",)):
        if not isinstance(data, list) or not data:
            raise ValidationError({"non_field_errors": ["expected a non-empty list of objects"]})
        ids, errors = [], []
        for item in data:
            ok = (isinstance(item, dict) and isinstance(item.get("id"), int) and not isinstance(item.get("id"), bool)
                  and 1 <= item["id"] <= INT64_MAX)
            errors.append({} if ok else {"id": [f"each object needs an integer id (1 to {INT64_MAX})"]})
            ids.append(item.get("id") if ok else None)
        if any(errors):
            raise ValidationError(errors)
        if len(set(ids)) != len(ids):
            raise ValidationError({"id": ["the list names an id twice"]})
        objects = self.get_queryset().in_bulk(ids)
        missing = [i for i in ids if i not in objects]
        if missing:
            raise ValidationError({"id": [f"no such object: {missing[:20]}"]})
        return [objects[i] for i in ids]

    def _bulk_update(self, request, partial):
        objects = self._objects_for(request.data)
        serializers_, errors = [], []
        for obj, item in zip(objects, request.data):
            s = self.get_serializer(obj, data=item, partial=partial)
            errors.append({} if s.is_valid() else s.errors)
            serializers_.append(s)
        if any(errors):
            raise ValidationError(errors)
        actions.update_items(serializers_, user=request.user)
        return Response([s.data for s in serializers_])

    def bulk_update(self, request, *args, **kwargs):
        return self._bulk_update(request, partial=False)

    def bulk_partial_update(self, request, *args, **kwargs):
        return self._bulk_update(request, partial=True)

    def bulk_destroy(self, request, *args, **kwargs):
        actions.delete_items(self.get_queryset().model, self._objects_for(request.data), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
