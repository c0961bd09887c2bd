"""Run parameters in the API and the form, built from the one declaration of each kind (:mod:`sim.core.params`).

- :func:`serializer_for` makes a DRF serializer per kind whose fields come from the kind's ``Param`` objects (type,
  range, default, choices, help: what the OpenAPI schema shows) and whose validation *is* ``ParamSet.validate``
  (plus the kind's cluster checks), so the API refuses exactly what ``python -m sim`` refuses, in the same words.
- :func:`validate_params` turns a :class:`sim.core.errors.ParamError` into the DRF 400 shape
  ``{"params": {field: [reasons]}}``.
- :func:`validated` is a kind's validation with the ``calibration`` parameter every kind with parameters takes
  (:mod:`twin.runs.calibration`: the profile's values applied first, the record of what was applied kept).
- :func:`form_fields` gives the browser's form the same ``Param`` objects as JSON; :func:`serializer_form_fields`
  gives it the plain fields of an API serializer (a scenario's name, a schedule's crontab) in the same shape.
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from sim.core.errors import ParamError
from sim.core.params import MAX_LIST, Param, ParamSet
from twin.inventory.gpu_grid import usable_counted_once
from twin.runs import calibration, registry


@extend_schema_field({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]})
class SizeField(serializers.CharField):
    """A size in bytes: a number, or text such as ``64M`` or ``1G`` (stored as the number)."""


def _field(p: Param) -> serializers.Field:
    common = {"required": False, "allow_null": p.nullable, "help_text": p.help}
    bounds = {"min_value": p.min, "max_value": p.max}
    if p.type == "int":
        return serializers.IntegerField(default=p.default, **bounds, **common)
    if p.type == "float":
        return serializers.FloatField(default=p.default, **bounds, **common)
    if p.type == "bool":
        return serializers.BooleanField(default=p.default, **common)
    if p.type == "choice":
        return serializers.ChoiceField(choices=list(p.choices), default=p.default, **common)
    if p.type == "int_list":
        return serializers.ListField(child=serializers.IntegerField(**bounds), default=p.default, allow_empty=False,
                                     max_length=MAX_LIST, **common)
    if p.type == "size":
        return SizeField(default=p.default, **common)
    return serializers.CharField(default=p.default, **common)     # text, sizes


class ParamsSerializer(serializers.Serializer):
    """Base of the generated serializers: ``kind`` is set on each subclass; the context may hold the ``cluster``."""

    kind: registry.Kind

    def to_internal_value(self, data):
        try:
            with usable_counted_once():         # the cluster's usable GPUs read once, not per check or combination
                return validated(self.kind, data, self.context.get("cluster"))
        except ParamError as e:
            raise serializers.ValidationError(e.errors) from None


def validated(kind: registry.Kind, values, cluster=None, *, alone: bool = False) -> dict:
    """:meth:`registry.Kind.validated` of ``values`` after the calibration profile they name (``calibration``) is
    applied (:func:`twin.runs.calibration.resolve`); the result keeps the record of what was applied under
    ``calibration`` (left out when they name none: such a run's parameters are as before profiles existed).
    Raises :class:`ParamError`."""
    if kind.params is None:                 # a sweep: its base parameters come back here, one combination at a time
        return kind.validated(values, cluster, alone=alone)
    values, record = calibration.resolve(kind, values, cluster)
    out = kind.validated(values, cluster, alone=alone)
    if record is not None:
        out[calibration.KEY] = record
    return out


@extend_schema_field({"anyOf": [
    {"type": "string", "maxLength": 100, "description": "the profile's name"},
    {"type": "object", "description": "what a run's stored parameters hold: the record of what it applied (given back, "
                                      "it names the profile again)",
     "properties": {"profile": {"type": "string"}, "id": {"type": "integer"},
                    "applied": {"type": "object", "additionalProperties": {"type": "number"}},
                    "ignored": {"type": "array", "items": {"type": "string"}}}}]})
class CalibrationField(serializers.JSONField):
    """The ``calibration`` parameter: a profile's name (stored as the record of what it applied)."""


_CLASSES: dict[str, tuple[registry.Kind, type]] = {}


def serializer_for(kind: str) -> type[ParamsSerializer]:
    """The DRF serializer of ``kind``'s parameters, made once per registered kind (a kind without a ParamSet,
    sweep, brings its own validation and has no fields)."""
    k = registry.get(kind)
    made = _CLASSES.get(k.name)
    if made is None or made[0] is not k:
        fields = {p.name: _field(p) for p in k.params} if k.params is not None else {}
        if k.params is not None:
            fields[calibration.KEY] = CalibrationField(required=False, allow_null=True,
                                                       help_text=calibration.CALIBRATION.help)
        doc = (k.params.doc if k.params is not None else "") or f"Parameters of a {k.name} run."
        cls = type(f"{''.join(w.title() for w in k.name.split('_'))}Params", (ParamsSerializer,),
                   {**fields, "kind": k, "__doc__": doc, "__module__": __name__})
        made = _CLASSES[k.name] = (k, cls)
    return made[1]


def validate_params(kind: str, params, cluster=None, field: str = "params") -> dict:
    """``params`` of ``kind`` with the defaults filled in; raises a DRF ValidationError ``{field: {name: [...]}}``
    naming each bad parameter (``{"kind": [...]}`` for an unknown kind)."""
    try:
        cls = serializer_for(kind)
    except ParamError as e:
        raise serializers.ValidationError(e.errors) from None
    s = cls(data=params, context={"cluster": cluster})
    if not s.is_valid():
        raise serializers.ValidationError({field: s.errors})
    return dict(s.validated_data)


def form_fields(params: ParamSet, cluster=None) -> list[dict]:
    """The parameters (and ``calibration``, :mod:`twin.runs.calibration`) as the browser's form draws them: name, type, default (on ``cluster`` when given: what the
    API takes when the parameter is left out, :meth:`sim.core.params.Param.default_for`), choices, bounds, help,
    null and what null stands for (``shown``)."""
    usable = registry.usable_of(params, cluster)
    out = []
    for p in (*params, calibration.CALIBRATION):        # every run form offers a calibration profile
        d = {"name": p.name, "type": p.type, "default": p.default_for(usable), "help": p.help, "null": p.nullable}
        if p.shown is not None:
            d["shown"] = p.shown
        if p.choices is not None:
            d["choices"] = list(p.choices)
        if p.min is not None:
            d["min"] = p.min
        if p.max is not None:
            d["max"] = p.max
        out.append(d)
    return out


def serializer_form_fields(serializer: serializers.Serializer, only=None) -> list[dict]:
    """The writable fields of ``serializer`` (``only``: these, in this order) as the browser's form draws them, in
    :func:`form_fields`' shape: the form's default is the field's ``default``, else its ``initial`` (what the
    browsable API shows); bounds, choices, help text and length as the API checks them."""
    fields = serializer.fields
    out = []
    for name in (only or fields):
        f = fields[name]
        if f.read_only:
            continue
        default = f.default if f.default is not empty else f.initial
        if default in (empty, "") or callable(default):
            default = None
        if isinstance(f, serializers.BooleanField):
            kind = "bool"
        elif isinstance(f, serializers.ChoiceField):
            kind = "choice"
        elif isinstance(f, serializers.IntegerField):
            kind = "int"
        elif isinstance(f, serializers.FloatField):
            kind = "float"
        else:
            kind = "text"
        d = {"name": name, "type": kind, "default": default, "help": str(f.help_text or ""),
             "null": bool(getattr(f, "allow_null", False)), "required": bool(f.required)}
        if kind == "choice":
            d["choices"] = list(f.choices)
        lo, hi = getattr(f, "min_value", None), getattr(f, "max_value", None) or getattr(f, "max_length", None)
        if lo is not None:
            d["min"] = lo
        if hi is not None:
            d["max"] = hi
        out.append(d)
    return out
