"""Every inventory model in the admin, with search and filters. Lists of 100k+ rows stay fast: foreign keys are
shown through list_select_related, filters on large relations use raw ids, and counts are not estimated twice.

Writes go through twin.inventory.actions (logged in the change log, announced on the cluster's live stream): the
status actions, saves of the change form and deletes. The change log itself is a read-only list."""
from django.contrib import admin, messages

from twin.inventory import actions
from twin.inventory import models as m


class LoggedAdmin(admin.ModelAdmin):
    """Saves and deletes through twin.inventory.actions, so that they are logged like the API's."""

    def save_model(self, request, obj, form, change):
        actions.save_object(obj, form.changed_data if change else None, user=request.user)

    def delete_model(self, request, obj):
        actions.delete_items(type(obj), [obj], user=request.user)

    def delete_queryset(self, request, queryset):
        actions.delete_items(queryset.model, queryset, user=request.user)


class CatalogAdmin(LoggedAdmin):
    list_display = ("slug", "vendor", "name")
    search_fields = ("slug", "vendor", "name")


for catalog_model in m.CATALOG_MODELS.values():
    admin.site.register(catalog_model, CatalogAdmin)


class PhysicalAdmin(LoggedAdmin):
    """Shared settings for items with name, serial and status."""

    search_fields = ("name", "serial")
    list_filter = ("status", "cluster")
    list_per_page = 100
    show_full_result_count = False
    actions = ["mark_active", "mark_failed", "mark_drained", "mark_maintenance"]

    def _mark(self, request, queryset, status):
        n = len(actions.set_status(queryset.model, queryset, status, user=request.user))
        self.message_user(request, f"{n} item(s) marked {status}", messages.SUCCESS)

    @admin.action(description="Mark selected as active")
    def mark_active(self, request, queryset):
        self._mark(request, queryset, "active")

    @admin.action(description="Mark selected as failed")
    def mark_failed(self, request, queryset):
        self._mark(request, queryset, "failed")

    @admin.action(description="Mark selected as drained")
    def mark_drained(self, request, queryset):
        self._mark(request, queryset, "drained")

    @admin.action(description="Mark selected as maintenance")
    def mark_maintenance(self, request, queryset):
        self._mark(request, queryset, "maintenance")


@admin.register(m.Cluster)
class ClusterAdmin(LoggedAdmin):
    list_display = ("name", "title", "status", "built_at")
    search_fields = ("name", "title")
    list_filter = ("status",)
    readonly_fields = ("spec", "built_at")
    actions = ["delete_clusters"]

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # the per-object cascade would load every row; ours is set-based
        return actions

    @admin.action(description="Delete selected clusters and all their hardware", permissions=["delete"])
    def delete_clusters(self, request, queryset):
        rows = sum(change.before["rows"] for change in actions.delete_items(m.Cluster, queryset, user=request.user))
        self.message_user(request, f"deleted {rows:,} rows", messages.SUCCESS)


@admin.register(m.Fabric)
class FabricAdmin(LoggedAdmin):
    list_display = ("name", "cluster", "role", "kind", "speed_gbps")
    list_filter = ("role", "kind", "cluster")
    search_fields = ("name",)


@admin.register(m.Zone)
class ZoneAdmin(LoggedAdmin):
    list_display = ("name", "cluster", "kind", "number", "status")
    list_filter = ("kind", "status", "cluster")
    search_fields = ("name",)


@admin.register(m.StorageCluster)
class StorageClusterAdmin(LoggedAdmin):
    list_display = ("name", "cluster", "kind", "status")
    list_filter = ("kind", "status", "cluster")
    search_fields = ("name",)


@admin.register(m.Rack)
class RackAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "zone", "status")
    list_select_related = ("zone",)
    list_filter = ("status", "cluster", "zone__kind")
    raw_id_fields = ("zone",)


@admin.register(m.Host)
class HostAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "rack", "platform", "status")
    list_select_related = ("rack", "platform")
    list_filter = ("status", "cluster", "platform")
    raw_id_fields = ("rack",)


@admin.register(m.GPU)
class GPUAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "index", "host", "model", "status")
    list_select_related = ("host", "model")
    list_filter = ("status", "cluster", "model", "slot")
    raw_id_fields = ("host",)


@admin.register(m.NIC)
class NICAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "fabric", "model", "slot", "status")
    list_select_related = ("fabric", "model")
    list_filter = ("status", "cluster", "fabric__role", "model")
    raw_id_fields = ("host", "storage_server", "gpu")


@admin.register(m.Switch)
class SwitchAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "fabric", "role", "tier", "model", "status")
    list_select_related = ("fabric", "model")
    list_filter = ("status", "cluster", "fabric__role", "tier", "role", "model")
    raw_id_fields = ("zone", "rack")


@admin.register(m.Port)
class PortAdmin(LoggedAdmin):
    list_display = ("name", "slot", "speed_gbps", "status")
    list_filter = ("status", "cluster", "speed_gbps")
    search_fields = ("name",)
    raw_id_fields = ("switch", "nic")
    list_per_page = 100
    show_full_result_count = False


@admin.register(m.Link)
class LinkAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "fabric", "tier", "speed_gbps", "cable", "status")
    list_select_related = ("fabric", "cable")
    list_filter = ("status", "cluster", "fabric__role", "tier", "cable")
    raw_id_fields = ("a_port", "b_port")


@admin.register(m.StorageServer)
class StorageServerAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "storage_cluster", "model", "status")
    list_select_related = ("storage_cluster", "model")
    list_filter = ("status", "cluster", "storage_cluster")
    raw_id_fields = ("rack",)


@admin.register(m.SSD)
class SSDAdmin(PhysicalAdmin):
    list_display = ("name", "serial", "model", "status")
    list_select_related = ("model",)
    list_filter = ("status", "cluster", "model")
    raw_id_fields = ("server",)


@admin.register(m.ObjectChange)
class ObjectChangeAdmin(admin.ModelAdmin):
    """The change log: read-only (entries are written by twin.inventory.actions and the builder)."""

    list_display = ("time", "user_name", "action", "model", "object_name", "cluster_name", "before", "after")
    list_filter = ("action", "model", "cluster_name")
    search_fields = ("object_name", "user_name")
    date_hierarchy = "time"
    list_per_page = 100
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
