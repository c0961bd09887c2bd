"""The OpenAPI schema tells the whole truth for every operation, declared here once rather than on each view
(schemathesis checks it: tests/api/test_schemathesis.py, docs/api.md):

- reads open to anonymous users (TWIN_API_ANONYMOUS_READ) declare their authentication optional;
- every error status an operation can answer is documented, with the JSON error body (twin/api/exceptions.py);
- ``?brief=1`` answers are documented as what they are: a ``Brief<Model>`` with only the brief fields;
- bulk bodies (PUT/PATCH/DELETE on a list URL) are what the server reads: a JSON array of at least one object,
  each with its ``id``;
- a serializer's ``required_alternatives`` (e.g. a run from a ``scenario``, or from a ``kind`` and a ``cluster``)
  become an ``anyOf`` of required sets on its request body;
- a serializer's ``create_only`` fields (a cluster's ``spec``) are required in a creation's body and absent from
  an update's (a component of its own, ``<Name>UpdateRequest``).
"""
import copy

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from rest_framework.permissions import SAFE_METHODS

from twin.inventory.filtersets import INT64_MAX

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR = {"description": "A 4xx error: {\"detail\": reason}, or the fields named with their reasons "
                        "({\"field\": [reason, ...]}; a list aligned with the input for bulk calls).",
         "anyOf": [{"type": "object", "additionalProperties": True},
                   {"type": "array", "items": {"type": "object", "additionalProperties": True}}]}
WHY = {400: "Bad input: the body or a parameter, named with the reason.",
       401: "Credentials given but not valid (a wrong or revoked token).",
       403: "Not allowed: no credentials, or a user without the permission.",
       404: "No such object.",
       409: "Refused by what depends on it (rows in use, a conflicting state).",
       413: "Request body too large (TWIN_MAX_REQUEST_BODY).",
       415: "Request body in a media type the operation does not read.",
       429: "Rate limited; Retry-After says when to try again."}
WRITES = ("post", "put", "patch", "delete")
BRIEF_FIELDS = "x-brief-fields"  # on the `brief` parameter: the fields of the brief answer
BULK = "x-bulk"  # on a bulk operation: "update", "partial" or "delete" (twin/api/base.py)
ID = {"type": "integer", "minimum": 1, "maximum": INT64_MAX}  # an object's id, as every id the API reads


class TwinAutoSchema(AutoSchema):
    def get_auth(self):
        """A read that every permission of the view opens to anonymous users (``opens_reads``) has its
        authentication optional (``{}`` among the security requirements)."""
        auths = super().get_auth()
        if (self.method in SAFE_METHODS and settings.TWIN_API_ANONYMOUS_READ and {} not in auths
                and all(getattr(p, "opens_reads", False) for p in self.view.get_permissions())):
            auths.append({})
        return auths

    def get_serializer_name(self, serializer, direction):
        name = super().get_serializer_name(serializer, direction)
        if direction == "request" and self.method in ("PUT", "PATCH") and getattr(serializer, "create_only", ()):
            return f"{name.removesuffix('Serializer')}Update"
        return name

    def _map_basic_serializer(self, serializer, direction):
        """A request body that needs one of several sets of fields (``required_alternatives`` on the serializer,
        a tuple of tuples of field names) says so: ``anyOf`` the sets, each field there present and not null."""
        schema = super()._map_basic_serializer(serializer, direction)
        create_only = getattr(serializer, "create_only", ())
        if direction == "request" and create_only:
            if self.method == "POST":
                schema["required"] = [*schema.get("required", []), *create_only]
            else:
                for name in create_only:
                    schema.get("properties", {}).pop(name, None)
                schema["required"] = [n for n in schema.get("required", []) if n not in create_only]
                if not schema["required"]:
                    del schema["required"]
        alternatives = getattr(serializer, "required_alternatives", ())
        if direction == "request" and alternatives:
            properties = schema.get("properties", {})
            schema["anyOf"] = [{"required": list(names),
                                "properties": {n: {k: v for k, v in properties[n].items() if k != "nullable"}
                                               for n in names}}
                               for names in alternatives]
        return schema


def error_statuses(method: str, operation: dict) -> list[int]:
    """The error statuses ``operation`` can answer: every call may be refused (401, 403) or throttled (429);
    parameters and bodies may be bad (400); a path names an object that may not exist (404); a write may conflict
    (409); a body may be too large or of another media type (413, 415)."""
    parameters = operation.get("parameters", [])
    codes = [401, 403, 429]
    if parameters or "requestBody" in operation or method in WRITES:
        codes.append(400)
    if any(p.get("in") == "path" for p in parameters):
        codes.append(404)
    if method in WRITES:
        codes.append(409)
    if "requestBody" in operation or method in ("post", "put", "patch"):
        codes += [413, 415]
    return sorted(codes)


def _brief(schemas: dict, ref: dict, fields: list[str]) -> dict:
    """``oneOf`` the full component and its brief one (registered here, no other property allowed, so that a
    full answer is not also a brief one)."""
    name = ref["$ref"].rsplit("/", 1)[1]
    full = schemas[name]
    schemas[f"Brief{name}"] = {
        "type": "object", "additionalProperties": False,
        "properties": {f: full["properties"][f] for f in fields if f in full.get("properties", {})},
        "required": [f for f in full.get("required", []) if f in fields],
        "description": f"The brief form of {name} (?brief=1)."}
    return {"oneOf": [ref, {"$ref": f"#/components/schemas/Brief{name}"}]}


def _bulk(schemas: dict, operation: dict, kind: str) -> None:
    """The body of a bulk call (``InventoryViewSet._objects_for`` reads it): JSON only (a form cannot carry a list
    of objects), at least one object, each with its id (no id twice: what JSON Schema can say of it is that no two
    objects are the same); an update's objects are the model's request component (its ``Patched`` one for a
    partial update) plus ``id`` (registered as ``Bulk<component>``), and its answer the list of updated objects
    (not a page)."""
    if kind == "delete":
        item = {"type": "object", "properties": {"id": ID}, "required": ["id"]}
    else:
        request = operation["requestBody"]["content"]["application/json"]["schema"]["items"]["$ref"].rsplit("/", 1)[1]
        name = f"Patched{request}" if kind == "partial" and f"Patched{request}" in schemas else request
        base = schemas[name]
        schemas[f"Bulk{name}"] = {**base, "properties": {"id": ID, **base.get("properties", {})},
                                  "required": ["id", *base.get("required", [])]}
        item = {"$ref": f"#/components/schemas/Bulk{name}"}
        ok = operation["responses"]["200"]["content"]["application/json"]
        if "$ref" in ok["schema"]:  # a page (the list route's pagination): the list of its rows
            ok["schema"] = copy.deepcopy(schemas[ok["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]["results"])
    operation["requestBody"] = {"required": True, "content": {"application/json": {
        "schema": {"type": "array", "minItems": 1, "uniqueItems": True, "items": item}}}}


def postprocess(result, generator, request, public):
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS): error answers, brief answers, bulk bodies."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR
    operations = [operation for item in result.get("paths", {}).values() for operation in item.values()
                  if isinstance(operation, dict) and "responses" in operation]
    for operation in operations:  # before the brief answers change the pages' rows
        if BULK in operation:
            _bulk(schemas, operation, operation.pop(BULK))
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for code in error_statuses(method, operation):
                operation["responses"].setdefault(str(code), {
                    "description": WHY[code], "content": {"application/json": {"schema": ERROR_REF}}})
            brief = next((p for p in operation.get("parameters", []) if p.get("name") == "brief"), None)
            if brief is None or BRIEF_FIELDS not in brief:
                continue
            fields = brief.pop(BRIEF_FIELDS)
            ok = operation["responses"]["200"]["content"]["application/json"]
            target = schemas[ok["schema"]["$ref"].rsplit("/", 1)[1]] if "$ref" in ok["schema"] else ok
            if target.get("properties", {}).get("results"):  # a page: its rows
                items = target["properties"]["results"]["items"]
                target["properties"]["results"]["items"] = _brief(schemas, items, fields)
            else:
                ok["schema"] = _brief(schemas, ok["schema"], fields)
    return result
