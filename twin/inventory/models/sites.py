"""Where hardware stands: the cluster, its zones (AI zones and storage zones) and racks."""
from django.db import models

from twin.inventory.choices import Status, ZoneKind

from .base import PhysicalItem


class Cluster(models.Model):
    """A cluster built from a spec; ``spec`` keeps the parsed spec it was built from, so it can be rebuilt and checked."""

    name = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=128)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    spec = models.JSONField()
    built_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Zone(models.Model):
    """A group of racks: an AI zone (pod) on the backend fabric, or a storage zone on the frontend fabric."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="zones")
    name = models.CharField(max_length=200, unique=True)
    kind = models.PositiveSmallIntegerField(choices=ZoneKind.choices)
    number = models.PositiveIntegerField(help_text="index among the cluster's zones of this kind")
    storage_cluster = models.ForeignKey("inventory.StorageCluster", null=True, blank=True,
                                        on_delete=models.CASCADE, related_name="zones")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.name


class Rack(PhysicalItem):
    """A rack in a zone: compute racks hold hosts under one rack switch; storage racks hold storage servers."""

    zone = models.ForeignKey(Zone, on_delete=models.CASCADE, related_name="racks")
    number = models.PositiveIntegerField(help_text="index within its zone")
