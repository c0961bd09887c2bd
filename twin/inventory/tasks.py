"""Celery tasks of the inventory app (auto-discovered): NetBox transfers in the background
(:mod:`twin.inventory.netbox.transfers`, sent by name from there)."""
from celery import shared_task
from django.db import close_old_connections

from twin.inventory.netbox import transfers


@shared_task(name=transfers.TASK, acks_late=True)
def netbox_transfer(transfer_id: int) -> int:
    close_old_connections()
    transfers.run(transfer_id)
    return transfer_id
