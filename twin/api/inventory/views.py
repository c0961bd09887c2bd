"""One endpoint per inventory model, all from the same base (twin.api.base.InventoryViewSet), plus the topology
questions (neighbours, paths, fabric graph, cluster summary) as actions and one view."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from twin.api.base import InventoryViewSet
from twin.api.permissions import InventoryPermission
from twin.inventory import models as m
from twin.inventory import exports, topology
from twin.api.inventory.serializers import SERIALIZERS
from twin.inventory.filtersets import FILTERSETS, INT64_MAX
from twin.inventory.kept import Kept

SUMMARIES: Kept[dict] = Kept(16, shared="summary")  # a 600k cluster's summary aggregates 7 million rows: about 3 s

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
    @extend_schema(responses=OpenApiTypes.OBJECT, filters=False, parameters=[])
    @action(detail=True, filter_backends=[], pagination_class=None)
    def summary(self, request, pk=None):
        """Counts by kind and status; per fabric, links and capacity per tier, oversubscription, bisection."""
        cluster = self.get_object()
        return Response(SUMMARIES.get(cluster.id, lambda: topology.cluster_summary(cluster)))


class FabricViewSet(viewset_for(m.Fabric)):
    @extend_schema(responses=OpenApiTypes.OBJECT, filters=False)
    @action(detail=True, filter_backends=[], pagination_class=None)
    def graph(self, request, pk=None):
        """The whole fabric as a JSON graph: nodes (switches, NICs) and edges (links), with statuses (rendered once
        per state of the fabric; gzip when the client accepts it)."""
        return exports.response(request, self.get_object(), exports.GRAPH)

    @extend_schema(responses={(200, "text/vnd.graphviz"): OpenApiResponse(OpenApiTypes.STR)}, filters=False)
    @action(detail=True, filter_backends=[], pagination_class=None)
    def dot(self, request, pk=None):
        """The whole fabric in Graphviz DOT (failed links dashed red), rendered once per state of the fabric;
        gzip when the client accepts it."""
        return exports.response(request, self.get_object(), exports.DOT)


def with_neighbours(model):
    class ViewSet(viewset_for(model)):
        @extend_schema(responses=OpenApiTypes.OBJECT, filters=False)
        @action(detail=True, filter_backends=[], pagination_class=None)
        def neighbors(self, request, pk=None):
            """Each cabled port of the device: its link and the port and device at the far end."""
            return Response({"device": self.get_object().name, "neighbors": topology.neighbours(self.get_object())})

    ViewSet.__name__ = ViewSet.__qualname__ = f"{model.__name__}ViewSet"
    return ViewSet


class PathQuery(serializers.Serializer):
    src_gpu = serializers.IntegerField(min_value=1, max_value=INT64_MAX, help_text="id of the source GPU")
    dst_gpu = serializers.IntegerField(min_value=1, max_value=INT64_MAX, help_text="id of the destination GPU")
    max_paths = serializers.IntegerField(min_value=1, max_value=topology.MAX_PATHS, default=topology.MAX_PATHS,
                                         help_text="list at most this many paths (count is always exact)")


class PathsView(APIView):
    """All equal-cost paths between two GPUs over active links and switches, hop by hop and port by port."""

    permission_classes = [InventoryPermission]
    queryset = m.Link.objects.none()  # for the permission class: reading paths is reading links

    @extend_schema(parameters=[PathQuery], responses=OpenApiTypes.OBJECT)
    def get(self, request):
        query = PathQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        gpus = m.GPU.objects.in_bulk([query.validated_data["src_gpu"], query.validated_data["dst_gpu"]])
        for field in ("src_gpu", "dst_gpu"):
            if query.validated_data[field] not in gpus:
                raise ValidationError({field: f"no GPU with id {query.validated_data[field]}"})
        src, dst = gpus[query.validated_data["src_gpu"]], gpus[query.validated_data["dst_gpu"]]
        try:
            result = topology.equal_cost_paths(src, dst, query.validated_data["max_paths"])
        except topology.TopologyError as e:
            raise ValidationError({e.field: e.reason}) from None
        return Response({"src_gpu": {"id": src.id, "name": src.name}, "dst_gpu": {"id": dst.id, "name": dst.name},
                         **result})


VIEWSETS = {model: viewset_for(model) for model in ENDPOINTS} | {
    m.Cluster: ClusterViewSet, m.Fabric: FabricViewSet,
    **{model: with_neighbours(model) for model in (m.Switch, m.NIC, m.Host, m.StorageServer)},
}
