"""/api/schema/ shows in a browser (Swagger UI from the sidecar's own static files, download links) and stays the
schema for programs and for ?format=."""
import pytest

pytestmark = pytest.mark.django_db
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


def test_a_browser_sees_the_schema_as_a_page_with_downloads(client):
    r = client.get("/api/schema/", HTTP_ACCEPT=BROWSER)
    assert r.status_code == 200 and r["Content-Type"].startswith("text/html")
    page = r.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page      # no CDN
    assert "cdn" not in page.lower()
    assert 'href="/api/schema/?format=yaml" download=' in page and 'href="/api/schema/?format=json" download=' in page


def test_programs_and_formats_still_get_the_schema(client):
    assert client.get("/api/schema/")["Content-Type"].startswith("application/vnd.oai.openapi")
    r = client.get("/api/schema/?format=yaml", HTTP_ACCEPT=BROWSER)
    assert r.status_code == 200 and r.content.startswith(b"openapi:")
    r = client.get("/api/schema/?format=json", HTTP_ACCEPT=BROWSER)
    assert r.status_code == 200 and r.json()["openapi"].startswith("3")


def test_the_kept_schema_is_built_anew_when_a_setting_or_the_run_kinds_change():
    """The schema is kept per process (twin/api/kept_schema.py) but follows what it is built from."""
    from django.conf import settings
    from django.test import override_settings

    from twin.api import kept_schema
    from twin.runs import registry

    built = []

    def build():
        built.append(object())
        return built[-1]

    key = ("test", True)
    kept = dict(kept_schema._kept)     # the schema other tests of this process use, put back at the end
    try:
        assert kept_schema.schema(key, build) is kept_schema.schema(key, build) is built[0]
        with override_settings(CACHES={**settings.CACHES}):        # not read by the schema: kept
            assert kept_schema.schema(key, build) is built[0]
        assert kept_schema.schema(key, build) is built[0]
        with override_settings(TWIN_API_ANONYMOUS_READ=not settings.TWIN_API_ANONYMOUS_READ):
            assert kept_schema.schema(key, build) is built[1]
        assert kept_schema.schema(key, build) is built[2]            # the setting back: built anew again
        kind = next(iter(registry.kinds().values()))
        registry.register(kind)
        assert kept_schema.schema(key, build) is built[3]
    finally:
        kept_schema.forget()
        kept_schema._kept.update(kept)
