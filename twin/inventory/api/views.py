"""One endpoint per inventory model, all from the same base (twin.api.base.InventoryViewSet)."""
from twin.api.base import InventoryViewSet
from twin.inventory import models as m
from twin.inventory.api.serializers import SERIALIZERS
from twin.inventory.builder import delete_cluster
from twin.inventory.filtersets import FILTERSETS

# URL segment under /api/inventory/ and route name of each model.
ENDPOINTS = {
    m.GPUModel: "gpu-models", m.NICModel: "nic-models", m.SwitchModel: "switch-models",
    m.HostPlatform: "host-platforms", m.StorageServerModel: "storage-server-models", m.SSDModel: "ssd-models",
    m.CableModel: "cable-models", m.Cluster: "clusters", m.Fabric: "fabrics", m.Zone: "zones", m.Rack: "racks",
    m.Host: "hosts", m.GPU: "gpus", m.NIC: "nics", m.Switch: "switches", m.Port: "ports", m.Link: "links",
    m.StorageCluster: "storage-clusters", m.StorageServer: "storage-servers", m.SSD: "ssds",
}


def viewset_for(model, **attrs):
    fields = [f.name for f in model._meta.concrete_fields if not f.is_relation]
    fields += [f.attname for f in model._meta.concrete_fields if f.is_relation]
    body = {"queryset": model.objects.order_by("id"), "serializer_class": SERIALIZERS[model],
            "filterset_class": FILTERSETS[model], "ordering_fields": fields, "ordering": ["id"], **attrs}
    return type(f"{model.__name__}ViewSet", (InventoryViewSet,), body)


class ClusterViewSet(viewset_for(m.Cluster)):
    def perform_destroy(self, instance):
        delete_cluster(instance)  # one DELETE per table, not a per-object cascade over 300k rows


VIEWSETS = {model: viewset_for(model) for model in ENDPOINTS} | {m.Cluster: ClusterViewSet}
