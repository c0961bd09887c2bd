"""Devices: GPU hosts, their GPUs and NICs, and switches."""
from django.db import models
from django.db.models import Q

from twin.inventory.choices import SwitchTier

from .base import PhysicalItem


class Host(PhysicalItem):
    """A GPU server (Grand Teton): 8 GPUs, 8 backend NICs (one per GPU), frontend NICs."""

    rack = models.ForeignKey("inventory.Rack", on_delete=models.CASCADE, related_name="hosts")
    platform = models.ForeignKey("inventory.HostPlatform", on_delete=models.PROTECT, related_name="+")
    slot = models.PositiveSmallIntegerField(help_text="position in its rack")


class GPU(PhysicalItem):
    """One GPU. ``index`` is its position in the cluster (0..N-1), the id simulations and placements use."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="gpus")
    model = models.ForeignKey("inventory.GPUModel", on_delete=models.PROTECT, related_name="+")
    slot = models.PositiveSmallIntegerField(help_text="GPU number in its host (0-7)")
    index = models.PositiveIntegerField(help_text="GPU number in the cluster")

    class Meta(PhysicalItem.Meta):
        verbose_name = "GPU"
        constraints = [models.UniqueConstraint(fields=["cluster", "index"], name="gpu_unique_index")]


class NIC(PhysicalItem):
    """A network adapter in a host or a storage server, on one fabric; a backend NIC serves one GPU (its rail)."""

    fabric = models.ForeignKey("inventory.Fabric", on_delete=models.CASCADE, related_name="nics")
    host = models.ForeignKey(Host, null=True, blank=True, on_delete=models.CASCADE, related_name="nics")
    storage_server = models.ForeignKey("inventory.StorageServer", null=True, blank=True, on_delete=models.CASCADE,
                                       related_name="nics")
    gpu = models.OneToOneField(GPU, null=True, blank=True, on_delete=models.SET_NULL, related_name="nic")
    model = models.ForeignKey("inventory.NICModel", on_delete=models.PROTECT, related_name="+")
    slot = models.PositiveSmallIntegerField(help_text="NIC number in its device; the rail for backend NICs")

    class Meta(PhysicalItem.Meta):
        verbose_name = "NIC"
        constraints = [models.CheckConstraint(
            condition=Q(host__isnull=False, storage_server__isnull=True) | Q(host__isnull=True, storage_server__isnull=False),
            name="nic_in_one_device",
            violation_error_message="host, storage_server: a NIC is in exactly one device: set one of the two")]


class Switch(PhysicalItem):
    """A switch of one fabric tier. ``group``: leaf and spine index in their zone (a spine's plane), core's plane."""

    fabric = models.ForeignKey("inventory.Fabric", on_delete=models.CASCADE, related_name="switches")
    model = models.ForeignKey("inventory.SwitchModel", on_delete=models.PROTECT, related_name="+")
    tier = models.PositiveSmallIntegerField(choices=SwitchTier.choices, db_index=True)
    role = models.CharField(max_length=32, help_text="the tier's name in its fabric: rtsw, ctsw, atsw, leaf...")
    zone = models.ForeignKey("inventory.Zone", null=True, blank=True, on_delete=models.CASCADE, related_name="switches")
    rack = models.ForeignKey("inventory.Rack", null=True, blank=True, on_delete=models.CASCADE, related_name="switches",
                             help_text="the rack a leaf switch stands in")
    group = models.PositiveIntegerField()
    member = models.PositiveIntegerField(default=0, help_text="core switches: index within the plane")

    class Meta(PhysicalItem.Meta):
        verbose_name_plural = "switches"
