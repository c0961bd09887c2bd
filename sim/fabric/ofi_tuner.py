"""aws-ofi-nccl's tuner: the algorithm and protocol NCCL runs on AWS where the plugin's tuner is loaded.

aws-ofi-nccl ships a tuner plugin (``NCCL_TUNER_PLUGIN``, on by default on AWS platforms since v1.16.0 [S150]) that
replaces NCCL's own choice of algorithm and protocol by regions measured per platform: polygons in the plane of
(message bytes, ranks), each naming an algorithm and a protocol (``src/tuner/nccl_ofi_regions.cpp`` [S151]). For a
collective of ``nBytes`` over ``nRanks`` NCCL asks the tuner (its v3 API, ``region_get_coll_info_internal_v3``): the
first region, in the file's order, whose algorithm and protocol NCCL still allows (its cost table entry is not
``NCCL_ALGO_PROTO_IGNORE``: the protocol is enabled, NVLS is supported) and which holds the point (inside or on an
edge, ``is_inside_region``'s ray casting) gets cost 0, so NCCL runs it. No region holds the point, or the
communicator has 2 nodes or fewer ("the regions are not well defined", v1.15.0): NCCL's own model decides
(:func:`sim.fabric.nccl_tuning.choose_algo`).

Regions exist for p5 / p5e (here), p5en and p6 (not modelled: no preset of the twin has them); p4d / p4de have
none, so NCCL's own model decides there. A NIC model names its platform's regions with the catalog key
``ofi_tuner`` (``"p5"``); the NIC's transport must be EFA (:mod:`sim.fabric.netplugin`; the catalog refuses the key
on another NIC).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

TUNER_MAX_RANKS = 1024.0 * 1024          # nccl_ofi_tuner_region.h
TUNER_MAX_SIZE = 100.0 * 1024 ** 3
TUNER_MIN_NODES = 3                      # regions skipped on 2 nodes or fewer (v1.15.0)
TUNER_PLATFORMS = ("p5",)                # the catalog key ofi_tuner's values with regions here
EPS = 1e-10

Point = tuple[float, float]


@dataclass(frozen=True)
class Region:
    """One region: the algorithm (the twin's name) and protocol NCCL runs for a point inside ``vertices``."""

    algorithm: str
    protocol: str
    vertices: tuple[Point, ...]


def _intersect(x0: Point, x1: Point, y0: Point, y1: Point, eps: float) -> tuple[int, Point | None]:
    """Whether segment x0->x1 crosses y0->y1: 1 yes, -1 no, 0 near y0 or y1 or parallel (the C's ``intersect``)."""
    dx = (x1[0] - x0[0], x1[1] - x0[1])
    dy = (y1[0] - y0[0], y1[1] - y0[1])
    d = dy[0] * dx[1] - dy[1] * dx[0]
    if abs(d) < eps:
        return 0, None
    a = ((x0[0] * dx[1] - x0[1] * dx[0]) - (y0[0] * dx[1] - y0[1] * dx[0])) / d
    sect = (y0[0] + a * dy[0], y0[1] + a * dy[1])
    if a < -eps or a > 1 + eps:
        return -1, sect
    if a < eps or a > 1 - eps:
        return 0, sect
    b = ((x0[0] * dy[1] - x0[1] * dy[0]) - (y0[0] * dy[1] - y0[1] * dy[0])) / d
    return (-1 if b < 0 or b > 1 else 1), sect


def _distance(x: Point, y0: Point, y1: Point, eps: float) -> float:
    """Distance from ``x`` to the segment y0->y1 along its normal; infinity outside the segment."""
    x1 = (x[0] + (y1[1] - y0[1]), x[1] - (y1[0] - y0[0]))
    r, s = _intersect(x, x1, y0, y1, eps)
    if r == -1 or s is None:
        return math.inf
    return math.hypot(s[0] - x[0], s[1] - x[1])


def inside(point: Point, vertices: tuple[Point, ...]) -> int:
    """1 inside, 0 on an edge, -1 outside (``is_inside_region``: the edge test, the bounding box, then a ray to a
    point beyond every region, counting the edges it crosses)."""
    n = len(vertices)
    for i in range(n):
        if _distance(point, vertices[i], vertices[(i + 1) % n], EPS) < EPS:
            return 0
    xs = [v[0] for v in vertices]
    ys = [v[1] for v in vertices]
    if not (min(xs) <= point[0] <= max(xs) and min(ys) <= point[1] <= max(ys)):
        return -1
    far = (2.0 * TUNER_MAX_SIZE, 2.0 * TUNER_MAX_RANKS)
    crosses = sum(_intersect(point, far, vertices[i], vertices[(i + 1) % n], EPS)[0] == 1 for i in range(n))
    return 1 if crosses & 1 else -1


def extend_region(a: Point, b: Point, z: Point) -> Point:
    """The farthest point on the line through ``a`` and ``b`` with ``z``'s x or y (``extend_region``)."""
    if a[0] == b[0]:
        return (a[0], z[1])
    if a[1] == b[1]:
        return (z[0], a[1])
    m = (a[1] - b[1]) / (a[0] - b[0])
    c = b[1] - m * b[0]
    zy = m * z[0] + c
    return (z[0], zy) if zy < z[1] else ((z[1] - c) / m, z[1])


MAX = (TUNER_MAX_SIZE, TUNER_MAX_RANKS)


@lru_cache(maxsize=None)
def _p5_allreduce_8() -> tuple[Region, ...]:
    """p5 / p5e AllReduce, 8 ranks per node (``region_init_internal_p5_p5e``, v1.16.3)."""
    tree_ll128 = extend_region((402653184, 2048), (402653184, 4096), MAX)
    nvlstree_1 = extend_region((8053063680, 160), (9663676416, 192), MAX)
    nvlstree_2 = extend_region((402653184, 2048), (402653184, 4096), MAX)
    ring_simple = extend_region((8053063680, 160), (9663676416, 192), MAX)
    return (
        Region("tree", "LL128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64), (301989888, 128),
                                 (301989888, 256), (335544320, 512), (536870912, 1024), (402653184, 2048),
                                 (402653184, 4096), tree_ll128, (0, tree_ll128[1]))),
        Region("nvls_tree", "Simple", ((31457281, 16), (TUNER_MAX_SIZE, 16), (31457281, 16))),
        Region("ring", "LL128", ((31457280, 17), (1073741824, 17), (2147483648, 64), (2147483648, 128),
                                 (1342177280, 160), (2147483648, 256), (1074790400, 256), (444596224, 160),
                                 (301989888, 128), (117440512, 64), (37748736, 32))),
        Region("nvls_tree", "Simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160), (9663676416, 192),
                                       nvlstree_1, nvlstree_2, (402653184, 4096), (402653184, 2048),
                                       (536870912, 1024), (335544320, 512), (301989888, 256), (310378496, 160),
                                       (444596224, 160), (1074790400, 256), (2684354560, 256), (2147483648, 224),
                                       (1342177280, 160))),
        Region("ring", "Simple", ((1073741824, 17), (ring_simple[0], 17), ring_simple, (9663676416, 192),
                                  (8053063680, 160), (2684354560, 64), (1610612736, 32))),
    )


@lru_cache(maxsize=None)
def _p5_allreduce_1() -> tuple[Region, ...]:
    """p5 / p5e AllReduce, one rank per node."""
    tree_ll128 = extend_region((9999360, 64), (119477248, 128), MAX)
    ring_ll128 = extend_region((4736000, 2), (269484032, 128), MAX)
    return (
        Region("tree", "LL128", ((0, 16), (2367488, 16), (9999360, 64), (119477248, 128), tree_ll128)),
        Region("ring", "LL128", ((0, 2), (4736000, 2), (269484032, 128), ring_ll128, tree_ll128, (119477248, 128),
                                 (9999360, 64), (2367488, 16), (0, 16))),
        Region("ring", "Simple", ((4736000, 2), (TUNER_MAX_SIZE, 2), ring_ll128, (269484032, 128))),
    )


def regions(platform: str, collective: str, n_ranks: int, n_nodes: int) -> tuple[Region, ...]:
    """The tuner's regions for ``collective`` on ``platform`` with this communicator shape (none: NCCL decides).
    p5's regions for 2 ranks per node and its AllGather / ReduceScatter at one rank per node are not modelled
    (the twin's p5 runs 8 ranks per node)."""
    if platform != "p5" or collective != "allreduce":
        return ()
    if n_ranks == 8 * n_nodes:
        return _p5_allreduce_8()
    if n_ranks == n_nodes:
        return _p5_allreduce_1()
    return ()


def tuner_choice(platform: str | None, collective: str, size: int, n_ranks: int, n_nodes: int,
                 allowed) -> tuple[str, str] | None:
    """The tuner's (algorithm, protocol) for ``size`` bytes, or None where NCCL's own model decides (no tuner,
    2 nodes or fewer, no region holds the point). ``allowed(algorithm, protocol)``: whether NCCL's cost table
    still has the pair (the protocol enabled, NVLS supported); regions of pairs it lacks are skipped."""
    if not platform or n_nodes < TUNER_MIN_NODES:
        return None
    point = (float(size), float(n_ranks))
    for r in regions(platform, collective, n_ranks, n_nodes):
        if not allowed(r.algorithm, r.protocol):
            continue
        if inside(point, r.vertices) >= 0:
            return r.algorithm, r.protocol
    return None
