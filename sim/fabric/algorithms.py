"""NCCL's algorithms beyond Ring and Tree as phases of the flow core: NVLS and NVLS-Tree (NVLink SHARP: the
NVSwitch reduces and multicasts), CollNet Chain and Direct (InfiniBand SHARP: the fabric's switches reduce), PAT
(one GPU per node), and why NCCL would not run one (CollNet needs SHARP switches and several nodes, NVLS NVLink
SHARP...). :func:`plan` plans any of NCCL's algorithms, the ring and tree by
:func:`sim.fabric.collectives.plan_collective`. docs/engine.md "NCCL's algorithms", "CollNet"; NCCL 2.30.7 [S6]
[S11], SHARP [S140] [S142].
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.collectives import (ALGORITHM_COLLECTIVES, ALGORITHMS, SHARP_DOWN, SHARP_UP, SWITCH_DOWN,
                                    SWITCH_UP, CollectiveError, CollectivePlan, HostGroups, Phase, canonical,
                                    dtree_parents, host_groups, plan_collective)
from sim.fabric.nccl import ring_channels
from sim.core.units import GB

MAXCHANNELS = 64            # NCCL's MAXCHANNELS (src/include/device.h)
COLLNET_NODE_THRESHOLD = 2  # NCCL_COLLNET_NODE_THRESHOLD's default (init.cc): CollNet off below 2 nodes


def plan(collective: str, gpus, gpu_host, algorithm: str = "ring", *, nvls: bool = False, sharp: bool = False,
         intra_order: str = "gpu", channels: int | None = None, **kw) -> CollectivePlan:
    """The phases of ``collective`` with any of NCCL's ``algorithm`` (:data:`sim.fabric.collectives.ALGORITHMS`):
    ring and tree (and AllToAll) by :func:`sim.fabric.collectives.plan_collective` (``kw``: its options);
    ``nvls``: the hosts' GPUs have NVLink SHARP (:func:`sim.fabric.achievable.nvls_supported`); ``sharp``: the
    fabric's switches reduce in the network (CollNet). CollectiveError where NCCL would not run it, saying why."""
    name = canonical(collective)
    if algorithm in ("ring", "tree", "direct") or name == "alltoall":
        return plan_collective(name, gpus, gpu_host, algorithm, intra_order=intra_order, channels=channels, **kw)
    if algorithm not in ALGORITHMS:
        raise CollectiveError(f"unknown algorithm {algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
    if name not in ALGORITHM_COLLECTIVES[algorithm]:
        raise CollectiveError(f"NCCL's {algorithm} algorithm runs {', '.join(ALGORITHM_COLLECTIVES[algorithm])} "
                              f"only, not {name}")
    g = host_groups(gpus, gpu_host, intra_order)
    gpus = np.asarray(gpus, dtype=IDX)
    n = gpus.size
    _check_available(algorithm, g, n, nvls, sharp)
    if algorithm.startswith("collnet"):
        C = collnet_channels(g, channels, kw)
        out = CollectivePlan(collective=name, algorithm=algorithm, n_ranks=n, gpus=gpus, n_hosts=g.n_hosts,
                             channels=C)
        out.phases.append(_collnet_chain(g, C) if algorithm == "collnet_chain" else _collnet_direct(g, C))
        return out
    C = int(g.size.max()) if algorithm != "pat" else 1
    out = CollectivePlan(collective=name, algorithm=algorithm, n_ranks=n, gpus=gpus, n_hosts=g.n_hosts, channels=C)
    if n > 1:
        out.phases += (_nvls(g, name) if algorithm == "nvls" else _nvls_tree(g) if algorithm == "nvls_tree"
                       else _pat(g.ordered, name))
    return out


def algorithm_unavailable(algorithm: str, hosts: int, ranks: int, equal_hosts: bool, nvls: bool,
                          sharp: bool) -> str | None:
    """Why NCCL would not run ``algorithm`` here (``None``: it can), by NCCL's enable rules (tuning.cc, enqueue.cc,
    search.cc [S6]): NVLS needs NVLink SHARP (Hopper and an NVSwitch) and, across hosts, CollNet (SHARP in the
    network); NVLS-Tree needs NVLS and several hosts (NCCL disables it on one node); CollNet needs in-network
    reduction; PAT one GPU per node."""
    if algorithm in ("nvls", "nvls_tree") and not nvls:
        return f"{algorithm} needs NVLink SHARP (an NVSwitch of the 3rd generation with Hopper or later GPUs)"
    if algorithm == "nvls" and hosts > 1 and not sharp:
        return ("nvls across hosts is NCCL's NVLS with CollNet (SHARP switches in the network), which this fabric "
                "has not: nvls_tree is NCCL's NVLS across hosts (allreduce)")
    if algorithm == "nvls_tree" and hosts == 1:
        return "nvls_tree runs across hosts only (NCCL disables it on a single node): use nvls"
    if algorithm == "nvls_tree" and not equal_hosts:
        return "nvls_tree needs the same number of ranks on every host"
    if algorithm == "nvls" and hosts > 1:
        return ("nvls across hosts (NCCL's NVLS with CollNet: the NVSwitch and the SHARP switches together) is not "
                "modelled: nvls_tree, collnet_chain or collnet_direct are")
    if algorithm.startswith("collnet") and not sharp:
        return (f"{algorithm} needs in-network reduction: InfiniBand switches with SHARP (catalog key sharp: NVIDIA "
                f"Quantum, Quantum-2) and NCCL's CollNet plugin; this fabric's switches have none (Ethernet, RoCE "
                f"and EFA never do), so NCCL would not offer it")
    if algorithm.startswith("collnet") and hosts < COLLNET_NODE_THRESHOLD:
        return (f"{algorithm} reduces across hosts: NCCL turns CollNet off below {COLLNET_NODE_THRESHOLD} nodes "
                f"(NCCL_COLLNET_NODE_THRESHOLD); use nvls or ring in one host")
    if algorithm.startswith("collnet") and not equal_hosts:
        return f"{algorithm} needs the same number of ranks on every host (one chain or one set of heads per host)"
    if algorithm == "pat" and ranks != hosts:
        return "pat runs with one GPU per node only (NCCL's PAT_ENABLE default)"
    return None


def _check_available(algorithm: str, g: HostGroups, n: int, nvls: bool, sharp: bool) -> None:
    why = algorithm_unavailable(algorithm, g.n_hosts, n, bool((g.size == g.size[0]).all()), nvls, sharp)
    if why:
        raise CollectiveError(why)


def _switch_legs(g: HostGroups, up: float, down: float, group: np.ndarray | None = None, stage: int = 0):
    """Every GPU's two NVLS legs: into its host's NVSwitch (``up`` bytes per byte of message size) and out of it
    (``down``). ``(src, dst, share, switch)``, src = dst = the GPU."""
    gp = g.ordered
    src = np.concatenate([gp, gp])
    share = np.concatenate([np.full(gp.size, up), np.full(gp.size, down)])
    sw = np.repeat(np.array([SWITCH_UP, SWITCH_DOWN], dtype=np.int8), gp.size)
    return src, share, sw


def _nvls(g: HostGroups, name: str) -> list[Phase]:
    """NVLS inside one host (NCCL's NVLS algorithm, ``src/device/all_reduce.h``, ``all_gather.h``,
    ``reduce_scatter.h``): the NVSwitch reduces what the GPUs read through it (``multimem.ld_reduce``) and
    replicates what they store (``multimem.st``). Each of the host's ``m`` GPUs owns ``S / m`` of the buffer.
    ReduceScatter: each GPU's whole buffer goes into the switch (``S``), its reduced share comes out (``S / m``).
    AllGather: each GPU stores its share (``S / m``) and receives everything (``S``). AllReduce: both, pipelined:
    ``S + S / m`` each way per GPU. One phase, one NVLink hop of latency (NCCL charges NVLS one intra-node
    latency)."""
    m = int(g.size[0])
    up, down = {"reducescatter": (1.0, 1.0 / m), "allgather": (1.0 / m, 1.0),
                "allreduce": (1.0 + 1.0 / m, 1.0 + 1.0 / m)}[name]
    src, share, sw = _switch_legs(g, up, down)
    return [Phase("nvls", src, src.copy(), share, np.zeros(src.size, dtype=IDX), steps=1, switch=sw)]


def _nvls_tree(g: HostGroups) -> list[Phase]:
    """NVLS-Tree AllReduce across hosts (NCCL's ``runTreeSplit`` of NVLS_TREE): inside each host the NVSwitch
    reduces each GPU's share ``S / m`` (GPU ``i`` is the head of share ``i``, on its own NIC), the heads of share
    ``i`` of all hosts reduce and broadcast it over NCCL's double binary tree of hosts (each tree half the share),
    and the switch multicasts the result: ``S + S / m`` each way over each GPU's NVLink, and a tree's bytes on each
    NIC. One pipelined phase; latency: up and down the trees plus one NVLink hop."""
    m, h = int(g.size[0]), g.n_hosts
    table = g.ordered.reshape(h, m)                                # host x head
    s_parts, d_parts, grp_parts, stg_parts, nxt_parts = [], [], [], [], []
    base = 0
    for t, parent in enumerate(dtree_parents(h)):
        kids = np.flatnonzero(parent >= 0)
        k = kids.size
        kid_index = np.full(h, -1, dtype=IDX)
        kid_index[kids] = np.arange(k)
        host_next = np.where(kid_index[parent[kids]] >= 0, kid_index[parent[kids]], -1)   # up: parent's edge
        for i in range(m):
            up_s, up_d = table[kids, i], table[parent[kids], i]
            s_parts += [up_s, up_d]
            d_parts += [up_d, up_s]
            # Up: a host's edge leads to its parent's edge; down: the same path walked back (same length).
            nxt_parts += [np.where(host_next >= 0, host_next + base, -1),
                          np.where(host_next >= 0, host_next + base + k, -1)]
            grp_parts += [np.full(2 * k, 2 * i + t, dtype=IDX)]
            stg_parts += [np.repeat(np.arange(2, dtype=IDX), k)]
            base += 2 * k
    src, dst = np.concatenate(s_parts), np.concatenate(d_parts)
    legs_src, legs_share, legs_sw = _switch_legs(g, 1.0 + 1.0 / m, 1.0 + 1.0 / m)
    head = np.tile(np.arange(m), h).astype(IDX)                   # each GPU's share (its position in the host)
    head = np.concatenate([head, head])
    P = src.size
    return [Phase("nvls-tree", np.concatenate([src, legs_src]), np.concatenate([dst, legs_src]),
                  np.concatenate([np.full(P, 0.5 / m), legs_share]), np.zeros(P + legs_src.size, dtype=IDX),
                  steps=1, lat_next=np.concatenate(nxt_parts + [np.full(legs_src.size, -1, dtype=IDX)]),
                  lat_span=0, lat_group=np.concatenate(grp_parts + [2 * head]),
                  lat_stage=np.concatenate(stg_parts + [np.full(legs_src.size, 2, dtype=IDX)]),
                  switch=np.concatenate([np.zeros(P, dtype=np.int8), legs_sw]))]


def collnet_channels(g: HostGroups, channels: int | None, kw: dict) -> int:
    """CollNet's channels: the ring's count (NCCL's CollNet graphs take the ring graph's ``nChannels``, init.cc),
    raised by half for CollNet Chain with several GPUs per node, as ``ncclTopoPostset`` adds channels "to saturate
    intra-node bandwidth" (connect.cc; at most MAXCHANNELS). ``channels``: forced (NCCL_MIN/MAX_NCHANNELS)."""
    if channels:
        return int(channels)
    m = int(g.size.max())
    ring = ring_channels(m, g.n_hosts, nic_gbps=kw.get("nic_bandwidth", 50e9) / GB,
                         min_channels=kw.get("min_channels"), max_channels=kw.get("max_channels"))
    return min(MAXCHANNELS, ring + ring // 2) if m > 1 and kw.get("max_channels") is None else ring


def _sharp_legs(heads: np.ndarray, share: float):
    """Each head's two SHARP legs, up its NIC into the aggregation tree and back down (``src = dst = head``)."""
    src = np.concatenate([heads, heads])
    sw = np.repeat(np.array([SHARP_UP, SHARP_DOWN], dtype=np.int8), heads.size)
    return src, np.full(src.size, share), sw


def _collnet_chain(g: HostGroups, C: int) -> Phase:
    """CollNet Chain AllReduce (NCCL's ``RunWorkColl<AllReduce, COLLNET_CHAIN>``, ``src/device/all_reduce.h``;
    chains from ``connect.cc``): per channel ``c`` the host's GPUs form a chain whose head (position 0, GPU
    ``c mod m`` of the host, on its own NIC) has the network as its parent. Each channel's ``S / C`` is reduced up
    the chain (every edge carries it), the head sends it up its NIC into the switches' SHARP tree once and receives
    the reduced result once, then broadcasts it down the chain. Per NIC: ``S / m`` each way (its ``C / m`` channels)
    against a ring's ``2 S (N - 1) / (N m)``; per GPU's NVLink ``2 S (m - 1) / m`` out. The tree's switch links
    carry one stream per child and direction: a leaf's uplink one channel's stream where its NICs carry one each,
    so no more loaded than the NICs below it; they are left to the NIC legs (docs/engine.md "CollNet"). One
    pipelined phase; latency per channel: up the chain, the SHARP round trip (one network hop), down the chain."""
    m, h = int(g.size[0]), g.n_hosts
    table = g.ordered.reshape(h, m)
    c = np.arange(C)
    pos = (c[:, None] + np.arange(m)[None, :]) % m                    # (C, m) chain position -> host column
    chain = table[:, pos]                                              # (h, C, m) GPU at each position
    child, parent = chain[:, :, 1:].reshape(-1), chain[:, :, :-1].reshape(-1)   # edge j -> j - 1, (h, C, m - 1)
    heads = chain[:, :, 0].reshape(-1)                                 # (h C,)
    E = child.size
    j = np.broadcast_to(np.arange(1, m), (h, C, m - 1)).reshape(-1)    # the child's position of each edge
    idx = np.arange(E, dtype=IDX)
    hc = np.repeat(np.arange(h * C, dtype=IDX), m - 1)                 # (host, channel) of each edge
    up_src, up_dst, dn_src, dn_dst = child, parent, parent, child
    sh_src, sh_share, sh_sw = _sharp_legs(heads, 1.0 / C)
    K = heads.size
    # Transfers: [up edges E | down edges E | SHARP up K | SHARP down K]
    up_next = np.where(j > 1, idx - 1, 2 * E + hc)                     # towards the head, then its SHARP leg
    dn_next = np.where(j < m - 1, E + idx + 1, -1)                     # away from the head
    nxt = np.concatenate([up_next, dn_next, np.full(K, -1, dtype=IDX), np.full(K, -1, dtype=IDX)])
    chan_e = np.tile(np.repeat(c, m - 1), h).astype(IDX)
    chan_k = np.tile(c, h).astype(IDX)
    group = np.concatenate([chan_e, chan_e, chan_k, C + chan_k])       # the down legs apart: the up leg times the trip
    stage = np.concatenate([np.zeros(E, IDX), np.ones(E, IDX), np.zeros(K, IDX), np.zeros(K, IDX)])
    src = np.concatenate([up_src, dn_src, sh_src])
    dst = np.concatenate([up_dst, dn_dst, sh_src])
    share = np.concatenate([np.full(2 * E, 1.0 / C), sh_share])
    sw = np.concatenate([np.zeros(2 * E, dtype=np.int8), sh_sw])
    return Phase("collnet-chain", src, dst, share, np.concatenate([chan_e, chan_e, chan_k, chan_k]), steps=1,
                 lat_next=nxt, lat_span=0, lat_group=group, lat_stage=stage, switch=sw)


def _collnet_direct(g: HostGroups, C: int) -> Phase:
    """CollNet Direct AllReduce (NCCL's ``RunWorkColl<AllReduce, COLLNET_DIRECT>``): every GPU of the host with a
    NIC is a head (``nHeads`` = the host's GPUs on NIC-per-GPU hosts); each GPU scatters ``S / m`` of its buffer to
    every other head over NVLink (all-to-all inside the host), each head reduces its share, sends it up its NIC into
    the SHARP tree once and receives the result once, and gathers it back to every GPU. Per NIC ``S / m`` each way,
    as CollNet Chain; per GPU's NVLink ``2 S (m - 1) / m`` out, in one hop rather than a chain. One phase (the
    channels only split the same pairs' bytes, so they are one transfer per pair); latency: one NVLink hop, the
    SHARP round trip, one NVLink hop."""
    m, h = int(g.size[0]), g.n_hosts
    table = g.ordered.reshape(h, m)
    a = np.repeat(np.arange(m), m)
    b = np.tile(np.arange(m), m)
    keep = a != b
    a, b = a[keep], b[keep]                                            # (m (m - 1),) sender column, head column
    src = table[:, a].reshape(-1)
    head = table[:, b].reshape(-1)
    P = src.size
    heads = g.ordered
    K = heads.size
    head_pos = np.tile(b, h).astype(IDX)                               # a transfer's head column
    head_index = np.repeat(np.arange(h, dtype=IDX) * m, a.size) + head_pos   # that head's index in g.ordered
    sh_src, sh_share, sh_sw = _sharp_legs(heads, 1.0 / m)
    col = np.tile(np.arange(m, dtype=IDX), h)
    # Transfers: [scatter P | gather P | SHARP up K | SHARP down K]
    nxt = np.concatenate([2 * P + head_index, np.full(P, -1, IDX), np.full(2 * K, -1, IDX)])
    group = np.concatenate([head_pos, head_pos, col, m + col])
    stage = np.concatenate([np.zeros(P, IDX), np.full(P, 2, IDX), np.zeros(K, IDX), np.zeros(K, IDX)])
    return Phase("collnet-direct", np.concatenate([src, head, sh_src]), np.concatenate([head, src, sh_src]),
                 np.concatenate([np.full(2 * P, 1.0 / m), sh_share]), np.full(2 * P + 2 * K, -1, dtype=IDX),
                 steps=1, lat_next=nxt, lat_span=0, lat_group=group, lat_stage=stage,
                 switch=np.concatenate([np.zeros(2 * P, dtype=np.int8), sh_sw]))


def pat_steps(n: int) -> int:
    """PAT's steps over ``n`` ranks: ``ceil(log2 n)``."""
    return max(int(n - 1).bit_length(), 0)


def _pat(order: np.ndarray, name: str) -> list[Phase]:
    """PAT (NCCL 2.23+, ``src/device/prims_*``, ``PatAGAlgorithm`` / ``PatRSAlgorithm``) with one GPU per node:
    AllGather in ``ceil(log2 N)`` steps of doubling distance, step ``k`` sending the ``min(2^k, N - 2^k)`` shares of
    ``S / N`` gathered so far to the rank ``2^k`` before (Bruck's pattern: every rank sends ``N - 1`` shares in
    all, as a ring does, in log steps); ReduceScatter the same steps reversed, the data flowing the other way.
    One phase per step (each a synchronous exchange), each one network hop of latency."""
    n = order.size
    phases = []
    for k in range(pat_steps(n)):
        d = 1 << k
        src = order
        dst = np.roll(order, d)                                    # rank r -> rank r - d (mod n)
        share = np.full(n, min(d, n - d) / n)
        phases.append(Phase(f"pat-{k}", src, dst, share, np.zeros(n, dtype=IDX), steps=1))
    if name == "reducescatter":
        phases = [Phase(f"pat-{i}", p.dst, p.src, p.share, p.channel, steps=1) for i, p in enumerate(phases[::-1])]
    return phases
