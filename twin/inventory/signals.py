"""Signals the inventory sends, so that apps above it (the pages' caches) react without the inventory naming them."""
from django.dispatch import Signal

# Sent after the transaction that built a cluster commits, with ``cluster``: twin/web/warm.py reads a large
# cluster's page structures onto disk then, so that its first visit does not wait for them.
cluster_built = Signal()

# Sent by every write of :mod:`twin.inventory.actions`, once per cluster it touched, inside its transaction, with
# ``cluster_id`` and ``event`` (the change log's summary, :func:`twin.inventory.changelog.event`): the live layer
# publishes it on the cluster's stream once the transaction commits (twin/live/apps.py).
inventory_changed = Signal()
