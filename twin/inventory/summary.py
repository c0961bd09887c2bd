"""Key figures of the built clusters, in a constant number of grouped queries (never per-row Python)."""
from collections import defaultdict

from django.db.models import Count

from twin.inventory.choices import Status
from twin.inventory.models import GPU, Cluster, Fabric, Host, Link, Switch


def _by_cluster_status(model):
    counts = defaultdict(lambda: defaultdict(int))
    for row in model.objects.values("cluster_id", "status").annotate(n=Count("id")).order_by():
        counts[row["cluster_id"]][row["status"]] = row["n"]
    return counts


def cluster_overview() -> list[dict]:
    """One dict per cluster: GPUs (total, active, failed), hosts, switches, links (total, failed), backend kind."""
    gpus, hosts, switches, links = (_by_cluster_status(m) for m in (GPU, Host, Switch, Link))
    backend = {f.cluster_id: f for f in Fabric.objects.filter(role=0)}
    rows = []
    for c in Cluster.objects.all():
        row = {"cluster": c, "backend": backend.get(c.id)}
        for key, counts in (("gpus", gpus), ("hosts", hosts), ("switches", switches), ("links", links)):
            by_status = counts[c.id]
            row[key] = sum(by_status.values())
            row[f"{key}_failed"] = by_status[Status.FAILED]
            row[f"{key}_unhealthy"] = row[key] - by_status[Status.ACTIVE]
        rows.append(row)
    return rows
