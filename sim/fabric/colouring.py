"""Bipartite edge colouring with vertex splitting (König's theorem, made constructive by Kempe-chain swaps): the
balanced assignment the traffic-engineering controller (:mod:`sim.fabric.te`) starts from. A graph algorithm of its
own, independent of fabrics and flows.
"""
from __future__ import annotations

import numpy as np

from sim.core.units import IDX

KEMPE_LIMIT = 400_000    # conflicting remainder edges repaired by Kempe chains; above this the local search does it


def colour(left, right, k: int, seed: int = 0) -> np.ndarray:
    """Colour the edges ``left[i] - right[i]`` of a bipartite multigraph with ``k`` colours so that every vertex of
    degree ``d`` has each colour at most ``ceil(d / k)`` times (König's theorem with vertex splitting;
    docs/sources.md [S19]).

    Whole rounds of ``k`` parallel edges take every colour once; the remaining edges are split per vertex into
    copies of at most ``k`` edges, coloured round-robin at the left copy (``seed`` rotates the start) and repaired
    at the right copy by alternating-path swaps. Returns (n,) int colours.

    >>> colour([0, 0, 1, 1], [0, 1, 0, 1], 2).tolist()
    [0, 1, 1, 0]
    """
    left = np.asarray(left, dtype=IDX)
    right = np.asarray(right, dtype=IDX)
    n = left.size
    out = np.full(n, -1, dtype=IDX)
    if n == 0:
        return out
    nr = int(right.max()) + 1
    # 1. whole rounds of k edges of one block (left, right) take each colour once
    block = left * nr + right
    order = np.argsort(block, kind="stable")
    rank, size = rank_in_groups(block[order])
    whole = rank < (size // k) * k
    out[order[whole]] = rank[whole] % k
    rest = order[~whole]
    if rest.size == 0:
        return out
    # 2. the remainder, split into vertex copies of at most k edges
    lc = _copies(left[rest], k)
    rc = _copies(right[rest], k)
    rot = (seed + left[rest] * 7) % k
    lrank, _ = _rank_in_groups_unsorted(lc)
    guess = (lrank + rot) % k                              # distinct at each left copy
    # keep the first edge of each (right copy, colour); the others are repaired
    key = rc * k + guess
    first = np.zeros(rest.size, dtype=bool)
    _, idx = np.unique(key, return_index=True)
    first[idx] = True
    col = np.where(first, guess, -1)
    todo = np.flatnonzero(~first)
    if todo.size and todo.size <= KEMPE_LIMIT:
        col = _kempe(lc, rc, col, todo, k)
    elif todo.size:
        col[todo] = guess[todo]                            # left balanced; the local search repairs the right
    out[rest] = col
    return out


def rank_in_groups(sorted_keys):
    """For a sorted key array: each element's rank within its run of equal keys, and the run's size."""
    n = sorted_keys.size
    start = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    sizes = np.diff(np.r_[start, n])
    rank = np.arange(n) - np.repeat(start, sizes)
    return rank, np.repeat(sizes, sizes)


def _rank_in_groups_unsorted(keys):
    order = np.argsort(keys, kind="stable")
    r, s = rank_in_groups(keys[order])
    rank, size = np.empty_like(r), np.empty_like(s)
    rank[order], size[order] = r, s
    return rank, size


def _copies(vertex, k: int) -> np.ndarray:
    """Split each vertex into copies of at most ``k`` of its edges; return each edge's copy id (dense)."""
    rank, _ = _rank_in_groups_unsorted(vertex)
    return np.unique(vertex * (1 << 20) + rank // k, return_inverse=True)[1].astype(IDX)


def _kempe(lc, rc, col, todo, k: int) -> np.ndarray:
    """Colour the edges ``todo`` (left copy ``lc``, right copy ``rc``) properly with ``k`` colours, the others being
    coloured already (``col``, proper): König's alternating-path argument, one edge at a time."""
    L = np.full((int(lc.max()) + 1, k), -1, dtype=IDX)
    R = np.full((int(rc.max()) + 1, k), -1, dtype=IDX)
    done = np.flatnonzero(col >= 0)
    L[lc[done], col[done]] = done
    R[rc[done], col[done]] = done
    L, R, col_l = L.tolist(), R.tolist(), col.tolist()
    lcl, rcl = lc.tolist(), rc.tolist()
    for e in todo.tolist():
        x, y = lcl[e], rcl[e]
        Lx, Ry = L[x], R[y]
        a = Lx.index(-1)                                   # free at x (x has at most k edges)
        if Ry[a] == -1:
            c = a
        else:
            b = Ry.index(-1)                               # free at y
            if Lx[b] == -1:
                c = b
            else:
                # walk the path from y along a, b, a, ... and swap a <-> b on it; it never reaches x
                path, node, on_right, want = [], y, True, a
                while True:
                    f = (R[node] if on_right else L[node])[want]
                    if f == -1:
                        break
                    path.append(f)
                    node = lcl[f] if on_right else rcl[f]
                    on_right = not on_right
                    want = b if want == a else a
                for f in path:
                    L[lcl[f]][col_l[f]] = -1
                    R[rcl[f]][col_l[f]] = -1
                for f in path:
                    col_l[f] = b if col_l[f] == a else a
                    L[lcl[f]][col_l[f]] = f
                    R[rcl[f]][col_l[f]] = f
                c = a
        col_l[e] = c
        L[x][c] = e
        R[y][c] = e
    return np.asarray(col_l, dtype=IDX)
