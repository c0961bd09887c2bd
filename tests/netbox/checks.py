"""The round trip's check, shared by the tests and bench/bench_netbox.py: the engine's collective result on a
cluster read from the database, with the cluster's name taken out of the names it reports."""
from __future__ import annotations

import json

from sim.fabric.params import COLLECTIVE
from twin.capabilities.collectives import kinds
from twin.inventory.adapter import layout_from_db
from twin.inventory.models import GPU


def collective_result(cluster, collective: str = "allgather", sizes: str = "1M:64M") -> dict:
    """The collectives kind's summary (what ``--json`` prints) of ``collective`` over every GPU of ``cluster``."""
    gpus = GPU.objects.filter(cluster=cluster).count()
    params = COLLECTIVE.validate({"collective": collective, "gpus": gpus, "sizes": sizes, "seeds": 1})
    summary, _ = kinds.collective(layout_from_db(cluster), params, lambda *a, **k: None)
    return json.loads(json.dumps(summary, default=str).replace(f"{cluster.name}.", "CLUSTER."))
