"""Pagination: limit/offset by default (``?limit=1000&offset=2000``), cursor for large lists (``?cursor=``).

A cursor walks the list by primary key, so a page costs the same at row 10 or at row 10 million, and rows added
meanwhile are neither skipped nor repeated. Ask for the first cursor page with ``?pagination=cursor``; follow
``next``. Both modes answer ``{count, next, previous, results}`` (``count`` is null with cursors).

A deep offset page of a list in id order starts at an id instead of reading past the rows before it
(:func:`offset_page`): a cluster's rows are written with consecutive ids, so its lists' ids are usually dense.
"""
import re

from django.db.models import Subquery
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination, LimitOffsetPagination
from rest_framework.response import Response

from twin.api import counts
from twin.inventory.filtersets import INT64_MAX

MAX_PAGE_SIZE = 1000
# An offset page at least this deep starts at an id found first (offset_page); a shallower one reads past the rows
# before it (a few ms).
DEEP_OFFSET = 10_000
PAGINATIONS = ("cursor",)  # ?pagination= values (absent: limit/offset)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def query_int(request, name: str, default: int, minimum: int, maximum: int = INT64_MAX) -> int:
    """The whole-number query parameter ``name`` (``default`` when absent); anything else is a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    text = raw.strip()
    # (a long digit string is out of range without int(), which refuses over 4,300 digits)
    if not _INTEGER.fullmatch(text) or len(text) > 20 or not minimum <= int(text) <= maximum:
        raise ValidationError({name: [f"expected a whole number from {minimum} to {maximum}, got {raw[:40]!r}"]})
    return int(text)


def _id_order(queryset) -> str | None:
    """"id" or "-id" when the list is ordered by id alone, one row per id; else None."""
    query = queryset.query
    order = tuple(query.order_by) or (tuple(query.get_meta().ordering) if query.default_ordering else ())
    if query.distinct or query.combinator or query.extra_order_by or order not in (("id",), ("-id",), ("pk",),
                                                                                   ("-pk",)):
        return None
    return order[0].replace("pk", "id")


def offset_page(queryset, offset: int, limit: int, count: int) -> list:
    """``queryset[offset:offset + limit]``, without reading the ``offset`` rows before the page when the list is
    in id order and the offset deep (DEEP_OFFSET). Its first and last ids (two index probes) tell whether they are
    dense: ``count`` rows between ``lo`` and ``hi`` = ``hi - lo + 1`` means every id in between is in the list,
    so the page starts at ``lo + offset``. Else the first id is looked up in the index alone (a subquery that
    selects only ids: an index-only scan on PostgreSQL once the table is vacuumed)."""
    order = _id_order(queryset)
    if order is None or offset < DEEP_OFFSET:
        return list(queryset[offset:offset + limit])
    descending = order == "-id"
    after = "id__lte" if descending else "id__gte"
    ids = queryset.values_list("id", flat=True)
    lo, hi = ids.order_by("id").first(), ids.order_by("-id").first()  # (one MIN/MAX query scans on SQLite)
    if lo is not None and hi - lo + 1 == count:
        first = hi - offset if descending else lo + offset
    else:
        first = Subquery(queryset.order_by(order).values("id")[offset:offset + 1])
    return list(queryset.filter(**{after: first})[:limit])


class _Cursor(CursorPagination):
    ordering = "id"
    page_size_query_param = "limit"
    max_page_size = MAX_PAGE_SIZE
    page_size = 100

    def get_page_size(self, request):
        """``limit``: a page size; over MAX_PAGE_SIZE is capped to it."""
        return min(query_int(request, self.page_size_query_param, self.page_size, 1), self.max_page_size)

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except NotFound:
            raise ValidationError({self.cursor_query_param: ["invalid cursor: follow a page's next or previous "
                                                             "link"]}) from None


class TwinPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_PAGE_SIZE

    def get_limit(self, request):
        """``limit``: a page size; over MAX_PAGE_SIZE is capped to it."""
        return min(query_int(request, self.limit_query_param, self.default_limit, 1), self.max_limit)

    def get_offset(self, request):
        return query_int(request, self.offset_query_param, 0, 0)

    def get_count(self, queryset):
        """The list's size, kept while the inventory is unchanged (``twin.api.counts``)."""
        return counts.count(queryset)

    def _use_cursor(self, request):
        """``?cursor=`` or ``?pagination=cursor``; another ``pagination`` is a 400 naming it."""
        mode = request.query_params.get("pagination")
        if mode not in (None, *PAGINATIONS):
            raise ValidationError({"pagination": [f"expected one of {', '.join(PAGINATIONS)}, got {mode[:40]!r}"]})
        return "cursor" in request.query_params or mode == "cursor"

    def paginate_queryset(self, queryset, request, view=None):
        self.cursor = _Cursor() if self._use_cursor(request) else None
        if self.cursor:
            return self.cursor.paginate_queryset(queryset, request, view)
        # LimitOffsetPagination's, but a page that ends the list gives the count (one query, not two), and a deep
        # page is read by offset_page
        self.request, self.limit, self.offset = request, self.get_limit(request), self.get_offset(request)
        page = None if self.offset >= DEEP_OFFSET else list(queryset[self.offset:self.offset + self.limit])
        if (page and len(page) < self.limit) or (page == [] and self.offset == 0):
            self.count = self.offset + len(page)
        else:
            self.count = self.get_count(queryset)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        if self.count == 0 or self.offset > self.count:
            return []
        return page if page is not None else offset_page(queryset, self.offset, self.limit, self.count)

    def get_paginated_response(self, data):
        if self.cursor:
            return Response({"count": None, "next": self.cursor.get_next_link(),
                             "previous": self.cursor.get_previous_link(), "results": data})
        return super().get_paginated_response(data)

    def get_paginated_response_schema(self, schema):
        response = super().get_paginated_response_schema(schema)
        response["properties"]["count"]["nullable"] = True
        return response

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:  # the bounds query_int enforces
            parameter["schema"].update({"limit": {"minimum": 1}, "offset": {"minimum": 0}}.get(parameter["name"], {}))
        return parameters + [
            {"name": "cursor", "required": False, "in": "query", "schema": {"type": "string"},
             "description": "Cursor from a previous page's next/previous link."},
            {"name": "pagination", "required": False, "in": "query", "schema": {"type": "string", "enum": list(PAGINATIONS)},
             "description": "cursor: paginate by cursor from the first page on."},
        ]
