"""All REST routes under /api/ (namespace ``api``), the OpenAPI schema and its documentation page."""
from django.urls import include, path

from twin.api.base import BulkRouter
from twin.api.inventory.urls import register as register_inventory
from twin.api.inventory.views import PathsView
from twin.api.schema_page import page_view, schema
from twin.runs.api.urls import register as register_runs

router = BulkRouter()
register_inventory(router)
register_runs(router)

app_name = "api"
urlpatterns = [
    path("schema/", schema, name="schema"),
    path("docs/", page_view, name="docs"),
    path("topology/paths/", PathsView.as_view(), name="topology-paths"),
    path("", include(router.urls)),
]
