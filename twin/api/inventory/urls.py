from twin.api.inventory.changes import ChangeViewSet
from twin.api.inventory.views import ENDPOINTS, VIEWSETS


def register(router):
    for model, segment in ENDPOINTS.items():
        router.register(f"inventory/{segment}", VIEWSETS[model], basename=segment.removesuffix("s")
                        if segment != "switches" else "switch")
    router.register("inventory/changes", ChangeViewSet, basename="change")
