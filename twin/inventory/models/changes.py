"""The inventory's change log (NetBox's ObjectChange): who changed which item, when, and its fields before and after.

Rows are written by ``twin.inventory.actions`` (and by the builder for a whole cluster), never edited. An item is
named by its model, id, name and cluster as they were, not by a foreign key: the entry outlives the item (a deleted
link, a rebuilt cluster). ``user`` is kept as a key while the user exists and as ``user_name`` for good.
"""
import uuid

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from twin.inventory.choices import ChangeAction


class ObjectChange(models.Model):
    """One change of one item. ``before``/``after``: the changed fields only for an update, every field for a
    create (``after``) or a delete (``before``); relations as ids. ``user`` is null for the system (a command)."""

    time = models.DateTimeField(default=timezone.now, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    user_name = models.CharField(max_length=150, blank=True, help_text="the user's name at the time; empty: system")
    action = models.CharField(max_length=8, choices=ChangeAction.choices)
    model = models.CharField(max_length=32, help_text="the item's model: link, switch, gpu...")
    object_id = models.PositiveBigIntegerField()
    object_name = models.CharField(max_length=200)
    cluster_id = models.PositiveIntegerField(null=True, blank=True, help_text="the item's cluster (id) at the time")
    cluster_name = models.CharField(max_length=64, blank=True)
    before = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    after = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["model", "object_id"], name="change_item"),
                   models.Index(fields=["cluster_id", "model"], name="change_cluster_model")]

    def __str__(self):
        return f"{self.model} {self.object_name} {self.action} by {self.user_name or 'system'}"


class InventoryVersion(models.Model):
    """One row whose ``stamp`` changes with every inventory write (``changelog.write``, which every write calls in
    its own transaction): what a reader compares to know that nothing changed since it last counted.

    A new random stamp each time, not a number one up: a write that is rolled back (a failed build, a test) would
    hand its number to the next write, whose rows differ. The change is an UPDATE of this one row, so concurrent
    writes commit one after the other: a reader that sees a stamp sees every write that came before it."""

    stamp = models.UUIDField(default=uuid.uuid4)
