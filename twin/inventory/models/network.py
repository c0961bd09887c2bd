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
                name="port_on_one_device",
                violation_error_message="switch, nic: a port is on exactly one device: set one of the two"),
            models.UniqueConstraint(fields=["switch", "slot"], name="port_unique_switch_slot"),
            models.UniqueConstraint(fields=["nic", "slot"], name="port_unique_nic_slot"),
        ]
        indexes = [models.Index(fields=["cluster", "id"], name="port_cluster_id")]  # as PhysicalItem's

    def __str__(self):
        return self.name

    def save(self, *args, **kwargs):
        super().save(*args, **kwargs)
        # keep the switch cached on this port's link in step with the port's device
        Link.objects.filter(a_port=self).exclude(a_switch_id=self.switch_id).update(a_switch_id=self.switch_id)
        Link.objects.filter(b_port=self).exclude(b_switch_id=self.switch_id).update(b_switch_id=self.switch_id)


class Link(PhysicalItem):
    """A cable between two ports: ``a_port`` is the lower end (NIC or lower tier), ``b_port`` the upper end.

    ``a_switch`` and ``b_switch`` cache the switches of the two ports (null at a NIC end), as NetBox caches a
    cable termination's device: topology queries ("links up from these switches") then use one index instead of
    two joins over the port table. They are derived, never set by hand: ``save()`` and the builder fill them,
    ``Port.save()`` keeps them in step, and check_cluster verifies them.
    """

    fabric = models.ForeignKey(Fabric, on_delete=models.CASCADE, related_name="links")
    tier = models.PositiveSmallIntegerField(choices=LinkTier.choices, db_index=True)
    a_port = models.OneToOneField(Port, on_delete=models.CASCADE, related_name="link_as_a")
    b_port = models.OneToOneField(Port, on_delete=models.CASCADE, related_name="link_as_b")
    a_switch = models.ForeignKey("inventory.Switch", null=True, blank=True, editable=False,
                                 on_delete=models.CASCADE, related_name="links_up")
    b_switch = models.ForeignKey("inventory.Switch", null=True, blank=True, editable=False,
                                 on_delete=models.CASCADE, related_name="links_down")
    speed_gbps = models.PositiveIntegerField()
    cable = models.ForeignKey("inventory.CableModel", on_delete=models.PROTECT, related_name="+")

    class Meta(PhysicalItem.Meta):
        # a cluster's links of one tier in id order (``?cluster=..&tier=2``): the tier-2 links are the last built
        indexes = [*PhysicalItem.Meta.indexes, models.Index(fields=["cluster", "tier", "id"], name="link_cluster_tier")]

    def save(self, *args, **kwargs):
        ends = dict(Port.objects.filter(id__in=[self.a_port_id, self.b_port_id]).values_list("id", "switch_id"))
        self.a_switch_id, self.b_switch_id = ends.get(self.a_port_id), ends.get(self.b_port_id)
        super().save(*args, **kwargs)
