"""The roofline of a collective: the busbw it reaches when only the endpoints (NIC and NVLink) limit it, at their
*line rate*, the denominator of the normalized busbw (see :mod:`sim.fabric.netsim`). It is a reference, not a
prediction: the simulation runs at the achievable rates (:mod:`sim.fabric.achievable`: NCCL's NVLink per-link rate,
framing, PCIe, the NVSwitch's NVLS rate), so a run's normalized busbw stays below 100 % even on an ideal fabric.
NVLS's legs count on the GPUs' NVLink at line rate, the NVSwitch itself unlimited.
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX
from sim.fabric.algorithms import plan as plan_collective
from sim.fabric.collectives import SHARP_DOWN, SHARP_UP, SWITCH_DOWN, SWITCH_UP, CollectiveError, CollectivePlan
from sim.fabric.flows import NVLINK_DIRECTIONS


def roofline_busbw(collective: str, n: int, gpus_per_host: int, nic_bandwidth: float, nvlink_bandwidth: float,
                   algorithm: str = "ring", channels: int | None = None, plan: CollectivePlan | None = None, *,
                   nvls: bool = True, sharp: bool = False) -> float:
    """The busbw (bytes/s) the collective reaches on ``n`` GPUs packed on whole hosts when only the endpoints
    limit it: each GPU's NIC (``nic_bandwidth`` each way) and NVLink (``nvlink_bandwidth`` both ways together),
    the switch fabric ideal, latency zero. Computed from the same plan the simulation uses: per phase, the most
    loaded endpoint link sets the time. ``plan``: that plan when the caller already has it (a run whose placement
    is the packed one, :func:`packed_in_order`), so it is not made twice. PAT's hosts hold one GPU each (it runs
    only so); an algorithm the packed job cannot run (NVLS-Tree on one host) takes the ring's roofline.

    >>> roofline_busbw("allgather", 64, 8, 50e9, 900e9) / 1e9        # 8 rails x 50 GB/s
    400.0
    >>> round(roofline_busbw("allgather", 8, 8, 50e9, 900e9) / 1e9)  # one host: NVLink, 450 GB/s each way
    450
    """
    n = int(n)
    if n < 2:
        return np.inf
    gpus = np.arange(n, dtype=IDX)
    if algorithm == "pat":
        gpus_per_host = 1                             # PAT runs with one GPU per node only
    host = gpus // gpus_per_host
    if plan is None:
        try:
            plan = plan_collective(collective, gpus, host, algorithm, channels=channels,
                                   max_flows=max(n * (n - 1), 1), nvls=nvls, sharp=sharp)
        except CollectiveError:                       # packed, the job would not run it (NVLS-Tree on one host)
            plan = plan_collective(collective, gpus, host, "ring", channels=channels,
                                   max_flows=max(n * (n - 1), 1))
    nvl = nvlink_bandwidth / NVLINK_DIRECTIONS
    unit = 0.0
    for ph in plan.phases:
        inter = host[ph.src] != host[ph.dst]
        # Each endpoint's bytes over the network and over NVLink: the other kind's transfers weigh 0 (adding 0.0
        # leaves a sum as it is, and saves picking 9.4M transfers out by mask at 600k).
        net, nvlink = np.where(inter, ph.share, 0.0), np.where(inter, 0.0, ph.share)
        out_nvl, in_nvl, out_net, in_net = nvlink, nvlink, net, net
        if ph.switch is not None:                     # NVLS legs load one side only: egress up, ingress down
            out_nvl = np.where(ph.switch == SWITCH_DOWN, 0.0, nvlink)
            in_nvl = np.where(ph.switch == SWITCH_UP, 0.0, nvlink)
            sharp_leg = (ph.switch == SHARP_UP) | (ph.switch == SHARP_DOWN)
            if sharp_leg.any():                       # SHARP legs: the head's NIC out (up) or in (down) only
                out_nvl, in_nvl = np.where(sharp_leg, 0.0, out_nvl), np.where(sharp_leg, 0.0, in_nvl)
                out_net = net + np.where(ph.switch == SHARP_UP, ph.share, 0.0)
                in_net = net + np.where(ph.switch == SHARP_DOWN, ph.share, 0.0)
        loads = [np.bincount(ph.src, out_net, minlength=n) / nic_bandwidth,
                 np.bincount(ph.dst, in_net, minlength=n) / nic_bandwidth,
                 np.bincount(ph.src, out_nvl, minlength=n) / nvl,
                 np.bincount(ph.dst, in_nvl, minlength=n) / nvl]
        unit += ph.steps * max(float(x.max()) for x in loads)
    return plan.busbw_factor / unit


def packed_in_order(gpus: np.ndarray, gpu_host, per_host: int) -> bool:
    """Whether rank ``r`` is on GPU ``r`` and the hosts hold consecutive runs of ``per_host`` ranks (host ids
    consecutive too): the placement :func:`roofline_busbw` plans for, so a run's plan is the roofline's (rings
    and trees follow the hosts' grouping and GPU order, which are then the same)."""
    n = gpus.size
    if int(gpus[0]) != 0 or int(gpus[-1]) != n - 1 or not np.array_equal(gpus, np.arange(n)):
        return False
    hosts = np.asarray(gpu_host)[:n]
    return bool(np.array_equal(hosts - hosts[0], np.arange(n) // per_host))
