"""Every API error is a 4xx JSON body naming the field and the reason; database refusals and oversized bodies
included (Django would answer those with an HTML page)."""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import ProtectedError, RestrictedError
from django.http import JsonResponse
from django.views.defaults import page_not_found
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler


def api_exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": f"request body over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes "
                                   "(DATA_UPLOAD_MAX_MEMORY_SIZE, TWIN_MAX_REQUEST_BODY)"},
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, TooManyFieldsSent):
        return Response({"detail": f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} form fields"},
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages})
    if isinstance(exc, (ProtectedError, RestrictedError)):
        names = sorted({str(o) for o in list(exc.protected_objects if hasattr(exc, "protected_objects")
                                             else exc.restricted_objects)[:5]})
        return Response({"detail": f"in use by {', '.join(names)}: delete or reassign them first"},
                        status=status.HTTP_409_CONFLICT)
    if isinstance(exc, IntegrityError):
        return Response({"detail": f"refused by the database: {str(exc).strip().splitlines()[0]}"},
                        status=status.HTTP_409_CONFLICT)
    return exception_handler(exc, context)


def not_found(request, exception):
    """Django's 404 (handler404, twin/urls.py): JSON under /api/ (a path no route matches, such as a run id that
    is not a number), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": f"no such API path: {request.path[:200]}"}, status=404)
    return page_not_found(request, exception)
