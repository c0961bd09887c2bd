"""Every API error is a 4xx JSON body naming the field and the reason; database refusals included."""
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
from django.db.models import ProtectedError, RestrictedError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler


def api_exception_handler(exc, context):
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
