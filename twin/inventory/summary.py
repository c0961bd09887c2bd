"""Key figures of the built clusters, in a constant number of grouped queries (never per-row Python)."""
from collections import defaultdict

from django.db.models import Count, Q, Sum

from twin.inventory.choices import FabricRole, Status
from twin.inventory.models import GPU, Cluster, Fabric, Host, Link, Switch
from twin.inventory.topology import bisection_gbps


def _by_cluster_status(model):
    counts = defaultdict(lambda: defaultdict(int))
    for row in model.objects.values("cluster_id", "status").annotate(n=Count("id")).order_by():
        counts[row["cluster_id"]][row["status"]] = row["n"]
    return counts


def _backend_bisection() -> dict[int, float]:
    """Bisection bandwidth (Gb/s) of each cluster's backend fabric under the current statuses."""
    tiers = defaultdict(list)
    for row in (Link.objects.filter(fabric__role=FabricRole.BACKEND).values("cluster_id", "tier")
                .annotate(active=Sum("speed_gbps", filter=Q(status=Status.ACTIVE))).order_by()):
        tiers[row["cluster_id"]].append(row["active"] or 0)
    return {cluster_id: bisection_gbps(caps) for cluster_id, caps in tiers.items()}


def cluster_overview() -> list[dict]:
    """One dict per cluster, by name: the cluster, its backend fabric and that fabric's bisection bandwidth (Gb/s);
    for GPUs, hosts, switches and links the total (``gpus``) and the count in each status (``gpus_active``,
    ``gpus_failed``, ``gpus_drained``, ``gpus_maintenance``)."""
    gpus, hosts, switches, links = (_by_cluster_status(m) for m in (GPU, Host, Switch, Link))
    backend = {f.cluster_id: f for f in Fabric.objects.filter(role=FabricRole.BACKEND)}
    bisection = _backend_bisection()
    rows = []
    for c in Cluster.objects.order_by("name"):
        row = {"cluster": c, "backend": backend.get(c.id), "bisection_gbps": bisection.get(c.id, 0)}
        for key, counts in (("gpus", gpus), ("hosts", hosts), ("switches", switches), ("links", links)):
            by_status = counts[c.id]
            row[key] = sum(by_status.values())
            row.update({f"{key}_{status}": by_status[status] for status in Status.values})
        rows.append(row)
    return rows
