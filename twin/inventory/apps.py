from django.apps import AppConfig


class InventoryConfig(AppConfig):
    """The hardware inventory: the single source of truth every simulation reads."""

    name = "twin.inventory"
    label = "inventory"
    verbose_name = "Inventory"

    def ready(self):
        from twin.inventory.api import priming
        from twin.inventory.signals import cluster_built

        cluster_built.connect(priming.prime, dispatch_uid="twin.inventory.priming")
