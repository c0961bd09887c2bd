"""Admin of scenarios and runs (schedules are django-celery-beat's own admin: Periodic tasks)."""
from django.contrib import admin

from twin.runs import actions
from twin.runs.models import RunArray, Scenario, SimulationRun


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
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
class SimulationRunAdmin(admin.ModelAdmin):
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
        for run in queryset:
            actions.cancel_run(run)
