"""A NetBox export or import run in the background by a Celery worker (the admin's "Export to NetBox" action and
"Import from NetBox" form, docs/netbox.md): where it stands (objects written or read of those planned: the admin's
progress bar), its outcome, and the API token sealed (:mod:`twin.inventory.netbox.sealing`) until it ends, then
erased: the database never holds it in clear, and neither the task's message nor a log line carries it."""
from django.conf import settings
from django.db import models

from twin.inventory.choices import TransferDirection, TransferStatus


class NetBoxTransfer(models.Model):
    direction = models.CharField(max_length=8, choices=TransferDirection.choices)
    url = models.URLField(max_length=400, help_text="NetBox's base URL")
    site = models.SlugField(max_length=100, help_text="the NetBox site (slug): the cluster's name on an export")
    name = models.SlugField(max_length=64, blank=True, help_text="import: the twin cluster to build or update")
    cluster = models.ForeignKey("inventory.Cluster", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+", help_text="export: the cluster written; import: the one built")
    token_sealed = models.BinaryField(blank=True, default=b"", editable=False,
                                      help_text="the API token, encrypted; erased when the transfer ends")
    status = models.CharField(max_length=16, choices=TransferStatus.choices, default=TransferStatus.QUEUED,
                              db_index=True)
    done = models.PositiveBigIntegerField(default=0, help_text="objects written (export) or read (import)")
    total = models.PositiveBigIntegerField(default=0, help_text="objects planned; 0 until known")
    step = models.CharField(max_length=100, blank=True, help_text="the kind of object being written or read")
    outcome = models.TextField(blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True,
                                        help_text="the worker's last sign of life while the transfer runs")
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["-id"]
        verbose_name = "NetBox transfer"

    def __str__(self):
        arrow = "->" if self.direction == TransferDirection.EXPORT else "<-"
        return f"{self.name or self.site} {arrow} NetBox {self.site} ({self.status})"

    @property
    def percent(self) -> float:
        if self.status == TransferStatus.SUCCEEDED:
            return 100.0
        return min(100.0, 100.0 * self.done / self.total) if self.total else 0.0
