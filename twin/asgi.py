"""ASGI entry point: HTTP through Django, WebSockets through Channels (routes added by the live app)."""
import os
import sys

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
# Seconds a thread holding the GIL keeps it while another waits (Python's default: 0.005). A request crosses between
# the event loop and its view's thread several times, each crossing waiting for the GIL behind busy requests; 1 ms
# keeps a short request (/healthz) short beside heavy ones (bench/bench_load.py) for a little switching.
GIL_SWITCH_INTERVAL = 0.001
sys.setswitchinterval(GIL_SWITCH_INTERVAL)
# Static files (frontend/) are served by the app itself, so the run command needs no collectstatic or proxy.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from twin.live.auth import TokenAuthMiddleware  # noqa: E402
from twin.live.routing import websocket_urlpatterns  # noqa: E402
from twin.web import warm  # noqa: E402

warm.start()        # the large clusters' structures read in the background, before the first visit (or stream)

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AuthMiddlewareStack(TokenAuthMiddleware(URLRouter(websocket_urlpatterns))),
})
