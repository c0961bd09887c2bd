from django.apps import AppConfig


def _forget_transfers(sender, cluster, **kwargs):
    """A deleted cluster's NetBox transfers stay (their outcome is history) without it: delete_cluster deletes rows
    with one DELETE per table, which does not apply the foreign key's SET_NULL."""
    from twin.inventory.models import NetBoxTransfer
    NetBoxTransfer.objects.filter(cluster=cluster).update(cluster=None)
    return {}


class InventoryConfig(AppConfig):
    """The hardware inventory: the single source of truth every simulation reads."""

    name = "twin.inventory"
    label = "inventory"
    verbose_name = "Inventory"

    def ready(self):
        from twin.inventory.signals import cluster_deleting
        cluster_deleting.connect(_forget_transfers, dispatch_uid="inventory-forget-netbox-transfers")
