"""Filters for every inventory field (by id and by name for relations), plus the cross-relation filters users ask
for: a GPU by zone or rack, a port by fabric or tier, a link by the switch at either end.

``?q=`` searches names (and serials). Relations filter by id (``host_id=5``, repeatable: ``host_id=5&host_id=6``)
and by name or slug (``host=meta-roce-24k.z00.r000.h0``, ``model=h100-sxm-80gb``).
"""
from __future__ import annotations

import django_filters as df
from django import forms
from django.db import models
from django.db.models import Q

from twin.inventory import models as m

CATALOG = tuple(m.CATALOG_MODELS.values())


INT64_MAX = 2**63 - 1        # the largest integer (and id) the databases compare with


class Int64Field(forms.IntegerField):
    """An integer the database can compare with: out of the 64-bit range is a 400, not an overflow."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", -INT64_MAX - 1)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)


class IntegerFilter(df.NumberFilter):
    field_class = Int64Field


class NumberInFilter(df.BaseInFilter, IntegerFilter):
    """Comma-separated integers (ids, counts)."""


class FloatInFilter(df.BaseInFilter, df.NumberFilter):
    pass


class CharInFilter(df.BaseInFilter, df.CharFilter):
    pass


class ChoiceInFilter(df.MultipleChoiceFilter):
    """One of several choices (``?status=failed&status=drained``) of the row's own field or of a forward relation's
    (``switch__tier``): no row can repeat, so no SELECT DISTINCT (django-filter's default, for to-many paths),
    which made the database sort and de-duplicate the whole list and count it through a subquery."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("distinct", False)
        super().__init__(*args, **kwargs)


def _label(model) -> str:
    return "slug" if model in CATALOG else "name"


class NameInFilter(CharInFilter):
    """A relation filtered by names (or slugs): the names are resolved to ids first, in one small query, so the
    main query filters on an indexed id column the planner has statistics for (a join on a name hides them)."""

    def __init__(self, related_model, path: str, **kwargs):
        self.related_model, self.path = related_model, path
        super().__init__(method=self.by_names, **kwargs)

    def by_names(self, queryset, name, values):
        label = _label(self.related_model)
        ids = list(self.related_model.objects.filter(**{f"{label}__in": values}).values_list("id", flat=True))
        return queryset.filter(**{f"{self.path}__in": ids})


def _filters_for_field(f) -> dict[str, df.Filter]:
    if f.is_relation:
        related = f.related_model
        return {f"{f.name}_id": NumberInFilter(field_name=f.name, lookup_expr="in"),
                f.name: NameInFilter(related, f.attname, label=f"{f.name} by {_label(related)}")}
    if f.choices:
        return {f.name: ChoiceInFilter(field_name=f.name, choices=f.choices)}
    if isinstance(f, models.BooleanField):
        return {f.name: df.BooleanFilter(field_name=f.name)}
    if isinstance(f, models.IntegerField):
        return {f.name: NumberInFilter(field_name=f.name, lookup_expr="in"),
                f"{f.name}__gte": IntegerFilter(field_name=f.name, lookup_expr="gte"),
                f"{f.name}__lte": IntegerFilter(field_name=f.name, lookup_expr="lte")}
    if isinstance(f, models.FloatField):
        return {f.name: FloatInFilter(field_name=f.name, lookup_expr="in"),
                f"{f.name}__gte": df.NumberFilter(field_name=f.name, lookup_expr="gte"),
                f"{f.name}__lte": df.NumberFilter(field_name=f.name, lookup_expr="lte")}
    if isinstance(f, models.DateTimeField):
        return {f"{f.name}__gte": df.IsoDateTimeFilter(field_name=f.name, lookup_expr="gte"),
                f"{f.name}__lte": df.IsoDateTimeFilter(field_name=f.name, lookup_expr="lte")}
    if isinstance(f, (models.CharField, models.TextField)):
        return {f.name: CharInFilter(field_name=f.name, lookup_expr="in"),
                f"{f.name}__ic": df.CharFilter(field_name=f.name, lookup_expr="icontains")}
    return {}  # JSON (a cluster's spec) is not filterable


def _search(fields):
    def search(queryset, name, value):
        query = Q()
        for field in fields:
            query |= Q(**{f"{field}__icontains": value.strip()})
        return queryset.filter(query)
    return search


def filterset_for(model, extra: dict[str, df.Filter] | None = None):
    """A FilterSet with filters for every concrete field of ``model``, ``q`` search, and ``extra`` filters."""
    attrs: dict = {}
    for f in model._meta.concrete_fields:
        if f.name != "id":
            attrs.update(_filters_for_field(f))
    attrs["id"] = NumberInFilter(field_name="id", lookup_expr="in")
    names = {f.name for f in model._meta.concrete_fields}
    searched = [n for n in ("name", "serial", "slug", "title", "vendor") if n in names]
    attrs["q"] = df.CharFilter(method=_search(searched), label=f"search {', '.join(searched)}")
    attrs.update(extra or {})
    meta = type("Meta", (), {"model": model, "fields": []})
    return type(f"{model.__name__}FilterSet", (df.FilterSet,), {**attrs, "Meta": meta})


def _by(path: str, related_model):
    """Filters ``<x>_id`` and ``<x>`` for a relation reached through ``path`` (``host__rack__zone``)."""
    name = path.rsplit("__", 1)[-1]
    return {f"{name}_id": NumberInFilter(field_name=path, lookup_expr="in"),
            name: NameInFilter(related_model, f"{path}_id", label=f"{name} by name")}


def _either_end(queryset, name, value):
    ids = [int(v) for v in value]
    return queryset.filter(Q(a_switch_id__in=ids) | Q(b_switch_id__in=ids))


FILTERSETS = {
    model: filterset_for(model) for model in (*CATALOG, m.Cluster, m.Fabric, m.StorageCluster)
} | {
    m.Zone: filterset_for(m.Zone),
    m.Rack: filterset_for(m.Rack),
    m.Host: filterset_for(m.Host, _by("rack__zone", m.Zone)),
    m.GPU: filterset_for(m.GPU, {**_by("host__rack", m.Rack), **_by("host__rack__zone", m.Zone)}),
    m.NIC: filterset_for(m.NIC, {**_by("host__rack", m.Rack), **_by("host__rack__zone", m.Zone),
                                 "role": ChoiceInFilter(field_name="fabric__role",
                                                                 choices=m.Fabric._meta.get_field("role").choices)}),
    m.Switch: filterset_for(m.Switch),
    m.Port: filterset_for(m.Port, {
        "fabric_id": NumberInFilter(method=lambda qs, n, v: qs.filter(Q(switch__fabric_id__in=v)
                                                                       | Q(nic__fabric_id__in=v))),
        "tier": ChoiceInFilter(field_name="switch__tier", choices=m.Switch._meta.get_field("tier").choices),
        "cabled": df.BooleanFilter(method=lambda qs, n, v: qs.filter(Q(link_as_a__isnull=False)
                                                                     | Q(link_as_b__isnull=False))
                                   if v else qs.filter(link_as_a__isnull=True, link_as_b__isnull=True)),
    }),
    m.Link: filterset_for(m.Link, {"switch_id": NumberInFilter(method=_either_end, label="switch at either end")}),
    m.StorageServer: filterset_for(m.StorageServer, _by("rack__zone", m.Zone)),
    m.SSD: filterset_for(m.SSD, {**_by("server__storage_cluster", m.StorageCluster)}),
}
