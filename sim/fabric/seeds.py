"""A collective over several seeds, and what the seeds say together.

ECMP's outcome depends on the hash seed (and a random placement on its seed), so one run is one sample. This runs
the collective of :data:`sim.fabric.params.COLLECTIVE` parameters once per seed ``seed .. seed + seeds - 1`` and reports
each headline figure as its median, minimum and maximum over the seeds, plus the *median run*: the run whose
normalized busbw at the largest size is the median (the lower of the two middle runs for an even count), whose
nccl-tests table and hottest links stand for the whole set. The command line and the ``collective`` run kind both
report through this module, so their figures mean the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.fabric.hostlist import placement_of
from sim.fabric.latency import LatencyModel
from sim.fabric.achievable import Efficiencies
from sim.fabric.netsim import run_collective
from sim.fabric.results import CollectiveResult
from sim.fabric.placement import place
from sim.core.progress import Progress, weighted
from sim.fabric.routing import resolve_routing
from sim.core.units import parse_sizes
from sim.core.units import GB, US



@dataclass
class SeededRun:
    seed: int
    gpus: np.ndarray               # rank -> GPU of this seed's placement
    result: CollectiveResult


@dataclass
class SeededResult:
    runs: list[SeededRun]
    median_index: int

    @property
    def median(self) -> SeededRun:
        return self.runs[self.median_index]

    def figures(self) -> dict[str, np.ndarray]:
        """Per seed, the headline figures (at the largest message size, and the large-message limit)."""
        rows = [r.result.rows[-1] for r in self.runs]
        return {"norm_busbw": np.array([x.norm for x in rows]),
                "busbw_GBps": np.array([x.busbw / GB for x in rows]),
                "time_us": np.array([x.time * 1e6 for x in rows]),
                "limit_norm_busbw": np.array([r.result.limit_norm for r in self.runs])}

    def stats(self) -> dict[str, dict[str, float]]:
        """``{figure: {"median", "min", "max"}}`` over the seeds; ``median`` is the median run's value (so it is a
        value some run had, and it matches the median run's table)."""
        m = self.median_index
        return {name: {"median": float(v[m]), "min": float(v.min()), "max": float(v.max())}
                for name, v in self.figures().items()}

    def per_seed(self) -> list[dict]:
        f = self.figures()
        return [{"seed": r.seed, **{k: float(v[i]) for k, v in f.items()}} for i, r in enumerate(self.runs)]


def median_index(values) -> int:
    """Index of the median of ``values`` (the lower middle one for an even count; ties broken by position).

    >>> median_index([0.3, 0.9, 0.5]), median_index([4, 1, 3, 2])
    (2, 3)
    """
    order = np.argsort(np.asarray(values, dtype=float), kind="stable")
    return int(order[(len(order) - 1) // 2])


def run_collective_seeds(topo, params: dict, progress: Progress | None = None, hottest: int | None = None,
                         on_seed=None, given: np.ndarray | None = None) -> SeededResult:
    """Run the collective of ``params`` (validated by :data:`sim.fabric.params.COLLECTIVE`) once per seed on ``topo``.
    ``progress(fraction, message)`` covers all seeds (each seed an equal share); ``on_seed(i, run)`` is called after
    each seed (a live view can show its link utilization). ``hottest``: hottest links per run (default the params').
    With ``placement`` ``given`` every seed runs the ranks of the host or GPU list (``given``, or read from the
    params by :func:`sim.fabric.hostlist.placement_of`); the seeds then vary the routing hash only."""
    if given is None:
        given = placement_of(topo, params)
    sizes = parse_sizes(params["sizes"])
    routing = resolve_routing(params["routing"], topo.kind)
    base_rtt = params.get("base_rtt_us")
    latency = LatencyModel(base_rtt=None if base_rtt is None else base_rtt * US)
    n = params["seeds"]
    shares = weighted(progress, [1] * n)
    runs = []
    for i in range(n):
        seed = params["seed"] + i
        gpus = given if given is not None else place(topo, params["gpus"], params["placement"], seed)
        result = run_collective(topo, gpus, params["collective"], sizes, algorithm=params["algorithm"],
                                routing=routing, qps=params["qps"], seed=seed, dtype=params["type"],
                                latency=latency, channels=params["channels"], root=params["root"],
                                intra_order=params.get("intra_order", "gpu"),
                                hash=params["hash"], udp_sport=params["udp_sport"],
                                min_channels=params["min_channels"], max_channels=params["max_channels"],
                                hottest=params["hottest"] if hottest is None else hottest, progress=shares[i],
                                protocol=params.get("protocol", "auto"), efficiencies=Efficiencies.of(params),
                                collnet=bool(params.get("collnet", False)))
        runs.append(SeededRun(seed, gpus, result))
        shares[i](1.0, f"seed {seed}: normalized busbw {100 * result.rows[-1].norm:.1f} %")
        if on_seed is not None:
            on_seed(i, runs[-1])
    return SeededResult(runs, median_index([r.result.rows[-1].norm for r in runs]))
