"""NCCL's algorithms beyond Ring and Tree as phases of the flow core: NVLS and NVLS-Tree (NVLink SHARP: the
NVSwitch reduces and multicasts), PAT (one GPU per node), and why NCCL would not run one (CollNet needs in-network
reduction, which no fabric of the twin has). :func:`plan` plans any of NCCL's algorithms, the ring and tree by
:func:`sim.fabric.collectives.plan_collective`. docs/engine.md "NCCL's algorithms"; NCCL 2.30.7 [S6] [S11].
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.collectives import (ALGORITHM_COLLECTIVES, ALGORITHMS, SWITCH_DOWN, SWITCH_UP, CollectiveError,
                                    CollectivePlan, HostGroups, Phase, canonical, dtree_parents, host_groups,
                                    plan_collective)


def plan(collective: str, gpus, gpu_host, algorithm: str = "ring", *, nvls: bool = False, sharp: bool = False,
         intra_order: str = "gpu", **kw) -> CollectivePlan:
    """The phases of ``collective`` with any of NCCL's ``algorithm`` (:data:`sim.fabric.collectives.ALGORITHMS`):
    ring and tree (and AllToAll) by :func:`sim.fabric.collectives.plan_collective` (``kw``: its options);
    ``nvls``: the hosts' GPUs have NVLink SHARP (:func:`sim.fabric.achievable.nvls_supported`); ``sharp``: the
    fabric's switches reduce in the network (CollNet). CollectiveError where NCCL would not run it, saying why."""
    name = canonical(collective)
    if algorithm in ("ring", "tree", "direct") or name == "alltoall":
        return plan_collective(name, gpus, gpu_host, algorithm, intra_order=intra_order, **kw)
    if algorithm not in ALGORITHMS:
        raise CollectiveError(f"unknown algorithm {algorithm!r}: choose one of {', '.join(ALGORITHMS)}")
    if name not in ALGORITHM_COLLECTIVES[algorithm]:
        raise CollectiveError(f"NCCL's {algorithm} algorithm runs {', '.join(ALGORITHM_COLLECTIVES[algorithm])} "
                              f"only, not {name}")
    g = host_groups(gpus, gpu_host, intra_order)
    gpus = np.asarray(gpus, dtype=IDX)
    n = gpus.size
    _check_available(algorithm, g, n, nvls, sharp)
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
    if algorithm.startswith("collnet") and not sharp:
        return (f"{algorithm} needs in-network reduction (InfiniBand switches with SHARP and NCCL's CollNet "
                f"plugin); the twin's fabrics have no such switches, so NCCL would not offer it")
    if algorithm.startswith("collnet"):
        return f"{algorithm}: in-network reduction is not modelled"
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
