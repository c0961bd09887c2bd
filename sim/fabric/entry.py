"""The fabric capability's entry points (docs/engine.md "Entry points"): ``run_collective(cluster, values,
progress=None)``, ``cluster`` the backend :class:`sim.fabric.topology.Topology`, ``values`` validated by
:data:`sim.fabric.params.COLLECTIVE`; ``run_figure(cluster, values, progress=None, *, out_dir, ...)``, ``values``
validated by :data:`sim.fabric.params.FIGURE`, with the output folder an explicit argument beside them. Their
``to_dict()`` is what ``python -m sim collective --json`` (``to_dict(links=..., flows=...)``: ``--links``,
``--flows``) and ``python -m sim figure`` print (the paths written).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sim.core.entry import cluster_name
from sim.core.progress import weighted
from sim.core.errors import UsageError
from sim.fabric.figures import make_figure
from sim.fabric.hostlist import HostIndex, order_note, placement_of
from sim.fabric.params import COLLECTIVE, GIVEN
from sim.fabric.preset_figure import preset_figure, write_figure
from sim.fabric.seeds import SeededResult, run_collective_seeds
from sim.fabric.spec import preset_names
from sim.fabric.topology import load_topology


@dataclass
class CollectiveRun:
    """A collective over one or more seeds (:class:`sim.fabric.seeds.SeededResult`, its median run the table's),
    the values it ran with (``gpus`` set from a host or GPU list), the note on the list's order and where the list
    came from (``source``: a file name, or the parameter's name)."""

    cluster: str
    values: dict
    seeded: SeededResult
    note: str | None = None
    source: str | None = None

    def to_dict(self, links: bool = False, flows: bool = False) -> dict:
        p = self.values
        doc = {"cluster": self.cluster, "placement": p["placement"],
               **({"ranks_from": self.source, "intra_order": p["intra_order"], "order_note": self.note}
                  if self.source else {}),
               **self.seeded.median.result.to_dict(links=links, flows=flows)}
        if p["seeds"] > 1:
            doc["seeds"] = {"count": p["seeds"], "median_seed": self.seeded.median.seed, "stats": self.seeded.stats(),
                            "per_seed": self.seeded.per_seed()}
        return doc


def run_collective(cluster, values: dict, progress=None, *, source: str | None = None) -> CollectiveRun:
    """The collective of ``values`` on ``cluster`` over its seeds (:func:`sim.fabric.seeds.run_collective_seeds`),
    placed by the host or GPU list when one is given (``source`` names it in errors and in the result: a file name;
    default the parameter, ``hosts`` or ``gpu_list``). Raises UsageError for more GPUs than the cluster's usable."""
    params = dict(values)
    listed = "hosts" if params.get("hosts") else "gpu_list" if params.get("gpu_list") else None
    source = source or listed if params["placement"] == GIVEN else None
    given = placement_of(cluster, params, sources=(source, source) if source else ("hosts", "gpu_list"))
    note = None
    if given is not None:
        params["gpus"] = int(given.size)
        note = order_note(HostIndex.of_topology(cluster), given, params["intra_order"])
        COLLECTIVE.check(params)                                 # root against the list's ranks
    usable = int(cluster.gpu_usable.sum())
    if params["gpus"] > usable:
        raise UsageError(f"asked for {params['gpus']:,} GPUs but {cluster_name(cluster)} has only {usable:,} usable "
                         f"(of {cluster.n_gpus:,})")
    seeded = run_collective_seeds(cluster, params, progress, given=given)
    return CollectiveRun(cluster_name(cluster), params, seeded, note, source)


@dataclass
class FigureRun:
    """The files a figure wrote; ``to_dict()`` lists their paths."""

    paths: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"paths": [str(p) for p in self.paths]}


def run_figure(cluster, values: dict, progress=None, *, out_dir, name: str | None = None,
               preset: str | None = None, quick: bool = False) -> FigureRun:
    """Figure ``name`` (default ``values['figure']``) written into ``out_dir`` (:func:`sim.fabric.figures.make_figure`).
    ``cluster`` must be None: a figure builds its own clusters, ``preset``'s for ``allgather-scale`` (default
    meta-roce-24k; demo-256 with ``quick``)."""
    if cluster is not None:
        raise UsageError("a figure builds its own clusters: give preset, not a cluster")
    return FigureRun(make_figure(name or values["figure"], out_dir, values, preset=preset, quick=quick,
                                 progress=progress))


def run_preset_figures(values: dict, progress=None, *, out_dir, presets=None, spec: str | None = None,
                       catalog: str | None = None) -> FigureRun:
    """The page of figures (:mod:`sim.fabric.preset_figure`) of each of ``presets`` (names; ``["all"]``: every
    preset of ``sim/presets``, :func:`sim.fabric.spec.preset_names`) or of the spec file ``spec``, ``values``
    validated by :data:`sim.fabric.params.PRESET_FIGURE`, written into ``out_dir``. Each cluster is an equal share
    of the progress; its topology is built, simulated and dropped before the next."""
    if spec:
        sources = [(None, spec)]
    else:
        names = preset_names() if list(presets or []) == ["all"] else list(presets or [])
        unknown = [n for n in names if n not in preset_names()]
        if unknown or not names:
            raise UsageError(f"unknown preset {', '.join(unknown) or '(none given)'}: choose one of "
                             f"{', '.join(preset_names())}, or all")
        sources = [(n, None) for n in names]
    paths = []
    for (preset, path), share in zip(sources, weighted(progress, [1] * len(sources))):
        cluster, topo = load_topology(preset, path, lambda message, share=share: share(0.0, message),
                                      catalog=catalog)
        doc = preset_figure(topo, cluster.name, values, share, preset=cluster.name)
        paths += write_figure(doc, out_dir)
    return FigureRun(paths)
