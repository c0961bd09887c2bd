"""The example's "engine": a heat pattern over the GPUs (no model of anything: the shape of a capability). A real
capability's engine is a package of sim/."""
from __future__ import annotations

import numpy as np

HEAT_MAX = 250                    # the largest heat a GPU reaches; the browser scales its colours by it


def heat(n_gpus: int, step: int, stride: int) -> np.ndarray:
    """GPU i's heat after ``step`` steps: (i + step x stride) mod (HEAT_MAX + 1), as uint8."""
    return ((np.arange(n_gpus) + step * stride) % (HEAT_MAX + 1)).astype(np.uint8)
