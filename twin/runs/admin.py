"""Admin of scenarios, runs and calibration profiles (schedules are django-celery-beat's own admin: Periodic
tasks). A scenario, a run or a profile is changed, deleted or cancelled here only by its owner or a "manage any"
holder, as in the API (:mod:`twin.runs.ownership`)."""
from django import forms
from django.contrib import admin, messages

from sim.core.errors import ParamError
from twin.runs import calibration, ownership
from twin.runs.models import CalibrationProfile, RunArray, Scenario, SimulationRun


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


class CalibrationProfileForm(forms.ModelForm):
    """The values and intervals refused here as the API refuses them (:mod:`twin.runs.calibration`)."""

    class Meta:
        model = CalibrationProfile
        fields = ("cluster", "name", "values", "intervals", "summary", "holdout", "refused", "notes", "created_by")

    def clean_values(self):
        try:
            return calibration.checked_values(self.cleaned_data.get("values"))
        except ParamError as e:
            raise forms.ValidationError(str(e)) from None

    def clean(self):
        data = super().clean()
        if "values" in data:
            try:
                data["intervals"] = calibration.checked_intervals(data.get("intervals"), data["values"])
            except ParamError as e:
                self.add_error("intervals", str(e))
        return data


@admin.register(CalibrationProfile)
class CalibrationProfileAdmin(OwnedAdmin):
    """Saved through :func:`twin.runs.actions.save_calibration` (the change log written) and deleted through
    :func:`twin.runs.actions.delete_calibration`, as by the API."""

    form = CalibrationProfileForm
    list_display = ("name", "cluster", "created_at", "created_by")
    list_filter = ("cluster",)
    search_fields = ("name", "notes")
    raw_id_fields = ("created_by",)

    def save_model(self, request, obj, form, change):
        from twin.runs import actions     # here: see SimulationRunAdmin.cancel
        actions.save_calibration(cluster=obj.cluster, name=obj.name, values=obj.values, intervals=obj.intervals,
                                 summary=obj.summary, notes=obj.notes, user=request.user, instance=obj,
                                 holdout=obj.holdout, refused=obj.refused)

    def delete_model(self, request, obj):
        from twin.runs import actions
        actions.delete_calibration(obj, user=request.user)

    def delete_queryset(self, request, queryset):
        from twin.runs import actions
        for obj in queryset:
            actions.delete_calibration(obj, user=request.user)


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
