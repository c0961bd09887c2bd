from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API's shared parts: base viewset with bulk operations, fields, pagination, errors, auth."""

    name = "twin.api"
    label = "api"
