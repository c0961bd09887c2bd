"""The flows of a phase: each transfer between hosts split into its connection's QPs and routed, NVLink transfers
over two virtual links per GPU, NVLS transfers to and from a host's NVSwitch over two virtual links per host, as one
CSR FlowSet; and the links they run on (achievable capacities, :mod:`sim.fabric.achievable`; names). See
:mod:`sim.fabric.netsim` for the model.

Link ids: ``0..E-1`` the fabric's, ``E + g`` GPU ``g``'s NVLink egress, ``E + G + g`` its ingress, ``E + 2G + h``
host ``h``'s NVSwitch in (what it reduces or multicasts), ``E + 2G + H + h`` its NVSwitch out; with SHARP (CollNet
runs only, ``link_capacity(..., sharp=True)``) also ``E + 2G + 2H + g`` GPU ``g``'s NIC's leg into the switches'
aggregation tree and ``E + 3G + 2H + g`` its leg out of it. A SHARP leg crosses the NIC's own link too: up
``[NIC uplink, tree in]``, down ``[tree out, NIC downlink]``.
"""
from __future__ import annotations

import numpy as np

from sim.core.flowset import FlowHeader, FlowSet
from sim.core.units import IDX
from sim.fabric.achievable import Efficiencies, fabric_capacity, nvlink_rate, nvswitch_rate, sharp_rate
from sim.fabric.collectives import SHARP_DOWN, SHARP_UP, SWITCH_DOWN, SWITCH_UP, Phase
from sim.fabric.names import host_code, nic_node_name, nvlink_link_name
from sim.fabric.nccl import DEFAULT_UDP_SPORT, connection_flows
from sim.fabric.paths import path_lengths
from sim.fabric.routing import route

NVLINK_DIRECTIONS = 2          # nvlink_bandwidth counts both directions
CSR_CHUNK = 1 << 20            # flows (rows of the router's table) taken at a time where a temporary is bounded


def n_hosts(topo) -> int:
    host = np.asarray(topo.gpu_host)
    return int(host.max()) + 1 if host.size else 0


def link_capacity(topo, eff: Efficiencies | None = None, sharp: bool = False, nvls_gpus=None) -> np.ndarray:
    """(E + 2G + 2H,) achievable bytes/s (:mod:`sim.fabric.achievable`): the fabric's links, each GPU's NVLink
    egress, its NVLink ingress, each host's NVSwitch in and out (0 where the GPUs have no NVLink SHARP); with
    ``sharp`` (a CollNet run) 2G more: each GPU's NIC's legs into and out of the SHARP tree
    (:func:`sim.fabric.achievable.sharp_rate`).

    The NVSwitch's NVLS rate is per GPU port (NCCL's ``nvlsEfficiency`` scales each NVLS channel's per-GPU
    bandwidth, ``tuning.cc``), so a host's switch carries ``nvlsEfficiency x`` NVLink for each GPU that runs NVLS on
    it: ``nvls_gpus``, the GPUs of the collective (and of its background jobs); ``None``: every GPU of the host."""
    eff = eff or Efficiencies.of()
    nvl = np.full(topo.n_gpus, nvlink_rate(topo, eff))
    host = np.asarray(topo.gpu_host)
    if nvls_gpus is not None:
        host = host[np.unique(np.asarray(nvls_gpus, dtype=IDX))]
    per_host = np.bincount(host, minlength=n_hosts(topo)) if topo.n_gpus else np.zeros(0)
    sw = per_host * nvswitch_rate(topo, 1, eff)
    parts = [fabric_capacity(topo, eff), nvl, nvl, sw, sw]
    if sharp:
        tree = sharp_rate(topo, eff)
        parts += [tree, tree]
    return np.concatenate(parts)


def nvlink_link_names(topo, ids) -> list[str]:
    E, G = topo.n_links, topo.n_gpus
    H = n_hosts(topo)
    out = []
    for i in np.atleast_1d(ids).tolist():
        if i - E >= 2 * G + 2 * H:
            g = (i - E - 2 * G - 2 * H) % G
            slot = int(topo.layout.gpu_slot[g]) if topo.layout is not None else g
            way = "in" if i - E - 2 * G - 2 * H < G else "out"
            out.append(f"sharp {way} {nic_node_name(int(topo.gpu_host[g]), slot)}")
            continue
        if i - E >= 2 * G:
            h = (i - E - 2 * G) % max(H, 1)
            out.append(f"nvswitch {'in' if i - E - 2 * G < H else 'out'} {host_code(h)}")
            continue
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
    nvl_t = np.flatnonzero(~inter)        # NVLink transfers, then NVLS legs (to or from the host's NVSwitch)
    leg = np.zeros(src.size, dtype=np.int8) if phase.switch is None else np.asarray(phase.switch, dtype=np.int8)
    if phase.switch is not None:
        nvl_t = np.concatenate([nvl_t[leg[nvl_t] == 0], nvl_t[leg[nvl_t] != 0]])
    nic = np.asarray(topo.gpu_nic)
    via = pxn_via(topo, src, dst, net_t)                  # the GPU whose NIC sends (rail-optimized fabrics: PXN)
    send = src[net_t] if via is None else via
    conn = connection_flows(nic[send], nic[dst[net_t]], chan[net_t], qps, udp_sport, seed, qpn_base)
    # Kept per network flow in their own widths (24-bit QP numbers, 16-bit ports): 94 MB, not 226, at 600k; narrowed
    # before routing, which hashes them (widened) only for the flows that leave their leaf.
    qp, sqpn, dqpn, sport = conn.qp, conn.sqpn.astype(np.uint32), conn.dqpn.astype(np.uint32), \
        conn.sport.astype(np.uint16)
    del conn
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
    path_key = None                          # or the exact key that groups them (route's choice codes)
    if n_net and router is None and routing != "te":
        paths, code, dense, total = route(topo, send, dst[net_t], qp, routing, seed, hash=hash, sport=sport,
                                          dqpn=dqpn, padded=True, between_hosts=True, repeat=qps, choices=True)
        del qp                                                # GPUs per connection, the rest per QP
        if via is not None:
            paths = _pxn_columns(paths, src[net_t], via, qps, E, G)
        elif code is not None:
            ends = paths[::qps]                               # a connection's QPs share its first and last link
            last = path_lengths(ends >= 0).astype(IDX) - 1
            pair, n_pairs = link_pairs(ends[:, 0], ends[np.arange(ends.shape[0]), last])
            path_key = (pair, code, n_pairs, dense, total)
            del ends, last
        used = paths >= 0
        lengths = path_lengths(used)
        if not lengths.all():
            raise ValueError("the router gave an empty path to a transfer between hosts")
        np.cumsum(lengths, out=ptr[1:n_net + 1], dtype=IDX)
        del lengths
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        for lo in range(0, n_net, CSR_CHUNK):             # in slices: no full-size temporary
            hi = min(lo + CSR_CHUNK, n_net)
            links[ptr[lo]:ptr[hi]] = paths[lo:hi][used[lo:hi]]
        del used
    elif n_net:
        send_f = np.repeat(send, qps)
        ptr_net, links_net = route(topo, send_f, dst[t_net], qp, routing, seed) if router is None \
            else router(topo, send_f, dst[t_net], qp, routing, seed)
        if via is not None:
            ptr_net, links_net = _pxn_csr(ptr_net, links_net, src[t_net], send_f, E, G)
        ptr[:n_net + 1] = ptr_net
        links = np.empty(int(ptr[n_net]) + 2 * n_nvl, dtype=IDX)
        links[:ptr[n_net]] = links_net
    else:
        links = np.empty(2 * n_nvl, dtype=IDX)
    if n_net and paths is None and (ptr[1:n_net + 1] == ptr[:n_net]).any():     # (checked above for a table)
        raise ValueError("the router gave an empty path to a transfer between hosts")
    cut = int(ptr[n_net])
    np.add(src[nvl_t], E, out=links[cut::2])              # NVLink: [E + src, E + G + dst]
    np.add(dst[nvl_t], E + G, out=links[cut + 1::2])
    if phase.switch is not None:                          # NVLS: [E + src, switch in] or [switch out, E + G + dst]
        H = n_hosts(topo)
        host = np.asarray(topo.gpu_host)
        lg = leg[nvl_t]
        up, down = np.flatnonzero(lg == SWITCH_UP), np.flatnonzero(lg == SWITCH_DOWN)
        links[cut + 2 * up + 1] = E + 2 * G + host[src[nvl_t[up]]]
        links[cut + 2 * down] = E + 2 * G + H + host[dst[nvl_t[down]]]
        # SHARP: [NIC uplink, tree in] or [tree out, NIC downlink] (module docstring)
        up, down = np.flatnonzero(lg == SHARP_UP), np.flatnonzero(lg == SHARP_DOWN)
        if up.size or down.size:
            g_up, g_dn = src[nvl_t[up]], dst[nvl_t[down]]
            nic_up, nic_dn = np.asarray(topo.gpu_uplink)[g_up], np.asarray(topo.gpu_downlink)[g_dn]
            if (nic_up < 0).any() or (nic_dn < 0).any():
                raise ValueError("a CollNet head's NIC has no active link to its leaf")
            links[cut + 2 * up] = nic_up
            links[cut + 2 * up + 1] = E + 2 * G + 2 * H + g_up
            links[cut + 2 * down] = E + 3 * G + 2 * H + g_dn
            links[cut + 2 * down + 1] = nic_dn
    np.add(2 * np.arange(1, n_nvl + 1, dtype=IDX), cut, out=ptr[n_net + 1:])
    share = np.asarray(phase.share, dtype=np.float64)
    header = FlowHeader(src=src, dst=dst, channel=chan, n_network=n_net, qps=qps, sqpn=sqpn, dqpn=dqpn, sport=sport,
                        paths=paths if path_key is None else None, path_key=path_key)
    del sqpn, dqpn, sport
    return FlowSet(transfer=transfer, share=np.concatenate([share[t_net] / qps, share[nvl_t]]),
                   ptr=ptr, links=links, n_fabric=E, n_gpus=G, header=header)


def link_pairs(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, int]:
    """``(pair, n)``: an id in ``0..n-1`` per connection for its (first link, last link): its NICs' cables, which
    with the router's choice codes fix its QPs' paths (:func:`sim.core.flowset.keyed_classes`)."""
    if first.size == 0:
        return np.zeros(0, dtype=IDX), 0
    key = first.astype(np.int64) * (int(last.max()) + 1) + last
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    pair = np.empty(key.size, dtype=IDX)
    pair[order] = np.cumsum(start) - 1
    return pair, int(start.sum())


def pxn_via(topo, src: np.ndarray, dst: np.ndarray, net_t: np.ndarray) -> np.ndarray | None:
    """(T,) for the phase's transfers between hosts ``net_t``: the GPU whose NIC sends each one, or None when every
    transfer leaves its own GPU's NIC (a fabric without rails: the model every figure before rails was made with).

    On a rail-optimized fabric (``rails > 1``) NCCL keeps inter-node traffic on one rail: its rings and trees use
    the same NIC on both ends (``NCCL_CROSS_NIC``, default 2: the same NIC where it can), and a GPU reaches a NIC
    that is not its own through a GPU next to that NIC over NVLink (PXN, on by default since NCCL 2.12). So a
    transfer from GPU ``x`` to GPU ``y`` of another host, on different rails, is sent by the GPU of ``x``'s host in
    ``y``'s slot, when that GPU is in the job (PXN needs a rank there), after an NVLink hop ``x -> via``; otherwise
    from ``x``'s own NIC, crossing rails through a spine."""
    lay = getattr(topo, "layout", None)
    if lay is None or getattr(lay.spec.backend, "rails", 1) == 1 or net_t.size == 0:
        return None
    slot = np.asarray(lay.gpu_slot)
    host = np.asarray(topo.gpu_host)
    nic_leaf = np.asarray(topo.gpu_leaf)
    x, y = src[net_t], dst[net_t]
    via = x - slot[x] + slot[y]
    ok = (via >= 0) & (via < topo.n_gpus)
    via = np.where(ok, via, x)
    in_job = np.zeros(topo.n_gpus, dtype=bool)
    in_job[src] = True
    in_job[dst] = True
    ok &= (host[via] == host[x]) & (slot[via] == slot[y]) & in_job[via] & (nic_leaf[x] != nic_leaf[via])
    ok &= np.asarray(topo.gpu_usable)[via]
    return np.where(ok, via, x).astype(IDX)


def _pxn_columns(paths: np.ndarray, src: np.ndarray, via: np.ndarray, qps: int, E: int, G: int) -> np.ndarray:
    """The router's padded table with two columns in front: the PXN hop's NVLink egress of ``src`` and ingress of
    ``via`` for the transfers sent by another GPU's NIC, -1 for the others (per transfer, ``qps`` rows each)."""
    hop = np.full((paths.shape[0], 2), -1, dtype=paths.dtype)
    pxn = np.repeat(via != src, qps)
    hop[pxn, 0] = np.repeat(E + src, qps)[pxn]
    hop[pxn, 1] = np.repeat(E + G + via, qps)[pxn]
    return np.concatenate([hop, paths], axis=1)


def _pxn_csr(ptr: np.ndarray, links: np.ndarray, src: np.ndarray, send: np.ndarray, E: int, G: int):
    """A CSR of routed paths with the PXN hop's two NVLink links in front of every flow sent by another GPU."""
    pxn = send != src
    n = np.diff(ptr) + 2 * pxn
    out_ptr = np.zeros(ptr.size, dtype=IDX)
    np.cumsum(n, out=out_ptr[1:])
    out = np.empty(int(out_ptr[-1]), dtype=IDX)
    start = out_ptr[:-1] + 2 * pxn                        # where each flow's routed links go
    pos = np.repeat(start - ptr[:-1], np.diff(ptr)) + np.arange(ptr[-1])
    out[pos] = links
    f = np.flatnonzero(pxn)
    out[out_ptr[f]] = E + src[f]
    out[out_ptr[f] + 1] = E + G + send[f]
    return out_ptr, out


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
