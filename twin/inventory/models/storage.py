"""Storage: Tectonic (checkpoints, training data) and Hammerspace (NFS) clusters, their servers and SSDs."""
from django.db import models

from twin.inventory.choices import Status, StorageKind

from .base import PhysicalItem


class StorageCluster(models.Model):
    """A storage service of a cluster, reached over the frontend fabric."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="storage_clusters")
    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=StorageKind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.name


class StorageServer(PhysicalItem):
    """A storage server (YV3 Sierra Point) in a storage rack."""

    storage_cluster = models.ForeignKey(StorageCluster, on_delete=models.CASCADE, related_name="servers")
    rack = models.ForeignKey("inventory.Rack", on_delete=models.CASCADE, related_name="storage_servers")
    model = models.ForeignKey("inventory.StorageServerModel", on_delete=models.PROTECT, related_name="+")
    slot = models.PositiveSmallIntegerField(help_text="position in its rack")


class SSD(PhysicalItem):
    """A flash drive (E1.S) in a storage server."""

    server = models.ForeignKey(StorageServer, on_delete=models.CASCADE, related_name="ssds")
    model = models.ForeignKey("inventory.SSDModel", on_delete=models.PROTECT, related_name="+")
    slot = models.PositiveSmallIntegerField()

    class Meta(PhysicalItem.Meta):
        verbose_name = "SSD"
