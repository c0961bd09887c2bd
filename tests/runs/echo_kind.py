"""A trivial run kind registered by a test module (and by the test workers, through TWIN_RUN_KIND_MODULES): progress
in ``n`` steps, a headline figure and one array that needs float64. Nothing else in the twin names it: it is the proof
that one :func:`twin.runs.registry.register` call is a whole kind. ``pause`` makes each step last that long, so
that the fault tests can kill a worker in the middle of a run that lasts a known, short time (a real simulation's
length depends on the machine's load)."""
import time

import numpy as np

from sim.core.params import Param, ParamSet
from twin.runs.registry import Headline, Kind, register

ECHO = ParamSet("echo", (Param("n", "int", 3, "steps to count", min=1, max=50),
                         Param("pause", "float", 0.0, "seconds each step lasts", min=0.0, max=1.0)),
                doc="Counts to n: a kind for the tests.")
# Values float32 cannot hold: past its range, and more digits than its 7.
BIG = np.array([1e300, 123456789.123456789, -2.5e-310], dtype=np.float64)


def echo(layout, params, progress):
    n = params["n"]
    for i in range(n):
        time.sleep(params["pause"])
        progress((i + 1) / n, f"step {i + 1} of {n}")
    summary = {"steps": n, "gpus": int(np.asarray(layout.gpu_status).size)}
    return summary, {"big": BIG, "counts": np.arange(n, dtype=np.float64)}


KIND = register(Kind("echo", "Echo (test kind)", ECHO, echo, headline=(Headline("steps", "steps", "int"),),
                     best="steps", arrays={"big": "float64"},
                     cost=lambda values, cluster: {"flows": values["n"]},
                     estimate=lambda values, cluster: values["n"] * (0.01 + values["pause"])))
