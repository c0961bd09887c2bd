"""The change log's rows and the live event they become.

``snapshot`` reads an item's fields as the log keeps them; ``entry`` makes one unsaved ``ObjectChange``; ``write``
saves a list of them with one ``bulk_create``; ``event`` turns saved entries of one cluster into the JSON message the
cluster's live stream carries (docs/live.md, "Inventory events"), capped at ``EVENT_CHANGES_MAX`` changes.
Writers do not call this directly: they go through ``twin.inventory.actions`` (or the builder for a whole cluster).
"""
from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from twin.inventory.choices import ChangeAction
from twin.inventory.models import Cluster, InventoryVersion, ObjectChange

# Models of the apps above the inventory whose writes are logged here too (their ``model`` names): each app adds its
# own in its AppConfig.ready (twin.runs: calibrationprofile), before the change log's API reads the list.
LOGGED_ABOVE: set[str] = set()

EVENT_CHANGES_MAX = 50      # changes listed in one live event; a larger write sends the count and the first ones
WRITE_BATCH = 5_000         # log rows per bulk_create batch (Django splits it further to fit SQLite's bound variables)


def snapshot(obj, fields=None) -> dict:
    """``obj``'s concrete fields (or ``fields``) as the log keeps them: relations as ids, no JSON documents (a
    cluster's spec is kept in the cluster itself), no id."""
    out = {}
    for f in obj._meta.concrete_fields:
        if f.primary_key or isinstance(f, models.JSONField) or (fields is not None and f.name not in fields):
            continue
        out[f.name] = getattr(obj, f.attname)
    return out


def diff(before: dict, after: dict) -> tuple[dict, dict]:
    """The fields whose value changed, before and after."""
    changed = [k for k in after if before.get(k) != after[k]]
    return {k: before.get(k) for k in changed}, {k: after[k] for k in changed}


def cluster_of(obj) -> int | None:
    """The cluster an item belongs to (itself for a cluster), as an id; None for the catalog."""
    if isinstance(obj, Cluster):
        return obj.pk
    return getattr(obj, "cluster_id", None)


def entry(action: str, model, object_id: int, name: str, cluster_id: int | None, user=None, *, before=None,
          after=None, cluster_names: dict[int, str] | None = None, time=None) -> ObjectChange:
    """One unsaved change-log row. ``cluster_names`` maps cluster ids to names when the caller already has them."""
    user = user if user is not None and getattr(user, "is_authenticated", False) else None
    names = cluster_names if cluster_names is not None else {}
    if cluster_id is not None and cluster_id not in names:
        names[cluster_id] = Cluster.objects.filter(pk=cluster_id).values_list("name", flat=True).first() or ""
    return ObjectChange(time=time or timezone.now(), user=user, user_name=user.get_username() if user else "",
                        action=action, model=model._meta.model_name, object_id=object_id, object_name=name or "",
                        cluster_id=cluster_id, cluster_name=names.get(cluster_id, "") if cluster_id else "",
                        before=before, after=after)


def write(entries: list[ObjectChange]) -> list[ObjectChange]:
    """Save the entries, set-based (their ids are set where the database returns them: PostgreSQL, SQLite), and
    move the inventory version on (``InventoryVersion``: list counts kept by it are stale from now on)."""
    if not entries:
        return []
    saved = ObjectChange.objects.bulk_create(entries, batch_size=WRITE_BATCH)
    if not InventoryVersion.objects.filter(pk=1).update(stamp=uuid.uuid4()):
        InventoryVersion.objects.create(pk=1)
    return saved


def inventory_version():
    """The inventory's version: a stamp that changes with every write (``write``); None before the first."""
    return InventoryVersion.objects.filter(pk=1).values_list("stamp", flat=True).first()


def event_changes(change: ObjectChange) -> list[dict]:
    """The live event's lines of one entry: one per changed field of an update, one for a create or a delete."""
    common = {"model": change.model, "id": change.object_id, "name": change.object_name, "action": change.action,
              "by": change.user_name or None, "at": change.time.isoformat()}
    if change.action != ChangeAction.UPDATE:
        return [{**common, "field": None, "before": None, "after": None}]
    return [{**common, "field": field, "before": (change.before or {}).get(field), "after": value}
            for field, value in (change.after or {}).items()]


def event(cluster_id: int, changes: list[ObjectChange], limit: int = EVENT_CHANGES_MAX) -> dict:
    """The ``inventory`` message of one cluster's stream: its first ``limit`` change lines, ``count`` of them all
    and ``truncated`` (how many were left out; present only when some were)."""
    lines, count = [], 0
    for change in changes:
        count += len(change.after or {}) if change.action == ChangeAction.UPDATE else 1
        if len(lines) < limit:
            lines += event_changes(change)[:limit - len(lines)]
    out = {"type": "inventory", "cluster": cluster_id, "count": count, "changes": lines}
    if count > len(lines):
        out["truncated"] = count - len(lines)
    return out
