"""An item's last change-log entries (twin.inventory ObjectChange), as the item page lists them: one query."""
from __future__ import annotations

from django.urls import reverse

from twin.api.permissions import shown_name
from twin.inventory.choices import ChangeAction
from twin.inventory.models import ObjectChange

ITEM_CHANGES = 10       # entries an item page lists; the rest through /api/inventory/changes/


def summary(change: ObjectChange) -> str:
    """``status active → failed; serial A → B`` for an update; what was created or deleted otherwise."""
    if change.action == ChangeAction.UPDATE:
        before = change.before or {}
        return "; ".join(f"{field} {before.get(field)} → {value}" for field, value in (change.after or {}).items())
    fields = change.after if change.action == ChangeAction.CREATE else change.before
    rows = (fields or {}).get("rows")
    return change.get_action_display().lower() + (f" ({rows:,} rows)" if rows else "")


def item_changes(model_name: str, pk: int, user=None) -> dict:
    """The item's last ``ITEM_CHANGES`` entries, newest first, each with its ``summary`` and ``who`` (the user's
    name as the reader may see it, twin.api.permissions.shown_name, or "system");
    ``more``: older ones exist."""
    rows = list(ObjectChange.objects.filter(model=model_name, object_id=pk).order_by("-id")[:ITEM_CHANGES + 1])
    for row in rows:
        row.summary = summary(row)
        row.who = shown_name(row.user_name, user) or "system"
    return {"changes": rows[:ITEM_CHANGES], "more_changes": len(rows) > ITEM_CHANGES,
            "changes_api": f"{reverse('api:change-list')}?model={model_name}&object_id={pk}"}
