"""Choices of the inventory models. Integer values of the tier/zone/fabric choices match ``sim.fabric.layout``."""
from django.db import models

from sim.fabric import layout


class Status(models.TextChoices):
    """Operational status of a physical item. Simulations use only ``active`` items."""

    ACTIVE = "active", "Active"
    FAILED = "failed", "Failed"
    DRAINED = "drained", "Drained"
    MAINTENANCE = "maintenance", "Maintenance"


NOT_ACTIVE = [s for s in Status.values if s != Status.ACTIVE]
STATUS_CODE = {name: code for code, name in enumerate(layout.STATUS_NAMES)}   # the engine's status codes


def not_active_rows(queryset) -> list[tuple[int, str]]:
    """(id, status) of the queryset's rows that are not active, in no particular order. Asked as "status in the
    non-active ones" ordered by status, so that SQLite's planner takes the status index (a few rows) even when its
    statistics say every row is active; filtered by cluster or fabric alone it reads every row (~35 ms for the
    links of a 24k cluster)."""
    return list(queryset.filter(status__in=NOT_ACTIVE).order_by("status").values_list("id", "status"))


class ChangeAction(models.TextChoices):
    """What a change-log entry (``ObjectChange``) records."""

    CREATE = "create", "Created"
    UPDATE = "update", "Updated"
    DELETE = "delete", "Deleted"


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


class TransferDirection(models.TextChoices):
    """Which way a NetBox transfer (``NetBoxTransfer``) goes."""

    EXPORT = "export", "Export to NetBox"
    IMPORT = "import", "Import from NetBox"


class TransferStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
