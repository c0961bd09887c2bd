"""The example's run kind: ``steps`` steps, each heating every GPU by a pattern of its index (no engine: the shape of
a capability, not a model), reported live as ``example_heat`` and kept as the run's array of the same name."""
from __future__ import annotations

import numpy as np

from sim.core.params import Param, ParamSet
from twin.runs.registry import Headline, Kind, register
from tests.example_capability.model import HEAT_MAX, heat

EXAMPLE = ParamSet("example", (
    Param("steps", "int", 4, "steps to run, one live frame each", min=1, max=50),
    Param("stride", "int", 7, "how fast the heat pattern moves across the GPUs per step", min=1, max=1000),
), doc="A test-only capability's kind: a heat pattern over the GPUs.")


def example(layout, params: dict, progress) -> tuple[dict, dict]:
    n = int(np.asarray(layout.gpu_status).size)
    h = heat(n, 0, params["stride"])
    for step in range(1, params["steps"] + 1):
        h = heat(n, step, params["stride"])
        progress(step / params["steps"], f"step {step} of {params['steps']}", example_heat=h, force=True)
    hot = int((h > HEAT_MAX // 2).sum())
    return {"steps": params["steps"], "gpus": n, "hot_gpus": hot}, {"example_heat": h}


KIND = register(Kind("example", "Example (a test-only capability)", EXAMPLE, example,
                     headline=(Headline("hot_gpus", "GPUs above half heat", "int"),), best="hot_gpus",
                     arrays={"example_heat": "uint8"}, view="example",
                     cost=lambda values, cluster: {"flows": 0},
                     estimate=lambda values, cluster: values["steps"] * 0.01))
