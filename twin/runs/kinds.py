"""What every run kind shares: the cancellation a reporter raises, and the arrays most kinds report (a GPU's state,
a backend cable's utilization) in the inventory's order.

A kind's ``run(layout, params, progress) -> (summary, arrays)``: ``layout`` is the cluster read from the database
(:func:`twin.inventory.adapter.layout_from_db`, failed and drained items included), ``params`` the parameters
validated by the kind's :mod:`sim.core.params` declaration, ``progress(fraction, message="", **sections)`` the run's
reporter: ``fraction`` is the share of the work done as the engine counts it (the same numbers the CLI's progress bar
shows); it raises :class:`RunCancelled` once the run was cancelled.

- ``link_utilization``: one value per cable of the backend fabric, in the order of the inventory's ``Link`` rows
  of that fabric by id; the busier direction's time-averaged utilization (0..1); 0 for inactive cables.
- ``gpu_state``: per GPU (cluster index order), codes of :data:`twin.live.sections.GPU_STATES`.
"""
from __future__ import annotations

import numpy as np

from sim.fabric.layout import FABRIC_BACKEND
from twin.live.sections import GPU_IDLE, GPU_IN_JOB, GPU_UNUSABLE


class RunCancelled(Exception):
    """Raised by the progress callback when the run's cancellation was requested."""


class RunRefused(Exception):
    """Raised by a kind whose run may not go on, or by the action that would start one (a cluster's delete that
    another user's runs depend on, :mod:`twin.runs.clusters`): its message is the run's error as it is, or the
    API's 403."""


def backend_cable_utilization(topo, directed: np.ndarray) -> np.ndarray:
    """Per backend cable (inventory ``Link`` rows of the backend fabric, by id) the larger utilization of its two
    directions; ``directed`` is per directed link of ``topo`` (``topo.link_cable`` maps them to layout links)."""
    backend = np.flatnonzero(np.asarray(topo.layout.link_fabric) == FABRIC_BACKEND)
    out = np.zeros(backend.size, dtype=np.float32)
    np.maximum.at(out, np.searchsorted(backend, np.asarray(topo.link_cable)), np.asarray(directed, np.float32))
    return out


def gpu_states(topo, job_gpus=None) -> np.ndarray:
    state = np.where(np.asarray(topo.gpu_usable), GPU_IDLE, GPU_UNUSABLE).astype(np.uint8)
    if job_gpus is not None:
        state[np.asarray(job_gpus)] = GPU_IN_JOB
    return state
