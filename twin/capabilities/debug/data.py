"""What the Debug page draws of one run (frontend/js/debug.js), built from the run's summary and arrays
(:mod:`twin.capabilities.debug.kinds`):

- a ``debug`` rehearsal: the analyzer's result (docs/debugging.md) with the culprit's items and their inventory ids,
  the straggler ranking, the dumps' download URL, and the heatmap of where each rank stopped as the analyzer drew it
  (rows: ranks, or hosts past 1,024 ranks; columns: instants up to the last event, ``times_s`` from the earliest
  stop, with each row's ``stopped_s``, or record ids for dumps without timestamps; docs/debugging.md, "The
  heatmap"): ``cells`` the base64 of the uint8 state per row and column (HEATMAP_STATES), row-major, ``culprit``
  the rows holding a culprit's rank;
- a ``startup`` run: its summary as the engine wrote it (the curve's rows).

Server paths are cut out (:func:`twin.runs.server_paths.scrub`), and ``dumps_refusal`` says why the viewer may not
download the dumps (:func:`twin.runs.ownership.dumps_refusal`; empty when they may), as the runs API does.
"""
from __future__ import annotations

import base64

from twin.runs.choices import RunStatus
from twin.runs.ownership import dumps_refusal
from twin.runs.server_paths import scrub

# The analyzer's heatmap states (docs/debugging.md, "Analyzer result schema": 0 absent, 1 scheduled, 2 started,
# 3 completed): what a row's rank did with the entry of that column.
HEATMAP_STATES = {0: "absent", 1: "scheduled", 2: "started, not completed", 3: "completed"}


def run_data(run, user) -> dict:
    """The Debug page's view of ``run`` (a debug or startup run of the cluster) for ``user``."""
    out = {"id": run.pk, "kind": run.kind, "status": run.status, "error": scrub(run.error), "params": run.params,
           "created_at": run.created_at.isoformat(), "summary": None,
           "dumps_refusal": (dumps_refusal(user, run) or "") if run.kind == "debug" else ""}
    if run.status != RunStatus.SUCCEEDED or not run.summary:
        return out
    s = scrub(dict(run.summary))
    out["summary"] = s
    h = s.pop("heatmap", None)
    if run.kind == "debug" and h is not None:
        state = run.arrays.filter(name="heatmap_state").first()
        cells = state.unpack() if state is not None else None
        if cells is not None:
            out["heatmap"] = {**h, "rows": h.get("labels", []), "shape": list(cells.shape),
                              "cells": base64.b64encode(cells.astype("u1").tobytes()).decode(),
                              "culprit": h.get("culprit_rows", []),
                              "states": {str(k): v for k, v in HEATMAP_STATES.items()}}
    return out
