"""Topology questions answered from the inventory: a device's neighbours, the equal-cost paths between two GPUs,
a fabric as a graph, a cluster's summary (counts, bandwidth per tier, oversubscription, bisection).

All of it runs a constant number of set-based queries (a few per switch tier for paths), never per-row queries.
Only active items carry traffic: paths leave out failed, drained and maintenance links and switches.
"""
from __future__ import annotations

from collections import defaultdict
from itertools import product

from django.db.models import Count, Q, Sum

from twin.inventory.choices import FabricRole, LinkTier, Status
from twin.inventory.models import (
    GPU, NIC, SSD, Fabric, Host, Link, Port, Rack, StorageServer, Switch,
)

ACTIVE = Status.ACTIVE
MAX_PATHS = 10_000


class TopologyError(ValueError):
    """A question the inventory cannot answer as asked (names the field and the reason)."""

    def __init__(self, field: str, reason: str):
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


# --- neighbours -------------------------------------------------------------------------------------------------

_END = ("port_id", "port__name", "port__switch_id", "port__switch__name", "port__nic_id", "port__nic__name",
        "port__switch__status", "port__nic__status")


def _neighbours(ports: Q) -> list[dict]:
    """For the ports matched by ``ports`` (a Q on Port), each cabled one's link and the device at the far end."""
    rows = []
    for near, far in (("a_port", "b_port"), ("b_port", "a_port")):
        fields = ["id", "name", "status", "speed_gbps", "tier"] + [f"{near}_id", f"{near}__name"] + \
                 [f.replace("port", far, 1) for f in _END]
        for r in Link.objects.filter(**{f"{near}__in": Port.objects.filter(ports)}).values(*fields).order_by("id"):
            switch = r[f"{far}__switch_id"]
            rows.append({
                "port": {"id": r[f"{near}_id"], "name": r[f"{near}__name"]},
                "link": {"id": r["id"], "name": r["name"], "status": r["status"], "speed_gbps": r["speed_gbps"],
                         "tier": LinkTier(r["tier"]).label, "direction": "up" if near == "a_port" else "down"},
                "remote_port": {"id": r[f"{far}_id"], "name": r[f"{far}__name"]},
                "remote_device": {"type": "switch" if switch else "nic",
                                  "id": switch or r[f"{far}__nic_id"],
                                  "name": r[f"{far}__switch__name"] if switch else r[f"{far}__nic__name"],
                                  "status": r[f"{far}__switch__status"] if switch else r[f"{far}__nic__status"]},
            })
    return rows


def neighbours(device) -> list[dict]:
    """Neighbours of a switch, NIC, host or storage server (through its NICs)."""
    if isinstance(device, Switch):
        return _neighbours(Q(switch=device))
    if isinstance(device, NIC):
        return _neighbours(Q(nic=device))
    if isinstance(device, Host):
        return _neighbours(Q(nic__host=device))
    if isinstance(device, StorageServer):
        return _neighbours(Q(nic__storage_server=device))
    raise TypeError(f"no neighbours for {type(device).__name__}")


# --- equal-cost paths -------------------------------------------------------------------------------------------

def _leaf_link(gpu: GPU, field: str) -> dict:
    """The active backend link from a GPU's NIC up to its leaf switch."""
    if gpu.status != ACTIVE:
        raise TopologyError(field, f"GPU {gpu.name} is {gpu.status}")
    link = (Link.objects.filter(a_port__nic__gpu=gpu)
            .values("id", "status", "a_port_id", "b_port_id", "b_switch_id", "b_switch__status",
                    "a_port__nic__status", "a_port__nic__name").first())
    if link is None:
        raise TopologyError(field, f"GPU {gpu.name} has no cabled backend NIC")
    for what, status in (("NIC " + link["a_port__nic__name"], link["a_port__nic__status"]),
                         ("its NIC link", link["status"]), ("its leaf switch", link["b_switch__status"])):
        if status != ACTIVE:
            raise TopologyError(field, f"GPU {gpu.name}: {what} is {status}")
    return link


def _up_links(switch_ids) -> list[dict]:
    """Active links going up from ``switch_ids`` to active switches."""
    return list(Link.objects.filter(a_switch_id__in=switch_ids, status=ACTIVE, b_switch__status=ACTIVE)
                .values("id", "a_port_id", "b_port_id", "a_switch_id", "b_switch_id"))


def _chains(leaf: int, levels: int) -> list[dict[int, list[tuple]]]:
    """Per level k, for every switch reachable k tiers up from ``leaf``: the link chains reaching it, each a
    tuple of link rows in upward order. Level 0 is the leaf itself."""
    chains = [{leaf: [()]}]
    for _ in range(levels):
        below = chains[-1]
        level = defaultdict(list)
        for link in _up_links(list(below)):
            for chain in below[link["a_switch_id"]]:
                level[link["b_switch_id"]].append(chain + (link,))
        chains.append(dict(level))
    return chains


def equal_cost_paths(src: GPU, dst: GPU, max_paths: int = MAX_PATHS) -> dict:
    """All shortest up/down paths from ``src`` to ``dst`` over active links and switches of the backend fabric.

    Paths climb from the source leaf to the lowest tier where the source's and destination's upward reach meet,
    then descend: in a folded Clos these are exactly the equal-cost (ECMP) paths. Each hop is a triple
    ``[link id, port it leaves by, port it arrives at]``; ``ports`` and ``links`` name every id once.
    """
    if src.cluster_id != dst.cluster_id:
        raise TopologyError("dst_gpu", "is in another cluster than src_gpu")
    if src.host_id == dst.host_id:
        return {"count": 0, "hops": 0, "via": "nvlink", "paths": [], "ports": {}, "links": {}, "truncated": False}
    a, b = _leaf_link(src, "src_gpu"), _leaf_link(dst, "dst_gpu")
    tiers = Switch.objects.filter(cluster_id=src.cluster_id, fabric__role=FabricRole.BACKEND).values("tier") \
        .distinct().count()
    up, down = _chains(a["b_switch_id"], tiers - 1), _chains(b["b_switch_id"], tiers - 1)
    paths: list[list[tuple]] = []
    total = 0
    for level in range(tiers):
        turns = sorted(set(up[level]) & set(down[level]))
        if not turns:
            continue
        for turn in turns:
            total += len(up[level][turn]) * len(down[level][turn])
            for climb, descent in product(up[level][turn], down[level][turn]):
                if len(paths) >= max_paths:
                    break
                hops = [(a["id"], a["a_port_id"], a["b_port_id"])]
                hops += [(l["id"], l["a_port_id"], l["b_port_id"]) for l in climb]
                hops += [(l["id"], l["b_port_id"], l["a_port_id"]) for l in reversed(descent)]
                hops.append((b["id"], b["b_port_id"], b["a_port_id"]))
                paths.append(hops)
        break
    if not total:
        raise TopologyError("dst_gpu", f"no active path from {src.name} to {dst.name}")
    port_ids = {p for path in paths for hop in path for p in hop[1:]}
    ports = {p["id"]: p for p in Port.objects.filter(id__in=port_ids)
             .values("id", "name", "switch_id", "switch__name", "nic_id", "nic__name")}
    link_ids = {hop[0] for path in paths for hop in path}
    links = {r["id"]: r for r in Link.objects.filter(id__in=link_ids).values("id", "name", "speed_gbps", "tier")}
    return {
        "count": total, "hops": len(paths[0]), "via": "fabric", "truncated": total > len(paths),
        "paths": paths,
        "ports": {pid: {"name": p["name"],
                        "device": {"type": "switch", "id": p["switch_id"], "name": p["switch__name"]} if p["switch_id"]
                        else {"type": "nic", "id": p["nic_id"], "name": p["nic__name"]}}
                  for pid, p in ports.items()},
        "links": {lid: {"name": l["name"], "speed_gbps": l["speed_gbps"], "tier": LinkTier(l["tier"]).label}
                  for lid, l in links.items()},
    }


# --- fabric graph -----------------------------------------------------------------------------------------------

def fabric_graph(fabric: Fabric) -> dict:
    """The fabric as nodes (switches and NICs) and edges (links), each with its status."""
    nodes = [{"id": f"switch:{s['id']}", "type": "switch", "name": s["name"], "role": s["role"],
              "tier": s["tier"], "status": s["status"]}
             for s in Switch.objects.filter(fabric=fabric).values("id", "name", "role", "tier", "status")]
    nodes += [{"id": f"nic:{n['id']}", "type": "nic", "name": n["name"], "status": n["status"]}
              for n in NIC.objects.filter(fabric=fabric).values("id", "name", "status")]
    edges = []
    for r in Link.objects.filter(fabric=fabric).values("id", "name", "status", "speed_gbps", "tier",
                                                       "a_port__nic_id", "a_switch_id", "b_switch_id"):
        source = f"nic:{r['a_port__nic_id']}" if r["a_port__nic_id"] else f"switch:{r['a_switch_id']}"
        edges.append({"id": r["id"], "source": source, "target": f"switch:{r['b_switch_id']}",
                      "name": r["name"], "status": r["status"], "speed_gbps": r["speed_gbps"], "tier": r["tier"]})
    return {"fabric": {"id": fabric.id, "name": fabric.name, "kind": fabric.kind}, "directed": False,
            "nodes": nodes, "edges": edges}


def _dot_id(node_id: str) -> str:
    return '"' + node_id.replace('"', "") + '"'


def fabric_dot(fabric: Fabric):
    """The fabric graph in Graphviz DOT, yielded line by line (4.5 MB for a 24k fabric; the API serves it rendered
    once per state of the fabric, twin/inventory/exports.py)."""
    graph = fabric_graph(fabric)
    yield f'graph "{fabric.name}" {{\n  rankdir=BT;\n'
    for n in graph["nodes"]:
        shape = "box" if n["type"] == "switch" else "ellipse"
        color = "" if n["status"] == ACTIVE else ', color="red"'
        yield f'  {_dot_id(n["id"])} [label="{n["name"]}", shape={shape}{color}];\n'
    for e in graph["edges"]:
        color = "" if e["status"] == ACTIVE else ', color="red", style="dashed"'
        yield f'  {_dot_id(e["source"])} -- {_dot_id(e["target"])} [label="{e["speed_gbps"]}G"{color}];\n'
    yield "}\n"


# --- cluster summary --------------------------------------------------------------------------------------------

def bisection_gbps(tier_active_capacities) -> float:
    """Half the smallest active tier capacity (see :func:`cluster_summary` for why that is the bisection)."""
    return min(tier_active_capacities, default=0) / 2


def cluster_summary(cluster) -> dict:
    """Counts by kind and status; per fabric: links and active capacity per tier, oversubscription at each switch
    tier (capacity below : capacity above), and bisection bandwidth.

    Bisection bandwidth is the capacity across a balanced cut of the endpoints. In these folded Clos networks of
    identical zones every tier carries the traffic that crosses a cut between zones, so it is half the smallest
    active tier capacity (NIC tier included): exact for the presets' shapes, an upper bound for uneven ones.
    """
    counts = {}
    for key, model in (("racks", Rack), ("hosts", Host), ("gpus", GPU), ("nics", NIC), ("switches", Switch),
                       ("ports", Port), ("links", Link), ("storage_servers", StorageServer), ("ssds", SSD)):
        by_status = dict(model.objects.filter(cluster=cluster).values_list("status").annotate(n=Count("id"))
                         .order_by())
        counts[key] = {"total": sum(by_status.values()), **{s: by_status.get(s, 0) for s in Status.values}}
    tier_rows = (Link.objects.filter(cluster=cluster)
                 .values("fabric_id", "tier")
                 .annotate(links=Count("id"), active=Count("id", filter=Q(status=ACTIVE)),
                           capacity=Sum("speed_gbps"), active_capacity=Sum("speed_gbps", filter=Q(status=ACTIVE)))
                 .order_by("fabric_id", "tier"))
    role_names = {(f, t): r for f, t, r in Switch.objects.filter(cluster=cluster)
                  .values_list("fabric_id", "tier", "role").distinct()}
    fabrics = []
    for fabric in Fabric.objects.filter(cluster=cluster).order_by("role"):
        rows = [r for r in tier_rows if r["fabric_id"] == fabric.id]
        tiers = []
        for r in rows:
            upper = role_names.get((fabric.id, r["tier"]), "?")
            lower = "nic" if r["tier"] == LinkTier.NIC_LEAF else role_names.get((fabric.id, r["tier"] - 1), "?")
            tiers.append({"tier": f"{lower}-{upper}", "links": r["links"], "active_links": r["active"],
                          "capacity_gbps": r["capacity"] or 0, "active_capacity_gbps": r["active_capacity"] or 0})
        oversubscription = []
        for below, above in zip(tiers, tiers[1:]):
            switch_tier = below["tier"].split("-", 1)[1]
            ratio = below["active_capacity_gbps"] / above["active_capacity_gbps"] \
                if above["active_capacity_gbps"] else None
            oversubscription.append({"switch_tier": switch_tier, "down_gbps": below["active_capacity_gbps"],
                                     "up_gbps": above["active_capacity_gbps"],
                                     "ratio": round(ratio, 4) if ratio else None})
        bisection = bisection_gbps(t["active_capacity_gbps"] for t in tiers)
        fabrics.append({"id": fabric.id, "name": fabric.name, "kind": fabric.kind, "tiers": tiers,
                        "oversubscription": oversubscription, "bisection_gbps": bisection})
    return {"cluster": {"id": cluster.id, "name": cluster.name}, "counts": counts, "fabrics": fabrics}

