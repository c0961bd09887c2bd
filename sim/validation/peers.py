"""The errors peers publish for their simulators against real hardware (docs/validation.md prints them beside
ours). Each row: the simulator, what its authors compared, the error they publish, and the public source. Only
figures read in the source itself (its abstract or its authors' announcement) are listed."""
from __future__ import annotations

PEERS: tuple[dict, ...] = (
    {"name": "vTrain (KAIST, Samsung; MICRO 2024)", "compared": "LLM training iteration time, 8 A100 (one node) "
     "and up to 512 A100 (multi-node)", "error": "mean absolute percentage error 8.37 % (one node), 14.73 % "
     "(multi-node)", "source": "Bang et al., arXiv 2312.12391; KAIST EE announcement, 2025-03",
     "url": "https://arxiv.org/abs/2312.12391"},
    {"name": "Charon", "compared": "LLM training and inference performance across configurations",
     "error": "under 5.35 % prediction error overall, 3.74 % for training on large GPU clusters",
     "source": "Yang et al., arXiv 2605.17164, 2026-05", "url": "https://arxiv.org/abs/2605.17164"},
)
