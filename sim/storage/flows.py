"""Flows on a storage system (:mod:`sim.storage.topology`), shared by the checkpoint and the fan-out: the store a
request names and its usable servers, host <-> server paths routed on the frontend fabric, and the CSR pieces
(flows collected block by block, resources prepended and appended to routed paths) the flow simulation takes.
"""
from __future__ import annotations

import numpy as np

from sim.core.errors import ParamError
from sim.core.units import IDX
from sim.fabric.routing import route
from sim.storage.stores import store_model


class FlowBlocks:
    """Flows collected block by block, then one CSR."""

    def __init__(self):
        self.parts = []

    def add(self, ptr, links, size, cat, host, server=None, group=None, after=None, cap=None, persistent=False):
        n = len(size)
        full = lambda v, d: np.full(n, d) if v is None else np.broadcast_to(v, (n,))  # noqa: E731
        self.parts.append(dict(ptr=np.asarray(ptr, IDX), links=np.asarray(links, IDX),
                               size=np.asarray(size, np.float64), cat=np.full(n, cat, IDX),
                               host=full(host, -1).astype(IDX), server=full(server, -1).astype(IDX),
                               group=full(group, -1).astype(IDX), after=full(after, -1).astype(IDX),
                               cap=full(cap, np.inf).astype(np.float64), persistent=full(persistent, False)))

    def build(self) -> dict:
        out = {}
        base, ptrs = 0, [np.zeros(1, IDX)]
        for p in self.parts:
            ptrs.append(p["ptr"][1:] + base)
            base += int(p["ptr"][-1])
        out["ptr"] = np.concatenate(ptrs)
        for k in ("links", "size", "cat", "host", "server", "group", "after", "cap", "persistent"):
            out[k] = np.concatenate([p[k] for p in self.parts]) if self.parts else np.zeros(0)
        out["persistent"] = out["persistent"].astype(bool)
        return out


def pairs_csr(first, second):
    """CSR of two-resource flows ``[first[i], second[i]]``."""
    first, second = np.asarray(first, IDX), np.asarray(second, IDX)
    return np.arange(0, 2 * first.size + 1, 2, dtype=IDX), np.stack([first, second], 1).ravel()


def wrap_links(ptr, links, before, after_):
    """CSR with the per-flow resources ``before`` (F, a) prepended and ``after_`` (F, b) appended."""
    F = len(ptr) - 1
    before = np.asarray(before, IDX).reshape(F, -1)
    after_ = np.asarray(after_, IDX).reshape(F, -1)
    a, b = before.shape[1], after_.shape[1]
    deg = np.diff(ptr)
    new_ptr = np.zeros(F + 1, IDX)
    np.cumsum(deg + a + b, out=new_ptr[1:])
    out = np.empty(int(new_ptr[-1]), IDX)
    pos = new_ptr[:-1]
    for j in range(a):
        out[pos + j] = before[:, j]
    mid = np.repeat(pos + a - ptr[:-1], deg) + np.arange(len(links))
    out[mid] = links
    for j in range(b):
        out[pos + a + deg + j] = after_[:, j]
    return new_ptr, out


def store_of(layout, store: str):
    """The model of the store ``store`` names; :class:`ParamError` on ``store`` when the cluster has none."""
    kinds = [s.kind for s in layout.spec.storage]
    if store not in kinds:
        raise ParamError("store", f"the cluster {layout.spec.name} has no {store} storage "
                                  f"(it has: {', '.join(kinds) or 'none'})")
    return store_model(store)


def usable_servers(layout, st, k: int, store: str, servers: int | None) -> np.ndarray:
    """Layout ids of the usable servers of storage cluster ``k`` (the first ``servers`` of them)."""
    srv = np.flatnonzero((np.asarray(layout.server_storage) == k) & st.server_usable)
    if srv.size == 0:
        raise ParamError("store", f"{store} has no usable server (all failed, drained or cut off)")
    if servers is not None:
        if servers > srv.size:
            raise ParamError("servers", f"asked for {servers:,} servers but {store} has only {srv.size:,} usable")
        srv = srv[:servers]
    return srv


def turns(owner: np.ndarray) -> np.ndarray:
    """Each flow's ordinal among the flows of the same owner (0, 1, 2 ... in flow order), so an owner's flows take
    its NICs in turn. Counting flows globally instead aliases: when every host has an even number of flows, flow
    ``j`` of host ``w`` to server ``s`` has ``j`` of the parity of ``s``, and a server with two NICs sends all its
    flows through one of them."""
    owner = np.asarray(owner)
    order = np.argsort(owner, kind="stable")
    ranked = owner[order]
    start = np.r_[0, np.flatnonzero(ranked[1:] != ranked[:-1]) + 1] if owner.size else np.zeros(0, IDX)
    first = np.repeat(start, np.diff(np.r_[start, owner.size]))
    out = np.empty(owner.size, IDX)
    out[order] = np.arange(owner.size) - first
    return out


def route_data(st, hosts, srv, w, s, read: bool, seed: int):
    """Routed CSR of the flows host ``hosts[w]`` <-> server ``srv[s]`` (read: server -> host). A host's flows take
    its usable frontend NICs in turn, as do a server's (:func:`turns`)."""
    j = np.arange(w.size)
    hep = st.host_ep[hosts[w]]
    hn = np.maximum((hep >= 0).sum(1), 1)
    h_ep = hep[j, j % hn]
    sep = st.server_ep[srv[s]]
    sn = np.maximum((sep >= 0).sum(1), 1)
    s_ep = sep[j, turns(s) % sn]
    src, dst = (s_ep, h_ep) if read else (h_ep, s_ep)
    return route(st.topo, src, dst, None, "ecmp", seed)
