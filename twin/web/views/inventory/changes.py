"""An item's last change-log entries (twin.inventory ObjectChange), as the item page lists them: one query."""
from __future__ import annotations

from django.urls import reverse

from twin.api.permissions import shows_user_names
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
    name for a reader who may see names, twin.api.permissions.shows_user_names; else "a user" or "system");
    ``more``: older ones exist."""
    rows = list(ObjectChange.objects.filter(model=model_name, object_id=pk).order_by("-id")[:ITEM_CHANGES + 1])
    names = shows_user_names(user)
    for row in rows:
        row.summary = summary(row)
        row.who = (row.user_name if names else "a user") if row.user_name else "system"
    return {"changes": rows[:ITEM_CHANGES], "more_changes": len(rows) > ITEM_CHANGES,
            "changes_api": f"{reverse('api:change-list')}?model={model_name}&object_id={pk}"}
