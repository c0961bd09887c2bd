"""Admin of scenarios and runs (schedules are django-celery-beat's own admin: Periodic tasks). A scenario or a run
is changed, deleted or cancelled here only by its owner or a "manage any" holder, as in the API
(:mod:`twin.runs.ownership`)."""
from django.contrib import admin, messages

from twin.runs import ownership
from twin.runs.models import RunArray, Scenario, SimulationRun


class OwnedAdmin(admin.ModelAdmin):
    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or ownership.may_change(request.user, obj))

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and (obj is None or ownership.may_change(request.user, obj))

    def get_actions(self, request):
        """Deleting a selection (which asks no row) only for those who may delete anyone's."""
        found = super().get_actions(request)
        if not request.user.has_perm(ownership.MANAGE_ANY[self.model]):
            found.pop("delete_selected", None)
        return found


@admin.register(Scenario)
class ScenarioAdmin(OwnedAdmin):
    list_display = ("name", "kind", "cluster", "created_at", "created_by")
    list_filter = ("kind", "cluster")
    search_fields = ("name", "description")
    raw_id_fields = ("created_by",)


class RunArrayInline(admin.TabularInline):
    model = RunArray
    fields = ("name", "dtype", "shape")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(SimulationRun)
class SimulationRunAdmin(OwnedAdmin):
    list_display = ("id", "kind", "cluster", "scenario", "status", "progress", "worker", "created_at",
                    "finished_at")
    list_filter = ("status", "kind", "cluster")
    search_fields = ("error", "notes", "worker")
    raw_id_fields = ("parent", "scenario", "created_by")
    readonly_fields = ("status", "progress", "started_at", "finished_at", "error", "notes", "summary",
                       "inventory_state", "celery_task_id", "worker", "heartbeat_at", "attempts", "cancel_requested")
    inlines = [RunArrayInline]
    actions = ["cancel"]

    @admin.action(description="Cancel the selected runs")
    def cancel(self, request, queryset):
        from twin.runs import actions    # here: its imports (DRF's serializers, the live push's Redis) cost every
                                         # process that loads the admin (each Django start) a third of a second
        refused = []
        for run in queryset:
            if ownership.may_change(request.user, run):
                actions.cancel_run(run)
            else:
                refused.append(run.pk)
        if refused:
            self.message_user(request, f"not cancelled (not yours, and no permission runs.manage_any_run): runs "
                                       f"{', '.join(map(str, refused))}", messages.WARNING)
