"""Reading may be open (setting TWIN_API_ANONYMOUS_READ, default on); every write needs an authenticated user
holding the model's add/change/delete permission."""
from django.conf import settings
from rest_framework.permissions import DjangoModelPermissions


class InventoryPermission(DjangoModelPermissions):
    opens_reads = True  # the schema declares reads' authentication optional (twin/api/schema.py)

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS") and settings.TWIN_API_ANONYMOUS_READ:
            return True
        return super().has_permission(request, view)
