from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/live/", include("twin.live.urls")),
    path("api/", include("twin.api_urls")),
    path("", include("twin.web.urls")),
]
