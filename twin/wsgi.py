"""WSGI entry point: HTTP only, for the team set-up's HTTP processes (gunicorn, ``python -m twin.webserver --serve
http``); WebSockets need twin.asgi. A plain request costs about half of what it costs through the ASGI stack (no
event-loop-to-thread hand-overs): docs/operations.md, "Throughput and the web processes"."""
import os

from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
# Static files (frontend/) are served by the app itself, as under ASGI (twin/asgi.py).
application = StaticFilesHandler(get_wsgi_application())

from twin.web import warm  # noqa: E402  (needs Django set up)

warm.start()        # the large clusters' structures read in the background, before the first visit
