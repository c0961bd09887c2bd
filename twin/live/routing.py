from django.urls import path

from twin.live import consumers

websocket_urlpatterns = [
    path("ws/runs/", consumers.RunsConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", consumers.RunConsumer.as_asgi()),
    path("ws/clusters/<slug:name>/", consumers.ClusterConsumer.as_asgi()),
]
