"""Pagination: limit/offset by default (``?limit=1000&offset=2000``), cursor for large lists (``?cursor=``).

A cursor walks the list by primary key, so a page costs the same at row 10 or at row 10 million, and rows added
meanwhile are neither skipped nor repeated. Ask for the first cursor page with ``?pagination=cursor``; follow
``next``. Both modes answer ``{count, next, previous, results}`` (``count`` is null with cursors).
"""
from rest_framework.pagination import CursorPagination, LimitOffsetPagination
from rest_framework.response import Response

MAX_PAGE_SIZE = 1000


class _Cursor(CursorPagination):
    ordering = "id"
    page_size_query_param = "limit"
    max_page_size = MAX_PAGE_SIZE
    page_size = 100


class TwinPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = MAX_PAGE_SIZE

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
