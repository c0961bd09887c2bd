"""Reading may be open (setting TWIN_API_ANONYMOUS_READ, default on); every write needs an authenticated user
holding the model's add/change/delete permission. Who did what (user names) is for signed-in readers only:
:func:`shows_user_names` is the one rule every response that carries a name follows."""
from django.conf import settings
from rest_framework.permissions import DjangoModelPermissions


class InventoryPermission(DjangoModelPermissions):
    opens_reads = True  # the schema declares reads' authentication optional (twin/api/schema.py)

    def has_permission(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS") and settings.TWIN_API_ANONYMOUS_READ:
            return True
        return super().has_permission(request, view)


def shows_user_names(user) -> bool:
    """Whether a response to ``user`` may carry user names (``created_by``, the change log's ``user_name``, the
    live change events' ``by``): signed-in users only. Anonymous reading is for the state of the clusters, not
    for learning the accounts that can write it."""
    return bool(user is not None and user.is_authenticated)


HIDDEN_NAME = "a user"          # what a reader who may not see names is shown instead of one


def shown_name(name, user) -> str | None:
    """The name ``user`` is shown for something made by the user called ``name`` (empty or None: by the system, and
    so returned): the name for a reader who may see names (:func:`shows_user_names`), else HIDDEN_NAME, so that a
    change by a user never reads as the system's."""
    if not name:
        return name
    return str(name) if shows_user_names(user) else HIDDEN_NAME
