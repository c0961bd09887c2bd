"""Every inventory model in the admin, with search and filters. Lists of 100k+ rows stay fast: foreign keys are
shown through list_select_related, filters on large relations use raw ids, and counts are not estimated twice.

Writes go through twin.inventory.actions (logged in the change log, announced on the cluster's live stream): the
status actions, saves of the change form and deletes. The change log itself is a read-only list."""
from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from twin.inventory import actions
from twin.inventory import models as m
from twin.inventory.choices import TransferDirection, TransferStatus
from twin.inventory.netbox import transfers
from twin.inventory.netbox.client import NetBox, NetBoxError

NETBOX_CHECK_TIMEOUT_S = 10        # the forms ask NetBox whether URL and token work, this long at most


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
    actions = ["delete_clusters", "export_to_netbox"]

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # the per-object cascade would load every row; ours is set-based
        return actions

    @admin.action(description="Delete selected clusters and all their hardware", permissions=["delete"])
    def delete_clusters(self, request, queryset):
        rows = sum(change.before["rows"] for change in actions.delete_items(m.Cluster, queryset, user=request.user))
        self.message_user(request, f"deleted {rows:,} rows", messages.SUCCESS)

    @admin.action(description="Export selected clusters to NetBox (in the background)", permissions=["view"])
    def export_to_netbox(self, request, queryset):
        """First the form (NetBox's URL and token), then one background transfer per cluster, each a NetBox site
        named as the cluster; their progress is on the NetBox transfers page."""
        form = NetBoxExportForm(request.POST if "netbox_export" in request.POST else None)
        if form.is_valid():
            for cluster in queryset:
                transfers.start(TransferDirection.EXPORT, form.cleaned_data["url"], form.cleaned_data["token"],
                                site=cluster.name, cluster=cluster, user=request.user)
            self.message_user(request, f"{queryset.count()} export(s) to NetBox queued", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:inventory_netboxtransfer_changelist"))
        return TemplateResponse(request, "admin/inventory/netbox_export.html", {
            **self.admin_site.each_context(request), "title": "Export to NetBox", "form": form,
            "clusters": queryset, "opts": self.model._meta,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME})


class NetBoxForm(forms.Form):
    """NetBox's URL and an API token, checked by asking NetBox (/api/status/ and a token-only read): an error names
    the field to fix. The token is sealed before it is stored (twin/inventory/netbox/sealing.py)."""

    url = forms.URLField(label="NetBox URL", max_length=400, assume_scheme="https",
                         help_text="NetBox's base URL, e.g. https://netbox.example.com")
    token = forms.CharField(label="API token", strip=True, widget=forms.PasswordInput(render_value=False),
                            help_text="a NetBox API token (v1, or v2 nbt_...); never stored in clear")

    def netbox(self):
        return NetBox(self.cleaned_data["url"], self.cleaned_data["token"], timeout=NETBOX_CHECK_TIMEOUT_S)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        if not data["url"].startswith(("http://", "https://")):
            self.add_error("url", "NetBox is reached over http or https")
            return data
        try:
            self.checked(self.netbox())
        except NetBoxError as e:
            self.add_error({"--url": "url", "--token": "token"}.get(e.option, None), str(e))
        return data

    def checked(self, nb: NetBox) -> None:
        nb.status()


class NetBoxExportForm(NetBoxForm):
    netbox_export = forms.CharField(widget=forms.HiddenInput, initial="1")


class NetBoxImportForm(NetBoxForm):
    site = forms.SlugField(max_length=100, help_text="the NetBox site's slug")
    name = forms.SlugField(max_length=64, help_text="the twin cluster to build (or, if it exists, whose statuses "
                                                    "to update from NetBox)")

    def checked(self, nb: NetBox) -> None:
        super().checked(nb)
        if not nb.list("dcim/sites/", slug=self.cleaned_data["site"], fields="id"):
            self.add_error("site", f"{self.cleaned_data['site']!r} is not a site of this NetBox")


@admin.register(m.NetBoxTransfer)
class NetBoxTransferAdmin(admin.ModelAdmin):
    """NetBox exports (started from the clusters' action) and imports (the add form here), run by Celery workers;
    the list refreshes itself while one runs (change_list.html of this model)."""

    list_display = ("id", "direction", "site", "name", "cluster", "status", "progress_bar", "created_by",
                    "created_at")
    list_filter = ("direction", "status")
    readonly_fields = ("direction", "url", "site", "name", "cluster", "status", "progress_bar", "done", "total",
                       "step", "outcome", "error", "created_at", "started_at", "finished_at", "created_by")
    exclude = ("token_sealed",)
    change_list_template = "admin/inventory/netboxtransfer/change_list.html"

    @admin.display(description="progress")
    def progress_bar(self, obj):
        shown = f"{obj.percent:.0f} %"
        if obj.status == TransferStatus.RUNNING and obj.step:
            shown += f" · {obj.step}"
        return format_html('<progress value="{}" max="100" style="width: 10em"></progress> {}',
                           f"{obj.percent:.1f}", shown)

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            return NetBoxImportFormForAdmin
        return super().get_form(request, obj, **kwargs)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ("url", "token", "site", "name")})]
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        made = transfers.start(TransferDirection.IMPORT, data["url"], data["token"], site=data["site"],
                               name=data["name"], user=request.user)
        obj.pk = made.pk

    def save_related(self, request, form, formsets, change):
        pass

    def has_change_permission(self, request, obj=None):
        return False

    def get_changelist_instance(self, request):
        cl = super().get_changelist_instance(request)
        cl.netbox_active = m.NetBoxTransfer.objects.filter(
            status__in=(TransferStatus.QUEUED, TransferStatus.RUNNING)).exists()
        return cl


class NetBoxImportFormForAdmin(NetBoxImportForm, forms.ModelForm):
    """The admin's add form: NetBoxImportForm's fields on the model's form (the admin saves through it)."""

    class Meta:
        model = m.NetBoxTransfer
        fields = ()

    def _post_clean(self):
        """No model validation: the row is made by transfers.start from the cleaned data, not from this form."""


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
