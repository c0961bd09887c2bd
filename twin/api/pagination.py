"""Pagination: limit/offset by default (``?limit=1000&offset=2000``), cursor for large lists (``?cursor=``).

A cursor walks the list by primary key, so a page costs the same at row 10 or at row 10 million, and rows added
meanwhile are neither skipped nor repeated. Ask for the first cursor page with ``?pagination=cursor``; follow
``next``. Both modes answer ``{count, next, previous, results}`` (``count`` is null with cursors).
"""
import re

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination, LimitOffsetPagination
from rest_framework.response import Response

from twin.api import counts
from twin.inventory.filtersets import INT64_MAX

MAX_PAGE_SIZE = 1000
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
        return "cursor" in request.query_params or request.query_params.get("pagination") == "cursor"

    def paginate_queryset(self, queryset, request, view=None):
        self.cursor = _Cursor() if self._use_cursor(request) else None
        if self.cursor:
            return self.cursor.paginate_queryset(queryset, request, view)
        return super().paginate_queryset(queryset, request, view)

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
        return super().get_schema_operation_parameters(view) + [
            {"name": "cursor", "required": False, "in": "query", "schema": {"type": "string"},
             "description": "Cursor from a previous page's next/previous link."},
            {"name": "pagination", "required": False, "in": "query", "schema": {"type": "string", "enum": ["cursor"]},
             "description": "cursor: paginate by cursor from the first page on."},
        ]
