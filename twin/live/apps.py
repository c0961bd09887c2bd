from django.apps import AppConfig


def _publish_inventory_change(sender, cluster_id: int, event: dict, **kwargs) -> None:
    """An inventory write's event, on its cluster's live stream once the transaction commits."""
    from twin.live.publish import publish_cluster_event

    publish_cluster_event(cluster_id, event)


class LiveConfig(AppConfig):
    """The live push: binary frames and events on per-run and per-cluster streams (Channels over Redis)."""

    name = "twin.live"
    label = "live"
    verbose_name = "Live push"

    def ready(self):
        from twin.inventory.signals import inventory_changed

        inventory_changed.connect(_publish_inventory_change, dispatch_uid="twin.live.inventory_changed")
