from django.apps import AppConfig


class InventoryConfig(AppConfig):
    """The hardware inventory: the single source of truth every simulation reads."""

    name = "twin.inventory"
    label = "inventory"
    verbose_name = "Inventory"
