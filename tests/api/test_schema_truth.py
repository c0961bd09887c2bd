"""The OpenAPI schema says what the API does (issue 24, the schema items schemathesis found): nullable fields,
brief answers, JSON errors everywhere under /api/, refused query parameters, documented error statuses."""
import pytest

pytestmark = pytest.mark.django_db


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
