"""The flows of one phase (:class:`FlowSet`): what routing, solving and timing need is kept per flow, the rest is
derived when a listing asks for it; and the classes of identical flows the solver merges.

Why: a ring phase over 589,824 GPUs with 16 QPs per GPU pair is 17.7M flows (docs/scale.md). Routing, the max-min
solve and the timing need only each flow's links (CSR ``ptr``, ``links``), its bytes (``share``) and its transfer.
The GPUs and channel of a flow are its transfer's, its QP index and numbers and UDP port its connection's
(:mod:`sim.fabric.nccl`): :func:`sim.fabric.flows.build_flows` hands those over per transfer and per network flow, and the
per-flow arrays (``src``, ``dst``, ``qp``, ``channel``, ``sqpn``, ``dqpn``, ``sport``) are built on first access
(hottest links' samples, ``--flows`` listings), not for every run: 7 arrays of 17.7M entries not written, not paged in.

Identical flows (:meth:`FlowSet.classes`): flows on the same link sequence get the same max-min rate, so the solve
takes one weighted flow per class (:func:`sim.core.maxmin.identical_flows`). When the layout of :func:`build_flows` is
known (network flows first, then one flow per NVLink transfer over ``[E + src, E + G + dst]``), the NVLink flows are
grouped by their exact (source, destination) key in one pass without a sort (a GPU's NVLink peers are near it in GPU
numbering: hosts hold consecutive GPU ids), and the network flows by the router's choice codes and their
connection's end links (:func:`keyed_classes`: exact keys, a dense table, no sort of the rows), or where the router
gave no codes by the hash sort of its own padded path table (:func:`sim.core.maxmin.identical_rows`: whole rows
compared, no per-column gathers of the CSR).
Classes are numbered by their lowest flow either way, so the solve sees the same problem in the same order and the
rates are the same to the bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sim.core.maxmin import identical_flows, identical_rows
from sim.core.units import IDX

DERIVED = ("src", "dst", "qp", "channel", "sqpn", "dqpn", "sport")      # per-flow arrays built on access
DENSE_KEYS_PER_FLOW = 4        # group by a dense key table when it has at most this many slots per flow


@dataclass
class FlowHeader:
    """What the derived per-flow arrays of a :class:`FlowSet` laid out by :func:`sim.fabric.flows.build_flows` come from:
    the phase's per-transfer GPUs and channel, the first ``n_network`` flows' QP index (``qps`` QPs per connection,
    QP-minor) and QP numbers and UDP source ports (per network flow); NVLink flows have QP 0 and -1 for the rest."""

    src: np.ndarray              # (P,) per transfer
    dst: np.ndarray
    channel: np.ndarray
    n_network: int
    qps: int
    sqpn: np.ndarray             # (n_network,): QP numbers are 24 bits, kept as uint32
    dqpn: np.ndarray
    sport: np.ndarray            # (n_network,): UDP ports are 16 bits, kept as uint16
    paths: np.ndarray | None = None  # the router's padded path table of the network flows (until grouped)
    # or, where the router gave them (sim.fabric.routing.route(..., choices=True)), what groups them exactly:
    # (pair (n_network // qps,) the id of each connection's first and last link, code (n_network,) the choices,
    #  n_pairs, dense, total); see keyed_classes
    path_key: tuple | None = None


class FlowSet:
    """Flows of one phase: per flow its GPUs, QP (index in its connection), channel, the transfer (connection) it
    belongs to, its bytes per byte of message size (``share``), its links (CSR ``ptr``, ``links``; NVLink links are
    ``>= n_fabric``) and its header: QP numbers and UDP source port (:mod:`sim.fabric.nccl`; ``-1`` for NVLink flows).

    Built either from every per-flow array (keywords ``src`` ... ``sport``), or from a :class:`FlowHeader`
    (``header=``) from which they are derived on first access (module docstring)."""

    def __init__(self, *, transfer, share, ptr, links, n_fabric: int, n_gpus: int, header: FlowHeader | None = None,
                 src=None, dst=None, qp=None, channel=None, sqpn=None, dqpn=None, sport=None):
        self.transfer, self.share, self.ptr, self.links = transfer, share, ptr, links
        self.n_fabric, self.n_gpus, self.header = int(n_fabric), int(n_gpus), header
        given = {"src": src, "dst": dst, "qp": qp, "channel": channel, "sqpn": sqpn, "dqpn": dqpn, "sport": sport}
        if header is None and any(given[k] is None for k in ("src", "dst", "qp", "channel")):
            raise ValueError("a FlowSet needs src, dst, qp and channel, or a header to derive them from")
        for name, value in given.items():           # given arrays fill the cached properties
            if value is not None or header is None:
                self.__dict__[name] = value

    @property
    def n_flows(self) -> int:
        return len(self.transfer)

    @property
    def n_network_first(self) -> int | None:
        """How many flows, all first, cross the fabric when the layout is :func:`sim.fabric.flows.build_flows`'s."""
        return None if self.header is None else self.header.n_network

    @cached_property
    def network(self) -> np.ndarray:
        """(F,) bool: the flow crosses the switch fabric (not NVLink)."""
        if self.header is not None:
            out = np.zeros(self.n_flows, dtype=bool)
            out[:self.header.n_network] = True
            return out
        # A flow is a network flow when its first link is a fabric link (NVLink flows cross only virtual links).
        first = np.full(self.n_flows, self.n_fabric, dtype=IDX)
        has = np.diff(self.ptr) > 0
        first[has] = self.links[self.ptr[:-1][has]]
        return first < self.n_fabric

    @cached_property
    def src(self) -> np.ndarray:
        return self.header.src[self.transfer]

    @cached_property
    def dst(self) -> np.ndarray:
        return self.header.dst[self.transfer]

    @cached_property
    def channel(self) -> np.ndarray:
        return self.header.channel[self.transfer]

    @cached_property
    def qp(self) -> np.ndarray:
        h = self.header
        out = np.zeros(self.n_flows, dtype=IDX)
        out[:h.n_network] = np.arange(h.n_network, dtype=IDX) % max(h.qps, 1)
        return out

    def _per_network_flow(self, values: np.ndarray) -> np.ndarray:
        out = np.full(self.n_flows, -1, dtype=IDX)
        out[:self.header.n_network] = values
        return out

    @cached_property
    def sqpn(self) -> np.ndarray:
        """Sender's QP number (network flows; -1 for NVLink)."""
        return self._per_network_flow(self.header.sqpn)

    @cached_property
    def dqpn(self) -> np.ndarray:
        """Receiver's QP number: the transport header's destination QP."""
        return self._per_network_flow(self.header.dqpn)

    @cached_property
    def sport(self) -> np.ndarray:
        """RoCEv2 UDP source port."""
        return self._per_network_flow(self.header.sport)

    def values(self, name: str, flows) -> np.ndarray:
        """``getattr(self, name)[flows]`` for a few flows, without building the whole per-flow array when it is a
        derived one not built yet (hottest links' samples)."""
        if name in self.__dict__ or self.header is None or name not in DERIVED:
            return getattr(self, name)[flows]
        h, flows = self.header, np.asarray(flows, dtype=IDX)
        if name in ("src", "dst", "channel"):
            return getattr(h, name)[self.transfer[flows]]
        net = flows < h.n_network
        if name == "qp":
            return np.where(net, flows % max(h.qps, 1), 0)
        per = getattr(h, name)
        return np.where(net, per[np.minimum(flows, max(h.n_network - 1, 0))].astype(IDX) if per.size else 0, -1)

    def transfer_max(self, values: np.ndarray, n_transfers: int) -> np.ndarray:
        """(n_transfers,) the largest of ``values`` (one per flow) over each transfer's flows, ``-inf`` for a
        transfer without flows. In :func:`sim.fabric.flows.build_flows`' layout a connection's ``qps`` flows are
        consecutive and each NVLink transfer is one flow: a ``reduceat`` over the connections, no ``ufunc.at`` over
        every flow (a maximum is exact in any order)."""
        out = np.full(n_transfers, -np.inf)
        h = self.header
        n = 0 if h is None else h.n_network
        if h is None or (n and n % max(h.qps, 1)):
            np.maximum.at(out, self.transfer, values)
            return out
        q = max(h.qps, 1)
        if n:
            out[self.transfer[:n:q]] = np.maximum.reduceat(values[:n], np.arange(0, n, q))
        out[self.transfer[n:]] = values[n:]
        return out

    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rep, cls)`` of :func:`sim.core.maxmin.identical_flows` over these flows (see the module docstring)."""
        n_net = self.n_network_first
        if n_net is None:
            return identical_flows(self.ptr, self.links)
        cut = int(self.ptr[n_net])
        paths, self.header.paths = self.header.paths, None     # used once: the solve needs the classes once
        key, self.header.path_key = self.header.path_key, None
        if key is not None:
            pair, code, n_pairs, dense, total = key
            rep_net, cls_net = keyed_classes(pair, max(self.header.qps, 1), code, n_pairs, dense, total)
        elif paths is not None:
            rep_net, cls_net = identical_rows(paths)
        else:
            rep_net, cls_net = identical_flows(self.ptr[:n_net + 1], self.links[:cut])
        if n_net == self.n_flows:
            return rep_net, cls_net
        E, G = self.n_fabric, self.n_gpus
        src = self.links[cut::2] - E                 # NVLink flows: [E + src, E + G + dst]
        dst = self.links[cut + 1::2] - (E + G)
        # NVLS legs ([E + src, NVSwitch in] or [NVSwitch out, E + G + dst]) give ids past G: still a bijection.
        n = max(G, int(src.max()) + 1, int(dst.max()) + 1) if src.size else G
        rep_nvl, cls_nvl = pair_classes(src, dst, n)
        return (np.concatenate([rep_net, rep_nvl + n_net]),
                np.concatenate([cls_net, cls_nvl + rep_net.size]))


def pair_classes(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rep, cls)`` of the classes of equal ``(src, dst)`` pairs (ids in ``0..n-1``), numbered by their lowest
    member: a dense key table when the pairs are near the diagonal (``|dst - src| < w`` with ``n (2w - 1)`` slots at
    most :data:`DENSE_KEYS_PER_FLOW` per pair), else one sort.

    >>> rep, cls = pair_classes(np.array([3, 1, 3, 1]), np.array([2, 2, 2, 0]), 4)
    >>> rep.tolist(), cls.tolist()
    ([0, 1, 3], [0, 1, 0, 2])
    """
    m = src.size
    if m == 0:
        return np.zeros(0, dtype=IDX), np.zeros(0, dtype=IDX)
    gap = dst - src
    w = int(np.abs(gap).max()) + 1
    slots = n * (2 * w - 1)
    if slots <= DENSE_KEYS_PER_FLOW * m:
        key = src * (2 * w - 1) + (gap + (w - 1))
        first = np.full(slots, m, dtype=IDX)
        np.minimum.at(first, key, np.arange(m, dtype=IDX))
        lowest = first[key]                          # each pair's lowest member
    else:
        key = src * n + dst
        order = np.argsort(key, kind="stable")
        k = key[order]
        start = np.r_[True, k[1:] != k[:-1]]
        lowest = np.empty(m, dtype=IDX)
        lowest[order] = order[np.maximum.accumulate(np.where(start, np.arange(m), 0))]
    new = lowest == np.arange(m)
    number = np.cumsum(new) - 1
    return np.flatnonzero(new), number[lowest]


def keyed_classes(pair: np.ndarray, repeat: int, code: np.ndarray, n_pairs: int, dense: int,
                  total: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rep, cls)`` of the classes of equal ``(pair, code)`` over flows numbered by their lowest member, as
    :func:`sim.core.maxmin.identical_rows` numbers them: flow ``f`` has ``pair[f // repeat]`` (ids in
    ``0..n_pairs-1``) and ``code[f]`` (in ``0..total-1``). The router's choice codes (:func:`sim.fabric.routing.route`
    with ``choices=True``) with the connection's first and last link as the pair make equal keys exactly equal paths,
    so these are the classes of identical flows, found without sorting the rows: flows whose code is below
    ``dense`` (within a zone: a few choices) by a dense table of each key's lowest flow (``ufunc.at``, no sort; a
    sort of the exact keys where the table would be sparse), the others (across zones: many codes per pair) by
    one sort of their exact keys (no hash, nothing to confirm).

    >>> rep, cls = keyed_classes(np.array([0, 1]), 2, np.array([3, 3, 0, 3]), 2, 4, 4)
    >>> rep.tolist(), cls.tolist()
    ([0, 2, 3], [0, 0, 1, 2])
    """
    F = code.size
    if F == 0:
        return np.zeros(0, dtype=IDX), np.zeros(0, dtype=IDX)
    flows = np.arange(F, dtype=IDX)
    far = np.flatnonzero(code >= dense)
    # Codes from ``dense`` on share one slot per pair here (their lowest is then found by the sort below).
    width = dense + 1 if far.size else dense
    key = np.repeat(pair.astype(IDX) * width, repeat)
    key += np.minimum(code, dense) if far.size else code
    slots = n_pairs * width
    if slots <= DENSE_KEYS_PER_FLOW * F:
        first = np.full(slots, F, dtype=IDX)
        np.minimum.at(first, key, flows)
        lowest = first[key]
        del first
    else:
        lowest = _lowest_sorted(key, flows, slots)
    del key
    if far.size:
        key = pair[far // repeat].astype(IDX) * (total - dense) + (code[far] - dense)
        lowest[far] = _lowest_sorted(key, far, n_pairs * (total - dense))
    new = lowest == flows
    del flows
    number = np.cumsum(new)
    number -= 1
    return np.flatnonzero(new), number[lowest]


def _lowest_sorted(key: np.ndarray, members: np.ndarray, bound: int) -> np.ndarray:
    """For each of ``members`` (ascending flow ids) the lowest member with its ``key`` (in ``0..bound-1``): one sort
    of the keys packed above the members' positions, or a stable argsort where they do not fit in 63 bits."""
    m = members.size
    if m == 0:
        return members
    bits = max(1, (m - 1).bit_length())
    if max(1, int(bound) - 1).bit_length() + bits <= 63:
        packed = (key.astype(np.int64) << bits) | np.arange(m, dtype=np.int64)
        packed.sort()
        order = packed & ((1 << bits) - 1)
        k = packed >> bits
    else:
        order = np.argsort(key, kind="stable")
        k = key[order]
    start = np.r_[True, k[1:] != k[:-1]]
    head = order[np.maximum.accumulate(np.where(start, np.arange(m), 0))]
    out = np.empty(m, dtype=IDX)
    out[order] = members[head]
    return out
