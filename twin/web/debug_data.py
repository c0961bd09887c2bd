"""What the Debug page draws of one run (frontend/js/debug.js), built from the run's summary and arrays
(:mod:`twin.runs.debug_kinds`):

- a ``debug`` rehearsal: the culprit (its ranks, GPUs, hosts and links with their inventory ids), the straggler
  ranking, the dumps' download URL, and the heatmap of where each rank stopped: rows are ranks, or hosts when the
  job has more than HEATMAP_MAX_RANK_ROWS ranks (a host's row is its furthest-behind rank), columns the last
  HEATMAP_SEQS collective sequence ids; each cell a code of CELL_STATES (base64 uint8, rows x columns, row-major);
- a ``startup`` run: its summary as the engine wrote it (the curve's rows).
"""
from __future__ import annotations

import base64

import numpy as np

from twin.inventory.models import GPU, Host
from twin.runs.choices import RunStatus

HEATMAP_MAX_RANK_ROWS = 512     # more ranks than this: one row per host
HEATMAP_SEQS = 24               # the last collectives shown (columns)
# A heatmap cell: the rank (row) had not started that collective, started it without completing it, completed it.
CELL_NOT_STARTED, CELL_STARTED, CELL_COMPLETED = 0, 1, 2
CELL_STATES = {CELL_NOT_STARTED: "not started", CELL_STARTED: "started, not completed",
               CELL_COMPLETED: "completed"}


def _arrays(run, names) -> dict[str, np.ndarray]:
    return {a.name: a.unpack() for a in run.arrays.filter(name__in=names)}


def heatmap(rank_gpu: np.ndarray, started: np.ndarray, completed: np.ndarray, culprit_ranks, cluster) -> dict:
    """The stop-position heatmap (see the module docstring)."""
    n = int(rank_gpu.size)
    culprit = np.zeros(n, bool)
    ids = np.asarray([r for r in culprit_ranks if 0 <= r < n], dtype=np.int64)
    culprit[ids] = True
    if n > HEATMAP_MAX_RANK_ROWS:
        gpu_host = np.asarray(GPU.objects.filter(cluster=cluster).order_by("index").values_list("host_id", flat=True),
                              dtype=np.int64)
        host_of_rank = gpu_host[rank_gpu]
        hosts, row = np.unique(host_of_rank, return_inverse=True)
        row_started = np.full(hosts.size, np.iinfo(np.int32).max, np.int64)
        row_completed = row_started.copy()
        np.minimum.at(row_started, row, started)
        np.minimum.at(row_completed, row, completed)
        row_culprit = np.zeros(hosts.size, bool)
        row_culprit[row[culprit]] = True
        first_rank = np.full(hosts.size, n, np.int64)
        np.minimum.at(first_rank, row, np.arange(n))
        names = dict(Host.objects.filter(id__in=hosts.tolist()).values_list("id", "name"))
        labels = [names.get(int(h), str(h)) for h in hosts.tolist()]
        by, first = "host", first_rank.tolist()
    else:
        row_started, row_completed, row_culprit = started.astype(np.int64), completed.astype(np.int64), culprit
        labels, by, first = [f"rank {r}" for r in range(n)], "rank", list(range(n))
    top = int(started.max(initial=-1))
    seqs = np.arange(max(0, top - HEATMAP_SEQS + 1), top + 1, dtype=np.int64)
    cells = np.full((len(labels), seqs.size), CELL_NOT_STARTED, np.uint8)
    cells[seqs[None, :] <= row_started[:, None]] = CELL_STARTED
    cells[seqs[None, :] <= row_completed[:, None]] = CELL_COMPLETED
    return {"by": by, "rows": labels, "first_rank": first, "seqs": seqs.tolist(),
            "lag": (top - row_started).tolist(), "culprit": np.flatnonzero(row_culprit).tolist(),
            "cells": base64.b64encode(cells.tobytes()).decode(), "states": {str(k): v for k, v in CELL_STATES.items()}}


def run_data(run) -> dict:
    """The Debug page's view of ``run`` (a debug or startup run of the cluster)."""
    out = {"id": run.pk, "kind": run.kind, "status": run.status, "error": run.error, "params": run.params,
           "created_at": run.created_at.isoformat(), "summary": None}
    if run.status != RunStatus.SUCCEEDED or not run.summary:
        return out
    s = dict(run.summary)
    out["summary"] = s
    if run.kind == "debug":
        a = _arrays(run, ("rank_gpu", "rank_started", "rank_completed"))
        if len(a) == 3:
            culprit = s.get("culprit") or {}
            out["heatmap"] = heatmap(a["rank_gpu"].astype(np.int64), a["rank_started"], a["rank_completed"],
                                     culprit.get("ranks", []) if culprit.get("found") else [], run.cluster)
    return out
