"""Networks: fabrics, the ports of NICs and switches, and the links (cables) between two ports."""
from django.db import models
from django.db.models import Q

from twin.inventory.choices import FabricKind, FabricRole, LinkTier, Status

from .base import PhysicalItem


class Fabric(models.Model):
    """One network of a cluster: the backend (RoCE or InfiniBand, GPU to GPU) or the frontend (hosts and storage)."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="fabrics")
    name = models.CharField(max_length=200, unique=True)
    role = models.PositiveSmallIntegerField(choices=FabricRole.choices)
    kind = models.CharField(max_length=16, choices=FabricKind.choices)
    speed_gbps = models.PositiveIntegerField(help_text="switch-to-switch link speed")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["cluster", "role"], name="fabric_one_per_role")]

    def __str__(self):
        return self.name


class Port(models.Model):
    """A cabled port of a NIC or a switch. Ports exist as they are cabled; the device model's count is the limit."""

    cluster = models.ForeignKey("inventory.Cluster", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200, unique=True)
    switch = models.ForeignKey("inventory.Switch", null=True, blank=True, on_delete=models.CASCADE, related_name="ports")
    nic = models.ForeignKey("inventory.NIC", null=True, blank=True, on_delete=models.CASCADE, related_name="ports")
    slot = models.PositiveIntegerField(help_text="port number on its device")
    speed_gbps = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE, db_index=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(switch__isnull=False, nic__isnull=True) | Q(switch__isnull=True, nic__isnull=False),
                name="port_on_one_device"),
            models.UniqueConstraint(fields=["switch", "slot"], name="port_unique_switch_slot"),
            models.UniqueConstraint(fields=["nic", "slot"], name="port_unique_nic_slot"),
        ]

    def __str__(self):
        return self.name


class Link(PhysicalItem):
    """A cable between two ports: ``a_port`` is the lower end (NIC or lower tier), ``b_port`` the upper end."""

    fabric = models.ForeignKey(Fabric, on_delete=models.CASCADE, related_name="links")
    tier = models.PositiveSmallIntegerField(choices=LinkTier.choices, db_index=True)
    a_port = models.OneToOneField(Port, on_delete=models.CASCADE, related_name="link_as_a")
    b_port = models.OneToOneField(Port, on_delete=models.CASCADE, related_name="link_as_b")
    speed_gbps = models.PositiveIntegerField()
    cable = models.ForeignKey("inventory.CableModel", on_delete=models.PROTECT, related_name="+")
