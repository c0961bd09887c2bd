"""OPTIONS answers (DRF's ``SimpleMetadata``) that hold on a list URL whose PUT is a bulk update.

DRF describes PUT by first fetching the object (``view.get_object()``, for its object permissions); on a list URL
there is no id, and that assertion was a 500 for every user allowed to write. There the PUT is described after the
permission check alone, as POST is."""
from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.metadata import SimpleMetadata
from rest_framework.request import clone_request


class Metadata(SimpleMetadata):
    def determine_actions(self, request, view):
        lookup = getattr(view, "lookup_url_kwarg", None) or getattr(view, "lookup_field", None)
        on_object = lookup is not None and lookup in getattr(view, "kwargs", {})
        actions = {}
        for method in {"PUT", "POST"} & set(view.allowed_methods):
            view.request = clone_request(request, method)
            try:
                if hasattr(view, "check_permissions"):
                    view.check_permissions(view.request)
                if method == "PUT" and on_object and hasattr(view, "get_object"):
                    view.get_object()
            except (exceptions.APIException, PermissionDenied, Http404):
                pass
            else:
                actions[method] = self.get_serializer_info(view.get_serializer())
            finally:
                view.request = request
        return actions
