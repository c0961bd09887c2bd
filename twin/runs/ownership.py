"""Who may change a run, a scenario, a schedule, a job or a calibration profile: the one rule, read by the API's
object permission (:class:`twin.runs.api.views.OwnerOrManager`), the ``can_change`` field of every row the API
sends, the run page's cancel button, the Jobs page's release button and the admin.

Anyone allowed to read may read. Cancelling, deleting or editing takes the owner (the user who made it: a run's, a
scenario's or a calibration profile's ``created_by``, a schedule's :class:`twin.runs.models.ScheduleOwner`; the runs
a schedule starts are its owner's; a job's ``created_by``, its run's owner), or a user holding the model's "manage
any" permission (superusers hold every permission). A run, a scenario or a schedule with no owner (made by the
system: the nightly fabric health) is changed by permission holders only. The model permissions (add, change,
delete) are still needed on top, as for any write.
"""
from __future__ import annotations

from django.conf import settings

from twin.api.permissions import shown_name

from twin.runs.models import CalibrationProfile, Job, Scenario, ScheduleOwner, SimulationRun

MANAGE_ANY = {SimulationRun: "runs.manage_any_run", Scenario: "runs.manage_any_scenario",
              "schedule": "runs.manage_any_schedule", Job: "runs.manage_any_job",
              CalibrationProfile: "runs.manage_any_calibration"}
WHAT = {SimulationRun: "run", Scenario: "scenario", "schedule": "schedule", Job: "job",
        CalibrationProfile: "calibration profile"}
VERBS = {Job: "release", CalibrationProfile: "edit or delete"}  # the others' change: cancel, delete or edit


def _key(obj):
    return obj.__class__ if obj.__class__ in MANAGE_ANY else "schedule"    # a PeriodicTask


def owner_id(obj) -> int | None:
    """The id of the user who owns ``obj`` (a run, a scenario, a job, a calibration profile or a schedule's
    PeriodicTask); None: the system's."""
    if _key(obj) != "schedule":
        return obj.created_by_id
    try:
        return obj.twin_owner.user_id
    except ScheduleOwner.DoesNotExist:
        return None


def schedule_owner(task):
    """The user who owns the schedule ``task`` (whose runs it starts), or None."""
    try:
        return task.twin_owner.user
    except ScheduleOwner.DoesNotExist:
        return None


def refusal(user, obj) -> str | None:
    """Why ``user`` may not cancel, delete or edit ``obj``, or None when it may."""
    if user is None or not user.is_authenticated:
        return "sign in to change it"
    key = _key(obj)
    owner = owner_id(obj)
    if owner == user.pk or user.has_perm(MANAGE_ANY[key]):
        return None
    whose = "the system's" if owner is None else "another user's"
    return (f"this {WHAT[key]} is {whose}: only its owner or a user with the permission {MANAGE_ANY[key]!r} may "
            f"{VERBS.get(key, 'cancel, delete or edit')} it")


def may_change(user, obj) -> bool:
    return refusal(user, obj) is None


def dumps_refusal(user, run) -> str | None:
    """Why ``user`` may not download ``run``'s dumps archive (TWIN_DUMPS_ACCESS: ``authenticated``, the default,
    ``anyone``, or ``owner``: the owner rule above), or None; read by the dumps endpoint and by every run row
    (``dumps_refusal``), so that a page offers the download only to who may."""
    access = settings.TWIN_DUMPS_ACCESS
    if access == "anyone":
        return None
    if user is None or not user.is_authenticated:
        return f"sign in to download dumps (TWIN_DUMPS_ACCESS is {access})"
    if access == "owner" and not may_change(user, run):
        return ("dumps are for the run's owner and users with the permission 'runs.manage_any_run' "
                "(TWIN_DUMPS_ACCESS is owner)")
    return None


LISTED_RUNS = 10        # the runs a refusal to delete a cluster names (it counts the others)


def cluster_refusal(user, cluster) -> str | None:
    """Why ``user`` may not delete or replace ``cluster``: other users' runs depend on it (its runs that are not
    ``user``'s nor the system's, cluster builds and deletes aside; named, the first LISTED_RUNS, with their owners).
    None for staff (``is_staff`` or superusers) and for the system (None: a command). Read by the cluster runs'
    API and their worker (:mod:`twin.runs.clusters`) and by ``DELETE /api/inventory/clusters/<id>/``."""
    if user is None:
        return None
    if not user.is_authenticated:
        return "sign in to delete or replace a cluster"
    if user.is_staff or user.is_superuser:
        return None
    from twin.runs import registry
    runs = (SimulationRun.objects.filter(cluster=cluster, parent=None).exclude(kind__in=registry.lifecycle_kinds())
            .exclude(created_by=None).exclude(created_by=user).select_related("created_by").order_by("id"))
    n = runs.count()
    if not n:
        return None
    named = ", ".join(f"#{r.pk} {r.kind} ({shown_name(r.created_by.get_username(), user)})"
                      for r in runs[:LISTED_RUNS])
    more = f" and {n - LISTED_RUNS:,} more" if n > LISTED_RUNS else ""
    return (f"{n:,} run{'s' if n > 1 else ''} of other users depend{'s' if n == 1 else ''} on {cluster.name}: "
            f"{named}{more}; only staff may delete or replace it")
