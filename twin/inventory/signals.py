"""Signals the inventory sends, so that apps above it (the pages' caches) react without the inventory naming them."""
from django.dispatch import Signal

# Sent after the transaction that built a cluster commits, with ``cluster``: twin/web/warm.py reads a large
# cluster's page structures onto disk then, so that its first visit does not wait for them.
cluster_built = Signal()
