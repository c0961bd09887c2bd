"""Choices of the inventory models. Integer values of the tier/zone/fabric choices match ``sim.layout``."""
from django.db import models

from sim import layout


class Status(models.TextChoices):
    """Operational status of a physical item. Simulations use only ``active`` items."""

    ACTIVE = "active", "Active"
    FAILED = "failed", "Failed"
    DRAINED = "drained", "Drained"
    MAINTENANCE = "maintenance", "Maintenance"


class FabricRole(models.IntegerChoices):
    BACKEND = layout.FABRIC_BACKEND, "Backend (GPU to GPU)"
    FRONTEND = layout.FABRIC_FRONTEND, "Frontend (hosts and storage)"


class FabricKind(models.TextChoices):
    BACKEND_ROCE = "backend-roce", "Backend RoCEv2"
    BACKEND_INFINIBAND = "backend-ib", "Backend InfiniBand"
    FRONTEND = "frontend", "Frontend Ethernet"


FABRIC_KIND_BY_SPEC = {"roce": FabricKind.BACKEND_ROCE, "infiniband": FabricKind.BACKEND_INFINIBAND,
                       "ethernet": FabricKind.FRONTEND}


class SwitchTier(models.IntegerChoices):
    LEAF = layout.TIER_LEAF, "Leaf (RTSW)"
    SPINE = layout.TIER_SPINE, "Spine (CTSW)"
    CORE = layout.TIER_CORE, "Core (ATSW)"


class LinkTier(models.IntegerChoices):
    NIC_LEAF = layout.LINK_NIC_LEAF, "NIC to leaf"
    LEAF_SPINE = layout.LINK_LEAF_SPINE, "Leaf to spine"
    SPINE_CORE = layout.LINK_SPINE_CORE, "Spine to core"


class ZoneKind(models.IntegerChoices):
    COMPUTE = layout.ZONE_COMPUTE, "Compute (AI zone)"
    STORAGE = layout.ZONE_STORAGE, "Storage"


class StorageKind(models.TextChoices):
    TECTONIC = "tectonic", "Tectonic (distributed flash, FUSE)"
    HAMMERSPACE = "hammerspace", "Hammerspace (parallel NFS)"


class CableMedium(models.TextChoices):
    COPPER = "copper", "Copper"
    FIBER = "fiber", "Fiber"
