"""The browser pages: the routes every page module declares (``PAGE`` in twin/web/views/<page>.py, found by
twin.web.nav.pages)."""
from twin.web import nav

urlpatterns = nav.urlpatterns()
