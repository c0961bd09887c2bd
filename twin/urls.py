from django.contrib import admin
from django.urls import include, path

from twin.api.exceptions import not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/live/", include("twin.live.urls")),
    path("api/", include("twin.api_urls")),
    path("", include("twin.web.urls")),
]

handler404 = not_found  # JSON under /api/
