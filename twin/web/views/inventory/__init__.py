"""The inventory browser: clusters drilled down to zones, racks, hosts, GPUs, NICs, ports, links and switches,
search across every physical kind, and status changes through the REST API.

Modules: ``kinds`` (what each kind is: model, API and admin addresses, location), ``tally`` (counts by status),
``cabling`` (ports with their links and far ends), ``items`` (what each item page shows), ``search``, ``pages``
(the views and their routes).
"""
from twin.web.nav import NavItem, Page

from .pages import urlpatterns

PAGE = Page(nav=NavItem("inventory", "Inventory", "inventory", order=50), urlpatterns=urlpatterns)
