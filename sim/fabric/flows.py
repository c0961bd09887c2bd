"""The flows of a phase: each transfer between hosts split into its connection's QPs and routed, NVLink transfers
over two virtual links per GPU, as one CSR FlowSet; and the links they run on (capacities, names). See
:mod:`sim.fabric.netsim` for the model.
"""
from __future__ import annotations

import numpy as np

from sim.core.flowset import FlowHeader, FlowSet
from sim.core.units import IDX
from sim.fabric.collectives import Phase
from sim.fabric.names import nvlink_link_name
from sim.fabric.nccl import DEFAULT_UDP_SPORT, connection_flows
from sim.fabric.paths import path_lengths
from sim.fabric.routing import route

NVLINK_DIRECTIONS = 2          # nvlink_bandwidth counts both directions
CSR_CHUNK = 1 << 20            # flows (rows of the router's table) taken at a time where a temporary is bounded


def link_capacity(topo) -> np.ndarray:
    """(E + 2G,) bytes/s: the fabric's links, then each GPU's NVLink egress, then its NVLink ingress."""
    nvl = np.full(topo.n_gpus, topo.nvlink_bandwidth / NVLINK_DIRECTIONS)
    return np.concatenate([np.asarray(topo.link_capacity, dtype=np.float64), nvl, nvl])


def nvlink_link_names(topo, ids) -> list[str]:
    E, G = topo.n_links, topo.n_gpus
    out = []
    for i in np.atleast_1d(ids).tolist():
        g = (i - E) % G
        way = "egress" if i - E < G else "ingress"
        slot = int(topo.layout.gpu_slot[g]) if topo.layout is not None else g
        out.append(nvlink_link_name(way, int(topo.gpu_host[g]), slot))
    return out


def link_names(topo, ids) -> list[str]:
    """Names of fabric links (``topo.link_names``) and of the virtual NVLink links."""
    ids = np.atleast_1d(np.asarray(ids, dtype=IDX))
    fabric = ids < topo.n_links
    names = np.empty(ids.size, dtype=object)
    if fabric.any():
        names[fabric] = topo.link_names(ids[fabric])
    if (~fabric).any():
        names[~fabric] = nvlink_link_names(topo, ids[~fabric])
    return names.tolist()


def build_flows(topo, phase: Phase, qps: int = 1, routing: str = "ecmp", seed: int = 0, router=None, *,
                hash: str = "uniform", udp_sport: str = DEFAULT_UDP_SPORT, qpn_base: int | None = None) -> FlowSet:
    """The flows of ``phase``: each transfer between hosts is one NCCL connection of ``qps`` QPs
    (:func:`sim.fabric.nccl.connection_flows`: QP numbers, UDP source port by ``udp_sport``), each QP a flow of
    ``bytes / qps`` routed with switch hash ``hash``; NVLink transfers are one flow over the two GPUs' virtual
    NVLink links. Flows are ordered: network flows (transfer-major, QP-minor), then NVLink flows. ``router``: a
    replacement for :func:`sim.fabric.routing.route` called as ``router(topo, src, dst, qp, routing, seed)``."""
    qps = int(qps)
    if qps < 1:
        raise ValueError(f"qps must be at least 1, got {qps}")
    E, G = topo.n_links, topo.n_gpus
    src, dst = np.asarray(phase.src, dtype=IDX), np.asarray(phase.dst, dtype=IDX)
    chan = np.asarray(phase.channel, dtype=IDX)
    inter = np.asarray(topo.gpu_host)[src] != np.asarray(topo.gpu_host)[dst]
    net_t = np.flatnonzero(inter)
    nvl_t = np.flatnonzero(~inter)
    nic = np.asarray(topo.gpu_nic)
    conn = connection_flows(nic[src[net_t]], nic[dst[net_t]], chan[net_t], qps, udp_sport, seed, qpn_base)
    qp, sqpn, dqpn, sport = conn.qp, conn.sqpn, conn.dqpn, conn.sport
    del conn                                              # its per-flow transfer is not kept
    n_net, n_nvl = net_t.size * qps, nvl_t.size
    # Each flow's transfer, network flows first (net_t[conn.transfer]: transfer-major, QP-minor), written in place
    # in the narrowest integer that holds the phase's transfer ids (int32 below 2^31: 71 MB, not 142, at 600k).
    transfer = np.empty(n_net + n_nvl, dtype=np.int32 if src.size < np.iinfo(np.int32).max else IDX)
    transfer[:n_net].reshape(-1, qps)[:] = net_t[:, None]
    transfer[n_net:] = nvl_t
    t_net = transfer[:n_net]
    ptr = np.empty(n_net + n_nvl + 1, dtype=IDX)          # the CSR is written in place: network flows, then NVLink
    ptr[0] = 0
    paths = None                             # the router's padded path table, kept for grouping identical flows
    if n_net and router is None and routing != "te":
        paths = route(topo, src[net_t], dst[net_t], qp, routing, seed, hash=hash, sport=sport, dqpn=dqpn,
                      padded=True, between_hosts=True, repeat=qps)      # GPUs per connection, the rest per QP
        del qp
        used = paths >= 0
        np.cumsum(path_lengths(used), out=ptr[1:n_net + 1], dtype=IDX)
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        for lo in range(0, n_net, CSR_CHUNK):             # in slices: no full-size temporary
            hi = min(lo + CSR_CHUNK, n_net)
            links[ptr[lo]:ptr[hi]] = paths[lo:hi][used[lo:hi]]
        del used
    elif n_net:
        ptr_net, links_net = route(topo, src[t_net], dst[t_net], qp, routing, seed) if router is None \
            else router(topo, src[t_net], dst[t_net], qp, routing, seed)
        ptr[:n_net + 1] = ptr_net
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        links[:ptr[n_net]] = links_net
    else:
        links = np.empty(2 * n_nvl, dtype=IDX)
    if n_net and (ptr[1:n_net + 1] == ptr[:n_net]).any():
        raise ValueError("the router gave an empty path to a transfer between hosts")
    cut = int(ptr[n_net])
    np.add(src[nvl_t], E, out=links[cut::2])              # NVLink: [E + src, E + G + dst]
    np.add(dst[nvl_t], E + G, out=links[cut + 1::2])
    np.add(2 * np.arange(1, n_nvl + 1, dtype=IDX), cut, out=ptr[n_net + 1:])
    share = np.asarray(phase.share, dtype=np.float64)
    # Kept per network flow in their own widths (24-bit QP numbers, 16-bit ports): 94 MB, not 226, at 600k.
    header = FlowHeader(src=src, dst=dst, channel=chan, n_network=n_net, qps=qps, sqpn=sqpn.astype(np.uint32),
                        dqpn=dqpn.astype(np.uint32), sport=sport.astype(np.uint16), paths=paths)
    del sqpn, dqpn, sport
    return FlowSet(transfer=transfer, share=np.concatenate([share[t_net] / qps, share[nvl_t]]),
                   ptr=ptr, links=links, n_fabric=E, n_gpus=G, header=header)


def flow_count(topo, phase: Phase, qps: int) -> int:
    """How many flows :func:`build_flows` makes of ``phase``: ``qps`` per transfer between hosts, one per NVLink
    transfer (the phase's share of a collective's work, known before routing)."""
    host = np.asarray(topo.gpu_host)
    inter = int(np.count_nonzero(host[phase.src] != host[phase.dst]))
    return inter * int(qps) + (len(phase.src) - inter)


def concat_flows(sets: list[FlowSet]) -> FlowSet:
    """One FlowSet holding the flows of ``sets`` in order (``transfer`` indexes stay per set)."""
    if len(sets) == 1:
        return sets[0]
    ptrs, base = [np.zeros(1, dtype=IDX)], 0
    for fs in sets:
        ptrs.append(fs.ptr[1:] + base)
        base += int(fs.ptr[-1])
    cat = lambda name: np.concatenate([getattr(fs, name) for fs in sets])  # noqa: E731
    return FlowSet(src=cat("src"), dst=cat("dst"), qp=cat("qp"), channel=cat("channel"), transfer=cat("transfer"),
                   share=cat("share"), ptr=np.concatenate(ptrs), links=cat("links"), n_fabric=sets[0].n_fabric,
                   n_gpus=sets[0].n_gpus, sqpn=cat("sqpn"), dqpn=cat("dqpn"), sport=cat("sport"))
