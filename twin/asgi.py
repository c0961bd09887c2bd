"""ASGI entry point: HTTP through Django, WebSockets through Channels (routes added by the live app)."""
import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
# Static files (frontend/) are served by the app itself, so the run command needs no collectstatic or proxy.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from twin.live.auth import TokenAuthMiddleware  # noqa: E402
from twin.live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns))),
})
