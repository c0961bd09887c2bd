"""The API's filter and ordering backends: a query parameter the database cannot take is a 400 naming it, not a
server error nor a silent no-op. An integer past the 64-bit range in any filter (``?id__in=10**30``) overflows
the database's integers, a NUL character is refused by PostgreSQL; an unknown ``?ordering=`` field used to be
ignored."""
from __future__ import annotations

import re

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import filters
from rest_framework.exceptions import ValidationError

from twin.inventory.filtersets import INT64_MAX

_INTEGER = re.compile(r"[+-]?[0-9]+")


def check_values(name: str, values) -> None:
    """Every comma-separated integer among ``values`` (strings) within the 64-bit range, and no NUL character
    (PostgreSQL refuses it in any string), else a 400 naming ``name``."""
    for value in values:
        if "\x00" in str(value):
            raise ValidationError({name: ["a NUL character is not allowed"]})
        for token in str(value).split(","):
            token = token.strip()
            # (a long digit string is out of range without int(), which refuses over 4,300 digits)
            if _INTEGER.fullmatch(token) and (len(token) > 20 or not -INT64_MAX - 1 <= int(token) <= INT64_MAX):
                raise ValidationError({name: [f"{token[:40]} is out of the 64-bit integer range"]})


class FilterBackend(DjangoFilterBackend):
    def filter_queryset(self, request, queryset, view):
        """The queryset as is when no query parameter names one of its filters: building the filterset's form
        (a deep copy of every filter) is a third of an unfiltered list page's time and filters nothing."""
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None or not any(name in request.query_params for name in filterset_class.base_filters):
            return queryset
        return super().filter_queryset(request, queryset, view)

    def get_filterset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is not None:
            for name in filterset_class.base_filters:
                if name in request.query_params:
                    check_values(name, request.query_params.getlist(name))
        return super().get_filterset(request, queryset, view)


class OrderingFilter(filters.OrderingFilter):
    def remove_invalid_fields(self, queryset, fields, view, request):
        valid = super().remove_invalid_fields(queryset, fields, view, request)
        unknown = [f for f in fields if f not in valid]
        if unknown:
            names = sorted(item[0] for item in self.get_valid_fields(queryset, view, {"request": request}))
            raise ValidationError({self.ordering_param: [f"unknown field {', '.join(unknown)[:200]}; "
                                                         f"one of {', '.join(names)} (prefix - for descending)"]})
        return valid
