"""``/api/schema/`` for people and programs alike. A browser (HTML first in its Accept header, no ``?format``) sees
the schema drawn by Swagger UI, served from drf-spectacular-sidecar's own static files (no CDN: the twin runs
offline), with links that download it as YAML or JSON; a program, or ``?format=yaml`` / ``?format=json``, gets the
schema itself as before. ``/api/docs/`` is the same page."""
from drf_spectacular.plumbing import set_query_parameters
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView


def wants_page(request) -> bool:
    """Whether ``request`` is a browser's visit: HTML asked for, no explicit format."""
    return "format" not in request.GET and "text/html" in request.headers.get("Accept", "")


class SchemaPage(SpectacularSwaggerView):
    """Swagger UI over the schema (as JSON) with download links (api/schema_page.html)."""

    url_name = "api:schema"
    template_name = "api/schema_page.html"

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        # the page reads the schema as JSON whatever its own Accept header says
        response.data["schema_url"] = set_query_parameters(response.data["schema_url"], format="json")
        return response


page_view = SchemaPage.as_view()
schema_view = SpectacularAPIView.as_view()


def schema(request, *args, **kwargs):
    """The OpenAPI schema (YAML by default, JSON by ``?format=json`` or Accept), or its page for a browser."""
    return (page_view if wants_page(request) else schema_view)(request, *args, **kwargs)
