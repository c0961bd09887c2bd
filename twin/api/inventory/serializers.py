"""Serializers of every inventory model: the model's fields plus id, url and display; relations as {id, url}."""
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from sim.core.errors import SpecError
from sim.fabric.spec import parse_spec
from twin.api.base import InventorySerializer
from twin.inventory import models as m
from twin.inventory.builder import build_cluster


def serializer_for(model, brief=("id", "url", "display", "name"), read_only=(), base=InventorySerializer,
                   extra_kwargs=None):
    """A serializer of all of ``model``'s concrete fields."""
    fields = ["id", "url", "display"] + [f.name for f in model._meta.concrete_fields if f.name != "id"]
    meta = type("Meta", (), {"model": model, "fields": fields, "read_only_fields": read_only,
                             "extra_kwargs": extra_kwargs or {}})
    return type(f"{model.__name__}Serializer", (base,), {"Meta": meta, "brief_fields": brief})


TABLE = {"type": "object", "additionalProperties": True}
TEXT = {"type": "string", "minLength": 1}


# A cluster spec's table as the API describes it (here, and /api/clusters/ builds: twin/runs/api/clusters.py).
SPEC_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["name", "layout", "backend", "frontend"],
    "properties": {"name": {**TEXT, "pattern": "^[A-Za-z0-9][A-Za-z0-9-]*$"}, "title": TEXT, "description": TEXT,
                   "layout": TABLE, "backend": TABLE, "frontend": TABLE, "storage": {"type": "array", "items": TABLE}},
    "description": "a cluster spec: a preset (sim/presets/*.toml) as JSON, given at creation only; its tables' own "
                   "rules (catalog models, port counts: sim.fabric.spec.parse_spec) are checked by the server"}


@extend_schema_field(SPEC_SCHEMA)
class SpecField(serializers.JSONField):
    """A cluster's spec: a JSON object (parsed and checked by :func:`sim.fabric.spec.parse_spec`)."""


class ClusterBase(InventorySerializer):
    """Clusters are created from a spec (the same as ``build_cluster``, atomic); afterwards only title,
    description and status change."""

    spec = SpecField(required=False)
    create_only = ("spec",)  # required to create, refused in an update (validate; the schema says so)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if self.instance is None:
            if "spec" not in attrs:
                raise serializers.ValidationError({"spec": "required: a cluster spec (as in sim/presets/*.toml)"})
            try:
                parsed = parse_spec(attrs["spec"])
            except SpecError as e:
                raise serializers.ValidationError({"spec": f"{e.field}: {e.value!r} {e.reason}"}) from None
            if m.Cluster.objects.filter(name=parsed.name).exists():
                raise serializers.ValidationError({"spec": f"name: a cluster named {parsed.name!r} exists"})
            attrs["parsed_spec"] = parsed  # kept with the item: one child serializer serves every item of a list
        elif "spec" in attrs:
            raise serializers.ValidationError({"spec": "cannot change; rebuild with build_cluster --replace"})
        return attrs

    def create(self, validated_data):
        request = self.context.get("request")
        attrs = {key: validated_data[key] for key in ("title", "description", "status") if key in validated_data}
        return build_cluster(validated_data["parsed_spec"], user=getattr(request, "user", None), attrs=attrs).cluster


SERIALIZERS = {model: serializer_for(model, brief=("id", "url", "display", "slug", "name"))
               for model in m.CATALOG_MODELS.values()}
SERIALIZERS[m.Cluster] = serializer_for(m.Cluster, read_only=("name", "built_at"), base=ClusterBase,
                                        extra_kwargs={"title": {"required": False}})
for _model in (m.Fabric, m.Zone, m.StorageCluster, m.Port):
    SERIALIZERS[_model] = serializer_for(_model, brief=("id", "url", "display", "name", "status")
                                         if hasattr(_model, "status") else ("id", "url", "display", "name"))
for _model in (m.Rack, m.Host, m.GPU, m.NIC, m.Switch, m.Link, m.StorageServer, m.SSD):
    SERIALIZERS[_model] = serializer_for(_model, brief=("id", "url", "display", "name", "status"))
