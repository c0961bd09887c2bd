"""What each cluster's card on the overview shows, as JSON: its figures (GPUs healthy, failed, drained; hosts,
switches, links, links failed; bisection bandwidth under the current statuses), the simulations queued or running on
it, and what runs there: jobs and the GPUs they hold, the last checkpoint, recent failures (inventory items not
active, failed runs). A constant number of grouped queries whatever the number of clusters. The page embeds it and
reads it again as ``overview/activity.json`` when its cluster's stream says the inventory changed, a run started,
changed status or ended, or jobs moved, and after a reconnection (frontend/js/overview.js)."""
from django.db.models import Count, Max, Sum

from twin.runs import job_actions, registry
from twin.runs.choices import ACTIVE, RunStatus
from twin.runs.models import SimulationRun
from twin.runs.server_paths import scrub

# The run kind whose newest success the overview shows as "last checkpoint" (the storage capability's).
CHECKPOINT_KIND = "checkpoint"
FAILED_RUNS_SHOWN = 3          # per cluster
FAILED_RUNS_READ = 200         # the newest failed runs of all clusters read to find those
INVENTORY_KINDS = ("gpus", "hosts", "switches", "links")   # cluster_overview's keys


def held_by_running_jobs() -> dict[int, dict]:
    """Per cluster id: the jobs that hold GPUs and how many they hold (the one rule:
    :func:`twin.runs.job_actions.holding`; placements never overlap, so the sum is the count)."""
    return {row["cluster_id"]: {"jobs": row["jobs"], "gpus": row["gpus"] or 0}
            for row in (job_actions.holding().values("cluster_id")
                        .annotate(jobs=Count("id"), gpus=Sum("n_gpus")).order_by())}


def _run_row(run: SimulationRun) -> dict:
    return {"id": run.pk, "kind": run.kind, "status": run.status,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None}


def last_checkpoints() -> dict[int, dict]:
    """Per cluster id: its newest succeeded checkpoint run with its headline figures (key, label, format, value)."""
    kind = registry.kinds().get(CHECKPOINT_KIND)
    if kind is None:
        return {}
    last = (SimulationRun.objects.filter(kind=CHECKPOINT_KIND, status=RunStatus.SUCCEEDED).values("cluster_id")
            .annotate(last=Max("id")).order_by().values_list("last", flat=True))
    return {run.cluster_id: {**_run_row(run), "params_text": kind.text(run.params),
                             "headline": scrub(kind.headline_values(run.summary))}
            for run in SimulationRun.objects.filter(pk__in=list(last))}


def failed_runs() -> dict[int, list[dict]]:
    """Per cluster id: its newest failed runs (at most FAILED_RUNS_SHOWN), each with the first line of its error."""
    out: dict[int, list[dict]] = {}
    for run in (SimulationRun.objects.filter(status=RunStatus.FAILED).order_by("-id")
                .only("id", "cluster_id", "kind", "status", "finished_at", "error")[:FAILED_RUNS_READ]):
        rows = out.setdefault(run.cluster_id, [])
        if len(rows) < FAILED_RUNS_SHOWN:
            rows.append({**_run_row(run), "error": scrub((run.error or "").strip().split("\n")[0][:200])})
    return out


def active_runs_by_cluster() -> dict[int, list[dict]]:
    """Queued and running simulations per cluster id, oldest first (one query)."""
    runs: dict[int, list[dict]] = {}
    for row in (SimulationRun.objects.filter(status__in=ACTIVE, cluster__isnull=False).order_by("created_at")
                .values("id", "cluster_id", "kind", "status", "progress")):
        runs.setdefault(row["cluster_id"], []).append(row)
    return runs


def figures(row: dict) -> dict:
    """A card's figures from a :func:`twin.inventory.summary.cluster_overview` row: the counts by status, and the
    bisection bandwidth with its text as the page prints it (``tbps``: one rule, the template's)."""
    from twin.web.templatetags.humanize_twin import tbps
    out = {k: row[k] for k in row if k.split("_")[0] in INVENTORY_KINDS}
    return {**out, "bisection_gbps": row["bisection_gbps"], "bisection_text": tbps(row["bisection_gbps"])}


def activity(clusters: list[dict]) -> dict[str, dict]:
    """Per cluster name (``clusters``: :func:`twin.inventory.summary.cluster_overview`'s rows): ``figures``, ``runs``
    (queued and running: id, kind, status, progress), ``jobs`` (running, and the GPUs they hold), ``checkpoint``
    (the last one, or None), ``not_active`` (per inventory kind, the items not active) and ``failed_runs``."""
    held, checkpoints, failed = held_by_running_jobs(), last_checkpoints(), failed_runs()
    runs = active_runs_by_cluster()
    out = {}
    for row in clusters:
        cid = row["cluster"].id
        out[row["cluster"].name] = {
            "figures": figures(row), "runs": runs.get(cid, []),
            "jobs": held.get(cid, {"jobs": 0, "gpus": 0}), "gpus": row["gpus"],
            "checkpoint": checkpoints.get(cid),
            "not_active": {k: row[k] - row[f"{k}_active"] for k in INVENTORY_KINDS},
            "failed_runs": failed.get(cid, []),
        }
    return out
