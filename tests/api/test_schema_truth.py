"""The OpenAPI schema says what the API does (issue 24, the schema items schemathesis found): nullable fields,
brief answers, JSON errors everywhere under /api/, refused query parameters, documented error statuses."""
import pytest

from twin.runs.api.serializers import RunCreateSerializer

pytestmark = pytest.mark.django_db
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional


@pytest.fixture
def schema(anon):
    return anon.get("/api/schema/?format=json").json()


def resolve(schema, ref):
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def test_a_schedule_that_never_ran_has_a_null_last_run_at_and_the_schema_says_so(schema):
    assert schema["components"]["schemas"]["Schedule"]["properties"]["last_run_at"].get("nullable") is True


def test_brief_answers_are_documented_as_brief(schema, demo, anon):
    """Every list with ?brief= answers rows holding exactly its Brief component's properties, every required one
    among them, and the list documents them (oneOf the full row and the brief row)."""
    checked = 0
    for path, item in schema["paths"].items():
        operation = item.get("get", {})
        if "{" in path or not any(p["name"] == "brief" for p in operation.get("parameters", [])):
            continue
        page = resolve(schema, operation["responses"]["200"]["content"]["application/json"]["schema"])
        full, brief = page["properties"]["results"]["items"]["oneOf"]
        brief = resolve(schema, brief)
        rows = anon.get(path, {"brief": "true", "limit": 2}).json()["results"]
        for row in rows:
            assert set(row) == set(brief["properties"]), path
            assert set(brief["required"]) <= set(row), path
            assert brief["additionalProperties"] is False
        checked += bool(rows)
    assert checked >= 7


@pytest.mark.parametrize("path", ["/api/runs/abc/dumps/", "/api/runs/abc/", "/api/runs/0.5/results/",
                                  "/api/inventory/gpus/abc/"])
def test_a_non_numeric_id_is_a_json_404(anon, path):
    response = anon.get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    assert "detail" in response.json()


@pytest.mark.parametrize("query, field", [({"pagination": "pages"}, "pagination"), ({"pagination": ""}, "pagination"),
                                          ({"brief": "maybe"}, "brief"), ({"brief": "2"}, "brief")])
def test_a_bad_pagination_or_brief_is_a_400_naming_it(anon, query, field):
    response = anon.get("/api/inventory/zones/", query)
    assert response.status_code == 400, response.content[:200]
    assert field in response.json()


@pytest.mark.parametrize("query", [{"brief": "TRUE"}, {"brief": "0"}, {"brief": "no"}, {"pagination": "cursor"}])
def test_good_pagination_and_brief_values_are_accepted(anon, query):
    assert anon.get("/api/inventory/zones/", query).status_code == 200


def test_error_statuses_and_open_reads_are_documented(schema):
    responses = schema["paths"]["/api/inventory/gpus/{id}/"]
    assert {"400", "401", "403", "404", "409", "429"} <= set(responses["patch"]["responses"])
    assert {"401", "403", "404", "429"} <= set(responses["get"]["responses"])
    assert {} in responses["get"]["security"] and {} not in responses["patch"]["security"]
    assert resolve(schema, responses["get"]["responses"]["404"]["content"]["application/json"]["schema"])


def test_the_page_size_and_offset_bounds_are_documented(schema, anon):
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/api/inventory/zones/"]["get"]["parameters"]}
    assert parameters["limit"]["minimum"] == 1 and parameters["offset"]["minimum"] == 0
    assert anon.get("/api/inventory/zones/", {"limit": 0}).status_code == 400


def request_schema(schema, path, method):
    return schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


def test_bulk_bodies_are_documented_as_the_server_reads_them(schema, demo, writer):
    """Bulk PUT/PATCH/DELETE take a JSON array of at least one object, each with its id (1 to 2**63-1); the answer
    of an update is the list of rows, not a page (schemathesis: ~400 valid bodies refused, a list answer)."""
    for method in ("put", "patch", "delete"):
        body = request_schema(schema, "/api/inventory/hosts/", method)
        assert body["type"] == "array" and body["minItems"] == 1, method
        item = body["items"] if "properties" in body["items"] else resolve(schema, body["items"])
        assert "id" in item["required"] and item["properties"]["id"]["minimum"] == 1, method
        assert list(schema["paths"]["/api/inventory/hosts/"][method]["requestBody"]["content"]) == ["application/json"]
    assert writer.patch("/api/inventory/hosts/", [], format="json").status_code == 400
    host_id = writer.get("/api/inventory/hosts/", {"limit": 1}).json()["results"][0]["id"]
    answer = writer.patch("/api/inventory/hosts/", [{"id": host_id, "serial": "S-1"}], format="json")
    assert answer.status_code == 200 and answer.json()[0]["serial"] == "S-1"
    ok = schema["paths"]["/api/inventory/hosts/"]["patch"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"]["type"] == "array" and resolve(schema, ok["schema"]["items"])["properties"]["serial"]


def test_foreign_keys_are_nullable_as_their_field_and_written_as_an_id(schema, demo, writer):
    """A required foreign key (a host's rack) is not nullable, an optional one (a port's switch) is; in requests an
    id or {"id": n} (no url needed)."""
    components = schema["components"]["schemas"]
    assert "nullable" not in components["Host"]["properties"]["rack"]
    assert components["Port"]["properties"]["switch"]["nullable"] is True
    rack = components["HostRequest"]["properties"]["rack"]
    assert "nullable" not in rack and [a.get("type") for a in rack["anyOf"]] == ["integer", "object"]
    assert rack["anyOf"][1]["required"] == ["id"]
    assert writer.post("/api/inventory/hosts/", {"rack": None}, format="json").json()["rack"]


def test_a_run_needs_a_scenario_or_a_kind_and_a_cluster_and_the_schema_says_so(schema):
    body = schema["components"]["schemas"]["RunCreateRequest"]
    assert [a["required"] for a in body["anyOf"]] == [["scenario"], ["kind", "cluster"], ["kind", "cluster_id"]]
    assert "nullable" not in body["anyOf"][0]["properties"]["scenario"]
    refused = RunCreateSerializer(data={"kind": "collective"})
    assert not refused.is_valid() and set(refused.errors) == {"cluster"}


def test_a_cluster_spec_is_required_to_create_and_absent_from_updates(schema, demo, writer):
    components = schema["components"]["schemas"]
    assert "spec" in components["ClusterRequest"]["required"]
    assert components["ClusterRequest"]["properties"]["spec"]["type"] == "object"
    assert "spec" not in components["ClusterUpdateRequest"]["properties"]
    assert "spec" not in components["PatchedClusterUpdateRequest"]["properties"]
    assert request_schema(schema, "/api/inventory/clusters/{id}/", "put")["$ref"].endswith("/ClusterUpdateRequest")
    assert writer.post("/api/inventory/clusters/", {"title": "x"}, format="json").json()["spec"]
    assert writer.patch(f"/api/inventory/clusters/{demo.id}/", {"spec": {}}, format="json").status_code == 400


def test_run_reads_are_open_and_their_kind_filter_an_enum(schema, anon):
    """Runs, scenarios and schedules read anonymously (TWIN_API_ANONYMOUS_READ) declare their authentication
    optional; ?kind= on runs lists the registered kinds (an empty or unknown one is a 400)."""
    for path in ("/api/runs/", "/api/runs/scenarios/", "/api/runs/schedules/"):
        assert {} in schema["paths"][path]["get"]["security"], path
        assert anon.get(path).status_code == 200, path
    kind = next(p for p in schema["paths"]["/api/runs/"]["get"]["parameters"] if p["name"] == "kind")
    assert kind["schema"]["items"] == {"$ref": "#/components/schemas/RunKindEnum"}
    assert anon.get("/api/runs/", {"kind": ""}).status_code == 400
