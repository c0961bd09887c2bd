"""Signals the inventory sends, so that apps above it (the pages' caches) react without the inventory naming them."""
from django.dispatch import Signal

# Sent after the transaction that built a cluster commits, with ``cluster``: twin/web/warm.py reads a large
# cluster's page structures onto disk then, so that its first visit does not wait for them.
cluster_built = Signal()

# Sent by every write of :mod:`twin.inventory.actions`, once per cluster it touched, inside its transaction, with
# ``cluster_id`` and ``event`` (the change log's summary, :func:`twin.inventory.changelog.event`): the live layer
# publishes it on the cluster's stream once the transaction commits (twin/live/apps.py).
inventory_changed = Signal()

# Sent by :func:`twin.inventory.builder.delete_cluster` inside its transaction, before the cluster's own rows go,
# with ``cluster``: each app above whose rows name the cluster deletes them there (twin/runs: its runs, scenarios,
# their schedules and its jobs; twin/runs/apps.py) and returns what it deleted, ``{"runs": n, ...}``, which the
# delete logs and ``build_cluster --replace`` says. One transaction: all of it goes, or none.
cluster_deleting = Signal()

# Sent by :func:`twin.inventory.actions.delete_items` before a user deletes a cluster through the API, with ``cluster``
# and ``user``: a receiver returns why that user may not, or None (twin/runs: other users' runs depend on it, and only
# staff may then, :func:`twin.runs.ownership.cluster_refusal`). Any reason refuses the delete (the API's 403).
cluster_delete_refusal = Signal()
