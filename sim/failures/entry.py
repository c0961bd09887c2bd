"""The failures capability's entry point (docs/engine.md "Entry points"): ``run_failures(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.failures.params.FAILURES`. Its ``to_dict()`` is what ``python -m sim failures --json`` prints: the
cluster, the parameters, the first seed's timeline, the summary over seeds and, with ``sweep_interval``, the
checkpoint interval sweep, and ``published``: Meta's 54-day record beside the simulated figures
(:func:`sim.failures.published.published`).
"""
from __future__ import annotations

from sim.core.entry import Document
from sim.core.progress import weighted
from sim.failures.prepare import prepare
from sim.failures.published import published
from sim.failures.summary import summarize
from sim.failures.sweep import sweep
from sim.failures.timeline import simulate_seeds


def run_failures(cluster, values: dict, progress=None) -> Document:
    """Prepare the job once (:func:`sim.failures.prepare.prepare`), simulate its timeline over ``values['seeds']``
    seeds (:func:`sim.failures.timeline.simulate_seeds`), summarize them (:func:`sim.failures.summary.summarize`)
    and sweep the checkpoint interval (:func:`sim.failures.sweep.sweep`) when ``values['sweep_interval']`` is
    given; progress shares 1 : 2 : 4."""
    has_sweep = bool(values["sweep_interval"])
    prep, seeds_bar, sweep_bar = weighted(progress, (1, 2, 4 if has_sweep else 0))
    ctx = prepare(cluster, values, progress=prep)
    results = simulate_seeds(ctx, values, values["seeds"], progress=seeds_bar)
    summary = summarize(results)
    doc = {"cluster": ctx.cluster, "params": values, "result": results[0], "summary": summary,
           "published": published(ctx.params, results[0], summary, ctx.layout.spec.node_failure_rate)}
    if has_sweep:
        doc["sweep"] = sweep(ctx, values, values["sweep_interval"], values["seeds"], progress=sweep_bar)
    return Document(doc)
