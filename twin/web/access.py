"""Who may see the pages: the same rule as the API's reads (TWIN_API_ANONYMOUS_READ); writes go through the API,
which checks the model permissions."""
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse


def readable(view):
    """A page or page-data view: open when anonymous reading is on, else login first (401 JSON for data)."""
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if settings.TWIN_API_ANONYMOUS_READ or request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if request.headers.get("Accept", "").startswith("application/json") or request.path.endswith(".json"):
            return JsonResponse({"detail": "Authentication credentials were not provided."}, status=401)
        return redirect_to_login(request.get_full_path())
    return wrapper
