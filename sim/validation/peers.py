"""The errors peers publish for their simulators against real hardware (docs/validation.md prints them beside
ours). Each row: the simulator, what its authors compared, the error they publish, and the public source."""
from __future__ import annotations

PEERS: tuple[dict, ...] = (
)
