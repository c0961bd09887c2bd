"""Placement policies: which usable GPUs a job of ``n`` GPUs gets, as a rank -> GPU index map.

Model
-----
Only usable GPUs (``topo.gpu_usable``: GPU, NIC, NIC cable and leaf active) are ever placed. Ranks inside one host
are always consecutive, so a ring crosses the network once per host boundary (NVLink carries the rest).

- ``"topology"``: topology-aware, in the spirit of Meta's network-aware scheduler (keep traffic off the upper
  layers). Level by level (zones, then leaves among the chosen zones, then hosts among the chosen leaves; on a
  rail-optimized fabric a host's rail group of leaves counts as its leaf), the job
  takes the fewest units that hold it: if it fits in one unit, the unit with the fewest usable GPUs that still
  holds it (best fit, lowest id on ties); otherwise the largest units plus a best-fit unit for the remainder.
  Ranks follow layout order (GPU id), so consecutive ranks share hosts, then leaves, then zones. With every GPU
  usable this is the contiguous block of GPUs ``0..n-1``.
- ``"first-fit"``: the lowest usable GPU ids, blind to leaf and zone boundaries when GPUs are missing.
- ``"random"``: whole hosts drawn at random among the fully usable hosts (partially usable hosts only when those
  run out), ranks host by host in the random draw order: a scheduler that ignores the topology.
- ``"fragmented"``: a busy cluster: the job's hosts are a uniform random sample of the fully usable hosts of
  every zone (partially usable hosts only when those run out), ranks in host order; consecutive ranks usually sit
  under different leaves and often in different zones.

All are deterministic for a given ``seed`` (``numpy.random.default_rng(seed)``). Cost O(G log G) at most.
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.topology import Topology

PLACEMENTS = ("topology", "first-fit", "random", "fragmented")


def place(topo: Topology, n_gpus: int, policy: str = "topology", seed: int = 0) -> np.ndarray:
    """The GPU index of each rank ``0..n_gpus-1`` under ``policy``; ValueError when too few GPUs are usable."""
    if policy not in PLACEMENTS:
        raise ValueError(f"placement {policy!r} is not one of {', '.join(PLACEMENTS)}")
    n = int(n_gpus)
    usable = np.flatnonzero(topo.gpu_usable)
    if n < 1:
        raise ValueError(f"a job needs at least 1 GPU, asked for {n}")
    if n > usable.size:
        raise ValueError(f"asked for {n} GPUs but only {usable.size} of the cluster's {topo.n_gpus} are usable")
    if policy == "first-fit":
        return usable[:n].astype(IDX)
    if policy == "topology":
        group = topo.gpu_leaf if topo.gpu_leaf_group is None else topo.gpu_leaf_group
        levels = [topo.switch_zone[topo.gpu_leaf], group, topo.gpu_host]
        return np.sort(_pack(usable, levels, n)).astype(IDX)
    rng = np.random.default_rng(seed)
    return _whole_hosts(topo, usable, n, rng, shuffle=(policy == "random"))


def _pack(gpus: np.ndarray, levels: list[np.ndarray], n: int) -> np.ndarray:
    """``n`` of the (sorted) ``gpus``, in the fewest units of ``levels[0]``, then of ``levels[1]`` among those..."""
    if not levels:
        return gpus[:n]
    unit = levels[0][gpus]
    ids, size = np.unique(unit, return_counts=True)
    return _pack(gpus[np.isin(unit, _fewest_units(ids, size, n))], levels[1:], n)


def _fewest_units(ids: np.ndarray, size: np.ndarray, n: int) -> np.ndarray:
    """The fewest units (``ids`` holding ``size`` GPUs) that hold ``n``: best fit if one does, else the largest ones
    and a best-fit unit for the remainder. Ties go to the lowest id."""
    fits = size >= n
    if fits.any():
        return ids[fits][[np.argmin(size[fits])]]
    order = np.argsort(-size, kind="stable")
    cum = np.cumsum(size[order])
    k = int(np.searchsorted(cum, n))                           # units order[:k] in full, then one for the rest
    rest = n - (int(cum[k - 1]) if k else 0)
    others = order[k:]
    fit = others[size[others] >= rest]
    return np.r_[ids[order[:k]], ids[fit[np.argmin(size[fit])]]]


def _whole_hosts(topo: Topology, usable: np.ndarray, n: int, rng: np.random.Generator, shuffle: bool) -> np.ndarray:
    """``n`` usable GPUs in whole hosts drawn at random (fully usable hosts first); ranks in draw or host order."""
    n_hosts = int(topo.gpu_host.max()) + 1
    per_host = np.bincount(topo.gpu_host, minlength=n_hosts)
    usable_per_host = np.bincount(topo.gpu_host[usable], minlength=n_hosts)
    full = np.flatnonzero((usable_per_host == per_host) & (per_host > 0))
    partial = np.flatnonzero((usable_per_host > 0) & (usable_per_host < per_host))
    order = np.concatenate([rng.permutation(full), rng.permutation(partial)])
    cum = np.cumsum(usable_per_host[order])
    hosts = order[:int(np.searchsorted(cum, n)) + 1]
    if not shuffle:
        hosts = np.sort(hosts)
    # Usable GPUs of the chosen hosts, host by host in ``hosts`` order, GPUs of a host in slot order.
    pos = np.full(n_hosts, -1, dtype=IDX)
    pos[hosts] = np.arange(hosts.size)
    chosen = usable[pos[topo.gpu_host[usable]] >= 0]
    chosen = chosen[np.argsort(pos[topo.gpu_host[chosen]], kind="stable")]
    return chosen[:n].astype(IDX)
