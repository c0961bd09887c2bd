"""A job's step as transfers on the fabric: NCCL ring AllGathers of its TP, CP and DP groups and the sends between
neighbouring pipeline stages, as one phase's worth (:class:`JobTraffic`), for one placement of its ranks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.units import IDX
from sim.fabric.collectives import plan_collective
from sim.jobs.layout import DIMS, groups_of, parse_order, rank_grid
from sim.jobs.models import NCCL_P2P_CHANNELS


def ring_transfers(gpus_of_groups: np.ndarray, gpu_host: np.ndarray, nic_bandwidth: float):
    """Ring AllGather transfers of every group (rows of GPU ids) concatenated: ``(src, dst, share, channel,
    group, steps)``. Groups that are the same pattern shifted by whole hosts reuse one plan."""
    k, n = gpus_of_groups.shape
    if n < 2:
        e = np.zeros(0, IDX)
        return e, e, np.zeros(0), e, e, 0
    gph = int(np.bincount(gpu_host).max())
    g = np.asarray(gpus_of_groups, dtype=IDX)
    host = gpu_host[g]
    # A group's pattern: its GPUs and hosts relative to its first, and its first GPU's slot (one row per group);
    # groups of one pattern share the plan of the first of them, shifted by the difference of their first GPUs.
    pattern = np.concatenate([g - g[:, :1], host - host[:, :1], (g[:, :1] % gph)], axis=1)
    _, first, which = np.unique(pattern, axis=0, return_index=True, return_inverse=True)
    which = which.reshape(-1)
    plans = [plan_collective("allgather", g[i], gpu_host, nic_bandwidth=nic_bandwidth).phases[0]
             for i in first.tolist()]
    size = np.array([ph.src.size for ph in plans], dtype=IDX)[which]
    start = np.cumsum(size) - size                     # each group's transfers, in group order
    total = int(size.sum())
    src, dst, channel = np.empty(total, IDX), np.empty(total, IDX), np.empty(total, IDX)
    share, group = np.empty(total), np.repeat(np.arange(k, dtype=IDX), size)
    for u, (i, ph) in enumerate(zip(first.tolist(), plans)):
        rows = np.flatnonzero(which == u)
        at = (start[rows][:, None] + np.arange(ph.src.size)).ravel()
        off = (g[rows, 0] - g[i, 0])[:, None]
        src[at] = (np.asarray(ph.src, dtype=IDX) + off).ravel()
        dst[at] = (np.asarray(ph.dst, dtype=IDX) + off).ravel()
        share[at] = np.broadcast_to(np.asarray(ph.share, dtype=np.float64), (rows.size, ph.src.size)).ravel()
        channel[at] = np.broadcast_to(np.asarray(ph.channel, dtype=IDX), (rows.size, ph.src.size)).ravel()
    return src, dst, share, channel, group, n - 1


def pp_transfers(gpus_of_groups: np.ndarray, interleaved: bool, gpu_host: np.ndarray | None = None,
                 channels: int = NCCL_P2P_CHANNELS):
    """Sends between neighbouring stages of every pipeline, both directions (forward activations, backward
    gradients); with virtual stages the last stage also sends to the first. A send between hosts runs on
    ``channels`` channels (NCCL's ``NCCL_NCHANNELS_PER_NET_PEER``, default 2 [S6]: one connection each, each
    carrying its share of the bytes); one inside a host (``gpu_host`` None: every send on one channel)."""
    k, n = gpus_of_groups.shape
    if n < 2:
        e = np.zeros(0, IDX)
        return e, e, np.zeros(0), e, e
    a, b = gpus_of_groups[:, :-1], gpus_of_groups[:, 1:]
    if interleaved:
        a = np.concatenate([a, gpus_of_groups[:, -1:]], axis=1)
        b = np.concatenate([b, gpus_of_groups[:, :1]], axis=1)
    grp = np.broadcast_to(np.arange(k, dtype=IDX)[:, None], a.shape)
    src = np.concatenate([a.ravel(), b.ravel()])
    dst = np.concatenate([b.ravel(), a.ravel()])
    grp = np.concatenate([grp.ravel(), grp.ravel()])
    nch = np.ones(src.size, IDX) if gpu_host is None else np.where(gpu_host[src] != gpu_host[dst], channels, 1)
    rep = np.repeat(np.arange(src.size), nch)
    chan = np.arange(rep.size, dtype=IDX) - np.repeat(np.cumsum(nch) - nch, nch)
    return src[rep], dst[rep], 1.0 / nch[rep], chan, grp[rep]


@dataclass
class JobTraffic:
    """The transfers of one job's step as one phase's worth: ``tag`` (P,) the dimension index of each transfer
    (in :data:`DIMS`), ``steps`` per dimension (ring steps of a collective; 1 for a PP send)."""

    src: np.ndarray
    dst: np.ndarray
    share: np.ndarray
    channel: np.ndarray
    tag: np.ndarray
    steps: dict
    ranks: dict                                   # dim -> ranks per group


def job_traffic(topo, gpus: np.ndarray, p: dict) -> JobTraffic:
    sizes = {d: p[d] for d in DIMS}
    grid = rank_grid(sizes, parse_order(p["order"]))
    parts, steps, ranks = [], {}, {}
    for t, d in enumerate(DIMS):
        g = groups_of(grid, d)
        ranks[d] = g.shape[1]
        if d == "pp":
            src, dst, share, chan, _ = pp_transfers(gpus[g], p["schedule"] == "interleaved",
                                                    np.asarray(topo.gpu_host))
            steps[d] = 1
        else:
            src, dst, share, chan, _, steps[d] = ring_transfers(gpus[g], np.asarray(topo.gpu_host),
                                                                 topo.nic_bandwidth)
        parts.append((src, dst, share, chan, np.full(src.size, t, IDX)))
    cat = [np.concatenate([q[j] for q in parts]) for j in range(5)]
    return JobTraffic(*cat, steps=steps, ranks=ranks)
