"""Where a collective's bytes go: the share that stays inside a host (NVLink), on one leaf (on a rail-optimized
fabric: on one rail of a scalable unit), or crosses the spines or the cores, from the engine's own flows.

Each flow of a solved phase carries ``share x steps`` bytes per byte of message size (its transfer's bytes split
over its QPs); its class is the highest fabric tier its routed path reaches (:data:`sim.fabric.layout.LINK_NIC_LEAF`:
NIC to leaf and back down, so it stays on the leaf; ``LINK_LEAF_SPINE``: up to a spine; ``LINK_SPINE_CORE``: up to a
core); a flow with no fabric link is an NVLink transfer inside a host. A PXN transfer (an NVLink hop to the GPU on
the receiver's rail, then the network: :func:`sim.fabric.flows.pxn_via`) is counted once, by its network path, and
its NVLink hop is reported beside (``pxn``). One pass over the flows' CSR paths (``np.maximum.reduceat``), no
per-flow Python.
"""
from __future__ import annotations

import numpy as np

from sim.fabric.layout import LINK_LEAF_SPINE, LINK_NIC_LEAF, LINK_SPINE_CORE

# Classes of bytes, by the highest tier a flow reaches; index = that link tier + 1 (NVLink: no fabric link). A fabric
# of more tiers adds classes named by their tier (class_names).
TRAFFIC_CLASSES = ("nvlink", "leaf", "spine", "core")
assert (LINK_NIC_LEAF, LINK_LEAF_SPINE, LINK_SPINE_CORE) == (0, 1, 2)   # the classes' order follows the tiers


def class_names(n: int) -> list[str]:
    """The names of ``n`` classes: :data:`TRAFFIC_CLASSES`, then ``tier4``, ``tier5``... for higher tiers."""
    return list(TRAFFIC_CLASSES[:n]) + [f"tier{k}" for k in range(len(TRAFFIC_CLASSES), n)]


def traffic_split(topo, result) -> dict:
    """Bytes per byte of message size of the collective ``result`` (a :class:`sim.fabric.results.CollectiveResult`
    on ``topo``) by class (``classes``: :data:`TRAFFIC_CLASSES` and any higher tier's, each also a key), their
    ``total``, ``network`` (between hosts), ``leaf_local`` and ``cross_spine`` (its leaf-local part and the part
    that goes above a leaf, which add up to ``network``), the shares of ``network`` that stay on a leaf
    (``leaf_local_share``) and go above it (``cross_spine_share``), and ``pxn``: the bytes that first hop over
    NVLink to reach a NIC on the receiver's rail."""
    E = int(topo.n_links)
    tier = np.asarray(topo.link_tier)
    n_classes = max(len(TRAFFIC_CLASSES), int(tier.max()) + 2 if tier.size else 0)
    by_class = np.zeros(n_classes)
    pxn = 0.0
    for ph in result.phases:
        fl = ph.flows
        if fl.n_flows == 0:
            continue
        weight = np.asarray(fl.share, dtype=np.float64) * ph.phase.steps
        links = np.asarray(fl.links)
        fabric = links < E
        level = np.where(fabric, tier[np.where(fabric, links, 0)], -1)
        ptr = np.asarray(fl.ptr)
        top = np.maximum.reduceat(level, ptr[:-1]) if level.size else np.full(fl.n_flows, -1)
        by_class += np.bincount(top + 1, weight, minlength=n_classes)
        # A network flow (top >= 0) with an NVLink link on its path: a PXN hop in front of it.
        hops = np.add.reduceat((~fabric).astype(np.int64), ptr[:-1]) if level.size else np.zeros(fl.n_flows)
        pxn += float(weight[(top >= 0) & (hops > 0)].sum())
    names = class_names(n_classes)
    out = {name: float(v) for name, v in zip(names, by_class)}
    network = float(by_class[1:].sum())
    cross = float(by_class[2:].sum())
    out.update(classes=names, total=float(by_class.sum()), network=network, leaf_local=out["leaf"],
               cross_spine=cross, pxn=pxn, leaf_local_share=out["leaf"] / network if network else None,
               cross_spine_share=cross / network if network else None)
    return out


def plan_bytes(result) -> float:
    """Bytes per byte of message size the collective's plan moves (every transfer's share x its phase's steps):
    what :func:`traffic_split`'s classes add up to, computed from the plan alone (the tests' other side)."""
    return float(sum(np.asarray(ph.share, dtype=np.float64).sum() * ph.steps for ph in result.plan.phases))
