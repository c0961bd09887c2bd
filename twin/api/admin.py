"""API tokens in the admin: list and revoke; "add" makes a token and shows it once (only its hash is kept)."""
from django.contrib import admin, messages

from twin.api.models import TOKEN_PREFIX, ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("public_key", "user", "description", "created")
    list_filter = ("user",)
    search_fields = ("user__username", "key", "description")
    fields = ("user", "description")

    @admin.display(description="token starts with")
    def public_key(self, obj):
        return f"{TOKEN_PREFIX}{obj.key}"

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)   # a token is revoked, never edited

    def save_model(self, request, obj, form, change):
        row, token = ApiToken.issue(obj.user, obj.description)
        obj.pk, obj.key, obj.digest, obj.created = row.pk, row.key, row.digest, row.created
        messages.warning(request, f"The new token of {obj.user} (shown once, copy it now): {token}")
