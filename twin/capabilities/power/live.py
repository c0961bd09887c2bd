"""The power capability's live sections, sent by the ``power`` kind (:mod:`twin.capabilities.power.kinds`) once the
job's step has been turned into watts: each GPU's mean draw over the step (``gpu_power``), each GPU's rack's peak
against the rack's power budget (``rack_power``: the GPU page colours by budget headroom with it), and one row of the
run's figures (``power_stats``). Both per-GPU sections have a figure per rack for the zone overview
(:attr:`twin.live.sections.Section.rack_figure`)."""
from __future__ import annotations

import numpy as np

from twin.live.sections import Section, register

# gpu_power: a GPU's mean draw over the step as a share of its power limit (TDP) x GPU_SCALE; NOT_KNOWN: no figure.
GPU_SCALE = 250
# rack_power: the GPU's rack's peak draw over the step as a share of the rack's power budget x RACK_SCALE (so a
# byte reaches 254 / 200 = 127 % of the budget; a rack further over reads 254); NOT_KNOWN: no figure.
RACK_SCALE = 200
NOT_KNOWN = 255

# The run's phase in power_stats: the job is placed and its step solved, then its power computed.
PHASE_SOLVING, PHASE_DONE = 0, 1
POWER_PHASES = {PHASE_SOLVING: "solving", PHASE_DONE: "done"}
# One row of power_stats: phase; step (s) under the cap; the cap and the GPU's TDP (W); the cluster's peak, mean and
# swing (MW) and steepest ramp (MW/s) over the step; the job's mean draw (MW); energy per token (J); the rack
# budget (kW) and how many racks exceed it.
POWER_FIELDS = ("phase", "step_s", "cap_w", "tdp_w", "cluster_peak_mw", "cluster_mean_mw", "cluster_swing_mw",
                "cluster_ramp_mw_per_s", "job_mean_mw", "energy_per_token_j", "rack_budget_kw", "racks_over_budget")


def quantize(share, scale: int) -> np.ndarray:
    """Shares (0.., NaN: not known) -> uint8 bytes ``round(share x scale)`` clipped to 254; NaN -> NOT_KNOWN."""
    a = np.asarray(share, dtype=np.float64)
    q = np.rint(np.clip(np.nan_to_num(a, nan=0.0), 0.0, 254.0 / scale) * scale).astype(np.uint8)
    q[np.isnan(a)] = NOT_KNOWN
    return q


def _share(value: np.ndarray, constants: dict) -> tuple[np.ndarray, np.ndarray]:
    known = value != constants["not_known"]
    return np.where(known, value / constants["scale"], 0.0), known


GPU_POWER = register(Section(
    20, "gpu_power", "uint8", "array", per="gpu", constants={"scale": GPU_SCALE, "not_known": NOT_KNOWN},
    rack_figure=_share,             # the mean draw of the rack's GPUs as a share of their TDP
    doc="per GPU (by GPU.index): its mean draw over the step as a share of its TDP x scale; not_known: none"))
RACK_POWER = register(Section(
    21, "rack_power", "uint8", "array", per="gpu", constants={"scale": RACK_SCALE, "not_known": NOT_KNOWN},
    rack_figure=_share,             # the rack's peak as a share of its budget (every GPU of a rack carries it)
    doc="per GPU (by GPU.index): its rack's peak draw over the step as a share of the rack budget x scale"))
POWER_STATS = register(Section(
    22, "power_stats", "float32", "rows", fields=POWER_FIELDS, codes={"phase": POWER_PHASES},
    ints=("racks_over_budget",), doc="one row: the power run's figures (NaN while not known)"))
