from django.urls import path

from twin.live import views

app_name = "live"
urlpatterns = [
    path("runs/<int:run_id>/snapshot/", views.RunSnapshotView.as_view(), name="run-snapshot"),
    path("clusters/<slug:name>/snapshot/", views.ClusterSnapshotView.as_view(), name="cluster-snapshot"),
    path("clusters/<slug:name>/links/", views.ClusterLinkIndexView.as_view(), name="cluster-links"),
]
