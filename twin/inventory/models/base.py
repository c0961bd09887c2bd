from django.db import models

from twin.inventory.choices import Status


class HardwareModelBase(models.Model):
    """A catalog entry: a product that physical items are instances of. ``slug`` is the name specs use."""

    slug = models.SlugField(max_length=64, unique=True)
    vendor = models.CharField(max_length=64)
    name = models.CharField(max_length=128)

    class Meta:
        abstract = True
        ordering = ["slug"]

    def __str__(self):
        return f"{self.vendor} {self.name}"


class PhysicalItem(models.Model):
    """Something that is installed in a cluster: a unique name, a serial number and an operational status.

    ``cluster`` is kept on every item (not only reachable through joins) so that per-cluster lists, counts and
    deletes are single indexed queries; the (cluster, id) index gives a cluster's rows in id order, as list pages
    read them, and lets a deep page find its first id in the index alone (``twin.api.pagination``).
    """

    name = models.CharField(max_length=200, unique=True)
    serial = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")

    class Meta:
        abstract = True
        ordering = ["id"]
        indexes = [models.Index(fields=["cluster", "id"], name="%(class)s_cluster_id")]

    def __str__(self):
        return self.name
