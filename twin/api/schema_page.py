"""``/api/schema/`` for people and programs alike. A browser (HTML first in its Accept header, no ``?format``) sees
the schema drawn by Swagger UI, served from drf-spectacular-sidecar's own static files (no CDN: the twin runs
offline), with links that download it as YAML or JSON; a program, or ``?format=yaml`` / ``?format=json``, gets the
schema itself as before. ``/api/docs/`` is the same page. The schema is built once per process and kept
(twin/api/kept_schema.py)."""
from drf_spectacular.plumbing import set_query_parameters
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.response import Response

from twin.api import kept_schema


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


class KeptSchemaView(SpectacularAPIView):
    """drf-spectacular's schema view, serving the kept schema and its kept renderings."""

    renderer_classes = [kept_schema.kept_renderings(r) for r in SpectacularAPIView.renderer_classes]

    def _get_schema_response(self, request):
        if not self.serve_public:   # a schema of what the user may do: built for each request
            return super()._get_schema_response(request)
        version = self.api_version or request.version or self._get_version_parameter(request)

        def build():
            generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
            return generator.get_schema(request=request, public=self.serve_public)

        return Response(data=kept_schema.schema((version, self.serve_public), build),
                        headers={"Content-Disposition": f'inline; filename="{self._get_filename(request, version)}"'})


page_view = SchemaPage.as_view()
schema_view = KeptSchemaView.as_view()


def schema(request, *args, **kwargs):
    """The OpenAPI schema (YAML by default, JSON by ``?format=json`` or Accept), or its page for a browser."""
    return (page_view if wants_page(request) else schema_view)(request, *args, **kwargs)
