"""Every write to the inventory goes through these functions (Zulip's ``do_*`` habit, as ``twin.runs.actions``):
each validates what is its own to check, writes under ``transaction.atomic``, records the change log
(``twin.inventory.changelog``) in the same transaction, and publishes an ``inventory`` event on each touched
cluster's live stream once the transaction commits. An error anywhere leaves neither the write nor its log.

- :func:`set_status`: the status of many items of one kind, set-based (one SELECT, one UPDATE per ``ID_BATCH`` ids,
  the log rows with ``bulk_create``); the admin actions and status-only API updates use it.
- :func:`create_items`, :func:`update_items`, :func:`delete_items`: the REST API's writes (one object or a list),
  after its serializers validated the input; :func:`save_object`: one object from the admin's change form.

A cluster's build and delete are recorded by ``twin.inventory.builder`` as one entry for the whole cluster.
"""
from __future__ import annotations

from collections import defaultdict

from django.core.exceptions import PermissionDenied
from django.db import transaction
from rest_framework.exceptions import ValidationError

from twin.inventory import changelog
from twin.inventory.builder import delete_cluster
from twin.inventory.choices import ChangeAction, Status
from twin.inventory.models import Cluster, ObjectChange
from twin.inventory.signals import cluster_delete_refusal, inventory_changed

ID_BATCH = 10_000           # ids in one ``id__in`` (under SQLite's 32,766 bound variables)


def _publish(changes: list[ObjectChange]) -> None:
    """One ``inventory`` event per cluster touched (:data:`twin.inventory.signals.inventory_changed`; the live
    layer publishes it after the commit)."""
    by_cluster: dict[int, list[ObjectChange]] = defaultdict(list)
    for c in changes:
        if c.cluster_id is not None:
            by_cluster[c.cluster_id].append(c)
    for cluster_id, rows in by_cluster.items():
        inventory_changed.send(sender=Cluster, cluster_id=cluster_id, event=changelog.event(cluster_id, rows))


def _cluster_field(model) -> str:
    return "id" if model is Cluster else "cluster_id"


def _cluster_names(ids) -> dict[int, str]:
    return dict(Cluster.objects.filter(id__in=set(ids) - {None}).values_list("id", "name"))


def set_status(model, items, status: str, *, user=None) -> list[ObjectChange]:
    """Set ``status`` on ``items`` (a queryset of ``model`` or ids), set-based; items already so are left alone.
    Returns the log entries written (one per item changed). Raises ValidationError naming ``status``."""
    if not any(f.name == "status" for f in model._meta.concrete_fields):
        raise ValidationError({"status": [f"{model._meta.verbose_name_plural} have no status"]})
    if status not in Status.values:
        raise ValidationError({"status": [f"{status!r} is not one of {', '.join(Status.values)}"]})
    queryset = items if hasattr(items, "model") else model.objects.filter(id__in=list(items))
    with transaction.atomic():
        if transaction.get_connection().features.has_select_for_update_of:    # PostgreSQL; SQLite locks the file
            queryset = queryset.select_for_update(of=("self",))
        rows = list(queryset.exclude(status=status).order_by("id")
                    .values_list("id", "name", "status", _cluster_field(model)))
        ids = [r[0] for r in rows]
        for start in range(0, len(ids), ID_BATCH):
            model.objects.filter(id__in=ids[start:start + ID_BATCH]).update(status=status)
        names = _cluster_names(r[3] for r in rows)
        changes = changelog.write([
            changelog.entry(ChangeAction.UPDATE, model, pk, name, cluster_id, user, before={"status": old},
                            after={"status": status}, cluster_names=names)
            for pk, name, old, cluster_id in rows])
        _publish(changes)
    return changes


def create_items(serializer, *, user=None):
    """Save a validated serializer (one object or a list) and log each creation; returns what it saved. A cluster's
    creation is its build, which logs itself (builder.build_cluster)."""
    with transaction.atomic():
        saved = serializer.save()
        objects = saved if isinstance(saved, list) else [saved]
        logged = [o for o in objects if not isinstance(o, Cluster)]
        names = _cluster_names(changelog.cluster_of(o) for o in logged)
        changes = changelog.write([
            changelog.entry(ChangeAction.CREATE, type(o), o.pk, str(o), changelog.cluster_of(o), user,
                            after=changelog.snapshot(o), cluster_names=names) for o in logged])
        _publish(changes)
    return saved


def _status_only(serializers) -> bool:
    """Whether every serializer changes the status and nothing else (the set-based path)."""
    return all(set(s.validated_data) == {"status"} for s in serializers)


def update_items(serializers, *, user=None) -> list[ObjectChange]:
    """Save validated serializers of existing objects (one or a list, all or nothing) and log the fields that
    changed. Status-only updates (failing a thousand links) are set-based: one UPDATE per status and batch."""
    if not serializers:
        return []
    model = type(serializers[0].instance)
    with transaction.atomic():
        if _status_only(serializers):
            by_status: dict[str, list] = defaultdict(list)
            for s in serializers:
                by_status[s.validated_data["status"]].append(s.instance)
            changes = []
            for status, objects in by_status.items():
                changes += set_status(model, [o.pk for o in objects], status, user=user)
                for o in objects:       # the response renders these instances
                    o.status = status
            return changes
        entries = []
        names = _cluster_names(changelog.cluster_of(s.instance) for s in serializers)
        for s in serializers:
            fields = set(s.validated_data)
            before = changelog.snapshot(s.instance, fields)
            obj = s.save()
            old, new = changelog.diff(before, changelog.snapshot(obj, fields))
            if new:
                entries.append(changelog.entry(ChangeAction.UPDATE, model, obj.pk, str(obj), changelog.cluster_of(obj),
                                               user, before=old, after=new, cluster_names=names))
        changes = changelog.write(entries)
        _publish(changes)
    return changes


def save_object(obj, fields=None, *, user=None) -> ObjectChange | None:
    """Save one object edited outside the API (the admin's change form) and log it: ``fields`` names the fields
    changed, None for a new object. Returns the entry (None when nothing changed)."""
    model = type(obj)
    with transaction.atomic():
        if fields is None:
            obj.save()
            action, before, after = ChangeAction.CREATE, None, changelog.snapshot(obj)
        else:
            stored = changelog.snapshot(model.objects.get(pk=obj.pk), set(fields))
            obj.save()
            before, after = changelog.diff(stored, changelog.snapshot(obj, set(fields)))
            action = ChangeAction.UPDATE
            if not after:
                return None
        changes = changelog.write([changelog.entry(action, model, obj.pk, str(obj), changelog.cluster_of(obj), user,
                                                   before=before, after=after)])
        _publish(changes)
    return changes[0]


def delete_items(model, objects, *, user=None) -> list[ObjectChange]:
    """Delete ``objects`` of ``model`` (all or nothing) and log each with its fields. A cluster goes with all its
    hardware, one DELETE per table (builder.delete_cluster, which logs it), unless an app above refuses it to
    ``user`` (``cluster_delete_refusal``: PermissionDenied, the API's 403); rows that other rows depend on refuse
    (ProtectedError: the API answers 409). Rows deleted along with an object by cascade are not logged one by one."""
    objects = list(objects)
    with transaction.atomic():
        if model is Cluster:
            for c in objects:
                for _, why in cluster_delete_refusal.send(sender=Cluster, cluster=c, user=user):
                    if why:
                        raise PermissionDenied(why)
            return [delete_cluster(c, user=user) for c in objects]
        names = _cluster_names(changelog.cluster_of(o) for o in objects)
        entries = [changelog.entry(ChangeAction.DELETE, model, o.pk, str(o), changelog.cluster_of(o), user,
                                   before=changelog.snapshot(o), cluster_names=names) for o in objects]
        ids = [o.pk for o in objects]
        for start in range(0, len(ids), ID_BATCH):
            model.objects.filter(id__in=ids[start:start + ID_BATCH]).delete()
        changes = changelog.write(entries)
        _publish(changes)
    return changes
