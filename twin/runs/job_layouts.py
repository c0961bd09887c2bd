"""A training job's layout on a cluster of the twin, as the engine chooses it (:mod:`sim.jobs.defaults`): the
cluster as that rule sees it (:func:`where_of`: its usable GPUs now, its spec's GPUs per host, GPU and NIC), a
model's default layout there (:func:`default_for`: what ``GET /api/runs/jobs/default/`` answers and the Jobs page
fills its form with) and a refused job's reasons with the layouts nearest it that fit the cluster
(:func:`refused`: the ``job`` kind's 400). Nothing is decided here: the rule is the engine's."""
from __future__ import annotations

from sim.core.errors import ParamError
from sim.core.units import size_text
from sim.fabric.spec import parse_spec
from sim.jobs import defaults
from sim.jobs.params import JOB
from twin.inventory.gpu_grid import usable_gpus


def where_of(cluster) -> defaults.Where:
    """``cluster`` as the engine's layout rule sees it: its usable GPUs (failed and drained ones left out) on its
    spec's hosts, GPU and backend NICs."""
    return defaults.Where.of_spec(parse_spec(cluster.spec), usable=usable_gpus(cluster))


def default_for(cluster, model: str) -> dict:
    """The default layout of ``model`` on ``cluster``: :meth:`sim.jobs.defaults.Default.to_dict`, the cluster's
    name and ``shown`` (each of its parameters as a form field shows it: sizes as ``16M``); ParamError naming
    ``model`` when it has none there."""
    d = defaults.default_layout(model, where_of(cluster)).to_dict()
    shown = {k: size_text(v) if JOB.by_name[k].type == "size" else v for k, v in d["params"].items()}
    return {"cluster": cluster.name, **d, "shown": shown}


def refused(error: ParamError, values: dict, cluster) -> ParamError:
    """``error`` with the layouts nearest the refused job ``values`` that fit ``cluster`` named in the reason of its
    layout field (:func:`sim.jobs.defaults.with_nearest`)."""
    return defaults.with_nearest(error, values, where_of(cluster))
