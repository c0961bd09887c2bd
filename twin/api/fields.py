"""Related objects as ``{"id": 5, "url": ".../api/inventory/hosts/5/"}``: read from the foreign key column
(no join, no query), written as an id or as ``{"id": 5}``; user names as the request's user may see them."""
from django.urls import reverse
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from twin.api.permissions import shown_name
from twin.api.schema import ID


def url_prefix(route: str, context: dict) -> str:
    """The list URL of ``route`` (``http://host/api/inventory/hosts/``), computed once per serializer context and
    reused for every row: one reverse() per page, not one per object."""
    cache = context.setdefault("_url_prefix", {})
    if route not in cache:
        path = reverse(f"api:{route}-detail", kwargs={"pk": 0})[:-2]
        request = context.get("request")
        cache[route] = request.build_absolute_uri(path) if request else path
    return cache[route]


class LinkedRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key shown as its id and its API URL; accepts ``5`` or ``{"id": 5}`` on input."""

    default_error_messages = {
        **serializers.PrimaryKeyRelatedField.default_error_messages,
        "incorrect_type": "Incorrect type. Expected an id (integer) or an object with an id, received {data_type}.",
    }

    def __init__(self, route: str, **kwargs):
        self.route = route
        super().__init__(**kwargs)

    def use_pk_only_optimization(self):
        return True

    def to_representation(self, value):
        return {"id": value.pk, "url": f"{url_prefix(self.route, self.context)}{value.pk}/"}

    def to_internal_value(self, data):
        if isinstance(data, dict):
            if "id" not in data:
                self.fail("required")
            data = data["id"]
        if isinstance(data, bool) or not isinstance(data, (int, str)):
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(data)

    def get_choices(self, cutoff=None):
        return {}  # never enumerate 100k rows for the browsable API's forms


class NameOrIdRelatedField(LinkedRelatedField):
    """A foreign key to a model with a unique name (a cluster), given by its name as ``/api/runs/`` takes it, or by
    its id or ``{"id": 5}``; shown as ``{"id", "url", "name"}``. A text that names no row and is all digits is read
    as an id. Its rows are few, so the browsable API's form lists them by name (a LinkedRelatedField lists none)."""

    default_error_messages = {
        **LinkedRelatedField.default_error_messages,
        "no_name": "no {what} named {name!r}",
        "incorrect_type": "Incorrect type. Expected a name, an id (integer) or an object with an id, received "
                          "{data_type}.",
    }

    def __init__(self, route: str, slug_field: str = "name", **kwargs):
        self.slug_field = slug_field
        super().__init__(route, **kwargs)

    def use_pk_only_optimization(self):
        return False

    def to_representation(self, value):
        return {**super().to_representation(value), self.slug_field: getattr(value, self.slug_field)}

    def to_internal_value(self, data):
        if isinstance(data, str):
            row = self.get_queryset().filter(**{self.slug_field: data.strip()}).first()
            if row is not None:
                return row
            if not data.strip().isdigit():
                self.fail("no_name", what=self.get_queryset().model._meta.verbose_name, name=data.strip()[:100])
        return super().to_internal_value(data)

    def get_choices(self, cutoff=None):
        names = self.get_queryset().order_by(self.slug_field).values_list(self.slug_field, flat=True)
        return {name: name for name in (names[:cutoff] if cutoff is not None else names)}


class LinkedRelatedFieldSchema(OpenApiSerializerFieldExtension):
    """The schema of :class:`LinkedRelatedField` as the field reads and writes it: ``{"id", "url"}`` in answers;
    an id or ``{"id": n}`` in requests (any ``url`` ignored). Nullable as the field is (``allow_null``, added by
    drf-spectacular from the field)."""

    target_class = LinkedRelatedField

    def map_serializer_field(self, auto_schema, direction):
        if direction == "request":
            return {"anyOf": [ID, {"type": "object", "properties": {"id": ID}, "required": ["id"]}]}
        return {"type": "object", "properties": {"id": {"type": "integer"}, "url": {"type": "string", "format": "uri"}},
                "required": ["id", "url"]}


@extend_schema_field({"type": "string", "nullable": True, "readOnly": True,
                      "description": "a user name; null for anonymous readers (and for the system)"})
class UserNameField(serializers.Field):
    """A user's name read from ``source`` (e.g. ``created_by.username``) as the request's user may see it
    (:func:`twin.api.permissions.shown_name`: "a user" for anonymous readers), or None when there is no user."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, default=None, **kwargs)

    def get_attribute(self, instance):
        request = self.context.get("request")
        return shown_name(super().get_attribute(instance), getattr(request, "user", None))

    def to_representation(self, value):
        return str(value)


class NameOrIdRelatedFieldSchema(OpenApiSerializerFieldExtension):
    """:class:`NameOrIdRelatedField`: a name, an id or ``{"id": n}`` in requests; ``{"id", "url", "name"}`` in
    answers."""

    target_class = NameOrIdRelatedField
    priority = 1                                     # before LinkedRelatedFieldSchema, which matches it too

    def map_serializer_field(self, auto_schema, direction):
        name = {"type": "string", "minLength": 1, "pattern": r"\S", "description": f"its {self.target.slug_field}"}
        if direction == "request":
            return {"anyOf": [name, ID, {"type": "object", "properties": {"id": ID}, "required": ["id"]}]}
        return {"type": "object", "required": ["id", "url", self.target.slug_field],
                "properties": {"id": {"type": "integer"}, "url": {"type": "string", "format": "uri"},
                               self.target.slug_field: {"type": "string"}}}
